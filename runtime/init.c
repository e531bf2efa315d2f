/*
 * rp_init / rp_finalize: bring a process into the job and out again.
 *
 * The top floor of the runtime: the one place that knows every layer. It
 * reads the settings table once, hands each layer its part (the lower
 * ones, which must not include core/, as small structs of their own) and
 * starts the layers bottom up; rp_finalize stops them top down.
 */
#include "config.h"

#include "core/context.h"
#include "core/fork.h"
#include "ckpt/engine/engine.h"
#include "coll/comm_create.h"
#include "coll/progress.h"
#include "coll/select.h"
#include "coll/subcomm.h"
#include "gpu/path.h"
#include "reduce/reduce.h"
#include "signal/signal.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* The lower layers' parts of the settings, in structs of their own:
 * bootstrap/ and transport/ must not include core/. */
static rp__bootstrap_settings_t rp_init_bootstrap_part(const rp_settings_t *s)
{
    rp__bootstrap_settings_t b = {
        .timeout_s = s->bootstrap_timeout_s,
        .pmix_collect = s->pmix_collect,
        .allow_single = s->allow_single,
    };

    return b;
}

static rp__transport_settings_t rp_init_transport_part(const rp_settings_t *s)
{
    rp__transport_settings_t t = {
        .peer_timeout_s = s->peer_timeout_s,
        .peer_errmode = s->ucx_peer_errmode,
        .oversubscribed = s->coll_oversubscribed,
        .ucx_module = s->ucx_module,
        .ucx_config_cwd = s->ucx_config_cwd,
    };

    return t;
}

static rp_status_t rp_init_layers(const rp_init_params_t *params,
                                  rp_context_h *ctx_p);

rp_status_t rp_init(const rp_init_params_t *params, rp_context_h *ctx_p)
{
    rp_status_t status;
    bool capture = params != NULL &&
                   (params->field_mask & RP_INIT_FIELD_ERROR) &&
                   params->error != NULL && params->error_len > 0;

    /* The reason of a failure goes back to the caller, from wherever in
     * the layers it was found and logged. */
    if (capture) {
        rp__log_capture(params->error, params->error_len);
    }
    status = rp_init_layers(params, ctx_p);
    if (capture) {
        rp__log_capture(NULL, 0);
        if (status == RP_OK) {
            params->error[0] = '\0';
        }
    }
    return status;
}

static rp_status_t rp_init_layers(const rp_init_params_t *params,
                                  rp_context_h *ctx_p)
{
    rp_context_h ctx;
    rp__bootstrap_settings_t bset;
    rp__transport_settings_t tset;
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
    /* util/log.c reads the level itself for messages before any rp_init
     * (the plugin's, a tool's); the table has checked it by now. */
    if (rp__settings_given(&ctx->settings, "RINGPOINT_LOG_LEVEL")) {
        rp__log_set_level((rp_log_level_t)ctx->settings.log_level);
    }
    /* Every variant gives the same bits: one this CPU lacks is only
     * noted, and the automatic choice stays. */
    if (ctx->settings.reduce_isa != RP__REDUCE_ISA_AUTO &&
        !rp__reduce_set_isa((rp__reduce_isa_t)ctx->settings.reduce_isa)) {
        rp_info("RINGPOINT_REDUCE_ISA: this build or CPU lacks that variant; "
                "using %s", rp__reduce_isa_name());
    }
    bset = rp_init_bootstrap_part(&ctx->settings);
    tset = rp_init_transport_part(&ctx->settings);
    rp__fork_fds_note(&fds_before);
    status = rp__bootstrap_init(single, &bset, &ctx->bootstrap);
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
        status = rp__transport_create("ucx", ctx->bootstrap, &tset,
                                      &ctx->transport);
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
    if (ctx->sub != NULL) {
        rp_error("rp_finalize: ctx is %s: free it with rp_comm_free; "
                 "rp_finalize takes the context rp_init returned",
                 ctx->sub->name);
        return;
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
        /* The sub-communicators still live go first (their queued
         * collectives run, ringpoint/subcomm.h): they borrow what follows. */
        rp__subcomm_free_all(ctx);
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
    rp__subcomm_reap(ctx);
    rp__comm_destroy(ctx->comm);
    rp__bootstrap_finalize(ctx->bootstrap);
    /* Last: until here a repeated stop signal must not kill this rank
     * while the others still need it (signal.c). */
    rp__signal_release();
    free(ctx);
}
