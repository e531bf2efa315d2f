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

#endif /* RP_COLL_REQUEST_H */
