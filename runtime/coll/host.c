/*
 * The host backend: the host collectives, run through the dispatcher
 * (dispatch.h) on the caller's thread or queued on the progress thread
 * (progress.c).
 */
#include "config.h"

#include "coll/backend.h"
#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/progress.h"
#include "coll/shm.h"
#include "core/context.h"

static rp_status_t rp_host_run(struct rp_context *ctx,
                               const rp__coll_args_t *a, const char *what)
{
    (void)what;
    rp__comm_sync(ctx->comm);
    return rp__coll_run(ctx->comm, a);
}

static rp_status_t rp_host_start(struct rp_context *ctx,
                                 const rp__coll_args_t *a, const char *what,
                                 rp_request_h *req_p)
{
    (void)what;
    return rp__coll_start(ctx->comm, a, req_p);
}

const rp__coll_backend_t rp__coll_host_backend = {
    .name = "host",
    .claim = NULL,
    .run = rp_host_run,
    .start = rp_host_start,
};

rp_status_t rp__coll_host_check(struct rp_context *ctx, uint64_t signature)
{
    rp__comm_sync(ctx->comm);
    return rp__coll_check(ctx->comm, signature);
}

rp_status_t rp__coll_host_join(struct rp_context *ctx, int *last_p)
{
    rp__comm_sync(ctx->comm);
    return rp__coll_join(ctx->comm, last_p);
}

rp_status_t rp__coll_host_allgather_iov(struct rp_context *ctx,
                                        const void *src,
                                        const struct iovec *const *iov,
                                        const size_t *niov)
{
    rp_comm_t *c = ctx->comm;
    rp_status_t status;

    rp__comm_sync(c);
    /* The same answer on every rank: the segment and its probe are the
     * job's, decided together at setup. */
    if (c->shm == NULL || !c->shm->cma || c->shm->n != c->size) {
        return RP_ERR_NOT_SUPPORTED;
    }
    status = rp__comm_begin(c, "restore exchange");
    return status != RP_OK ? status : rp__cma_allgather_iov(c, src, iov, niov);
}
