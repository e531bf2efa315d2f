/*
 * Transport: tagged, non-blocking point-to-point messages between the ranks
 * of a job, on contiguous host buffers. The collectives above see only this
 * ops table, so a second implementation (NCCL, for device memory) can sit
 * beside UCX without them knowing which one runs. No UCX type appears here.
 *
 * Model: a transport is created before the bootstrap fence (it publishes its
 * address under a key of its own) and connects to a peer lazily, the first
 * time a message goes to or comes from it, so a rank only ever holds
 * endpoints to the few peers its algorithms use.
 *
 * Requests are caller-owned rp_treq_t structures; the transport marks them
 * done from inside progress(). A request that is abandoned after an error
 * must stay allocated until the transport is destroyed, because a late
 * completion still writes to it.
 */
#ifndef RP_TRANSPORT_H
#define RP_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "bootstrap/bootstrap.h"

/* Receive from whichever rank sends first (failure notices). */
#define RP_TRANSPORT_ANY_PEER (-1)

/* Tags carry 44 bits of the caller's choosing; the transport adds the
 * sender so that a receive can name its source. */
#define RP_TRANSPORT_TAG_BITS 44
#define RP_TRANSPORT_TAG_MASK ((UINT64_C(1) << RP_TRANSPORT_TAG_BITS) - 1)

typedef struct rp_treq {
    bool done;
    rp_status_t status; /* valid once done */
    int peer;           /* the rank sent to or received from */
    bool send;          /* a send (true) or a receive */
    size_t len;         /* bytes asked for; on a receive, bytes received */
    void *impl;         /* the implementation's handle while in flight */
} rp_treq_t;

typedef struct rp_transport rp_transport_t;

typedef struct rp_transport_ops {
    const char *name;
    /* Make sure an endpoint to @peer exists (idempotent; isend/irecv call
     * it too, this is for connecting ahead of the first message). */
    rp_status_t (*connect)(rp_transport_t *tp, int peer);
    /* Start sending @len bytes to @peer. @buf must stay untouched until
     * @req is done. */
    rp_status_t (*isend)(rp_transport_t *tp, int peer, uint64_t tag,
                         const void *buf, size_t len, rp_treq_t *req);
    /* Start receiving exactly @len bytes from @peer (or ANY_PEER); a
     * longer message completes the request with an error. */
    rp_status_t (*irecv)(rp_transport_t *tp, int peer, uint64_t tag,
                         void *buf, size_t len, rp_treq_t *req);
    /* Cancel a request still in flight (best effort; used on errors). */
    void (*cancel)(rp_transport_t *tp, rp_treq_t *req);
    /* Advance communication without blocking; returns true if anything
     * happened. */
    bool (*progress)(rp_transport_t *tp);
    /* Sleep until there may be something to progress, at most @timeout_ms.
     * Call only after progress() returned false. */
    void (*block)(rp_transport_t *tp, int timeout_ms);
    /* RP_OK, or the error a failed connection to @peer reported. */
    rp_status_t (*peer_status)(rp_transport_t *tp, int peer);
    /* Before a collective returns: hand over what this process still owes
     * its peers for messages that completed here (a rendezvous receiver's
     * acknowledgement waits in a queue until the worker is progressed,
     * and the sender's request with it). Bounded; NULL: nothing owed. */
    void (*flush)(rp_transport_t *tp);
    /* After a wait for @peer timed out: log what may tell a lost message
     * from one that sits unread (NULL: nothing to say). */
    void (*describe_stall)(rp_transport_t *tp, int peer);
    void (*destroy)(rp_transport_t *tp);
} rp_transport_ops_t;

struct rp_transport {
    const rp_transport_ops_t *ops;
    rp_bootstrap_t *bs; /* borrowed; outlives the transport */
    int rank;
    int size;
    /* The pipelining unit this transport prefers, or 0 for the
     * collectives' default. Derived only from what every rank of a job
     * sees alike (the environment the launcher hands to all), because
     * sender and receiver must cut messages the same way. */
    size_t seg_hint;
    void *impl;
};

/* The transport's settings, filled in by rp_init from the settings table
 * (the transport does not read the environment for RINGPOINT_*). */
typedef struct rp__transport_settings {
    uint64_t peer_timeout_s; /* RINGPOINT_PEER_TIMEOUT; 0: no pings */
    bool peer_errmode;       /* RINGPOINT_UCX_PEER_ERRMODE given */
    int oversubscribed;      /* RINGPOINT_COLL_OVERSUBSCRIBED: 1, 0;
                                -1: more ranks on the node than CPUs */
    const char *ucx_module;  /* RINGPOINT_UCX_MODULE; "": the installed one */
    bool ucx_config_cwd;     /* RINGPOINT_UCX_CONFIG_CWD: UCX may read
                                ./ucx.conf */
} rp__transport_settings_t;

/* Create the host-memory transport ("ucx") and publish its address through
 * @bs. Call before the bootstrap fence that makes puts visible; connecting
 * to a peer reads that peer's address afterwards. The first call opens the
 * UCX module (module.h); one that cannot be opened fails the call with
 * RP_ERR_NOT_SUPPORTED, its path and reason logged. */
rp_status_t rp__transport_create(const char *name, rp_bootstrap_t *bs,
                                 const rp__transport_settings_t *set,
                                 rp_transport_t **tp_p);

/* Destroy; NULL is ignored. */
void rp__transport_destroy(rp_transport_t *tp);

#endif /* RP_TRANSPORT_H */
