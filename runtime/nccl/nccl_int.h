/*
 * Inside the NCCL module: what its files share. The module is its own
 * shared object and cannot call libringpoint's hidden internals; it logs
 * through the host table libringpoint hands it at load time.
 */
#ifndef RP_NCCL_INT_H
#define RP_NCCL_INT_H

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "gpu/gpu.h"

extern const rp__gpu_host_t *rp__nc_host;

#define rp_nc_error(...) rp__nc_host->log(0, __VA_ARGS__)
#define rp_nc_warn(...)  rp__nc_host->log(1, __VA_ARGS__)
#define rp_nc_debug(...) rp__nc_host->log(3, __VA_ARGS__)

/* Log a failed CUDA call @what; returns the status for it. */
rp_status_t rp__nc_cuda_fail(const char *what, cudaError_t err);

#define RP_NC_CUDA(what, call)                                           \
    do {                                                                 \
        cudaError_t rp_nc_e_ = (call);                                   \
        if (rp_nc_e_ != cudaSuccess) {                                   \
            return rp__nc_cuda_fail((what), rp_nc_e_);                   \
        }                                                                \
    } while (0)

/* comm.c */
rp_status_t rp__nc_unique_id(void *uid);
rp_status_t rp__nc_comm_create(const void *uid, int rank, int size,
                               int timeout_ms, rp__gpu_comm_t **comm_p);
void rp__nc_comm_destroy(rp__gpu_comm_t *c);
void rp__nc_comm_abort(rp__gpu_comm_t *c);
rp_status_t rp__nc_allreduce(rp__gpu_comm_t *c, const void *send, void *recv,
                             size_t count, rp_dtype_t dtype, rp_op_t op,
                             void *stream);
rp_status_t rp__nc_broadcast(rp__gpu_comm_t *c, void *buf, size_t bytes,
                             int root, void *stream);
rp_status_t rp__nc_allgather(rp__gpu_comm_t *c, const void *send, void *recv,
                             size_t bytes, void *stream);
rp_status_t rp__nc_group_start(rp__gpu_comm_t *c);
rp_status_t rp__nc_group_end(rp__gpu_comm_t *c);
rp_status_t rp__nc_stream_wait(rp__gpu_comm_t *c, void *stream,
                               int timeout_ms);
rp_status_t rp__nc_event_record(void *stream, void **event_p);
rp_status_t rp__nc_event_wait(rp__gpu_comm_t *c, void *event, int timeout_ms,
                              bool block);
void rp__nc_event_destroy(void *event);

#endif /* RP_NCCL_INT_H */
