/*
 * The GPU path of a context: settings, the lazy communicator, and the
 * collectives on device buffers. See path.h.
 */
#include "config.h"

#include "gpu/path.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringpoint/cuda.h"
#include "coll/backend.h"
#include "coll/comm.h"
#include "core/context.h"
#include "util/log.h"

static rp_status_t rp_gpu_comm_ready(rp_context_h ctx, const char *what);

rp_status_t rp__gpu_init(rp_context_h ctx)
{
    rp__gpu_t *g = calloc(1, sizeof(*g));
    uint64_t ms = ctx->settings.coll_timeout_s * 1000u;

    if (g == NULL) {
        rp_error("rp_init: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    /* RINGPOINT_GPU and _GPU_MODULE, checked by the settings table. */
    g->mode = (rp__gpu_mode_t)ctx->settings.gpu_mode;
    rp__gpu_module_set_path(ctx->settings.gpu_module);
    g->timeout_ms = ms > INT_MAX ? INT_MAX : (int)ms;
    ctx->gpu = g;
    /* Even with RINGPOINT_GPU=off: device memory is then an error that
     * the backend's claim reports. */
    ctx->coll_device = &rp__gpu_coll_backend;
    if (g->mode == RP_GPU_MODE_ON) {
        return rp_gpu_comm_ready(ctx, "rp_init (RINGPOINT_GPU=on)");
    }
    return RP_OK;
}

void rp__gpu_finalize(rp_context_h ctx)
{
    rp__gpu_t *g = ctx->gpu;

    if (g == NULL) {
        return;
    }
    if (g->comm != NULL) {
        /* A host-side failure means a peer is gone: NCCL would wait for it
         * forever, so abort rather than drain. */
        if (ctx->comm != NULL && ctx->comm->broken != RP_OK) {
            g->ops->comm_abort(g->comm);
        }
        g->ops->comm_destroy(g->comm);
    }
    free(g);
    ctx->gpu = NULL;
    ctx->coll_device = NULL;
}

rp_status_t rp__gpu_local(rp_context_h ctx, const char *what,
                          const rp__gpu_ops_t **ops_p)
{
    rp__gpu_t *g = ctx->gpu;
    rp__gpu_env_t env;
    char err[384];
    rp_status_t rc;

    if (!g->local_tried) {
        g->local_tried = true;
        g->local_status = RP_ERR_NOT_SUPPORTED;
        if (g->mode == RP_GPU_MODE_OFF) {
            snprintf(g->why, sizeof(g->why), "RINGPOINT_GPU=off");
        } else if ((g->ops = rp__gpu_module(g->why, sizeof(g->why))) != NULL &&
                   g->ops->probe(&env.visible, err, sizeof(err)) != RP_OK) {
            snprintf(g->why, sizeof(g->why), "%s", err);
        } else if (g->ops != NULL) {
            rp__gpu_env_read(&env, ctx->settings.gpu_device);
            env.local_rank = ctx->bootstrap->local_rank;
            env.local_size = ctx->bootstrap->local_size;
            rc = rp__gpu_bind_resolve(&env, &g->bind, err, sizeof(err));
            if (rc != RP_OK) {
                snprintf(g->why, sizeof(g->why), "%s", err);
                g->local_status = rc;
            } else {
                g->local_status = g->ops->bind(g->bind.device);
                if (g->local_status != RP_OK) {
                    snprintf(g->why, sizeof(g->why), "cannot use GPU %d",
                             g->bind.device);
                } else {
                    rp_info("GPU: device %d (physical %s): %s", g->bind.device,
                            g->bind.physical, g->bind.how);
                }
            }
        }
        if (g->local_status != RP_OK) {
            rp_error("%s: no GPU path on this task: %s", what, g->why);
        }
    }
    if (ops_p != NULL) {
        *ops_p = g->ops;
    }
    return g->local_status;
}

/* A host collective of the GPU path's own (host buffers), through the host
 * backend: never the public API, which would dispatch back here. */
static rp_status_t rp_gpu_host(rp_context_h ctx, rp__coll_args_t a)
{
    return rp__coll_host_backend.run(ctx, &a, "GPU");
}

/* Every rank's local verdict, so that all fail together (and say which
 * ranks are to blame) instead of some waiting in NCCL for the others. */
static rp_status_t rp_gpu_agree(rp_context_h ctx, rp_status_t mine)
{
    int size = ctx->bootstrap->size, bad = 0;
    int32_t me = (int32_t)mine, *all;
    rp_status_t rc;

    if (size == 1) {
        return mine;
    }
    all = calloc((size_t)size, sizeof(*all));
    if (all == NULL) {
        rp_error("GPU: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    rc = rp_gpu_host(ctx, (rp__coll_args_t){
        .kind = RP__COLL_ALLGATHER, .sendbuf = &me, .recvbuf = all,
        .count = sizeof(me), .dtype = RP_DTYPE_INT32});
    for (int r = 0; rc == RP_OK && r < size; r++) {
        if (all[r] != RP_OK) {
            if (mine == RP_OK && bad < 8) {
                rp_error("GPU: rank %d has no GPU path (its log says why)", r);
            }
            bad++;
        }
    }
    free(all);
    if (rc == RP_OK && bad > 0) {
        rc = mine != RP_OK ? mine : RP_ERR_NOT_SUPPORTED;
    }
    return rc;
}

static rp_status_t rp_gpu_comm_ready(rp_context_h ctx, const char *what)
{
    rp__gpu_t *g = ctx->gpu;
    unsigned char uid[RP_GPU_UID_BYTES];
    rp_status_t rc;

    if (g->comm_tried) {
        return g->comm_status;
    }
    g->comm_tried = true;
    rc = rp_gpu_agree(ctx, rp__gpu_local(ctx, what, NULL));
    if (rc == RP_OK) {
        memset(uid, 0, sizeof(uid));
        if (ctx->bootstrap->rank == 0) {
            rc = g->ops->unique_id(uid);
        }
        /* Agreed on before the fence: a rank 0 that cannot make the id
         * must not leave the others waiting there. */
        rc = rp_gpu_agree(ctx, rc);
    }
    if (rc == RP_OK) {
        int32_t got = rp__gpu_uid_exchange(ctx->bootstrap, g->gen++, uid,
                                           sizeof(uid)) == RP_OK;

        /* Slurm's PMIx server (direct modex) caches a rank's data at the
         * first fetch, so a rank whose node fetched rank 0's card at
         * start-up may not see a key published later. Every rank learns
         * whether all got the id; if not, rank 0 sends it over the host
         * collectives instead. */
        rc = rp_gpu_host(ctx, (rp__coll_args_t){
            .kind = RP__COLL_ALLREDUCE, .sendbuf = &got, .recvbuf = &got,
            .count = 1, .dtype = RP_DTYPE_INT32, .op = RP_OP_MIN});
        if (rc == RP_OK && !got) {
            rp_warn("GPU: the NCCL id did not reach every rank through PMIx; "
                    "rank 0 broadcasts it over the host transport");
            rc = rp_gpu_host(ctx, (rp__coll_args_t){
                .kind = RP__COLL_BROADCAST, .recvbuf = uid,
                .count = sizeof(uid), .dtype = RP_DTYPE_UINT8, .root = 0});
        }
    }
    if (rc == RP_OK) {
        rc = g->ops->comm_create(uid, ctx->bootstrap->rank,
                                 ctx->bootstrap->size, g->timeout_ms, &g->comm);
    }
    if (rc == RP_OK) {
        rp_debug("GPU: NCCL communicator of %d ranks ready",
                 ctx->bootstrap->size);
    }
    g->comm_status = rc;
    return rc;
}

rp_status_t rp__gpu_classify(rp_context_h ctx, const char *what,
                             const void *const *ptrs, size_t n, bool *device_p)
{
    size_t ndev = 0, nptr = 0;

    for (size_t i = 0; i < n; i++) {
        if (ptrs[i] != NULL) {
            nptr++;
            ndev += rp__gpu_probe_is_device(ptrs[i]);
        }
    }
    *device_p = ndev > 0;
    if (ndev == 0) {
        return RP_OK;
    }
    if (ndev != nptr) {
        rp_error("%s: host and device memory in one call (%zu of %zu buffers "
                 "are on the GPU): pass all buffers on the device or all on "
                 "the host", what, ndev, nptr);
        return RP_ERR_INVALID_ARG;
    }
    if (ctx->gpu->mode == RP_GPU_MODE_OFF) {
        rp_error("%s: device memory, but RINGPOINT_GPU=off", what);
        return RP_ERR_NOT_SUPPORTED;
    }
    return RP_OK;
}

/* Ready to enqueue on @p's device: the communicator exists and the buffer
 * lives on the GPU this task is bound to (NCCL's communicator is tied to
 * one device; another one would fail deep inside NCCL). */
static rp_status_t rp_gpu_ready(rp_context_h ctx, const char *what,
                                const void *p)
{
    rp__gpu_t *g = ctx->gpu;
    rp_status_t rc = rp_gpu_comm_ready(ctx, what);
    int dev = -1;

    if (rc != RP_OK) {
        return rc;
    }
    if (g->ops->mem_kind(p, &dev) == 1 && dev != g->bind.device) {
        rp_error("%s: the buffer is on CUDA device %d, but this task is bound "
                 "to device %d (%s): allocate on the device rp_cuda_device() "
                 "returns", what, dev, g->bind.device, g->bind.how);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

rp_status_t rp__gpu_allreduce(rp_context_h ctx, const void *send, void *recv,
                              size_t count, rp_dtype_t dtype, rp_op_t op)
{
    rp__gpu_t *g = ctx->gpu;
    rp_status_t rc;

    if (count == 0) {
        return RP_OK;
    }
    rc = rp_gpu_ready(ctx, "rp_allreduce", recv);
    if (rc != RP_OK) {
        return rc;
    }
    return g->ops->allreduce(g->comm, send, recv, count, dtype, op, g->stream);
}

rp_status_t rp__gpu_allreduce_group(rp_context_h ctx,
                                    const void *const *sends,
                                    void *const *recvs, const size_t *counts,
                                    size_t n, rp_dtype_t dtype, rp_op_t op)
{
    rp__gpu_t *g = ctx->gpu;
    rp_status_t rc = RP_OK, end;
    size_t first = 0;

    while (first < n && counts[first] == 0) {
        first++;
    }
    if (first == n) {
        return RP_OK;
    }
    rc = rp_gpu_ready(ctx, "rp_allreduce_group", recvs[first]);
    if (rc == RP_OK) {
        rc = g->ops->group_start(g->comm);
    }
    if (rc != RP_OK) {
        return rc;
    }
    /* NCCL fuses the group into one launch itself: no packing copy. */
    for (size_t i = first; i < n && rc == RP_OK; i++) {
        if (counts[i] > 0) {
            rc = g->ops->allreduce(g->comm, sends[i], recvs[i], counts[i],
                                   dtype, op, g->stream);
        }
    }
    end = g->ops->group_end(g->comm);
    return rc != RP_OK ? rc : end;
}

rp_status_t rp__gpu_broadcast(rp_context_h ctx, void *buf, size_t bytes,
                              int root)
{
    rp__gpu_t *g = ctx->gpu;
    rp_status_t rc;

    if (bytes == 0) {
        return RP_OK;
    }
    rc = rp_gpu_ready(ctx, "rp_broadcast", buf);
    if (rc != RP_OK) {
        return rc;
    }
    return g->ops->broadcast(g->comm, buf, bytes, root, g->stream);
}

rp_status_t rp__gpu_allgather(rp_context_h ctx, const void *send, void *recv,
                              size_t bytes)
{
    rp__gpu_t *g = ctx->gpu;
    rp_status_t rc;

    if (bytes == 0) {
        return RP_OK;
    }
    rc = rp_gpu_ready(ctx, "rp_allgather", recv);
    if (rc != RP_OK) {
        return rc;
    }
    return g->ops->allgather(g->comm, send, recv, bytes, g->stream);
}

rp_status_t rp__gpu_drain(rp_context_h ctx, void *stream)
{
    rp__gpu_t *g = ctx->gpu;

    return g->ops->stream_wait(g->comm, stream, g->timeout_ms);
}

/* ---- the public calls of ringpoint/cuda.h ---- */

rp_status_t rp_cuda_set_stream(rp_context_h ctx, void *stream)
{
    if (ctx == NULL) {
        rp_error("rp_cuda_set_stream: ctx is NULL");
        return RP_ERR_INVALID_ARG;
    }
    ctx->gpu->stream = stream;
    return RP_OK;
}

rp_status_t rp_cuda_device(rp_context_h ctx, int *device_p)
{
    rp_status_t rc;

    if (ctx == NULL || device_p == NULL) {
        rp_error("rp_cuda_device: NULL %s", ctx == NULL ? "ctx" : "device_p");
        return RP_ERR_INVALID_ARG;
    }
    rc = rp__gpu_local(ctx, "rp_cuda_device", NULL);
    if (rc == RP_OK) {
        *device_p = ctx->gpu->bind.device;
    }
    return rc;
}
