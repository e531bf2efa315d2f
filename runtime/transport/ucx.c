/*
 * The host-memory transport over UCP tag matching.
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
 * moves same-host traffic to TCP over loopback: 60 us instead of 1.2 us per
 * small allreduce here), so to a peer on the same host the endpoint keeps
 * the default mode and the peer's liveness is checked by its pid instead,
 * when the boot id and pid namespace show the pid means the same process
 * to both. RINGPOINT_UCX_PEER_ERRMODE=1 forces the PEER mode everywhere.
 *
 * Waiting is the caller's loop of progress() then block(): block() arms the
 * worker and sleeps on its event descriptor, so ranks that outnumber the
 * cores sleep instead of spinning each other off the CPU.
 */
#include "config.h"

#include "transport/liveness.h"
#include "transport/transport.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

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
    /* The shortest receive that may come by rendezvous: the threshold set
     * below, else RP_UCX_OWED_MIN_BYTES. Over TCP (512 KiB) a flush after
     * every 4 KiB-512 KiB collective cost a round trip for nothing: a
     * 4 KiB allreduce 5.3 -> 13.6 us, 64 KiB 19.9 -> 28.8. */
    size_t owed_min;
    rp_ucx_card_t card; /* this process's */
    char key[48];       /* where the addresses are published */
    rp_live_t *live;    /* pings remote peers' hosts; NULL: off */
    uint64_t live_timeout_s;
    bool peer_errmode; /* RINGPOINT_UCX_PEER_ERRMODE */
} rp_ucx_t;

/* Fill all of @card but its live part. */
static void rp_ucx_card_init(rp_ucx_card_t *card)
{
    const char *value;
    struct stat st;
    ssize_t n;
    int fd;

    memset(card, 0, sizeof(*card));
    card->magic = RP_UCX_CARD_MAGIC;
    card->pid = (uint32_t)getpid();
    if (stat("/proc/self/ns/pid", &st) == 0) {
        card->pidns = (uint64_t)st.st_ino;
    }
    if (stat("/proc/self/ns/net", &st) == 0) {
        card->netns = (uint64_t)st.st_ino;
    }
    value = getenv("SLURMD_NODENAME");
    if (value != NULL && *value != '\0') {
        snprintf(card->node, sizeof(card->node), "%s", value);
    } else if (gethostname(card->node, sizeof(card->node) - 1) != 0) {
        snprintf(card->node, sizeof(card->node), "?");
    }
    fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, card->boot_id, sizeof(card->boot_id) - 1);
        if (n < 0) {
            card->boot_id[0] = '\0';
        }
        close(fd);
    }
}

/* Whether a pid from @peer's card names the same process here, and the
 * two talk without a network between them. A peer in another network
 * namespace (a container, an emulated host) can be cut off from us by its
 * link while its pid lives on: to it the endpoint needs the PEER mode,
 * like to another host. */
static bool rp_ucx_same_host(const rp_ucx_card_t *mine,
                             const rp_ucx_card_t *peer)
{
    return mine->boot_id[0] != '\0' && mine->pidns != 0 &&
           memcmp(mine->boot_id, peer->boot_id, sizeof(mine->boot_id)) == 0 &&
           mine->pidns == peer->pidns && mine->netns == peer->netns;
}

static uint64_t rp_ucx_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static rp_status_t rp_ucx_status(ucs_status_t st)
{
    switch (st) {
    case UCS_OK:
        return RP_OK;
    case UCS_ERR_NO_MEMORY:
        return RP_ERR_NO_MEMORY;
    case UCS_ERR_ENDPOINT_TIMEOUT:
    case UCS_ERR_CONNECTION_RESET:
    case UCS_ERR_UNREACHABLE:
    case UCS_ERR_REJECTED:
        return RP_ERR_PEER_FAILED;
    case UCS_ERR_TIMED_OUT:
        return RP_ERR_TIMEOUT;
    default:
        return RP_ERR_TRANSPORT;
    }
}

/* Recorded, not reported: the error is news only to a rank that still
 * needs the peer, and peer_status() says so when a wait asks. A connection
 * also fails when its peer finalizes first and exits, while this rank is
 * still closing down: that is a clean end, and must not print an error. */
static void rp_ucx_err_cb(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    rp_ucx_peer_t *peer = arg;

    (void)ep;
    rp_debug("transport: the connection to rank %d failed: %s", peer->rank,
             ucs_status_string(st));
    if (peer->status == RP_OK) {
        peer->error = st;
    }
    peer->ucx->dirty = true;
    peer->status = RP_ERR_PEER_FAILED;
}

static void rp_ucx_complete(rp_treq_t *req, ucs_status_t st)
{
    req->done = true;
    req->impl = NULL;
    req->status = st == UCS_OK ? RP_OK
                  : st == UCS_ERR_CANCELED ? RP_ERR_STATE
                  : rp_ucx_status(st);
    if (st != UCS_OK && st != UCS_ERR_CANCELED) {
        rp_debug("transport: a request with rank %d failed: %s", req->peer,
                 ucs_status_string(st));
    }
}

static void rp_ucx_send_cb(void *request, ucs_status_t st, void *user_data)
{
    rp_ucx_complete(user_data, st);
    ucp_request_free(request);
}

static void rp_ucx_recv_cb(void *request, ucs_status_t st,
                           const ucp_tag_recv_info_t *info, void *user_data)
{
    rp_treq_t *req = user_data;

    if (st == UCS_OK) {
        req->len = info->length;
    }
    rp_ucx_complete(req, st);
    ucp_request_free(request);
}

/* Create the endpoint to @rank. With @for_recv a peer that UCX cannot
 * reach is recorded, not reported: see rp_ucx_irecv. */
static rp_status_t rp_ucx_connect_ep(rp_transport_t *tp, int rank,
                                     bool for_recv)
{
    rp_ucx_t *ucx = tp->impl;
    rp_ucx_peer_t *peer = &ucx->peers[rank];
    ucp_ep_params_t params;
    rp_ucx_card_t card;
    void *addr = NULL;
    size_t len = 0;
    rp_status_t status;
    ucs_status_t st;

    if (peer->ep != NULL || peer->unreachable) {
        return peer->status;
    }
    status = tp->bs->ops->get(tp->bs, rank, ucx->key, &addr, &len);
    if (status != RP_OK) {
        rp_error("transport: no UCX address published by rank %d under "
                 "%s (%s)", rank, ucx->key, rp_status_string(status));
        return status == RP_ERR_NOT_FOUND ? RP_ERR_BOOTSTRAP : status;
    }
    if (len <= sizeof(card) ||
        (memcpy(&card, addr, sizeof(card)), card.magic != RP_UCX_CARD_MAGIC)) {
        rp_error("transport: the UCX address of rank %d is malformed "
                 "(mixed ringpoint versions?)", rank);
        free(addr);
        return RP_ERR_BOOTSTRAP;
    }
    card.boot_id[sizeof(card.boot_id) - 1] = '\0';
    card.node[sizeof(card.node) - 1] = '\0';
    snprintf(peer->node, sizeof(peer->node), "%s", card.node);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = (const ucp_address_t *)((char *)addr + sizeof(card));
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    if (rp_ucx_same_host(&ucx->card, &card) &&
        !ucx->peer_errmode) {
        params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        peer->pid = (pid_t)card.pid;
    }
    if (params.err_mode == UCP_ERR_HANDLING_MODE_PEER && ucx->live != NULL) {
        /* Across a network: its host may vanish without a word. */
        rp__live_watch(ucx->live, rank, &card.live);
        rp__live_addr_str(&card.live, peer->addr, sizeof(peer->addr));
    }
    params.err_handler.cb = rp_ucx_err_cb;
    params.err_handler.arg = peer;
    st = ucp_ep_create(ucx->worker, &params, &peer->ep);
    free(addr);
    if (st != UCS_OK) {
        peer->ep = NULL;
        if (for_recv) {
            rp_debug("transport: cannot connect to rank %d: %s (a receive "
                     "from it goes on: what it sent is here)", rank,
                     ucs_status_string(st));
            peer->unreachable = true;
            peer->error = st;
            peer->status = RP_ERR_PEER_FAILED;
            return RP_OK;
        }
        rp_error("transport: cannot connect to rank %d: %s", rank,
                 ucs_status_string(st));
        return RP_ERR_TRANSPORT;
    }
    rp_debug("transport: connected to rank %d (%s)", rank,
             peer->pid > 0 ? "same host" : "remote");
    return RP_OK;
}

static rp_status_t rp_ucx_connect(rp_transport_t *tp, int rank)
{
    return rp_ucx_connect_ep(tp, rank, false);
}

static void rp_treq_start(rp_treq_t *req, bool send, int peer, size_t len)
{
    req->send = send;
    req->done = false;
    req->status = RP_OK;
    req->peer = peer;
    req->len = len;
    req->impl = NULL;
}

static rp_status_t rp_ucx_isend(rp_transport_t *tp, int peer, uint64_t tag,
                                const void *buf, size_t len, rp_treq_t *req)
{
    rp_ucx_t *ucx = tp->impl;
    ucp_request_param_t param;
    ucs_status_ptr_t ret;
    rp_status_t status;

    rp_treq_start(req, true, peer, len);
    status = rp_ucx_connect(tp, peer);
    if (status != RP_OK) {
        req->done = true;
        req->status = status;
        return status;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    param.cb.send = rp_ucx_send_cb;
    param.user_data = req;
    ret = ucp_tag_send_nbx(ucx->peers[peer].ep, buf, len,
                           ((uint64_t)tp->rank << RP_TRANSPORT_TAG_BITS) |
                               (tag & RP_TRANSPORT_TAG_MASK),
                           &param);
    if (ret == NULL) {
        req->done = true;
    } else if (UCS_PTR_IS_ERR(ret)) {
        rp_error("transport: sending %zu bytes to rank %d failed: %s", len,
                 peer, ucs_status_string(UCS_PTR_STATUS(ret)));
        req->done = true;
        req->status = rp_ucx_status(UCS_PTR_STATUS(ret));
        return req->status;
    } else {
        req->impl = ret;
    }
    return RP_OK;
}

static rp_status_t rp_ucx_irecv(rp_transport_t *tp, int peer, uint64_t tag,
                                void *buf, size_t len, rp_treq_t *req)
{
    rp_ucx_t *ucx = tp->impl;
    ucp_request_param_t param;
    ucp_tag_recv_info_t info;
    ucs_status_ptr_t ret;
    ucp_tag_t utag, mask;
    rp_status_t status;

    rp_treq_start(req, false, peer, len);
    ucx->owed = ucx->owed || len >= ucx->owed_min;
    if (peer == RP_TRANSPORT_ANY_PEER) {
        utag = tag & RP_TRANSPORT_TAG_MASK;
        mask = RP_TRANSPORT_TAG_MASK;
    } else {
        /* Connecting to the sender too is what lets a dead sender fail
         * this receive: the error handler runs on its endpoint. But a
         * receive needs no endpoint to match, and a sender that cannot be
         * reached any more may well have sent this message before it
         * went: a rank that completed rp_finalize's barrier closes down
         * and exits while a slower one has yet to post its receive from
         * it, which may be the first from that rank (the barrier's
         * partners are not the ring's); connecting to a process that is
         * gone fails with "Endpoint timeout". So the receive is posted all
         * the same: it takes a message already here, and a wait that
         * would have to go on fails on the peer's recorded state. */
        status = rp_ucx_connect_ep(tp, peer, true);
        if (status != RP_OK) {
            req->done = true;
            req->status = status;
            return status;
        }
        utag = ((uint64_t)peer << RP_TRANSPORT_TAG_BITS) |
               (tag & RP_TRANSPORT_TAG_MASK);
        mask = ~(ucp_tag_t)0;
    }
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                         UCP_OP_ATTR_FIELD_USER_DATA |
                         UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv = rp_ucx_recv_cb;
    param.user_data = req;
    param.recv_info.tag_info = &info;
    ret = ucp_tag_recv_nbx(ucx->worker, buf, len, utag, mask, &param);
    if (ret == NULL) {
        req->done = true;
        req->len = info.length;
    } else if (UCS_PTR_IS_ERR(ret)) {
        rp_error("transport: receiving %zu bytes from rank %d failed: %s",
                 len, peer, ucs_status_string(UCS_PTR_STATUS(ret)));
        req->done = true;
        req->status = rp_ucx_status(UCS_PTR_STATUS(ret));
        return req->status;
    } else {
        req->impl = ret;
    }
    return RP_OK;
}

static void rp_ucx_cancel(rp_transport_t *tp, rp_treq_t *req)
{
    rp_ucx_t *ucx = tp->impl;

    if (!req->done && req->impl != NULL) {
        /* A receive cancels cleanly; a send may stay pending for good. */
        ucx->dirty = ucx->dirty || req->send;
        ucp_request_cancel(ucx->worker, req->impl);
    }
}

static bool rp_ucx_progress(rp_transport_t *tp)
{
    rp_ucx_t *ucx = tp->impl;

    return ucp_worker_progress(ucx->worker) != 0;
}

static void rp_ucx_block(rp_transport_t *tp, int timeout_ms)
{
    rp_ucx_t *ucx = tp->impl;
    struct pollfd pfd;
    ucs_status_t st;

    st = ucp_worker_arm(ucx->worker);
    if (st == UCS_ERR_BUSY) {
        return; /* events arrived since the last progress: go get them */
    }
    if (st != UCS_OK) {
        /* Not fatal: fall back to a short sleep so the caller keeps
         * polling without burning the core. */
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
        return;
    }
    pfd.fd = ucx->efd;
    pfd.events = POLLIN;
    pfd.revents = 0;
    if (poll(&pfd, 1, timeout_ms) < 0 && errno != EINTR) {
        rp_debug("transport: poll on the UCX event fd: %s", strerror(errno));
    }
}

/* The pid check races with the peer's last messages: a waiter whose last
 * progress found nothing may be kept off the CPU while the peer sends what
 * it waits for and exits (a rank done with rp_finalize's barrier leaves at
 * once), and then finds the pid gone with the message already in its
 * shared-memory FIFO. It reported the peer dead and the barrier failed on
 * every rank after a clean stop (4 of 30 runs of 8 ranks on 2 cores
 * stopped by SIGTERM here; 13 chaos soak trials). A process that is gone
 * sends nothing more, so the first time its pid is seen gone the worker
 * takes in all that is here and the peer still counts as alive: the
 * caller's wait goes round once more, finds its request done if the
 * message was among it, and otherwise asks again and gets the loss. */
static bool rp_ucx_pid_gone_twice(rp_ucx_t *ucx, rp_ucx_peer_t *p)
{
    int rounds = 0;

    if (p->pid_gone) {
        return true;
    }
    p->pid_gone = true;
    while (ucp_worker_progress(ucx->worker) != 0 && ++rounds < 1000) {
    }
    return false;
}

static rp_status_t rp_ucx_peer_status(rp_transport_t *tp, int peer)
{
    rp_ucx_t *ucx = tp->impl;
    uint64_t silent_ms = 0;
    rp_ucx_peer_t *p;

    if (peer < 0 || peer >= tp->size) {
        return RP_OK;
    }
    p = &ucx->peers[peer];
    if (p->error != UCS_OK) {
        if (!ucx->reported) {
            rp_error("transport: the connection to rank %d on %s failed: %s "
                     "(did that rank die?)", peer, p->node,
                     ucs_status_string(p->error));
        }
        ucx->reported = true;
        p->error = UCS_OK;
    }
    if (p->status == RP_OK && p->pid > 0 && kill(p->pid, 0) != 0 &&
        errno == ESRCH && rp_ucx_pid_gone_twice(ucx, p)) {
        if (!ucx->reported) {
            rp_error("transport: rank %d (pid %d on this host) has exited",
                     peer, (int)p->pid);
        }
        ucx->reported = true;
        p->status = RP_ERR_PEER_FAILED;
        ucx->dirty = true;
    }
    if (p->status == RP_OK && rp__live_lost(ucx->live, peer, &silent_ms)) {
        if (!ucx->reported) {
            rp_error("transport: rank %d on %s (%s) is lost: its host has "
                     "answered no liveness probe for %.1f s "
                     "(RINGPOINT_PEER_TIMEOUT=%llus); the host is down or "
                     "cut off from this one", peer, p->node, p->addr,
                     (double)silent_ms / 1000.0,
                     (unsigned long long)ucx->live_timeout_s);
        }
        ucx->reported = true;
        p->status = RP_ERR_PEER_FAILED;
        ucx->dirty = true;
    }
    return p->status;
}

/* The receiver of a rendezvous completes its request when the data is
 * here, and only then queues the acknowledgement that completes the
 * sender's; if the transport to the sender is busy, the acknowledgement
 * waits in the worker. A rank that returned from a collective and then
 * blocked outside the library (another library's collective, a barrier of
 * its own) left its peer waiting in this collective for good: seen with
 * 256 MiB allreduces between two ranks of a loaded machine. A worker flush
 * completes once everything issued on the worker, those acknowledgements
 * included, has left. */
static void rp_ucx_flush(rp_transport_t *tp)
{
    rp_ucx_t *ucx = tp->impl;
    ucp_request_param_t param;
    ucs_status_ptr_t req;
    uint64_t deadline = 0;
    ucs_status_t st;

    if (!ucx->owed || ucx->dirty) {
        return;
    }
    ucx->owed = false;
    for (int i = 0; i < tp->size; i++) {
        rp_ucx_peer_t *peer = &ucx->peers[i];

        if (peer->ep == NULL || peer->status != RP_OK) {
            continue;
        }
        param.op_attr_mask = 0;
        req = ucp_ep_flush_nbx(peer->ep, &param);
        if (req == NULL) {
            continue;
        }
        if (UCS_PTR_IS_ERR(req)) {
            rp_debug("transport: flushing the endpoint to rank %d: %s", i,
                     ucs_status_string(UCS_PTR_STATUS(req)));
            continue;
        }
        if (deadline == 0) {
            deadline = rp_ucx_now_ns() + RP_UCX_FLUSH_TIMEOUT_NS;
        }
        while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS &&
               rp_ucx_now_ns() < deadline) {
            /* The peer must run to take what is owed it: on a node with
             * more ranks than cores a flush that only spins keeps it off
             * the CPU (3 ranks on 2 cores over TCP: a 1 MiB allgather took
             * 28-44 ms, 0.6-1.5 ms before the flush). */
            if (ucp_worker_progress(ucx->worker) == 0) {
                sched_yield();
            }
        }
        if (st != UCS_OK) {
            /* A peer that failed meanwhile: the next collective says so. */
            rp_debug("transport: flushing the endpoint to rank %d: %s", i,
                     ucs_status_string(st));
        }
        ucp_request_free(req);
    }
}

/* "address:port" of @sa into @buf. */
static void rp_ucx_sockaddr_str(const struct sockaddr_storage *sa, char *buf,
                                size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, len, "%s:%u", host, port);
}

/* A wait timed out: say what the kernel holds on this process's TCP
 * connections (UCX's, and any other of the process). Bytes unread here
 * mean the worker stopped reading a connection that has data (an event
 * lost below us); bytes this side has not got rid of mean the peer stopped
 * reading; nothing anywhere means the message was never sent. Which of the
 * three it was is what the rare TCP stall of issue 15 left unknown. */
static void rp_ucx_describe_stall(rp_transport_t *tp, int peer)
{
    rp_ucx_t *ucx = tp->impl;
    DIR *d = opendir("/proc/self/fd");
    int conns = 0, busy = 0;
    struct dirent *e;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        struct sockaddr_storage la, pa;
        socklen_t alen = sizeof(la), plen = sizeof(pa);
        int fd, type = 0, inq = 0, outq = 0, listening = 0;
        socklen_t olen = sizeof(type);
        char lbuf[64], pbuf[64];
        struct stat st;

        if (e->d_name[0] < '0' || e->d_name[0] > '9') {
            continue;
        }
        fd = atoi(e->d_name);
        if (fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) != 0 ||
            type != SOCK_STREAM ||
            getsockname(fd, (struct sockaddr *)&la, &alen) != 0 ||
            (la.ss_family != AF_INET && la.ss_family != AF_INET6)) {
            continue;
        }
        olen = sizeof(listening);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) == 0 &&
            listening) {
            continue;
        }
        if (getpeername(fd, (struct sockaddr *)&pa, &plen) != 0) {
            continue;
        }
        conns++;
        if (ioctl(fd, SIOCINQ, &inq) != 0) {
            inq = 0;
        }
        if (ioctl(fd, SIOCOUTQ, &outq) != 0) {
            outq = 0;
        }
        if (inq == 0 && outq == 0) {
            continue;
        }
        busy++;
        rp_ucx_sockaddr_str(&la, lbuf, sizeof(lbuf));
        rp_ucx_sockaddr_str(&pa, pbuf, sizeof(pbuf));
        rp_warn("transport: stalled wait for rank %d: TCP %s -> %s (fd %d): "
                "%d bytes unread here, %d not yet taken by the other end",
                peer, lbuf, pbuf, fd, inq, outq);
    }
    closedir(d);
    rp_warn("transport: stalled wait for rank %d: %d of %d TCP connections "
            "of this process hold data; the UCX worker %s", peer, busy, conns,
            ucp_worker_progress(ucx->worker) != 0 ? "found work when "
            "progressed once more" : "has nothing to do");
}

/* Close every endpoint: flush those that are healthy, for a bounded time,
 * so the last messages of the last collective are not cut off; force
 * those whose peer failed. */
static void rp_ucx_close_eps(rp_ucx_t *ucx, int size)
{
    ucp_request_param_t param;
    ucs_status_ptr_t *reqs;
    uint64_t deadline;
    bool pending;
    int i;

    reqs = calloc((size_t)size, sizeof(*reqs));
    for (i = 0; i < size; i++) {
        rp_ucx_peer_t *peer = &ucx->peers[i];
        ucs_status_ptr_t ret;

        if (peer->ep == NULL) {
            continue;
        }
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = peer->status == RP_OK && !ucx->dirty
                          ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
        ret = ucp_ep_close_nbx(peer->ep, &param);
        peer->ep = NULL;
        if (reqs != NULL && ret != NULL && !UCS_PTR_IS_ERR(ret)) {
            reqs[i] = ret;
        }
    }
    if (reqs == NULL) {
        return;
    }
    deadline = rp_ucx_now_ns() + RP_UCX_CLOSE_TIMEOUT_NS;
    do {
        ucp_worker_progress(ucx->worker);
        pending = false;
        for (i = 0; i < size; i++) {
            if (reqs[i] == NULL) {
                continue;
            }
            if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
                ucp_request_free(reqs[i]);
                reqs[i] = NULL;
            } else {
                pending = true;
            }
        }
    } while (pending && rp_ucx_now_ns() < deadline);
    for (i = 0; i < size; i++) {
        if (reqs[i] != NULL) {
            rp_debug("transport: closing the endpoint to rank %d timed out", i);
            ucp_request_free(reqs[i]);
        }
    }
    free(reqs);
}

static void rp_ucx_destroy(rp_transport_t *tp)
{
    rp_ucx_t *ucx = tp->impl;

    rp_ucx_close_eps(ucx, tp->size);
    rp__live_destroy(ucx->live);
    ucp_worker_destroy(ucx->worker);
    ucp_cleanup(ucx->context);
    free(ucx->peers);
    free(ucx);
    free(tp);
}

/* Does UCX_TLS (the same on every rank: launchers pass the environment
 * on) confine the job to TCP, with no shared memory and no RDMA? That is
 * the inter-node emulation, and a cluster on plain Ethernet. A list that
 * starts with '^' excludes, so says nothing of the kind. */
static bool rp_ucx_tls_tcp_only(void)
{
    static const char *const others[] = {
        "all", "sm", "shm", "posix", "sysv", "cma", "knem", "xpmem",
        "rc", "rc_v", "rc_x", "rc_verbs", "rc_mlx5", "dc", "dc_x",
        "dc_mlx5", "ud", "ud_v", "ud_x", "ud_verbs", "ud_mlx5", "ib",
        "mlx5", "ugni", "gga", "rdmacm",
    };
    const char *tls = getenv("UCX_TLS");
    char buf[256], *tok, *save = NULL;
    bool tcp = false;

    if (tls == NULL || tls[0] == '^' || strlen(tls) >= sizeof(buf)) {
        return false;
    }
    strcpy(buf, tls);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "tcp") == 0) {
            tcp = true;
            continue;
        }
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
            if (strncmp(tok, others[i], strlen(others[i])) == 0) {
                return false;
            }
        }
    }
    return tcp;
}

/* Does this host have an RDMA device (that UCX could use)? */
static bool rp_ucx_has_rdma(void)
{
    struct stat st;

    return stat("/sys/class/infiniband", &st) == 0;
}

/* The network between nodes is TCP: UCX_TLS says so, or the job spans
 * nodes and this one has no RDMA device. (Only the rendezvous threshold
 * hangs on the second test, and it need not agree between ranks.) */
static bool rp_ucx_net_is_tcp(const rp_bootstrap_t *bs)
{
    if (rp_ucx_tls_tcp_only()) {
        return true;
    }
    if (getenv("UCX_TLS") != NULL || bs->local_size <= 0 ||
        bs->local_size >= bs->size) {
        return false;
    }
    return !rp_ucx_has_rdma();
}

/* Whether network interface @name is a Linux bridge. */
static bool rp_ucx_is_bridge(const char *name)
{
    char path[64 + IF_NAMESIZE];
    struct stat st;

    snprintf(path, sizeof(path), "/sys/class/net/%s/bridge", name);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The network interfaces UCX may use, as a UCX_NET_DEVICES list into
 * @buf: those that are up and have an address, bridges left out. False
 * (use UCX's default, every interface) when no bridge has an address, or
 * when leaving them out would leave no interface but loopback (a host whose
 * only address is on its bridge, as virtual machine hosts often are).
 *
 * Why: UCX 1.13 opens a TCP interface on every network device it finds at
 * ucp_init and spreads a peer's lanes over them, and a bridge is often
 * made and removed by others while a job runs (container and virtual
 * network tools; on the test machine, other sessions' emulated hosts, whose
 * bridge 10.x.y.254 in the root namespace lives as long as their cluster).
 * When it goes, the connections over its address lose their route: the
 * kernel retransmits into the void and every rank of the ring waits until
 * RINGPOINT_COLL_TIMEOUT, or until TCP gives up and UCX reports "Endpoint
 * timeout" (issue 15's rare "TCP stall", seen with forks and without: two
 * runs stalled at the same second, all their stuck bytes on the vanished
 * 10.65.178.254). Reproduced by removing a bridge 3 s into a job: 3 of 3
 * runs stalled before, 0 of 10 after. UCX itself leaves bridges out by
 * default from 1.17 on (UCX_TCP_BRIDGE_ENABLE=n); this is that choice for
 * the UCX this library runs with. A user's UCX_NET_DEVICES is kept. */
static bool rp_ucx_net_devices(char *buf, size_t len)
{
    struct ifaddrs *ifs, *ifa;
    bool bridges = false, other = false;
    size_t used = 0;

    if (getifaddrs(&ifs) != 0) {
        return false;
    }
    buf[0] = '\0';
    for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        const char *name = ifa->ifa_name;
        size_t n = strlen(name);
        const char *p;

        if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP) ||
            (ifa->ifa_addr->sa_family != AF_INET &&
             ifa->ifa_addr->sa_family != AF_INET6)) {
            continue;
        }
        if (rp_ucx_is_bridge(name)) {
            bridges = true;
            continue;
        }
        other = other || !(ifa->ifa_flags & IFF_LOOPBACK);
        /* Once each (an interface has an entry per address). */
        for (p = strstr(buf, name); p != NULL; p = strstr(p + 1, name)) {
            if ((p == buf || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) {
                break;
            }
        }
        if (p != NULL || used + n + 2 > len) {
            continue;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 used > 0 ? "," : "", name);
    }
    freeifaddrs(ifs);
    return bridges && other && used > 0;
}

/* More ranks on this node than CPUs, as the collectives judge it: the
 * count, unless RINGPOINT_COLL_OVERSUBSCRIBED (@forced: 1, 0; -1 unset)
 * says where it misleads. */
static bool rp_ucx_oversubscribed(const rp_bootstrap_t *bs, int forced)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (forced >= 0) {
        return forced == 1;
    }
    return cpus > 0 && bs->local_size > cpus;
}

/* May another rank of the job share this host, and so be reached through
 * shared memory? What the bootstrap learnt from PMIx where it could tell
 * (the ranks of this node; in jobs of one rank per node the host names the
 * ranks traded: several slurmd of one machine, slurmd -N, are several
 * nodes). Where it could not (a launcher that names nodes otherwise than
 * after their hosts, an uneven job whose node holds one rank), a guess:
 * yes when the Slurm node is not named after the host. A node named
 * otherwise on a real cluster then only costs the TCP threshold below (a
 * 128 KiB message by rendezvous over TCP). *@why_p says which. */
static bool rp_ucx_may_share_host(const rp_bootstrap_t *bs, const char **why_p)
{
    const char *node = getenv("SLURMD_NODENAME");
    char host[256], *dot;

    if (bs->host_share != RP_HOST_SHARE_UNKNOWN) {
        *why_p = bs->host_share_why;
        return bs->host_share == RP_HOST_SHARE_YES;
    }
    if (node == NULL || *node == '\0' ||
        gethostname(host, sizeof(host) - 1) != 0) {
        *why_p = "no facts from PMIx and no Slurm node name: guessed alone";
        return false;
    }
    host[sizeof(host) - 1] = '\0';
    dot = strchr(host, '.');
    if (dot != NULL && strchr(node, '.') == NULL) {
        *dot = '\0'; /* node001.cluster is node001 */
    }
    if (strcmp(node, host) != 0) {
        *why_p = "no facts from PMIx, and the Slurm node is not named after "
                 "its host: guessed shared";
        return true;
    }
    *why_p = "no facts from PMIx, and the Slurm node is named after its "
             "host: guessed alone";
    return false;
}

static const rp_transport_ops_t rp_ucx_ops = {
    .name = "ucx",
    .connect = rp_ucx_connect,
    .isend = rp_ucx_isend,
    .irecv = rp_ucx_irecv,
    .cancel = rp_ucx_cancel,
    .progress = rp_ucx_progress,
    .block = rp_ucx_block,
    .peer_status = rp_ucx_peer_status,
    .flush = rp_ucx_flush,
    .describe_stall = rp_ucx_describe_stall,
    .destroy = rp_ucx_destroy,
};

rp_status_t rp__transport_ucx_create(rp_bootstrap_t *bs,
                                     const rp__transport_settings_t *set,
                                     rp_transport_t **tp_p)
{
    ucp_worker_params_t wparams;
    ucp_params_t params;
    ucp_config_t *config;
    ucp_address_t *addr;
    size_t addr_len;
    char *blob;
    rp_transport_t *tp;
    rp_ucx_t *ucx;
    rp_status_t status = RP_ERR_NO_MEMORY;
    const char *rndv, *why;
    char devices[512];
    bool shared;
    ucs_status_t st, st_ucx;
    int i;

    tp = calloc(1, sizeof(*tp));
    ucx = calloc(1, sizeof(*ucx));
    if (tp == NULL || ucx == NULL) {
        rp_error("transport: out of memory");
        goto err_free;
    }
    ucx->peers = calloc((size_t)bs->size, sizeof(*ucx->peers));
    if (ucx->peers == NULL) {
        rp_error("transport: out of memory for %d peers", bs->size);
        goto err_free;
    }
    for (i = 0; i < bs->size; i++) {
        ucx->peers[i].ucx = ucx;
        ucx->peers[i].rank = i;
    }
    ucx->live_timeout_s = set->peer_timeout_s;
    ucx->peer_errmode = set->peer_errmode;

    status = RP_ERR_TRANSPORT;
    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        rp_error("transport: reading the UCX configuration: %s",
                 ucs_status_string(st));
        goto err_free;
    }
    /* Over TCP, UCX's rendezvous (an RTS, then the data pulled by emulated
     * RDMA) costs round trips that eager sends do not, and UCX's automatic
     * threshold sends from about 8 KiB by rendezvous: measured here with
     * UCX_TLS=tcp,self, a 16 KiB allreduce took 74 us with it and 13 us
     * without, 128 KiB 91 against 40. Past a few hundred KiB the
     * rendezvous' zero-copy send wins back its round trip (eager copies
     * every byte through UCX's 8 KiB bounce buffers): with 1 MiB segments,
     * a threshold of 256 KiB gave 2.3-2.6 GB/s at 1-16 MiB against 1.3-1.7
     * for "never". But a message of 256-511 KiB still pays the handshake
     * and the flush's round trip for nothing (2 ranks over TCP, 3 rounds
     * each, 256 KiB -> 512 KiB threshold: a 256 KiB broadcast 96-120 ->
     * 62-79 us; 512 KiB, whose ring blocks are 256 KiB, allreduce 283-378
     * -> 189-271 and allgather 158-192 -> 90-137; 512 KiB messages the
     * same either way, 1 MiB unchanged). So rendezvous from 512 KiB.
     * Unless the user set the threshold. */
    /* Within a node with more ranks than cores, each rendezvous handshake
     * waits for the peer to be scheduled: eager up to 64 KiB halved the
     * time of a 16 KiB allreduce at 4 ranks on 2 cores (31 -> 16 us) and
     * cut 64 KiB from 62 to 49 us, with 1 MiB unchanged. A local choice:
     * a receiver takes either protocol. */
    /* But 512 KiB is only for links that are all TCP. To a peer on this
     * host UCX sends through its shared-memory FIFO, and a ring segment
     * (128 KiB at 3+ ranks) sent eagerly there stalled the sender until
     * some later event woke it: under srun -N2 -n4 on the local cluster
     * (two slurmd of one VM) a 256 MiB restore's allgather took 10-12 s
     * with 256 KiB, 0.9-1.7 s with 64 KiB, 128 KiB, "auto" or a FIFO of
     * 1024 entries (UCX_MM_FIFO_SIZE). So where shared memory may carry
     * some of the traffic, 64 KiB, as for oversubscribed ranks. */
    shared = rp_ucx_may_share_host(bs, &why);
    if (rp_ucx_net_is_tcp(bs) && (rp_ucx_tls_tcp_only() || !shared)) {
        rndv = "512k";
    } else if (rp_ucx_net_is_tcp(bs) ||
               rp_ucx_oversubscribed(bs, set->oversubscribed)) {
        rndv = "64k";
    } else {
        rndv = NULL;
    }
    /* Where TCP may carry the job's traffic and no RDMA device could be
     * left out by the list (UCX_NET_DEVICES names every kind of network
     * device): no bridges, see rp_ucx_net_devices. */
    if (getenv("UCX_NET_DEVICES") == NULL &&
        (rp_ucx_tls_tcp_only() || !rp_ucx_has_rdma()) &&
        rp_ucx_net_devices(devices, sizeof(devices))) {
        st_ucx = ucp_config_modify(config, "NET_DEVICES", devices);
        rp_debug("transport: UCX network devices %s (bridges left out: one "
                 "that goes away mid-job stalls the connections over it)%s%s",
                 devices, st_ucx == UCS_OK ? "" : ": not set, ",
                 st_ucx == UCS_OK ? "" : ucs_status_string(st_ucx));
    }
    ucx->owed_min = RP_UCX_OWED_MIN_BYTES;
    if (getenv("UCX_RNDV_THRESH") != NULL) {
        rp_debug("transport: UCX rendezvous from UCX_RNDV_THRESH=%s, the "
                 "user's", getenv("UCX_RNDV_THRESH"));
    } else if (rndv == NULL) {
        rp_debug("transport: UCX rendezvous threshold left to UCX (no TCP "
                 "network, not oversubscribed); peers on this host: %s "
                 "(%s)", shared ? "yes" : "no", why);
    } else {
        st = ucp_config_modify(config, "RNDV_THRESH", rndv);
        if (st != UCS_OK) {
            rp_debug("transport: cannot set UCX_RNDV_THRESH: %s",
                     ucs_status_string(st));
        } else {
            ucx->owed_min = (size_t)atoi(rndv) * 1024;
            rp_debug("transport: UCX rendezvous from %s (%s); peers on this "
                     "host: %s (%s)", rndv,
                     rp_ucx_tls_tcp_only() ? "UCX_TLS confines UCX to TCP" :
                     rp_ucx_net_is_tcp(bs) ? "TCP between nodes" :
                     "more ranks on this node than cores",
                     shared ? "yes" : "no", why);
        }
    }
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_PPN;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    /* Ring neighbours and log2(n) partners, not everyone. */
    params.estimated_num_eps = 8;
    params.estimated_num_ppn = (size_t)(bs->local_size > 0 ? bs->local_size : 1);
    st = ucp_init(&params, config, &ucx->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        rp_error("transport: ucp_init: %s", ucs_status_string(st));
        goto err_free;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* Serialized, not single: the progress thread of the non-blocking
     * collectives and the application's thread take turns on the worker
     * (never at once; coll/progress.c hands it over under a mutex). */
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(ucx->context, &wparams, &ucx->worker);
    if (st != UCS_OK) {
        rp_error("transport: ucp_worker_create: %s", ucs_status_string(st));
        goto err_cleanup;
    }
    st = ucp_worker_get_efd(ucx->worker, &ucx->efd);
    if (st != UCS_OK) {
        rp_error("transport: ucp_worker_get_efd: %s", ucs_status_string(st));
        goto err_worker;
    }
    st = ucp_worker_get_address(ucx->worker, &addr, &addr_len);
    if (st != UCS_OK) {
        rp_error("transport: ucp_worker_get_address: %s", ucs_status_string(st));
        goto err_worker;
    }
    rp_ucx_card_init(&ucx->card);
    /* Without it a lost host is noticed only by RINGPOINT_COLL_TIMEOUT:
     * go on, but say so. */
    if (ucx->live_timeout_s > 0 &&
        rp__live_create(bs->rank, bs->size, ucx->live_timeout_s,
                        &ucx->card.live, &ucx->live) != RP_OK) {
        rp_warn("transport: no liveness check of remote hosts; a lost "
                "host is noticed after RINGPOINT_COLL_TIMEOUT");
        ucx->live = NULL;
    }
    blob = malloc(sizeof(ucx->card) + addr_len);
    if (blob == NULL) {
        rp_error("transport: out of memory");
        ucp_worker_release_address(ucx->worker, addr);
        status = RP_ERR_NO_MEMORY;
        goto err_worker;
    }
    memcpy(blob, &ucx->card, sizeof(ucx->card));
    memcpy(blob + sizeof(ucx->card), addr, addr_len);
    ucp_worker_release_address(ucx->worker, addr);
    snprintf(ucx->key, sizeof(ucx->key), "%s.%u", RP_UCX_ADDR_KEY,
             bs->generation);
    status = bs->ops->put(bs, ucx->key, blob,
                          sizeof(ucx->card) + addr_len);
    free(blob);
    if (status != RP_OK) {
        goto err_worker;
    }
    tp->ops = &rp_ucx_ops;
    tp->bs = bs;
    tp->rank = bs->rank;
    tp->size = bs->size;
    /* Over TCP a segment costs a system call and a few headers whatever
     * its size, so bigger ones pay (1 MiB measured best from 256 KiB to
     * 4 MiB with UCX_TLS=tcp,self: 3.5 against 2.3 GB/s at 1 MiB). From
     * UCX_TLS alone, which every rank sees alike. */
    tp->seg_hint = rp_ucx_tls_tcp_only() ? 1024 * 1024 : 0;
    tp->impl = ucx;
    *tp_p = tp;
    return RP_OK;

err_worker:
    rp__live_destroy(ucx->live); /* NULL until the card was made */
    ucp_worker_destroy(ucx->worker);
err_cleanup:
    ucp_cleanup(ucx->context);
err_free:
    if (ucx != NULL) {
        free(ucx->peers);
    }
    free(ucx);
    free(tp);
    return status;
}
