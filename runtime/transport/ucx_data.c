/*
 * The UCX transport's data path: tagged sends and receives, cancelling,
 * progress and the wait on the worker's event descriptor, what a peer's
 * failure looks like from here, and the flush a collective ends with.
 */
#include "config.h"

#include "transport/ucx_int.h"
#include "util/log.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <time.h>

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
static void rp_treq_start(rp_treq_t *req, bool send, int peer, size_t len)
{
    req->send = send;
    req->done = false;
    req->status = RP_OK;
    req->peer = peer;
    req->len = len;
    req->impl = NULL;
}

rp_status_t rp__ucx_isend(rp_transport_t *tp, int peer, uint64_t tag,
                          const void *buf, size_t len, rp_treq_t *req)
{
    rp_ucx_t *ucx = tp->impl;
    ucp_request_param_t param;
    ucs_status_ptr_t ret;
    rp_status_t status;

    rp_treq_start(req, true, peer, len);
    status = rp__ucx_connect(tp, peer);
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

rp_status_t rp__ucx_irecv(rp_transport_t *tp, int peer, uint64_t tag,
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
        status = rp__ucx_connect_ep(tp, peer, true);
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

void rp__ucx_cancel(rp_transport_t *tp, rp_treq_t *req)
{
    rp_ucx_t *ucx = tp->impl;

    if (!req->done && req->impl != NULL) {
        /* A receive cancels cleanly; a send may stay pending for good. */
        ucx->dirty = ucx->dirty || req->send;
        ucp_request_cancel(ucx->worker, req->impl);
    }
}

bool rp__ucx_progress(rp_transport_t *tp)
{
    rp_ucx_t *ucx = tp->impl;

    return ucp_worker_progress(ucx->worker) != 0;
}

void rp__ucx_block(rp_transport_t *tp, int timeout_ms)
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
 * every rank after a clean stop, most often with more ranks than cores,
 * where a waiter is off the CPU longest. A process that is gone
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

rp_status_t rp__ucx_peer_status(rp_transport_t *tp, int peer)
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
void rp__ucx_flush(rp_transport_t *tp)
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
            deadline = rp__ucx_now_ns() + RP_UCX_FLUSH_TIMEOUT_NS;
        }
        while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS &&
               rp__ucx_now_ns() < deadline) {
            /* The peer must run to take what is owed it: on a node with
             * more ranks than cores a flush that only spins keeps it off
             * the CPU, and each round of the flush then waits for a
             * scheduler tick instead of for the peer. */
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

