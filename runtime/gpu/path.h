/*
 * The GPU path of one context: the state behind the public calls when they
 * are given device memory. The communicator is created lazily, at the
 * first collective on device buffers (every rank reaches it together, as
 * collectives are called in the same order everywhere), or at rp_init with
 * RINGPOINT_GPU=on.
 *
 * RINGPOINT_GPU: auto (default: the GPU path starts when device memory
 * first appears), on (start at rp_init, fail rp_init if it cannot),
 * off (device memory is an error; the module is never loaded).
 */
#ifndef RP_GPU_PATH_H
#define RP_GPU_PATH_H

#include <stdbool.h>
#include <stddef.h>

#include "gpu/gpu.h"

struct rp_context;

typedef enum rp__gpu_mode {
    RP_GPU_MODE_AUTO = 0,
    RP_GPU_MODE_ON = 1,
    RP_GPU_MODE_OFF = 2
} rp__gpu_mode_t;

typedef struct rp__gpu {
    rp__gpu_mode_t mode;
    int timeout_ms;           /* RINGPOINT_COLL_TIMEOUT, 0: never */
    void *stream;             /* the application's (rp_cuda_set_stream) */

    /* This task's side: module, CUDA, its GPU. Tried once. */
    bool local_tried;
    rp_status_t local_status;
    const rp__gpu_ops_t *ops;
    rp__gpu_binding_t bind;
    char why[512];            /* why local_status is not RP_OK */

    /* The communicator over all ranks. Tried once. */
    bool comm_tried;
    rp_status_t comm_status;
    rp__gpu_comm_t *comm;
    unsigned gen;             /* communicators created (the uid key) */
} rp__gpu_t;

/* Read RINGPOINT_GPU (RP_ERR_INVALID_ARG if malformed) and, with "on",
 * start the GPU path (collective). */
rp_status_t rp__gpu_init(struct rp_context *ctx);

/* Drain or abort the communicator and free the state; NULL-safe. */
void rp__gpu_finalize(struct rp_context *ctx);

/* This task's GPU path: module loaded, CUDA started, device bound. Local,
 * not collective (checkpoint regions use it). @what names the caller in
 * the error, logged once. */
rp_status_t rp__gpu_local(struct rp_context *ctx, const char *what,
                          const rp__gpu_ops_t **ops_p);

/* Are the @n pointers (NULLs ignored) device memory? *@device_p is set;
 * host and device mixed is RP_ERR_INVALID_ARG, device memory with
 * RINGPOINT_GPU=off RP_ERR_NOT_SUPPORTED. Cheap on the host path. */
rp_status_t rp__gpu_classify(struct rp_context *ctx, const char *what,
                             const void *const *ptrs, size_t n,
                             bool *device_p);

/* The public collectives on device buffers (arguments already checked). */
rp_status_t rp__gpu_allreduce(struct rp_context *ctx, const void *send,
                              void *recv, size_t count, rp_dtype_t dtype,
                              rp_op_t op);
rp_status_t rp__gpu_allreduce_group(struct rp_context *ctx,
                                    const void *const *sends,
                                    void *const *recvs, const size_t *counts,
                                    size_t n, rp_dtype_t dtype, rp_op_t op);
rp_status_t rp__gpu_broadcast(struct rp_context *ctx, void *buf, size_t bytes,
                              int root);
rp_status_t rp__gpu_allgather(struct rp_context *ctx, const void *send,
                              void *recv, size_t bytes);

/* The collectives backend of the GPU path (coll/backend.h), which
 * rp__gpu_init gives the context: it claims calls on device buffers (and
 * fails those mixing host and device memory) and runs them on NCCL. */
struct rp__coll_backend;
extern const struct rp__coll_backend rp__gpu_coll_backend;

/* Wait for the application's stream (and the NCCL work on it) within the
 * collective timeout; on failure the communicator is aborted. Used before
 * a checkpoint snapshot reads device memory. */
rp_status_t rp__gpu_drain(struct rp_context *ctx, void *stream);

#endif /* RP_GPU_PATH_H */
