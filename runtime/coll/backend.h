/*
 * Who runs a collective. The public entry points (api.c) check the
 * arguments, then hand the described call to one backend through this
 * table: the host rings (host.c), or a device backend the context was
 * given at rp_init (the GPU module, runtime/gpu/coll.c). Dispatch goes one
 * way only: a backend never calls the public API. A backend that needs
 * host collectives of its own (the GPU path agreeing on its NCCL id, the
 * cross-rank signature check) calls the host backend's table, which it
 * finds in the context; so coll/ knows no backend by name and never
 * includes gpu/ or nccl/ headers.
 */
#ifndef RP_COLL_BACKEND_H
#define RP_COLL_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#include "coll/dispatch.h"
#include "coll/request.h"

struct rp_context;
struct iovec;

typedef struct rp__coll_backend {
    const char *name; /* "host", "nccl": for messages */
    /* Does this backend run @a? RP_OK with *@mine_p set, or the error
     * that ends the call (host and device memory mixed, device memory
     * without a GPU path). @what names the public call for messages.
     * NULL: it runs everything. */
    rp_status_t (*claim)(struct rp_context *ctx, const rp__coll_args_t *a,
                         const char *what, bool *mine_p);
    /* Blocking: runs on the caller's thread, in order after every
     * non-blocking call started before it. */
    rp_status_t (*run)(struct rp_context *ctx, const rp__coll_args_t *a,
                       const char *what);
    /* Non-blocking: *@req_p completes with the operation. */
    rp_status_t (*start)(struct rp_context *ctx, const rp__coll_args_t *a,
                         const char *what, rp_request_h *req_p);
} rp__coll_backend_t;

/* The host rings (coll/host.c): every context has them. */
extern const rp__coll_backend_t rp__coll_host_backend;

/* The host backend's cross-rank argument check (rp__coll_check), in order
 * after the non-blocking host collectives queued before it; for a device
 * backend, which checks on the host before it enqueues. */
rp_status_t rp__coll_host_check(struct rp_context *ctx, uint64_t signature);

/* rp_join on the host, in order after the queued non-blocking
 * collectives (join.c). */
rp_status_t rp__coll_host_join(struct rp_context *ctx, int *last_p);

/* Every rank's @src to every rank, rank q's bytes landing in the pieces
 * @iov[q][0..@niov[q]) of host memory, this rank's own included: one copy
 * of each byte, each rank reading its node's peers' buffers where they
 * lie (shm.h's cross-memory attach). For the restore, which rebuilds the
 * registered regions from the ranks' stripes straight into place. Runs
 * on the caller's thread, after the queued non-blocking collectives.
 * RP_ERR_NOT_SUPPORTED, on every rank alike and with nothing moved, where
 * the job has no such path (ranks on several nodes, no cross-memory
 * attach, shared memory off): the caller then moves the bytes itself. */
rp_status_t rp__coll_host_allgather_iov(struct rp_context *ctx,
                                        const void *src,
                                        const struct iovec *const *iov,
                                        const size_t *niov);

#endif /* RP_COLL_BACKEND_H */
