/*
 * The GPU path as a collectives backend (coll/backend.h): runtime/coll/api.c
 * checks the arguments, then asks this backend whether it claims the
 * buffers (they are on the device). If so the operation goes to NCCL on
 * the application's stream; a non-blocking one (rp_i*) gets a request that
 * completes with a CUDA event recorded after it, through the request table
 * of coll/request.h, so rp_test and rp_wait treat host and device requests
 * alike. What it needs from the host (the signature check) it asks the
 * host backend, never the public API.
 */
#include "config.h"

#include "gpu/path.h"

#include <stdlib.h>

#include "coll/backend.h"
#include "coll/request.h"
#include "core/context.h"
#include "util/log.h"

typedef struct rp_gpu_req {
    struct rp_request base; /* first: rp_request_h points here */
    rp_context_h ctx;
    void *event;
} rp_gpu_req_t;

static bool rp_gpu_req_test(struct rp_request *req)
{
    rp_gpu_req_t *r = (rp_gpu_req_t *)req;
    rp__gpu_t *g = r->ctx->gpu;
    rp_status_t rc = g->ops->event_wait(g->comm, r->event, g->timeout_ms,
                                        false);

    if (rc == RP_ERR_BUSY) {
        return false;
    }
    req->status = rc;
    return true;
}

static rp_status_t rp_gpu_req_wait(struct rp_request *req)
{
    rp_gpu_req_t *r = (rp_gpu_req_t *)req;
    rp__gpu_t *g = r->ctx->gpu;

    req->status = g->ops->event_wait(g->comm, r->event, g->timeout_ms, true);
    return req->status;
}

static void rp_gpu_req_release(struct rp_request *req)
{
    rp_gpu_req_t *r = (rp_gpu_req_t *)req;

    r->ctx->gpu->ops->event_destroy(r->event);
    free(r);
}

static const rp__request_ops_t rp_gpu_req_ops = {
    .name = "nccl",
    .test = rp_gpu_req_test,
    .wait = rp_gpu_req_wait,
    .release = rp_gpu_req_release,
};

/* A request that completes when the application's stream passes now. */
static rp_status_t rp_gpu_request(rp_context_h ctx, rp_request_h *req_p)
{
    rp__gpu_t *g = ctx->gpu;
    rp_gpu_req_t *r = calloc(1, sizeof(*r));
    rp_status_t rc;

    if (r == NULL) {
        rp_error("GPU: out of memory for a request");
        return RP_ERR_NO_MEMORY;
    }
    rc = g->ops->event_record(g->stream, &r->event);
    if (rc != RP_OK) {
        free(r);
        return rc;
    }
    r->base.ops = &rp_gpu_req_ops;
    r->base.status = RP_OK;
    r->ctx = ctx;
    *req_p = &r->base;
    return RP_OK;
}

/* Device or host? Every buffer of the call is asked. */
static rp_status_t rp_gpu_where(rp_context_h ctx, const rp__coll_args_t *a,
                                const char *what, bool *device_p)
{
    const void *two[2] = {a->sendbuf, a->recvbuf};
    bool dev = false, any = false;
    rp_status_t rc = RP_OK;

    if (!rp__gpu_probe_driver()) {
        /* No driver loaded: every buffer is host memory. The probe takes
         * the loader's lock, so it asks once here, not per buffer: per
         * buffer it was a large share of a small host collective. */
        *device_p = false;
        return RP_OK;
    }
    if (a->kind != RP__COLL_ALLREDUCE_GROUP &&
        a->kind != RP__COLL_REDUCE_SCATTER_GROUP) {
        return rp__gpu_classify(ctx, what, two, 2, device_p);
    }
    for (size_t i = 0; i < a->nbufs && rc == RP_OK; i++) {
        bool d;

        if ((a->counts != NULL && a->counts[i] == 0) ||
            a->sendbufs[i] == NULL) {
            continue;
        }
        two[0] = a->sendbufs[i];
        two[1] = a->recvbufs[i];
        rc = rp__gpu_classify(ctx, what, two, 2, &d);
        if (rc == RP_OK && any && d != dev) {
            rp_error("%s: buffer %zu is %s memory but earlier ones are on the "
                     "%s: pass all buffers on the device or all on the host",
                     what, i, d ? "device" : "host", dev ? "device" : "host");
            rc = RP_ERR_INVALID_ARG;
        }
        dev = d;
        any = true;
    }
    *device_p = dev;
    return rc;
}

/* Device buffers (or an error about them): this backend's. Barrier has
 * no buffers and api.c never offers it. */
static rp_status_t rp_gpu_claim(rp_context_h ctx, const rp__coll_args_t *a,
                                const char *what, bool *mine_p)
{
    *mine_p = false;
    return rp_gpu_where(ctx, a, what, mine_p);
}

static rp_status_t rp_gpu_run(rp_context_h ctx, const rp__coll_args_t *a,
                              const char *what)
{
    rp_status_t rc = RP_OK;

    if (a->signature != 0) {
        /* The cross-rank argument check runs on the host, in order after
         * the host collectives queued before this call. */
        rc = rp__coll_host_check(ctx, a->signature);
    }
    if (rc != RP_OK) {
        return rc;
    }
    switch (a->kind) {
    case RP__COLL_ALLREDUCE:
        return rp__gpu_allreduce(ctx, a->sendbuf, a->recvbuf, a->count,
                                 a->dtype, a->op);
    case RP__COLL_ALLREDUCE_GROUP:
        return rp__gpu_allreduce_group(ctx, a->sendbufs, a->recvbufs,
                                       a->counts, a->nbufs, a->dtype, a->op);
    case RP__COLL_BROADCAST:
        return rp__gpu_broadcast(ctx, a->recvbuf != NULL ? a->recvbuf
                                 : (void *)a->sendbuf, a->count, a->root);
    case RP__COLL_ALLGATHER:
        return rp__gpu_allgather(ctx, a->sendbuf, a->recvbuf, a->count);
    case RP__COLL_REDUCE_SCATTER:
    case RP__COLL_REDUCE_SCATTER_GROUP:
    case RP__COLL_ALLTOALL:
        /* Not on the device yet: say what to do instead. */
        rp_error("%s: device memory is not supported yet; pass host "
                 "buffers (copy the tensor to the CPU first)", what);
        return RP_ERR_NOT_SUPPORTED;
    case RP__COLL_BARRIER:
    case RP__COLL_CHECK:
        break;
    }
    rp_error("GPU: no device barrier (it has no buffers: the host runs it)");
    return RP_ERR_INVALID_ARG;
}

static rp_status_t rp_gpu_start(rp_context_h ctx, const rp__coll_args_t *a,
                                const char *what, rp_request_h *req_p)
{
    rp_status_t rc = rp_gpu_run(ctx, a, what);

    if (rc == RP_OK && ctx->gpu->comm != NULL) {
        rc = rp_gpu_request(ctx, req_p);
    }
    return rc;
}

const rp__coll_backend_t rp__gpu_coll_backend = {
    .name = "nccl",
    .claim = rp_gpu_claim,
    .run = rp_gpu_run,
    .start = rp_gpu_start,
};
