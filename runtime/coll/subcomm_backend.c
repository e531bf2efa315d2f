/*
 * The sub-contexts' backend (subcomm.h): between the public collectives
 * (api.c) and the host backend. The GPU path's NCCL communicator spans the
 * job, so device buffers on a sub-communicator are refused here, with the
 * job's device backend telling them from host memory; host collectives go
 * to the host backend, and their failures are logged with the
 * sub-communicator's name and this rank's place in it.
 */
#include "config.h"

#include "coll/backend.h"
#include "coll/comm.h"
#include "coll/progress.h"
#include "coll/subcomm.h"
#include "core/context.h"
#include "util/log.h"

static rp_status_t rp_sub_claim(rp_context_h ctx, const rp__coll_args_t *a,
                                const char *what, bool *mine_p)
{
    const rp_context_h job = ctx->sub->job;
    const rp__coll_backend_t *dev = job->coll_device;
    bool device = false;

    *mine_p = true;
    if (dev != NULL && dev->claim != NULL) {
        rp_status_t status = dev->claim(job, a, what, &device);

        if (status != RP_OK) {
            return status;
        }
    }
    if (device) {
        rp_error("%s: device buffers on %s: the NCCL path runs on the job's "
                 "context only; pass host buffers, or run it on the context "
                 "rp_init returned", what, ctx->sub->name);
        return RP_ERR_NOT_SUPPORTED;
    }
    return RP_OK;
}

/* A failure of the job's communicator is this one's too (the job
 * restarts): its collectives then fail at once, saying so. After the
 * queue drained: nothing else touches either communicator. */
static void rp_sub_adopt(rp_comm_t *c)
{
    rp_comm_t *root = rp__comm_root(c);

    if (c->broken == RP_OK && root->broken != RP_OK) {
        c->broken = root->broken;
    }
}

static rp_status_t rp_sub_run(rp_context_h ctx, const rp__coll_args_t *a,
                              const char *what)
{
    rp_comm_t *c = ctx->comm;
    rp_status_t status;

    rp__comm_sync(c);
    rp_sub_adopt(c);
    status = rp__coll_host_backend.run(ctx, a, what);
    if (status != RP_OK) {
        rp_error("%s on %s, as its rank %d, failed: %s", what, ctx->sub->name,
                 ctx->sub->rank, rp_status_string(status));
    }
    return status;
}

static rp_status_t rp_sub_start(rp_context_h ctx, const rp__coll_args_t *a,
                                const char *what, rp_request_h *req_p)
{
    /* Into the job's queue (progress.c), which names the communicator
     * should the collective fail. */
    return rp__coll_host_backend.start(ctx, a, what, req_p);
}

const rp__coll_backend_t rp__subcomm_backend = {
    .name = "sub-communicator",
    .claim = rp_sub_claim,
    .run = rp_sub_run,
    .start = rp_sub_start,
};
