/*
 * The collectives' entry into the GPU path: runtime/coll/api.c checks the
 * arguments, then asks here whether the buffers are on the device. If so
 * the operation goes to NCCL on the application's stream; a non-blocking
 * one (rp_i*) gets a request that completes with a CUDA event recorded
 * after it, through the request table of coll/request.h, so rp_test and
 * rp_wait treat host and device requests alike.
 */
#include "config.h"

#include "gpu/path.h"

#include <stdlib.h>

#include "coll/comm.h"
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

static const char *rp_gpu_what(const rp__coll_args_t *a, bool nb)
{
    switch (a->kind) {
    case RP__COLL_ALLREDUCE:
        return nb ? "rp_iallreduce" : "rp_allreduce";
    case RP__COLL_ALLREDUCE_GROUP:
        return nb ? "rp_iallreduce_group" : "rp_allreduce_group";
    case RP__COLL_BROADCAST:
        return nb ? "rp_ibroadcast" : "rp_broadcast";
    case RP__COLL_ALLGATHER:
        return nb ? "rp_iallgather" : "rp_allgather";
    default:
        return nb ? "rp_ibarrier" : "rp_barrier";
    }
}

/* Device or host? Every buffer of the call is asked. */
static rp_status_t rp_gpu_where(rp_context_h ctx, const rp__coll_args_t *a,
                                const char *what, bool *device_p)
{
    const void *two[2] = {a->sendbuf, a->recvbuf};
    bool dev = false, any = false;
    rp_status_t rc = RP_OK;

    if (a->kind != RP__COLL_ALLREDUCE_GROUP) {
        return rp__gpu_classify(ctx, what, two, 2, device_p);
    }
    for (size_t i = 0; i < a->nbufs && rc == RP_OK; i++) {
        bool d;

        if (a->counts[i] == 0) {
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

bool rp__gpu_coll(rp_context_h ctx, const rp__coll_args_t *a,
                  struct rp_request **req_p, rp_status_t *status_p)
{
    const char *what = rp_gpu_what(a, req_p != NULL);
    bool device = false;
    rp_status_t rc;

    if (a->kind == RP__COLL_BARRIER) {
        return false; /* no buffers: the host path */
    }
    rc = rp_gpu_where(ctx, a, what, &device);
    if (rc == RP_OK && !device) {
        return false;
    }
    if (rc == RP_OK && a->signature != 0) {
        /* The cross-rank argument check runs on the host, in order after
         * the host collectives queued before this call. */
        rp__comm_sync(ctx->comm);
        rc = rp__coll_check(ctx->comm, a->signature);
    }
    if (rc == RP_OK) {
        switch (a->kind) {
        case RP__COLL_ALLREDUCE:
            rc = rp__gpu_allreduce(ctx, a->sendbuf, a->recvbuf, a->count,
                                   a->dtype, a->op);
            break;
        case RP__COLL_ALLREDUCE_GROUP:
            rc = rp__gpu_allreduce_group(ctx, a->sendbufs, a->recvbufs,
                                         a->counts, a->nbufs, a->dtype, a->op);
            break;
        case RP__COLL_BROADCAST:
            rc = rp__gpu_broadcast(ctx, a->recvbuf != NULL ? a->recvbuf
                                   : (void *)a->sendbuf, a->count, a->root);
            break;
        default:
            rc = rp__gpu_allgather(ctx, a->sendbuf, a->recvbuf, a->count);
            break;
        }
    }
    if (rc == RP_OK && req_p != NULL) {
        rc = ctx->gpu->comm != NULL ? rp_gpu_request(ctx, req_p) : RP_OK;
    }
    *status_p = rc;
    return true;
}
