/*
 * Device buffers for the tools: ringpoint-bench's device mode allocates,
 * fills, copies and waits on GPU memory without linking CUDA, through the
 * GPU module's ops table. Everything runs on one private stream of the
 * context, which the collectives use too (rp_cuda_set_stream), so a wait
 * on it covers the copies and the NCCL work alike.
 */
#ifndef RP_GPU_DEVBUF_H
#define RP_GPU_DEVBUF_H

#include <stddef.h>

#include "ringpoint/context.h"
#include "ringpoint/status.h"

/* Start this task's GPU path (module, CUDA, its GPU) and give the context
 * a private stream. RP_ERR_NOT_SUPPORTED, quietly and with the reason in
 * @why, when this machine has no GPU path at all (RINGPOINT_GPU=off, no
 * module, no driver, no device): a caller reports that as a skip. Any
 * other error (tasks and GPUs do not match) is logged, naming @what. */
rp_status_t rp__gpu_devbuf_open(rp_context_h ctx, const char *what, char *why,
                                size_t whylen);

/* Wait for the stream, hand the context back the default stream and
 * destroy the private one. Only after a successful open. */
void rp__gpu_devbuf_close(rp_context_h ctx);

/* The rest only after a successful open. */
rp_status_t rp__gpu_devbuf_alloc(rp_context_h ctx, size_t bytes, void **p);
void rp__gpu_devbuf_free(rp_context_h ctx, void *p); /* NULL-safe */

/* Enqueued on the context's stream: set @bytes of device memory @p to
 * @byte; copy @bytes between host and device memory either way (the
 * direction is taken from the pointers). */
rp_status_t rp__gpu_devbuf_set(rp_context_h ctx, void *p, int byte,
                               size_t bytes);
rp_status_t rp__gpu_devbuf_copy(rp_context_h ctx, void *dst, const void *src,
                                size_t bytes);

/* Wait until the context's stream ran everything enqueued so far, NCCL's
 * collectives included, within the collective timeout. */
rp_status_t rp__gpu_devbuf_sync(rp_context_h ctx);

#endif /* RP_GPU_DEVBUF_H */
