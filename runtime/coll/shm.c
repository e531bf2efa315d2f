/*
 * The node's shared segment's steps (shm.h): posting a step, waiting for
 * a peer's (polling, then asleep on a futex, watching for failures), and
 * publishing data. Uses the point-to-point ground (comm.h) for failures
 * and the clock only.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/shm.h"
#include "util/log.h"

#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The longest futex sleep: the peer's pid, failure notices and the
 * deadline are checked at least this often. */
#define RP_SHM_SLEEP_MS 20

/* Has a counter at @v reached step @k? Modulo 2^32. */
static inline bool rp_reached(uint32_t v, uint32_t k)
{
    return (int32_t)(v - k) >= 0;
}

static void rp_futex_wait(_Atomic uint32_t *w, uint32_t v, int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    /* Not FUTEX_PRIVATE: the word is shared between processes. */
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, v, &ts, NULL, 0);
}

static void rp_futex_wake(_Atomic uint32_t *w)
{
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static inline void rp_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

void rp__shm_post(rp_comm_t *c)
{
    rp__shm_t *sh = c->shm;

    rp__shm_line_t *line = rp__shm_line(sh, sh->rank, sh->step);

    /* A post must not miss a rank about to sleep: here, store the step,
     * then load the sleepers; a sleeper counts itself, then loads the
     * step. Each side's store must be visible before its load. A
     * sequentially consistent store here would wait, on every post, for
     * the line a peer is reading (the peer polling it for this very
     * step): most of a small broadcast's time. So the sleeper pays
     * instead, with a membarrier between its count and its load (the
     * rare side: it polled for a while first), and this side needs only
     * the compiler to keep the order. Where that cannot be had, both
     * sides fence. */
    if (sh->fenced) {
        atomic_store_explicit(&line->step, sh->step, memory_order_release);
        atomic_signal_fence(memory_order_seq_cst);
        if (atomic_load_explicit(sh->sleepers, memory_order_relaxed) != 0) {
            rp_futex_wake(&line->step);
        }
        return;
    }
    atomic_store(&line->step, sh->step);
    if (atomic_load(sh->sleepers) != 0) {
        rp_futex_wake(&line->step);
    }
}

/* The slow part of a wait: asleep on the futex, checking for failures. */
static rp_status_t rp_shm_sleep(rp_comm_t *c, int q, uint32_t k,
                                uint64_t start)
{
    rp__shm_t *sh = c->shm;
    _Atomic uint32_t *w = &rp__shm_line(sh, q, k)->step;
    const uint64_t deadline = c->timeout_ns ? start + c->timeout_ns
                                            : UINT64_MAX;
    uint32_t v;

    for (;;) {
        atomic_fetch_add(sh->sleepers, 1);
        if (sh->fenced) {
            /* Every running rank passes a full fence: a post that came
             * before it is seen by the load below, one after it sees our
             * count (rp__shm_post). */
            syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0);
        }
        v = atomic_load(w);
        if (!rp_reached(v, k)) {
            rp_futex_wait(w, v, RP_SHM_SLEEP_MS);
        }
        atomic_fetch_sub(sh->sleepers, 1);
        if (rp_reached(atomic_load_explicit(w, memory_order_acquire), k)) {
            return RP_OK;
        }
        /* Failure notices still come over the transport. */
        c->tp->ops->progress(c->tp);
        if (rp__comm_root(c)->notice_req.done) {
            return rp__comm_fail_noticed(c);
        }
        /* Pids are rank 0's namespace's: only a rank in it (one that
         * published its own) may look them up; from any other, every
         * peer would look gone. */
        if (sh->pids[sh->rank] != 0 && sh->pids[q] != 0 &&
            kill((pid_t)sh->pids[q], 0) != 0 && errno == ESRCH) {
            rp_error("%s: rank %d (pid %u on this node) has exited", c->op,
                     rp__comm_world(c, q), sh->pids[q]);
            return rp__comm_fail(c, RP_ERR_PEER_FAILED, rp__comm_world(c, q));
        }
        /* What the transport knows of the peer (a connection reset, a
         * silent host: RINGPOINT_PEER_TIMEOUT), as its own waits ask: the
         * only news of a rank whose pid means nothing here (another pid
         * namespace) short of the collective's timeout. */
        if (c->tp->ops->peer_status(c->tp, rp__comm_world(c, q)) != RP_OK) {
            rp_error("%s: rank %d failed (the transport lost it)", c->op,
                     rp__comm_world(c, q));
            return rp__comm_fail(c, RP_ERR_PEER_FAILED, rp__comm_world(c, q));
        }
        if (rp__comm_now_ns() >= deadline) {
            return rp__comm_timed_out(c, rp__comm_world(c, q));
        }
    }
}

rp_status_t rp__shm_wait(rp_comm_t *c, int q, uint32_t k)
{
    rp__shm_t *sh = c->shm;
    _Atomic uint32_t *w = &rp__shm_line(sh, q, k)->step;
    uint64_t start, spin_end;

    if (rp_reached(atomic_load_explicit(w, memory_order_acquire), k)) {
        return RP_OK;
    }
    if (c->broken != RP_OK) {
        return c->broken;
    }
    start = rp__comm_now_ns();
    spin_end = start + c->spin_ns;
    /* Poll: most waits end within a microsecond or two. Oversubscribed,
     * every poll gives the core away: the rank we wait for may need it. */
    for (unsigned i = 0;; i++) {
        if (rp_reached(atomic_load_explicit(w, memory_order_acquire), k)) {
            return RP_OK;
        }
        if (c->yield) {
            sched_yield();
        } else {
            rp_cpu_relax();
        }
        if ((c->yield || (i & 255) == 255) && rp__comm_now_ns() >= spin_end) {
            break;
        }
    }
    return rp_shm_sleep(c, q, k, start);
}

rp_status_t rp__shm_wait_all(rp_comm_t *c, uint32_t k)
{
    rp__shm_t *sh = c->shm;
    rp_status_t status;

    for (int q = 0; q < sh->n; q++) {
        if (q == sh->rank) {
            continue;
        }
        status = rp__shm_wait(c, q, k);
        if (status != RP_OK) {
            return status;
        }
    }
    return RP_OK;
}

rp_status_t rp__shm_step(rp_comm_t *c, size_t bytes, char **slot_p)
{
    rp__shm_t *sh = c->shm;
    rp_status_t status = RP_OK;

    sh->step++;
    *slot_p = rp__shm_slot(sh, sh->rank, sh->step);
    if (bytes > RP_SHM_SMALL) {
        status = rp__shm_wait_all(c, sh->step - 1);
    } else if (bytes > 0) {
        status = rp__shm_wait_all(c, sh->step - (RP_SHM_DEPTH - 1));
    }
    /* Nothing written, nothing to wait for: a post only moves the
     * counter on. */
    return status;
}

/* Copy @len bytes into this rank's line or slot. Its small slots are
 * read by its peers on every step, so they hold them in their caches. A
 * vector loop (glibc's memcpy up to about 2 KiB) must first read each
 * line back from the peer that holds it (a read for ownership) before
 * overwriting it whole; the string instruction's fast-string protocol
 * claims whole lines without reading them. Below 1 KiB the instruction's
 * start-up costs more than it saves (doc/benchmarks.md). Larger copies
 * are glibc's, which takes the string instruction itself from 2 KiB up. */
#define RP_SHM_MOVSB_MIN 1024

static void rp_shm_copy_in(char *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
    if (len >= RP_SHM_MOVSB_MIN && len <= RP_SHM_SMALL) {
        __asm__ volatile("rep movsb"
                         : "+D"(dst), "+S"(src), "+c"(len)
                         :
                         : "memory");
        return;
    }
#endif
    memcpy(dst, src, len);
}

rp_status_t rp__shm_publish(rp_comm_t *c, const void *src, size_t len)
{
    char *slot;
    rp_status_t status = rp__shm_step(c, src != NULL ? len : 0, &slot);

    if (status != RP_OK) {
        return status;
    }
    if (src != NULL) {
        rp_shm_copy_in(rp__shm_data(c->shm, c->shm->rank, c->shm->step, len),
                       src, len);
    }
    rp__shm_post(c);
    return RP_OK;
}
