/*
 * The snapshot copy on several threads (pcopy.h).
 */
#include "config.h"

#include "ckpt/write/pcopy.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/format/worker.h"
#include "util/log.h"

/* The most threads a copy uses unless told otherwise: one thread's copy
 * is bound by the latency of its own misses, and a handful fill the
 * memory controllers. RINGPOINT_CKPT_COPY_THREADS may ask for up to
 * RP_PC_MAX. */
#define RP_PC_AUTO_MAX 8u
#define RP_PC_MAX 64u
/* The least a thread is given: below it the wake-up costs more than the
 * thread saves: a wake-up is microseconds, 8 MiB of copy is much more. */
#define RP_PC_MIN_PART (8u << 20)

/* Part @part of the copy in progress, for one worker. */
typedef struct rp_pc_job {
    rp__ckpt_pcopy_t *p;
    unsigned part;
} rp_pc_job_t;

struct rp__ckpt_pcopy {
    rp__ckpt_worker_t w[RP_PC_MAX];
    rp_pc_job_t job[RP_PC_MAX];
    unsigned nth;         /* workers beside the caller's thread */
    /* the copy in progress */
    const rp__ckpt_span_t *spans;
    size_t nspans;
    uint64_t total;
    unsigned parts;       /* part 0 is the caller's, part i worker i-1's */
};

/* Bytes [@begin, @end) of the concatenated spans into place. */
static void rp_pc_range(const rp__ckpt_span_t *spans, size_t nspans,
                        uint64_t begin, uint64_t end)
{
    uint64_t at = 0; /* where span i starts in the concatenation */

    for (size_t i = 0; i < nspans && at < end; at += spans[i].len, i++) {
        uint64_t s = at > begin ? at : begin;
        uint64_t e = at + spans[i].len < end ? at + spans[i].len : end;

        if (e <= s) {
            continue;
        }
        if (spans[i].src == NULL) {
            memset(spans[i].dst + (s - at), 0, (size_t)(e - s));
        } else {
            memcpy(spans[i].dst + (s - at),
                   (const unsigned char *)spans[i].src + (s - at),
                   (size_t)(e - s));
        }
    }
}

/* Part @k of @parts: cut at page boundaries, so no two threads write one
 * page (or one cache line) of the destination. */
static uint64_t rp_pc_cut(uint64_t total, unsigned parts, unsigned k)
{
    uint64_t c;

    if (k == 0) {
        return 0;
    }
    if (k >= parts) {
        return total;
    }
    c = total / parts * k;
    return c & ~(uint64_t)4095;
}

static void rp_pc_part(const rp__ckpt_pcopy_t *p, unsigned k)
{
    rp_pc_range(p->spans, p->nspans, rp_pc_cut(p->total, p->parts, k),
                rp_pc_cut(p->total, p->parts, k + 1));
}

static void rp_pc_job(void *arg)
{
    const rp_pc_job_t *j = arg;

    rp_pc_part(j->p, j->part);
}

void rp__ckpt_pcopy_threads(uint64_t asked, int local_size, unsigned *n_p)
{
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    unsigned n = 1;

    if (asked != 0) {
        *n_p = (unsigned)(asked > RP_PC_MAX ? RP_PC_MAX : asked);
        return;
    }
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && online > 0) {
        long mine = CPU_COUNT(&set);

        /* Bound by the launcher: those cores are this rank's. Unbound:
         * the node's cores are shared by its ranks. */
        n = (unsigned)(mine < online ? mine
                                     : online / (local_size > 0 ? local_size
                                                                : 1));
    }
    n = n < 1 ? 1 : n > RP_PC_AUTO_MAX ? RP_PC_AUTO_MAX : n;
    *n_p = n;
}

rp__ckpt_pcopy_t *rp__ckpt_pcopy_new(unsigned n)
{
    rp__ckpt_pcopy_t *p;

    n = n > RP_PC_MAX ? RP_PC_MAX : n;
    if (n <= 1 || (p = calloc(1, sizeof(*p))) == NULL) {
        return NULL;
    }
    for (unsigned i = 0; i + 1 < n; i++) {
        if (!rp__ckpt_worker_start(&p->w[i])) {
            break;
        }
        p->job[i].p = p;
        p->job[i].part = i + 1;
        p->nth++;
    }
    if (p->nth == 0) {
        rp__ckpt_pcopy_free(p);
        return NULL;
    }
    return p;
}

void rp__ckpt_pcopy_run(rp__ckpt_pcopy_t *p, const rp__ckpt_span_t *spans,
                        size_t nspans)
{
    uint64_t total = 0;
    unsigned parts;

    for (size_t i = 0; i < nspans; i++) {
        total += spans[i].len;
    }
    parts = p == NULL ? 1 : (unsigned)(total / RP_PC_MIN_PART);
    if (p != NULL && parts > p->nth + 1) {
        parts = p->nth + 1;
    }
    if (parts <= 1) {
        rp_pc_range(spans, nspans, 0, total);
        return;
    }
    p->spans = spans;
    p->nspans = nspans;
    p->total = total;
    p->parts = parts;
    /* Posting publishes the fields above to each worker (its mutex). */
    for (unsigned i = 0; i + 1 < parts; i++) {
        rp__ckpt_worker_post(&p->w[i], rp_pc_job, &p->job[i]);
    }
    rp_pc_part(p, 0);
    for (unsigned i = 0; i + 1 < parts; i++) {
        rp__ckpt_worker_wait(&p->w[i]);
    }
}

void rp__ckpt_pcopy_free(rp__ckpt_pcopy_t *p)
{
    if (p == NULL) {
        return;
    }
    for (unsigned i = 0; i < p->nth; i++) {
        rp__ckpt_worker_stop(&p->w[i]);
    }
    free(p);
}
