/*
 * Device buffers for the tools, through the GPU module. See devbuf.h.
 */
#include "config.h"

#include "gpu/devbuf.h"

#include <stdio.h>

#include "core/context.h"
#include "gpu/path.h"

rp_status_t rp__gpu_devbuf_open(rp_context_h ctx, const char *what, char *why,
                                size_t whylen)
{
    rp__gpu_t *g = ctx->gpu;
    const rp__gpu_ops_t *ops;
    void *stream = NULL;
    int ndev = 0;
    rp_status_t rc;

    /* The reasons a machine has no GPU path are asked here first, without
     * logging: rp__gpu_local would log them as errors, and for a tool on a
     * machine without a GPU they are a skip, said once by the caller. */
    if (g->mode == RP_GPU_MODE_OFF) {
        snprintf(why, whylen, "RINGPOINT_GPU=off");
        return RP_ERR_NOT_SUPPORTED;
    }
    ops = rp__gpu_module(why, whylen);
    if (ops == NULL || ops->probe(&ndev, why, whylen) != RP_OK) {
        return RP_ERR_NOT_SUPPORTED;
    }
    /* A GPU is there: from here on a failure is an error. */
    rc = rp__gpu_local(ctx, what, NULL);
    if (rc != RP_OK) {
        snprintf(why, whylen, "%s", g->why);
        return rc == RP_ERR_NOT_SUPPORTED ? RP_ERR_TRANSPORT : rc;
    }
    rc = ops->stream_create(&stream);
    if (rc != RP_OK) {
        snprintf(why, whylen, "cannot create a CUDA stream");
        return rc;
    }
    g->stream = stream;
    return RP_OK;
}

void rp__gpu_devbuf_close(rp_context_h ctx)
{
    rp__gpu_t *g = ctx->gpu;
    void *stream = g->stream;

    (void)rp__gpu_devbuf_sync(ctx);
    g->stream = NULL;
    g->ops->stream_destroy(stream);
}

rp_status_t rp__gpu_devbuf_alloc(rp_context_h ctx, size_t bytes, void **p)
{
    return ctx->gpu->ops->dev_alloc(bytes, p);
}

void rp__gpu_devbuf_free(rp_context_h ctx, void *p)
{
    ctx->gpu->ops->dev_free(p);
}

rp_status_t rp__gpu_devbuf_set(rp_context_h ctx, void *p, int byte,
                               size_t bytes)
{
    rp__gpu_t *g = ctx->gpu;

    return bytes == 0 ? RP_OK : g->ops->dev_memset(p, byte, bytes, g->stream);
}

rp_status_t rp__gpu_devbuf_copy(rp_context_h ctx, void *dst, const void *src,
                                size_t bytes)
{
    rp__gpu_t *g = ctx->gpu;

    return bytes == 0 ? RP_OK : g->ops->copy_async(dst, src, bytes, g->stream);
}

rp_status_t rp__gpu_devbuf_sync(rp_context_h ctx)
{
    rp__gpu_t *g = ctx->gpu;

    /* The communicator (NULL before the first collective) is watched for
     * NCCL's asynchronous errors while the stream drains. */
    return g->ops->stream_wait(g->comm, g->stream, g->timeout_ms);
}
