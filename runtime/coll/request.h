/*
 * Non-blocking collectives: the request behind an rp_request_h.
 *
 * A request is a small header with an ops table, so that more than one
 * backend can complete requests: the host collectives (a queue run by the
 * communicator's progress thread, progress.c) and, beside them, the GPU
 * module, whose device requests complete with a CUDA event. A backend
 * embeds rp_request as the first member of its own structure, fills in
 * @ops, and from then on rp_test / rp_wait / the freeing in request.c go
 * through the table only; none of them knows which backend runs. Keep this
 * header free of UCX and CUDA types for that reason.
 *
 * Lifetime: created by a start call (rp_iallreduce, ...), handed to the
 * application, and freed by the rp_test that sees it complete or by
 * rp_wait, which then set the application's handle to NULL.
 */
#ifndef RP_COLL_REQUEST_H
#define RP_COLL_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "ringpoint/coll.h"

struct rp_comm;

typedef struct rp__request_ops {
    const char *name; /* for messages: "host", "nccl", ... */
    /* Complete? Never blocks; may advance the backend a little. Once it
     * returned true, req->status is final. */
    bool (*test)(struct rp_request *req);
    /* Block until complete; returns req->status. */
    rp_status_t (*wait)(struct rp_request *req);
    /* Release everything the request holds; called once, after test or
     * wait reported it complete. */
    void (*release)(struct rp_request *req);
} rp__request_ops_t;

struct rp_request {
    const rp__request_ops_t *ops;
    rp_status_t status; /* valid once the backend says complete */
};

/* What the host queue runs (the kinds of host collective). */
typedef enum rp__coll_kind {
    RP__COLL_ALLREDUCE,
    RP__COLL_ALLREDUCE_GROUP,
    RP__COLL_BROADCAST,
    RP__COLL_ALLGATHER,
    RP__COLL_BARRIER,
} rp__coll_kind_t;

/* A host collective's arguments, checked already, in the communicator's
 * units (bytes for broadcast and allgather). The grouped allreduce's
 * arrays are copies owned by the request, so the caller's may go away. */
typedef struct rp__coll_args {
    rp__coll_kind_t kind;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* elements; bytes (per rank) for broadcast/allgather */
    rp_dtype_t dtype;
    rp_op_t op;
    int root;
    const void *const *sendbufs;
    void *const *recvbufs;
    const size_t *counts;
    size_t nbufs;
    rp_compression_t compression; /* resolved: never DEFAULT */
    uint64_t signature; /* non-zero: check it across ranks first */
} rp__coll_args_t;

/* The ranks' signatures of one call agree? RP_ERR_MISMATCH on every rank
 * when they do not (one 16-byte allreduce). */
rp_status_t rp__coll_check(struct rp_comm *c, uint64_t signature);

/* Run one host collective on the calling thread (the blocking calls and
 * the progress thread alike). */
rp_status_t rp__coll_run(struct rp_comm *c, const rp__coll_args_t *a);

/* Queue @a on the communicator's progress thread and return its request;
 * the grouped arrays are copied. */
rp_status_t rp__coll_start(struct rp_comm *c, const rp__coll_args_t *a,
                           rp_request_h *req_p);

#endif /* RP_COLL_REQUEST_H */
