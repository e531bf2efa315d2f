/*
 * Communicator state, waiting with a deadline, and failure notices.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/hier.h"
#include "coll/shm.h"
#include "coll/tune.h"
#include "util/log.h"
#include "util/parse.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

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

/* More ranks on this node than cores? The machine's CPU count, not this
 * process's affinity: launchers bind each rank to one core, which says
 * nothing about sharing. RINGPOINT_COLL_OVERSUBSCRIBED says so where the
 * count misleads (a CPU set narrower than the node). */
static bool rp_oversubscribed(const rp_transport_t *tp,
                              const rp_settings_t *settings)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (settings->coll_oversubscribed >= 0) {
        return settings->coll_oversubscribed == 1;
    }
    return cpus > 0 && tp->bs->local_size > cpus;
}

static rp_status_t rp_post_notice_recv(rp_comm_t *c)
{
    return c->tp->ops->irecv(c->tp, RP_TRANSPORT_ANY_PEER,
                             (uint64_t)RP_COMM_NOTICE_SEQ << 16, &c->notice,
                             sizeof(c->notice), &c->notice_req);
}

rp_status_t rp__comm_create(rp_transport_t *tp, int rank, int size,
                            const rp_settings_t *settings, rp_comm_t **comm_p)
{
    rp_comm_t *c;
    rp_status_t status;
    /* RINGPOINT_COLL_PROGRESS_SPIN_US: how long the progress thread
     * polls before sleeping on the transport; unset: as long as the
     * blocking calls do. Not polling at all made every segment's wait a
     * wakeup through the kernel, several times the cost of a small
     * non-blocking allreduce (doc/benchmarks.md). */
    const bool bg_spin_set = settings->progress_spin_us >= 0;
    /* RINGPOINT_COLL_SHM_MAX: the largest allreduce, broadcast or
     * allgather (bytes of the result) that goes through the node's shared
     * segment rather than the ring; the same on every rank. Above it the
     * ring's single-copy transfers move fewer bytes through memory. */
    const bool shm_max_set = settings->shm_max_bytes >= 0;

    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        rp_error("coll: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    /* The settings table checked every value at rp_init. */
    c->compression = (rp_compression_t)settings->compression;
    c->spin_bg_ns = bg_spin_set
                        ? (uint64_t)settings->progress_spin_us * 1000 : 0;
    c->shm_max = shm_max_set ? (size_t)settings->shm_max_bytes
                             : RP_SHM_MAX_DEFAULT;
    c->shm_max_set = shm_max_set;
    c->shm_on = settings->coll_shm;
    c->cma_on = settings->coll_cma;
    rp__progress_init(c);
    c->tp = tp;
    c->rank = rank;
    c->size = size;
    c->op = "collective";
    c->timeout_ns = settings->coll_timeout_s * 1000000000ULL;
    c->algo = settings->allreduce_algo;
    /* The algorithm decides the reduction order, so its choice may depend
     * only on what every rank of every launch of the job agrees on: the
     * world size and the message size, never on the layout. The ring's
     * 2(n-1) steps beat recursive doubling's log2(n) whole-buffer
     * exchanges from about 8 KiB at 2 ranks (a core each), and only from
     * 64-128 KiB at 4 ranks on 2 cores, where every step costs a context
     * switch (measured 2..256 KiB on the 2-core CI machine). */
    c->rd_max_bytes = settings->rd_max_bytes != RP_RD_MAX_AUTO
                          ? (size_t)settings->rd_max_bytes
                      : size <= 2 ? 8 * 1024
                                  : 64 * 1024;
    c->seg_bytes = (size_t)settings->segment_bytes;
    /* Unless set: what the transport prefers (1 MiB over TCP), else 512 KiB
     * at 2 ranks, where each ring block is half the buffer and fewer,
     * larger messages save rendezvous handshakes (measured at 1-256 MiB:
     * 4-30% faster than 128 KiB at 4-16 MiB, ~5% beyond). Every rank
     * must cut alike, so this hangs only on the world size and on what
     * seg_hint promises to be uniform. */
    if (tp != NULL &&
        !rp__settings_given(settings, "RINGPOINT_COLL_SEGMENT")) {
        if (tp->seg_hint > 0) {
            c->seg_bytes = tp->seg_hint;
        } else if (size == 2) {
            c->seg_bytes = 512 * 1024;
        }
    }
    c->window = (int)settings->window;
    if (tp == NULL) {
        /* One rank: the progress thread runs the trivial collectives. */
        *comm_p = c;
        return RP_OK;
    }
    /* Plain spinning only pays when every rank has a core of its own;
     * oversubscribed ranks that spin steal the CPU from the peer they wait
     * for. But sleeping at once on the transport's event descriptor costs a
     * wakeup through the kernel per message (50 us per small allreduce at
     * 4 ranks on 2 cores, against Open MPI's 7 us), so oversubscribed ranks
     * poll too, yielding the CPU between polls (the peer sharing the core
     * runs; with nobody else runnable the poll simply continues), and sleep
     * after 1 ms: no livelock, no wakeup cost on the common path. A local
     * choice: it changes timing, never results. */
    c->yield = rp_oversubscribed(tp, settings);
    if (c->yield && tp->bs->local_rank == 0) {
        rp_info("coll: %d ranks on this node's %ld CPUs%s: waits poll "
                "with sched_yield, then sleep (no busy-waiting)",
                tp->bs->local_size, sysconf(_SC_NPROCESSORS_ONLN),
                settings->coll_oversubscribed == 1
                    ? " (RINGPOINT_COLL_OVERSUBSCRIBED=1)" : "");
    }
    /* Where the segment's slots give way to single-copy reads (shm.h),
     * per collective, unless RINGPOINT_COLL_SHM_MAX says: measured on
     * the 2-core VM, interleaved (doc/benchmarks.md). Allgather reads
     * the peers' inputs from 32 KiB a rank (2 ranks, 64 KiB: 3.2 against
     * 6.5 us through the slots; 4 ranks on 2 cores, 16 KiB a rank: 18.9
     * against 11.9). Oversubscribed, the allreduce stays in the slots at
     * every size (4 ranks on 2 cores: 1.9 against 7.2 ms at 1 MiB, 47
     * against 55 at 16 MiB, 261 against 336 at 64 MiB). The same on every
     * rank: the size, the CPU count and the ranks per node are. */
    c->shm_ar_max = c->shm_ag_max = c->shm_max;
    /* Above the slots every allreduce reads the peers and writes its
     * finished block into theirs (shm_cma.c), 2 ranks too: there it
     * beats the ring over UCX, itself one single-copy exchange a segment,
     * from 256 KiB (27 against 45 us) to 4 MiB (686-748 against 761-871)
     * and ties it from 16 MiB out of place (in place 15-30 % ahead). */
    if (!shm_max_set) {
        if (c->yield) {
            c->shm_ar_max = SIZE_MAX;
        }
        if (c->shm_ag_max > (size_t)size * 16 * 1024) {
            c->shm_ag_max = (size_t)size * 16 * 1024;
        }
    }
    if (settings->coll_spin_us >= 0) {
        c->spin_ns = (uint64_t)settings->coll_spin_us * 1000;
    } else {
        c->spin_ns = (c->yield ? 1000 : 200) * 1000;
    }
    c->spin_fg_ns = c->spin_ns;
    if (!bg_spin_set) {
        c->spin_bg_ns = c->spin_ns;
    }

    status = RP_ERR_NO_MEMORY;
    c->touched = calloc((size_t)size, sizeof(*c->touched));
    c->notice_sends = calloc((size_t)size, sizeof(*c->notice_sends));
    if (c->touched == NULL || c->notice_sends == NULL) {
        rp_error("coll: out of memory for %d ranks", size);
        goto err_free;
    }
    status = rp_post_notice_recv(c);
    if (status != RP_OK) {
        goto err_free;
    }
    c->hier_max = SIZE_MAX;
    status = rp__tune_setup(c, settings->rd_max_bytes != RP_RD_MAX_AUTO,
                            shm_max_set,
                            settings->tune_file_set ? settings->tune_file
                                                    : NULL);
    if (status == RP_OK) {
        status = rp__shm_setup(c);
    }
    if (status == RP_OK) {
        status = rp__hier_setup(c, settings->coll_hier);
    }
    if (status != RP_OK) {
        goto err_notice;
    }
    *comm_p = c;
    return RP_OK;


err_notice:
    rp__shm_destroy(c->shm);
    c->tp->ops->cancel(c->tp, &c->notice_req);
    c->tp->ops->progress(c->tp);
err_free:
    free(c->notice_sends);
    free(c->touched);
    rp__progress_fini(c);
    free(c);
    return status;
}

void rp__comm_quiesce(rp_comm_t *c)
{
    if (c == NULL) {
        return;
    }
    /* What is queued runs first: the peers expect it. */
    rp__progress_stop(c);
    if (c->tp != NULL) {
        c->tp->ops->cancel(c->tp, &c->notice_req);
        /* The cancellation completes from progress; the request memory
         * must outlive it, so give it a moment rather than free early. */
        c->tp->ops->progress(c->tp);
    }
    /* Requests still in flight after an error point into reqs, work and
     * tmp: they are freed by the caller after the transport is gone. */
}

void rp__comm_destroy(rp_comm_t *c)
{
    if (c == NULL) {
        return;
    }
    rp__hier_destroy(c->hier);
    rp__shm_destroy(c->shm);
    free(c->reqs);
    free(c->work.ptr);
    free(c->tmp.ptr);
    free(c->fuse.ptr);
    free(c->notice_sends);
    free(c->touched);
    rp__progress_fini(c);
    free(c);
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
