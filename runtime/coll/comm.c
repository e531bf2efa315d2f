/*
 * The point-to-point ground of the collectives (comm.h): starting a
 * collective, its requests and scratch, sends and receives, waiting with a
 * deadline, and failure notices. Everything in coll/ stands on this file;
 * it calls nothing else in coll/, so the algorithms and the set-ups that
 * use it can never loop back into themselves through it.
 */
#include "config.h"

#include "coll/comm.h"
#include "util/log.h"
#include "util/parse.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RP_NOTICE_MAGIC 0x72706661u /* "rpfa" */
/* Longest single sleep in a wait: the deadline and peer failures are
 * checked at least this often even if no event wakes the worker. */
#define RP_BLOCK_MAX_MS 100
/* How long a rank that failed keeps progressing so its notices leave. */
#define RP_NOTICE_FLUSH_NS (200ULL * 1000 * 1000)

uint64_t rp__comm_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

rp_status_t rp__comm_begin(rp_comm_t *c, const char *op)
{
    c->op = op;
    if (c->broken != RP_OK) {
        rp_error("%s: the communicator failed earlier (%s); restart the job "
                 "from its last checkpoint", op, rp_status_string(c->broken));
        return c->broken;
    }
    /* 27 bits, and never all ones: with a sub-communicator's bit set that
     * would be the notices' tag. */
    c->seq = (c->seq + 1) & RP_COMM_SEQ_WRAP;
    if (c->seq == RP_COMM_SEQ_WRAP) {
        c->seq = 1;
    }
    return RP_OK;
}

rp_status_t rp__comm_reqs(rp_comm_t *c, size_t n, rp_treq_t **reqs_p)
{
    if (n > c->nreqs) {
        rp_treq_t *reqs = realloc(c->reqs, n * sizeof(*reqs));

        if (reqs == NULL) {
            rp_error("%s: out of memory for %zu requests", c->op, n);
            return RP_ERR_NO_MEMORY;
        }
        c->reqs = reqs;
        c->nreqs = n;
    }
    for (size_t i = 0; i < n; i++) {
        c->reqs[i].done = true;
        c->reqs[i].status = RP_OK;
        c->reqs[i].impl = NULL;
    }
    *reqs_p = c->reqs;
    return RP_OK;
}

rp_status_t rp__comm_scratch(rp_comm_t *c, rp_comm_buf_t *buf, size_t size,
                             void **ptr_p)
{
    void *ptr;

    if (size > buf->size) {
        /* Grow only, with room, and touch every page now: a page fault per
         * page on every call is what makes a fresh temporary slow. */
        size_t want = size + size / 4;

        if (posix_memalign(&ptr, 4096, want) != 0) {
            rp_error("%s: out of memory for %zu bytes of scratch", c->op, want);
            return RP_ERR_NO_MEMORY;
        }
        memset(ptr, 0, want);
        free(buf->ptr);
        buf->ptr = ptr;
        buf->size = want;
    }
    *ptr_p = buf->ptr;
    return RP_OK;
}

/* Tell every peer we talked to (but the failed one) which rank failed. */
static void rp_send_notices(rp_comm_t *c, int failed, int reporter)
{
    rp_transport_t *tp = c->tp;
    uint64_t deadline;
    bool pending;

    c->notice_out.magic = RP_NOTICE_MAGIC;
    c->notice_out.failed = failed;
    c->notice_out.reporter = reporter;
    c->notice_out.status = c->broken;
    for (int i = 0; i < c->size; i++) {
        c->notice_sends[i].done = true;
        if (!c->touched[i] || i == failed || i == reporter ||
            tp->ops->peer_status(tp, i) != RP_OK) {
            continue;
        }
        tp->ops->isend(tp, i, (uint64_t)RP_COMM_NOTICE_SEQ << 16,
                       &c->notice_out, sizeof(c->notice_out),
                       &c->notice_sends[i]);
    }
    /* Bounded: a neighbour that is itself stuck must not hold us. */
    deadline = rp__comm_now_ns() + RP_NOTICE_FLUSH_NS;
    do {
        tp->ops->progress(tp);
        pending = false;
        for (int i = 0; i < c->size; i++) {
            pending = pending || !c->notice_sends[i].done;
        }
    } while (pending && rp__comm_now_ns() < deadline);
}

/* Break the communicator: log once, where the failure was seen, and pass
 * the word on. */
rp_status_t rp__comm_fail(rp_comm_t *c, rp_status_t status, int failed)
{
    if (c->broken != RP_OK) {
        return c->broken;
    }
    c->broken = status;
    if (c->parent != NULL) {
        /* The job's communicator tells the peers, and fails alike. */
        return rp__comm_fail(c->parent, status, failed);
    }
    rp_send_notices(c, failed, c->rank);
    return status;
}

/* A failure notice arrived: adopt it. */
rp_status_t rp__comm_fail_noticed(rp_comm_t *c)
{
    rp_comm_notice_t n;

    if (c->parent != NULL) {
        c->broken = rp__comm_fail_noticed(c->parent);
        return c->broken;
    }
    n = c->notice;
    if (c->notice_req.status != RP_OK || n.magic != RP_NOTICE_MAGIC) {
        rp_error("%s: received a malformed failure notice", c->op);
        return rp__comm_fail(c, RP_ERR_TRANSPORT, -1);
    }
    if (n.failed >= 0) {
        rp_error("%s: rank %d failed (reported by rank %d: %s)", c->op,
                 n.failed, n.reporter, rp_status_string((rp_status_t)n.status));
    } else {
        rp_error("%s: rank %d reported a failure (%s)", c->op, n.reporter,
                 rp_status_string((rp_status_t)n.status));
    }
    c->broken = RP_ERR_PEER_FAILED;
    rp_send_notices(c, n.failed, n.reporter);
    return c->broken;
}

rp_status_t rp__comm_isend(rp_comm_t *c, int peer, size_t index,
                           const void *buf, size_t len, rp_treq_t *req)
{
    rp_status_t status;

    peer = rp__comm_world(c, peer);
    rp__comm_root(c)->touched[peer] = true;
    status = c->tp->ops->isend(c->tp, peer, rp__comm_tag(c, index), buf, len,
                               req);
    if (status != RP_OK) {
        return rp__comm_fail(c, status, status == RP_ERR_PEER_FAILED ? peer : -1);
    }
    return RP_OK;
}

rp_status_t rp__comm_irecv(rp_comm_t *c, int peer, size_t index, void *buf,
                           size_t len, rp_treq_t *req)
{
    rp_status_t status;

    peer = rp__comm_world(c, peer);
    rp__comm_root(c)->touched[peer] = true;
    status = c->tp->ops->irecv(c->tp, peer, rp__comm_tag(c, index), buf, len,
                               req);
    if (status != RP_OK) {
        return rp__comm_fail(c, status, status == RP_ERR_PEER_FAILED ? peer : -1);
    }
    return RP_OK;
}

static rp_status_t rp_req_failed(rp_comm_t *c, rp_treq_t *req)
{
    rp_status_t status = req->status;

    if (status == RP_ERR_PEER_FAILED ||
        c->tp->ops->peer_status(c->tp, req->peer) != RP_OK) {
        rp_error("%s: rank %d failed (its connection broke)", c->op,
                 req->peer);
        return rp__comm_fail(c, RP_ERR_PEER_FAILED, req->peer);
    }
    rp_error("%s: a message with rank %d failed: %s", c->op, req->peer,
             rp_status_string(status));
    return rp__comm_fail(c, status, -1);
}

rp_status_t rp__comm_timed_out(rp_comm_t *c, int peer)
{
    char what[32];

    rp__format_duration(c->timeout_ns / 1000000000ULL, what, sizeof(what));
    rp_error("%s: rank %d sent nothing for %s (RINGPOINT_COLL_TIMEOUT): it "
             "died, hangs or is not in this collective", c->op, peer, what);
    if (c->tp != NULL && c->tp->ops->describe_stall != NULL) {
        c->tp->ops->describe_stall(c->tp, peer);
    }
    return rp__comm_fail(c, RP_ERR_TIMEOUT, peer);
}

rp_status_t rp__comm_wait(rp_comm_t *c, rp_treq_t *req)
{
    rp_transport_t *tp = c->tp;
    uint64_t now, start, deadline, spin_end;
    int ms;

    if (req->done && req->status == RP_OK) {
        return RP_OK;
    }
    start = rp__comm_now_ns();
    deadline = c->timeout_ns ? start + c->timeout_ns : UINT64_MAX;
    spin_end = start + c->spin_ns;
    for (;;) {
        /* Poll first: most waits in a pipelined ring end within a few
         * microseconds. Check the clock only every few rounds. */
        for (int i = 0; !req->done; i++) {
            if (tp->ops->progress(tp)) {
                continue;
            }
            if (c->idle != NULL && c->idle(c->idle_arg)) {
                continue;
            }
            if (c->yield) {
                sched_yield();
            }
            if ((c->yield || (i & 15) == 15) && rp__comm_now_ns() >= spin_end) {
                break;
            }
        }
        if (req->done) {
            return req->status == RP_OK ? RP_OK : rp_req_failed(c, req);
        }
        if (rp__comm_root(c)->notice_req.done) {
            return rp__comm_fail_noticed(c);
        }
        if (req->peer >= 0 && tp->ops->peer_status(tp, req->peer) != RP_OK) {
            return rp_req_failed(c, req);
        }
        now = rp__comm_now_ns();
        if (now >= deadline) {
            return rp__comm_timed_out(c, req->peer);
        }
        /* Capped before the cast: without a timeout (0, the deadline at
         * UINT64_MAX) it wrapped negative, and poll() slept for good. */
        ms = deadline - now < RP_BLOCK_MAX_MS * 1000000ULL
                 ? (int)((deadline - now) / 1000000) + 1
                 : RP_BLOCK_MAX_MS;
        tp->ops->block(tp, ms);
    }
}

rp_status_t rp__comm_wait_all(rp_comm_t *c, rp_treq_t *reqs, size_t n)
{
    rp_status_t status;

    for (size_t i = 0; i < n; i++) {
        status = rp__comm_wait(c, &reqs[i]);
        if (status != RP_OK) {
            return status;
        }
    }
    return RP_OK;
}

void rp__comm_abandon(rp_comm_t *c)
{
    for (size_t i = 0; i < c->nreqs; i++) {
        if (!c->reqs[i].done) {
            c->tp->ops->cancel(c->tp, &c->reqs[i]);
        }
    }
}

rp_status_t rp__comm_exchange(rp_comm_t *c, rp_treq_t *reqs, int peer,
                              size_t index, const void *sbuf, size_t slen,
                              void *rbuf, size_t rlen)
{
    rp_status_t status;

    /* The receive first: the partner's message may already be coming. */
    if (rlen > 0) {
        status = rp__comm_irecv(c, peer, index, rbuf, rlen, &reqs[1]);
        if (status != RP_OK) {
            return status;
        }
    }
    if (slen > 0) {
        status = rp__comm_isend(c, peer, index, sbuf, slen, &reqs[0]);
        if (status != RP_OK) {
            return status;
        }
    }
    return rp__comm_wait_all(c, reqs, 2);
}
