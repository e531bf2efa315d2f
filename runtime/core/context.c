/*
 * rp_init / rp_finalize: bring a process into the job and out again.
 */
#include "config.h"

#include "core/context.h"
#include "core/fork.h"
#include "ckpt/engine.h"
#include "coll/comm_create.h"
#include "coll/progress.h"
#include "coll/select.h"
#include "gpu/path.h"
#include "signal/signal.h"
#include "util/log.h"
#include "util/str.h"

#include <stdlib.h>
#include <string.h>

const char *rp_version(void)
{
    return PACKAGE_VERSION;
}

rp_status_t rp_init(const rp_init_params_t *params, rp_context_h *ctx_p)
{
    rp_context_h ctx;
    rp_status_t status;
    rp__fork_fds_t fds_before = {NULL, 0};
    bool single = false;
    int left, right;

    if (ctx_p == NULL) {
        rp_error("rp_init: ctx_p is NULL");
        return RP_ERR_INVALID_ARG;
    }
    if (params != NULL && (params->field_mask & RP_INIT_FIELD_FLAGS)) {
        single = (params->flags & RP_INIT_FLAG_SINGLE) != 0;
    }

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        rp_error("rp_init: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    /* Settings first: a malformed RINGPOINT_* variable should fail before
     * any collective, on every rank alike (they all see the same value). */
    status = rp__settings_load(&ctx->settings);
    if (status != RP_OK) {
        goto err_free;
    }
    rp__fork_fds_note(&fds_before);
    status = rp__bootstrap_init(single, &ctx->bootstrap);
    if (status != RP_OK) {
        goto err_free;
    }
    rp__log_set_rank(ctx->bootstrap->rank);

    status = rp__peer_publish(ctx->bootstrap);
    if (status != RP_OK) {
        goto err_bootstrap;
    }
    /* The transport publishes its address before the one fence; a single
     * rank needs none (its collectives are local copies). */
    if (ctx->bootstrap->size > 1) {
        status = rp__transport_create("ucx", ctx->bootstrap, &ctx->transport);
        if (status != RP_OK) {
            goto err_bootstrap;
        }
    }
    status = ctx->bootstrap->ops->fence(ctx->bootstrap);
    if (status != RP_OK) {
        goto err_transport;
    }
    left = (ctx->bootstrap->rank + ctx->bootstrap->size - 1) %
           ctx->bootstrap->size;
    right = (ctx->bootstrap->rank + 1) % ctx->bootstrap->size;
    status = rp__peer_fetch(ctx->bootstrap, left, &ctx->left);
    if (status != RP_OK) {
        goto err_transport;
    }
    status = rp__peer_fetch(ctx->bootstrap, right, &ctx->right);
    if (status != RP_OK) {
        goto err_transport;
    }
    status = rp__comm_create(ctx->transport, ctx->bootstrap->rank,
                             ctx->bootstrap->size, &ctx->settings, &ctx->comm);
    if (status != RP_OK) {
        goto err_transport;
    }
    /* Last: RINGPOINT_GPU=on creates the NCCL communicator, which needs
     * the bootstrap and the host collectives. */
    status = rp__gpu_init(ctx);
    if (status != RP_OK) {
        goto err_comm;
    }
    rp_debug("initialised: rank %d of %d on %s via %s", ctx->bootstrap->rank,
             ctx->bootstrap->size, ctx->bootstrap->node_name,
             ctx->bootstrap->ops->name);
    rp__fork_guard_init(&fds_before);
    rp__fork_fds_free(&fds_before);
    *ctx_p = ctx;
    return RP_OK;

err_comm:
    rp__gpu_finalize(ctx);
    rp__comm_quiesce(ctx->comm);
    rp__transport_destroy(ctx->transport);
    rp__comm_destroy(ctx->comm);
    goto err_bootstrap;
err_transport:
    rp__transport_destroy(ctx->transport);
err_bootstrap:
    rp__bootstrap_finalize(ctx->bootstrap);
err_free:
    rp__fork_fds_free(&fds_before);
    free(ctx);
    return status;
}

/* How long rp_finalize waits for the other ranks to arrive. */
#define RP_FINALIZE_TIMEOUT_NS (10ull * 1000000000ull)

void rp_finalize(rp_context_h ctx)
{
    if (ctx == NULL || rp__fork_check("rp_finalize") != RP_OK) {
        return; /* a forked child: its copy is left alone (core/fork.h) */
    }
    /* First, while the collectives still work: a checkpoint in flight is
     * committed (it needs them). */
    rp__ckpt_engine_destroy(ctx);
    rp__gpu_finalize(ctx);
    /* Every rank's last messages are delivered before any tears its
     * transport down: a receiver may still have to reach the sender (a
     * broadcast just before rp_finalize failed with a UCX shared-memory
     * error otherwise). Bounded, so that a rank that left after an error
     * of its own, while the others wait in another collective, still goes
     * away soon and lets them see it fail. */
    /* Non-blocking collectives still queued run first, on the progress
     * thread, and this thread waits for them: the barrier below must not
     * drive the UCX worker beside it (two threads in ucp_worker_progress:
     * UCX aborts, "Assertion `worker->inprogress++ == 0' failed", on every
     * rank that finalized with an rp_iallreduce not yet waited for). */
    if (ctx->comm != NULL) {
        rp__comm_sync(ctx->comm);
    }
    if (ctx->comm != NULL && ctx->comm->broken == RP_OK &&
        ctx->comm->size > 1) {
        uint64_t t = ctx->comm->timeout_ns;

        if (t == 0 || t > RP_FINALIZE_TIMEOUT_NS) {
            ctx->comm->timeout_ns = RP_FINALIZE_TIMEOUT_NS;
        }
        (void)rp__comm_barrier(ctx->comm);
        ctx->comm->timeout_ns = t;
    }
    rp__comm_quiesce(ctx->comm);
    rp__transport_destroy(ctx->transport);
    rp__comm_destroy(ctx->comm);
    rp__bootstrap_finalize(ctx->bootstrap);
    /* Last: until here a repeated stop signal must not kill this rank
     * while the others still need it (signal.c). */
    rp__signal_release();
    free(ctx);
}

static void rp_copy_name(char *dst, const char *src)
{
    rp__strlcpy(dst, src, RP_NAME_MAX);
}

rp_status_t rp_context_query(rp_context_h ctx, rp_context_attr_t *attr)
{
    const rp_bootstrap_t *bs;
    uint64_t m;

    if (ctx == NULL || attr == NULL) {
        rp_error("rp_context_query: NULL %s", ctx == NULL ? "ctx" : "attr");
        return RP_ERR_INVALID_ARG;
    }
    bs = ctx->bootstrap;
    m = attr->field_mask;
    if (m & RP_CONTEXT_ATTR_FIELD_RANK)       attr->rank = bs->rank;
    if (m & RP_CONTEXT_ATTR_FIELD_SIZE)       attr->size = bs->size;
    if (m & RP_CONTEXT_ATTR_FIELD_LOCAL_RANK) attr->local_rank = bs->local_rank;
    if (m & RP_CONTEXT_ATTR_FIELD_LOCAL_SIZE) attr->local_size = bs->local_size;
    if (m & RP_CONTEXT_ATTR_FIELD_NODE_ID)    attr->node_id = bs->node_id;
    if (m & RP_CONTEXT_ATTR_FIELD_NODE_COUNT) attr->node_count = bs->node_count;
    if (m & RP_CONTEXT_ATTR_FIELD_NODE_NAME)  rp_copy_name(attr->node_name, bs->node_name);
    if (m & RP_CONTEXT_ATTR_FIELD_BOOTSTRAP)  attr->bootstrap = bs->ops->name;
    if (m & RP_CONTEXT_ATTR_FIELD_JOB_ID)     rp_copy_name(attr->job_id, bs->job_id);
    if (m & RP_CONTEXT_ATTR_FIELD_CKPT_INTERVAL) {
        attr->ckpt_interval_s = ctx->settings.ckpt_interval_s;
    }
    if (m & RP_CONTEXT_ATTR_FIELD_RING) {
        attr->left_rank = (int)ctx->left.rank;
        attr->right_rank = (int)ctx->right.rank;
        rp_copy_name(attr->left_node, ctx->left.node_name);
        rp_copy_name(attr->right_node, ctx->right.node_name);
    }
    return RP_OK;
}
