/*
 * Inside the UCX module: the state its files share. The module is its own
 * shared object (see module.h); its files are
 *
 *   ucx_module.c  the entry point, the ops table, what the host lends
 *   ucx_setup.c   context, worker, address exchange, endpoints, teardown
 *   ucx_tune.c    the choices made for TCP networks: rendezvous
 *                 threshold, network devices, segment size
 *   ucx_data.c    the data path: send, receive, cancel, progress, wait,
 *                 peer failures, flush
 *   ucx_stall.c   what a stalled wait logs about the TCP connections
 *
 * One context and one worker per process, used by one thread at a time:
 * the application's, or the progress thread of the non-blocking
 * collectives (never both at once). The worker address goes through
 * the bootstrap under RP_UCX_ADDR_KEY, behind a small header saying which
 * host and process published it; endpoints are created on first use.
 *
 * Dead peers: to another host the endpoint uses UCX's PEER error mode, so
 * a peer that dies fails the requests to it instead of leaving them pending.
 * UCX 1.13 offers that mode on no shared-memory transport (asking for it
 * moves same-host traffic to TCP over loopback, whose latency is many times
 * shared memory's; doc/reliability.md), so to a peer on the same host the
 * endpoint keeps the default mode and the peer's liveness is checked by
 * its pid instead, when the boot id and pid namespace show the pid means
 * the same process to both. RINGPOINT_UCX_PEER_ERRMODE=1 forces the PEER
 * mode everywhere.
 *
 * Waiting is the caller's loop of progress() then block(): block() arms the
 * worker and sleeps on its event descriptor, so ranks that outnumber the
 * cores sleep instead of spinning each other off the CPU.
 */
#ifndef RP_TRANSPORT_UCX_INT_H
#define RP_TRANSPORT_UCX_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include <ucp/api/ucp.h>

#include "transport/liveness.h"
#include "transport/transport.h"

/* The key of a transport's address is "ringpoint.ucx.addr.<generation>",
 * the bootstrap's: a process that finalizes and initializes again
 * (ringpoint.torch's shutdown() then init()) publishes under a new key,
 * because the PMIx client and server keep a peer's data once fetched and
 * would hand out the first context's stale address (a destroyed worker's:
 * "shmat ... Invalid argument") under the old one. */
#define RP_UCX_ADDR_KEY "ringpoint.ucx.addr"
/* How long rp__transport_destroy waits for endpoints to flush before it
 * closes them by force (a peer that died never answers a flush). */
#define RP_UCX_CLOSE_TIMEOUT_NS (2ULL * 1000 * 1000 * 1000)
/* A receive at least this long may have come by rendezvous, whose
 * acknowledgement the receiver owes the sender (UCX's thresholds start
 * above this on every transport). */
#define RP_UCX_OWED_MIN_BYTES 4096
/* How long flush() waits for the peers to take what is owed them: they
 * are inside the same collective, progressing, unless they failed. */
#define RP_UCX_FLUSH_TIMEOUT_NS (10ULL * 1000 * 1000 * 1000)

#define RP_UCX_CARD_MAGIC 0x72707532u /* "rpu2" */

/* Published before the worker address. */
typedef struct rp_ucx_card {
    uint32_t magic;
    uint32_t pid;
    uint64_t pidns;    /* inode of /proc/self/ns/pid */
    uint64_t netns;    /* inode of /proc/self/ns/net */
    char boot_id[40];  /* /proc/sys/kernel/random/boot_id */
    char node[32];     /* Slurm's node name, or the host name: messages */
    rp_live_card_t live;
} rp_ucx_card_t;

typedef struct rp_ucx_peer {
    struct rp_ucx *ucx;
    int rank;
    ucp_ep_h ep;
    rp_status_t status; /* RP_ERR_PEER_FAILED once a failure was seen */
    ucs_status_t error; /* what UCX said of the failure, if it did */
    bool unreachable;   /* no endpoint could be made: not tried again */
    bool pid_gone;      /* its pid was seen gone once: see peer_status */
    pid_t pid;          /* > 0: same host, liveness checked by pid */
    char node[32];      /* where it runs, for messages */
    char addr[16];      /* the address its host is pinged at */
} rp_ucx_peer_t;

typedef struct rp_ucx {
    ucp_context_h context;
    ucp_worker_h worker;
    int efd;
    rp_ucx_peer_t *peers; /* one per rank; ep NULL until connected */
    /* A request failed or was cancelled: some may never complete, and UCX
     * refuses to destroy endpoints with requests pending, so close them all
     * by force rather than by flush. */
    bool dirty;
    /* A lost peer was reported: those that follow (peers closing down
     * after it) are not news. */
    bool reported;
    /* A large receive since the last flush: its acknowledgement may still
     * be queued in the worker. */
    bool owed;
    /* The shortest receive that may come by rendezvous: the threshold
     * ucx_tune.c set, else RP_UCX_OWED_MIN_BYTES. Below it nothing is
     * owed, and a flush would cost a round trip for nothing: over TCP
     * that is a large share of a small collective's time. */
    size_t owed_min;
    rp_ucx_card_t card; /* this process's */
    char key[48];       /* where the addresses are published */
    rp_live_t *live;    /* pings remote peers' hosts; NULL: off */
    uint64_t live_timeout_s;
    bool peer_errmode;  /* RINGPOINT_UCX_PEER_ERRMODE: on the same host too */
    int oversubscribed; /* RINGPOINT_COLL_OVERSUBSCRIBED: 1, 0; -1: count */
} rp_ucx_t;

static inline uint64_t rp__ucx_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* ucx_setup.c */

/* Create the transport: context, worker, address published through @bs,
 * with the settings rp_init read (@set). Its ops are the caller's to set. */
rp_status_t rp__ucx_create(rp_bootstrap_t *bs,
                           const rp__transport_settings_t *set,
                           rp_transport_t **tp_p);

/* Create the endpoint to @rank if there is none yet. With @for_recv a
 * peer that UCX cannot reach is recorded, not reported: see rp__ucx_irecv. */
rp_status_t rp__ucx_connect_ep(rp_transport_t *tp, int rank, bool for_recv);

rp_status_t rp__ucx_connect(rp_transport_t *tp, int rank);
void rp__ucx_destroy(rp_transport_t *tp);

/* ucx_tune.c */

/* Set what the network calls for in @config (rendezvous threshold,
 * network devices) and return the shortest receive that may come by
 * rendezvous (see rp_ucx_t.owed_min). @oversubscribed: as
 * RINGPOINT_COLL_OVERSUBSCRIBED (1, 0; -1: judged by the CPU count), so
 * that the transport and the collectives agree. */
size_t rp__ucx_tune_config(const rp_bootstrap_t *bs, int oversubscribed,
                           ucp_config_t *config);

/* The transport's seg_hint (see struct rp_transport). */
size_t rp__ucx_seg_hint(void);

/* ucx_data.c */
rp_status_t rp__ucx_isend(rp_transport_t *tp, int peer, uint64_t tag,
                          const void *buf, size_t len, rp_treq_t *req);
rp_status_t rp__ucx_irecv(rp_transport_t *tp, int peer, uint64_t tag,
                          void *buf, size_t len, rp_treq_t *req);
void rp__ucx_cancel(rp_transport_t *tp, rp_treq_t *req);
bool rp__ucx_progress(rp_transport_t *tp);
void rp__ucx_block(rp_transport_t *tp, int timeout_ms);
rp_status_t rp__ucx_peer_status(rp_transport_t *tp, int peer);
void rp__ucx_flush(rp_transport_t *tp);

/* ucx_stall.c */
void rp__ucx_describe_stall(rp_transport_t *tp, int peer);

#endif /* RP_TRANSPORT_UCX_INT_H */
