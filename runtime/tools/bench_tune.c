/*
 * ringpoint-bench --tune FILE: measure where the collectives' paths cross
 * over for this job's layout and write the tuning table (coll/tune.h).
 *
 * Each switch point is a pair of paths timed at every size of -b..-e
 * (factor 2 between sizes), interleaved: A, B, A, B, and the faster of
 * each path's two medians (per iteration, the slowest rank's time) kept.
 * The switch point is the one threshold that misplaces the fewest sizes:
 * the size up to which A's wins outnumber its losses by the most (so one
 * noisy row on a busy machine does not end A's range); 0 when no size is
 * A's that way. Where that is the largest size measured the point is a
 * lower bound (said so in the table's comment).
 *
 *   allreduce_rd_max: recursive doubling (A) against the ring (B);
 *   shm_max (all ranks on one node, single-copy reads possible): the
 *     segment's slots (A) against reading the peers' buffers (B);
 *   hier_max (the job spans nodes, several ranks on one): the hierarchy
 *     (A) against the flat algorithms (B).
 * Every rank switches the paths in the same order, through the
 * communicator's fields, as rp_init would have set them; the job's own
 * settings come back after each pair.
 */
#include "config.h"

#include "bench.h"
#include "coll/comm.h"
#include "coll/hier.h"
#include "coll/select.h"
#include "coll/shm.h"
#include "coll/tune.h"
#include "core/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef enum { T_RD, T_SHM, T_HIER } tune_kind_t;

static double tune_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int tune_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Put path @a (true: A) of @kind in place on @c. */
static void tune_path(rp_comm_t *c, tune_kind_t kind, bool a,
                      struct rp__hier *hier)
{
    switch (kind) {
    case T_RD:
        /* Against what auto takes above the threshold at this size. */
        c->algo = a                                ? RP_COLL_ALGO_RD
                  : c->size <= RP_OWNERS_MAX_RANKS ? RP_COLL_ALGO_RING
                                                   : RP_COLL_ALGO_RH;
        break;
    case T_SHM:
        c->shm_ar_max = a ? SIZE_MAX : 0;
        break;
    case T_HIER:
        c->hier = a ? hier : NULL;
        if (a) {
            hier->forced = true;
        }
        break;
    }
}

/* The slowest rank's median time of one float sum allreduce of @bytes,
 * in us; negative if a call failed. */
static double tune_time(const opts_t *o, void *in, void *out, size_t bytes)
{
    const size_t count = bytes / sizeof(float);
    double *t = calloc((size_t)o->iters, sizeof(*t)), med;
    rp_status_t st = RP_OK;

    if (t == NULL) {
        return -1;
    }
    for (int i = 0; i < o->warmup && st == RP_OK; i++) {
        st = rp_allreduce(g_ctx, in, out, count, RP_DTYPE_FLOAT32, RP_OP_SUM);
    }
    for (int i = 0; i < o->iters && st == RP_OK; i++) {
        double t0 = tune_now_us();

        st = rp_allreduce(g_ctx, in, out, count, RP_DTYPE_FLOAT32, RP_OP_SUM);
        t[i] = tune_now_us() - t0;
    }
    qsort(t, (size_t)o->iters, sizeof(*t), tune_cmp);
    med = st == RP_OK ? t[o->iters / 2] : -1e300;
    free(t);
    if (rp_allreduce(g_ctx, &med, &med, 1, RP_DTYPE_FLOAT64, RP_OP_MAX) !=
        RP_OK) {
        return -1;
    }
    return med;
}

/* One switch point: *@point_p, and whether A won everywhere measured. */
static int tune_pair(const opts_t *o, tune_kind_t kind, const char *key,
                     const char *a_name, const char *b_name, size_t lo,
                     size_t hi, void *in, void *out, uint64_t *point_p,
                     bool *bound_p)
{
    rp_comm_t *c = g_ctx->comm;
    const rp_coll_algo_t algo = c->algo;
    const size_t ar_max = c->shm_ar_max;
    struct rp__hier *hier = c->hier;
    const bool forced = hier != NULL && hier->forced;
    int rc = 0, score = 0, best = 0;

    *point_p = 0;
    *bound_p = false;
    if (g_rank == 0) {
        printf("# %s: %s (A) against %s (B), us\n#%11s %12s %12s\n", key,
               a_name, b_name, "bytes", "A", "B");
    }
    for (size_t bytes = lo; bytes <= hi && rc == 0; bytes *= 2) {
        double ta = 1e300, tb = 1e300;

        for (int round = 0; round < 2 && rc == 0; round++) {
            double x, y;

            tune_path(c, kind, true, hier);
            x = tune_time(o, in, out, bytes);
            tune_path(c, kind, false, hier);
            y = tune_time(o, in, out, bytes);
            if (x < 0 || y < 0) {
                rc = 2;
            }
            ta = x < ta ? x : ta;
            tb = y < tb ? y : tb;
        }
        if (g_rank == 0 && rc == 0) {
            printf("%12zu %12.2f %12.2f%s\n", bytes, ta, tb,
                   ta <= tb ? "" : "  B");
        }
        score += ta <= tb ? 1 : -1;
        if (score > best) {
            best = score;
            *point_p = bytes;
            *bound_p = bytes * 2 > hi;
        }
    }
    c->algo = algo;
    c->shm_ar_max = ar_max;
    c->hier = hier;
    if (hier != NULL) {
        hier->forced = forced;
    }
    return rc;
}

int bench_tune(const opts_t *o)
{
    rp_comm_t *c = g_ctx->comm;
    const size_t max = o->max_bytes < 4096 ? 4096 : o->max_bytes;
    rp__tune_t t = {UINT64_MAX, UINT64_MAX, UINT64_MAX};
    char comment[512], host[64] = "?", bounds[128] = "";
    void *in = NULL, *out = NULL;
    bool bound;
    int rc = 0;

    if (g_size < 2) {
        if (g_rank == 0) {
            fprintf(stderr, "ringpoint-bench: --tune needs 2 or more ranks\n");
        }
        return 64;
    }
    if (posix_memalign(&in, 4096, max) != 0 ||
        posix_memalign(&out, 4096, max) != 0) {
        fprintf(stderr, "ringpoint-bench: out of memory for %zu bytes\n", max);
        free(in);
        return 2;
    }
    memset(in, 0, max);
    memset(out, 0, max);
    if (g_rank == 0) {
        printf("# ringpoint-bench --tune: %d ranks on %d nodes, %zu..%zu "
               "bytes, iters %d warmup %d; B: where B won\n", g_size,
               g_ctx->bootstrap->node_count, o->min_bytes, max, o->iters,
               o->warmup);
    }
    /* The ring needs a block for every rank: from 4 bytes a rank. */
    rc = tune_pair(o, T_RD, "allreduce_rd_max", "recursive doubling",
                   "the ring",
                   o->min_bytes > (size_t)g_size * 4 ? o->min_bytes
                                                     : (size_t)g_size * 4,
                   max, in, out, &t.rd_max, &bound);
    if (rc == 0 && bound) {
        strcat(bounds, " allreduce_rd_max");
    }
    if (rc == 0 && c->shm != NULL && c->shm->cma) {
        rc = tune_pair(o, T_SHM, "shm_max", "the segment's slots",
                       "single-copy reads", o->min_bytes < 4096 ? 4096
                                                               : o->min_bytes,
                       max, in, out, &t.shm_max, &bound);
        if (rc == 0 && bound) {
            strcat(bounds, " shm_max");
        }
    }
    if (rc == 0 && c->hier != NULL) {
        rc = tune_pair(o, T_HIER, "hier_max", "the hierarchy",
                       "the flat algorithms",
                       o->min_bytes < 4 ? 4 : o->min_bytes, max, in, out,
                       &t.hier_max, &bound);
        if (rc == 0 && bound) {
            strcat(bounds, " hier_max");
        }
    }
    if (rc == 0 && g_rank == 0) {
        gethostname(host, sizeof(host) - 1);
        snprintf(comment, sizeof(comment),
                 "ringpoint-bench --tune (%s) on %s: %d ranks, %d nodes, "
                 "%zu..%zu bytes%s%s", PACKAGE_VERSION, host, g_size,
                 g_ctx->bootstrap->node_count, o->min_bytes, max,
                 *bounds != '\0' ? "; won to the largest size, a lower "
                                   "bound:" : "", bounds);
        rc = rp__tune_write(o->tune_path, &t, comment) == RP_OK ? 0 : 2;
        if (rc == 0) {
            printf("# wrote %s\n", o->tune_path);
        }
    }
    free(in);
    free(out);
    return rc;
}
