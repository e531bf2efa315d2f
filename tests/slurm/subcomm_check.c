/*
 * ringpoint-subcomm-check: sub-communicators on a real launch.
 *
 * Builds sub-communicators every way the API offers (an even/odd split, a
 * split with reversed keys, an explicit list, a split of a split, one
 * that leaves a rank out) and runs on each: allreduce of several types
 * and operations (one size past 1 MiB), broadcast from the last sub-rank,
 * allgather, barrier, and non-blocking collectives interleaved with the
 * job's; then the refusals (lists that differ or repeat a rank,
 * checkpoints on a sub-communicator). Every expected value is computed
 * here from the members' job ranks, with integer-valued inputs that every
 * type holds exactly.
 *
 *   ringpoint-subcomm-check        (under mpirun or srun --mpi=pmix)
 *   ringpoint-subcomm-check -k     job rank 2 leaves after the even/odd
 *                                  split; the even ranks' allreduce on
 *                                  their sub-communicator must fail, and
 *                                  the job's context with it
 *
 * Rank 0 prints one line per check, "subcomm-check: ok - NAME" or
 * "subcomm-check: not ok - NAME (N ranks failed)", with the details on the
 * failing ranks' stderr, and a last line "subcomm-check: passed N checks"
 * or "... FAILED"; the exit status is 0 only when every check passed on
 * every rank.
 */
#include "ringpoint.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LARGE 300000 /* float32s: 1.2 MB, the large-message path */

static rp_context_h g_job;
static int g_rank, g_size, g_checks, g_failed;
static bool g_ok; /* this rank, the check running */

static void fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "subcomm-check: rank %d: ", g_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    g_ok = false;
}

static void expect_rc(rp_status_t rc, rp_status_t want, const char *what)
{
    if (rc != want) {
        fail("%s returned %s, expected %s", what, rp_status_string(rc),
             rp_status_string(want));
    }
}

/* Every rank's verdict on the check just run, on the job's context. */
static void verdict(const char *name)
{
    int32_t bad = g_ok ? 0 : 1;

    if (rp_allreduce(g_job, &bad, &bad, 1, RP_DTYPE_INT32, RP_OP_SUM) !=
        RP_OK) {
        fprintf(stderr, "subcomm-check: rank %d: the verdict's allreduce "
                "failed\n", g_rank);
        exit(2);
    }
    g_checks++;
    if (bad != 0) {
        g_failed++;
    }
    if (g_rank == 0) {
        if (bad == 0) {
            printf("subcomm-check: ok - %s\n", name);
        } else {
            printf("subcomm-check: not ok - %s (%d ranks failed)\n", name,
                   (int)bad);
        }
        fflush(stdout);
    }
    g_ok = true;
}

/* A sub-communicator as this rank expects it: its members' job ranks in
 * sub-rank order; this rank's place, -1 if it is not a member. */
typedef struct plan {
    int n;
    int world[64];
    int me;
} plan_t;

static void plan_add(plan_t *p, int job_rank)
{
    if (job_rank == g_rank) {
        p->me = p->n;
    }
    p->world[p->n++] = job_rank;
}

/* Input element @i of job rank @r: small integers, exact in every type. */
static double input(int r, size_t i)
{
    return (double)((int)((i * 7 + (size_t)r * 3) % 13) - 6 + r);
}

static void store(rp_dtype_t t, void *buf, size_t i, double v)
{
    switch (t) {
    case RP_DTYPE_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case RP_DTYPE_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case RP_DTYPE_FLOAT32: ((float *)buf)[i] = (float)v; break;
    default: ((double *)buf)[i] = v; break;
    }
}

static double load(rp_dtype_t t, const void *buf, size_t i)
{
    switch (t) {
    case RP_DTYPE_INT32: return ((const int32_t *)buf)[i];
    case RP_DTYPE_INT64: return (double)((const int64_t *)buf)[i];
    case RP_DTYPE_FLOAT32: return ((const float *)buf)[i];
    default: return ((const double *)buf)[i];
    }
}

static double reduce(const plan_t *p, rp_op_t op, size_t i)
{
    double acc = input(p->world[0], i);

    for (int k = 1; k < p->n; k++) {
        double v = input(p->world[k], i);

        acc = op == RP_OP_SUM ? acc + v : op == RP_OP_MAX ? (v > acc ? v : acc)
                                                          : (v < acc ? v : acc);
    }
    return acc;
}

static void check_query(rp_context_h sub, const plan_t *p, int parent_rank)
{
    rp_context_attr_t a = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                         RP_CONTEXT_ATTR_FIELD_SIZE |
                                         RP_CONTEXT_ATTR_FIELD_PARENT};

    expect_rc(rp_context_query(sub, &a), RP_OK, "rp_context_query");
    if (a.rank != p->me || a.size != p->n || a.job_rank != g_rank ||
        a.parent_rank != parent_rank) {
        fail("query: rank %d size %d parent %d job %d, expected %d %d %d %d",
             a.rank, a.size, a.parent_rank, a.job_rank, p->me, p->n,
             parent_rank, g_rank);
    }
}

static void check_allreduce(rp_context_h sub, const plan_t *p, char *buf)
{
    static const struct { rp_dtype_t t; rp_op_t op; size_t es; } cases[] = {
        {RP_DTYPE_INT32, RP_OP_SUM, 4}, {RP_DTYPE_INT64, RP_OP_MAX, 8},
        {RP_DTYPE_FLOAT32, RP_OP_SUM, 4}, {RP_DTYPE_FLOAT64, RP_OP_MIN, 8},
    };
    static const size_t counts[] = {1, 17, 4099, LARGE};

    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
            const size_t n = counts[k];
            size_t wrong = 0;

            for (size_t i = 0; i < n; i++) {
                store(cases[c].t, buf, i, input(g_rank, i));
            }
            /* In place: one buffer of LARGE doubles is all we keep. */
            expect_rc(rp_allreduce(sub, buf, buf, n, cases[c].t, cases[c].op),
                      RP_OK, "rp_allreduce");
            for (size_t i = 0; i < n; i++) {
                wrong += load(cases[c].t, buf, i) != reduce(p, cases[c].op, i);
            }
            if (wrong > 0) {
                fail("allreduce dtype %d op %d count %zu: %zu wrong",
                     (int)cases[c].t, (int)cases[c].op, n, wrong);
            }
        }
    }
}

static void check_broadcast(rp_context_h sub, const plan_t *p, char *buf)
{
    static const size_t counts[] = {5, LARGE};
    const int root = p->n - 1; /* non-zero where the size allows */

    for (size_t k = 0; k < 2; k++) {
        float *f = (float *)buf;
        size_t wrong = 0;

        for (size_t i = 0; i < counts[k]; i++) {
            f[i] = p->me == root ? (float)input(g_rank, i) : -1.0f;
        }
        expect_rc(rp_broadcast(sub, f, counts[k], RP_DTYPE_FLOAT32, root),
                  RP_OK, "rp_broadcast");
        for (size_t i = 0; i < counts[k]; i++) {
            wrong += f[i] != (float)input(p->world[root], i);
        }
        if (wrong > 0) {
            fail("broadcast root %d count %zu: %zu wrong", root, counts[k],
                 wrong);
        }
    }
}

static void check_allgather(rp_context_h sub, const plan_t *p)
{
    int32_t mine[3] = {g_rank, p->me, 42}, all[3 * 64];

    expect_rc(rp_allgather(sub, mine, all, 3, RP_DTYPE_INT32), RP_OK,
              "rp_allgather");
    for (int k = 0; k < p->n; k++) {
        if (all[3 * k] != p->world[k] || all[3 * k + 1] != k ||
            all[3 * k + 2] != 42) {
            fail("allgather: block %d is %d,%d,%d, expected %d,%d,42", k,
                 all[3 * k], all[3 * k + 1], all[3 * k + 2], p->world[k], k);
        }
    }
    expect_rc(rp_barrier(sub), RP_OK, "rp_barrier");
}

/* Non-blocking on the job and on @sub, interleaved in the same order on
 * every rank (the ranks outside @sub skip its calls). */
static void check_interleaved(rp_context_h sub, const plan_t *p)
{
    plan_t job = {.n = 0, .me = -1};
    int32_t ja[100], jb[LARGE / 100], sa[100], sg[2 * 64], sbc[7];
    int32_t mine[2] = {g_rank, -g_rank};
    rp_request_h r[6] = {NULL};
    int nr = 0;

    for (int q = 0; q < g_size; q++) {
        plan_add(&job, q);
    }
    for (int i = 0; i < 100; i++) {
        ja[i] = (int32_t)input(g_rank, (size_t)i);
        sa[i] = (int32_t)input(g_rank, (size_t)i + 1);
    }
    for (size_t i = 0; i < LARGE / 100; i++) {
        jb[i] = (int32_t)input(g_rank, i);
    }
    for (int i = 0; i < 7; i++) {
        sbc[i] = p != NULL && p->me == 0 ? 1000 + i : 0;
    }
    expect_rc(rp_iallreduce(g_job, ja, ja, 100, RP_DTYPE_INT32, RP_OP_SUM,
                            &r[nr++]), RP_OK, "rp_iallreduce job");
    if (sub != NULL) {
        expect_rc(rp_iallreduce(sub, sa, sa, 100, RP_DTYPE_INT32, RP_OP_SUM,
                                &r[nr++]), RP_OK, "rp_iallreduce sub");
        expect_rc(rp_iallgather(sub, mine, sg, 2, RP_DTYPE_INT32, &r[nr++]),
                  RP_OK, "rp_iallgather sub");
    }
    expect_rc(rp_iallreduce(g_job, jb, jb, LARGE / 100, RP_DTYPE_INT32,
                            RP_OP_MAX, &r[nr++]), RP_OK, "rp_iallreduce job");
    if (sub != NULL) {
        expect_rc(rp_ibroadcast(sub, sbc, 7, RP_DTYPE_INT32, 0, &r[nr++]),
                  RP_OK, "rp_ibroadcast sub");
        expect_rc(rp_ibarrier(sub, &r[nr++]), RP_OK, "rp_ibarrier sub");
    }
    /* Waited for out of order: completion follows the call order. */
    for (int k = nr - 1; k >= 0; k--) {
        expect_rc(rp_wait(&r[k]), RP_OK, "rp_wait");
    }
    for (int i = 0; i < 100; i++) {
        if (ja[i] != reduce(&job, RP_OP_SUM, (size_t)i)) {
            fail("interleaved job allreduce: element %d wrong", i);
            break;
        }
    }
    for (size_t i = 0; i < LARGE / 100; i++) {
        if (jb[i] != reduce(&job, RP_OP_MAX, i)) {
            fail("interleaved large job allreduce: element %zu wrong", i);
            break;
        }
    }
    if (sub == NULL) {
        return;
    }
    for (int i = 0; i < 100; i++) {
        if (sa[i] != reduce(p, RP_OP_SUM, (size_t)i + 1)) {
            fail("interleaved sub allreduce: element %d wrong", i);
            break;
        }
    }
    for (int k = 0; k < p->n; k++) {
        if (sg[2 * k] != p->world[k] || sg[2 * k + 1] != -p->world[k]) {
            fail("interleaved sub allgather: block %d wrong", k);
        }
    }
    for (int i = 0; i < 7; i++) {
        if (sbc[i] != 1000 + i) {
            fail("interleaved sub broadcast: element %d is %d", i, sbc[i]);
            break;
        }
    }
}

/* Everything on @sub (NULL where this rank is not a member of the plan). */
static void suite(const char *label, rp_context_h sub, const plan_t *p,
                  int parent_rank, char *buf)
{
    char name[128];

    if ((sub != NULL) != (p->me >= 0)) {
        fail("%s: got %s context, expected %s", label,
             sub != NULL ? "a" : "no", p->me >= 0 ? "one" : "none");
        sub = NULL;
    }
    snprintf(name, sizeof(name), "%s: membership and rp_context_query", label);
    if (sub != NULL) {
        check_query(sub, p, parent_rank);
    }
    verdict(name);
    snprintf(name, sizeof(name), "%s: allreduce (4 types x 4 sizes, 1.2 MB)",
             label);
    if (sub != NULL) {
        check_allreduce(sub, p, buf);
    }
    verdict(name);
    snprintf(name, sizeof(name), "%s: broadcast from the last sub-rank",
             label);
    if (sub != NULL) {
        check_broadcast(sub, p, buf);
    }
    verdict(name);
    snprintf(name, sizeof(name), "%s: allgather and barrier", label);
    if (sub != NULL) {
        check_allgather(sub, p);
    }
    verdict(name);
    snprintf(name, sizeof(name), "%s: non-blocking, interleaved with the job",
             label);
    check_interleaved(sub, p);
    verdict(name);
}

static void check_refusals(rp_context_h sub)
{
    int list[64], n = 0;
    rp_context_h none = NULL;
    char x[8];

    for (int q = 0; q < g_size; q++) {
        list[n++] = q;
    }
    if (g_size > 1 && g_rank == g_size - 1) {
        list[0] = 1; /* a different order on one rank */
        list[1] = 0;
    }
    expect_rc(rp_comm_create_group(g_job, list, n, &none),
              g_size > 1 ? RP_ERR_MISMATCH : RP_OK,
              "rp_comm_create_group (lists differ)");
    rp_comm_free(none);
    none = NULL;
    verdict("a list that differs on one rank: RP_ERR_MISMATCH on every rank");

    for (int q = 0; q < g_size; q++) {
        list[q] = q;
    }
    if (g_rank == 0) {
        list[g_size - 1] = 0; /* a duplicate (size 1: itself, still fine) */
    }
    expect_rc(rp_comm_create_group(g_job, list, g_size, &none),
              g_size > 1 ? RP_ERR_INVALID_ARG : RP_OK,
              "rp_comm_create_group (duplicate)");
    rp_comm_free(none);
    none = NULL;
    verdict("a duplicate on one rank: RP_ERR_INVALID_ARG on every rank");

    expect_rc(rp_comm_split(g_job, g_rank == 0 ? -3 : 0, 0, &none),
              RP_ERR_INVALID_ARG, "rp_comm_split (color -3 on rank 0)");
    if (none != NULL) {
        fail("a refused split returned a context");
    }
    verdict("a negative color on one rank: RP_ERR_INVALID_ARG on every rank");

    expect_rc(rp_region_register(sub, "x", x, sizeof(x), RP_REGION_PER_RANK),
              RP_ERR_INVALID_ARG, "rp_region_register on a sub-communicator");
    verdict("checkpoint regions on a sub-communicator: refused");
}

/* -k: rank 2 goes; the others report what their collectives return. */
static int run_kill(void)
{
    rp_context_h eo = NULL;
    rp_status_t sub_rc = RP_OK, job_rc;
    int32_t v = 1;

    if (rp_comm_split(g_job, g_rank % 2, g_rank, &eo) != RP_OK) {
        return 2;
    }
    if (g_rank == 2) {
        _exit(0); /* without a word: the others must notice */
    }
    if (g_rank % 2 == 0) {
        sub_rc = rp_allreduce(eo, &v, &v, 1, RP_DTYPE_INT32, RP_OP_SUM);
    }
    job_rc = rp_allreduce(g_job, &v, &v, 1, RP_DTYPE_INT32, RP_OP_SUM);
    printf("subcomm-check: rank %d: sub allreduce returned '%s', job "
           "allreduce returned '%s'\n", g_rank, rp_status_string(sub_rc),
           rp_status_string(job_rc));
    fflush(stdout);
    /* The job is broken: leave without rp_finalize's barrier. */
    _exit(job_rc != RP_OK && (g_rank % 2 == 1 || sub_rc != RP_OK) ? 0 : 1);
}

int main(int argc, char **argv)
{
    rp_context_h eo = NULL, rev = NULL, grp = NULL, eo2 = NULL, part = NULL;
    plan_t peo = {.me = -1}, prev = {.me = -1}, pgrp = {.me = -1},
           peo2 = {.me = -1}, ppart = {.me = -1};
    rp_context_attr_t a = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                         RP_CONTEXT_ATTR_FIELD_SIZE};
    int list[64], n = 0;
    char *buf;

    if (rp_init(NULL, &g_job) != RP_OK ||
        rp_context_query(g_job, &a) != RP_OK) {
        fprintf(stderr, "subcomm-check: rp_init failed\n");
        return 2;
    }
    g_rank = a.rank;
    g_size = a.size;
    g_ok = true;
    if (g_size > 64) {
        fprintf(stderr, "subcomm-check: at most 64 ranks\n");
        return 2;
    }
    if (argc > 1 && strcmp(argv[1], "-k") == 0) {
        if (g_size < 3) {
            fprintf(stderr, "subcomm-check: -k needs 3 ranks or more\n");
            return 2;
        }
        return run_kill();
    }
    buf = malloc(LARGE * sizeof(double));
    if (buf == NULL) {
        return 2;
    }

    /* Even and odd job ranks, in job order. */
    expect_rc(rp_comm_split(g_job, g_rank % 2, g_rank, &eo), RP_OK,
              "rp_comm_split even/odd");
    for (int q = g_rank % 2; q < g_size; q += 2) {
        plan_add(&peo, q);
    }
    suite("even/odd split", eo, &peo, g_rank, buf);

    /* Everyone, keys reversed. */
    expect_rc(rp_comm_split(g_job, 0, g_size - g_rank, &rev), RP_OK,
              "rp_comm_split reversed");
    for (int q = g_size - 1; q >= 0; q--) {
        plan_add(&prev, q);
    }
    suite("reversed-key split", rev, &prev, g_rank, buf);

    /* An explicit list: the ranks not 1 mod 3, last first (size 1 at 2
     * ranks: copies only). */
    for (int q = g_size - 1; q >= 0; q--) {
        if (q % 3 != 1) {
            list[n++] = q;
            plan_add(&pgrp, q);
        }
    }
    expect_rc(rp_comm_create_group(g_job, list, n, &grp), RP_OK,
              "rp_comm_create_group");
    suite("explicit group", grp, &pgrp, g_rank, buf);

    /* A split of the even/odd split: by sub-rank parity, keys reversed. */
    expect_rc(rp_comm_split(eo, peo.me % 2, -peo.me, &eo2), RP_OK,
              "rp_comm_split of a split");
    for (int k = peo.n - 1; k >= 0; k--) {
        if (k % 2 == peo.me % 2) {
            plan_add(&peo2, peo.world[k]);
        }
    }
    suite("split of a split", eo2, &peo2, peo.me, buf);

    /* Rank 0 left out (RP_UNDEFINED), of the reversed split. */
    expect_rc(rp_comm_split(rev, g_rank == 0 ? RP_UNDEFINED : 1, 0, &part),
              RP_OK, "rp_comm_split with RP_UNDEFINED");
    for (int k = 0; k < prev.n; k++) {
        if (prev.world[k] != 0) {
            plan_add(&ppart, prev.world[k]);
        }
    }
    suite("split leaving rank 0 out", part, &ppart, prev.me, buf);

    check_refusals(eo);

    /* Freed in an order unlike creation's; grp and part (and eo2 with eo)
     * are left to rp_finalize. */
    rp_comm_free(rev);
    rp_comm_free(eo);
    expect_rc(rp_barrier(g_job), RP_OK, "rp_barrier after the frees");
    verdict("the job's context after freeing sub-communicators");

    free(buf);
    if (g_rank == 0) {
        printf("subcomm-check: %s %d checks on %d ranks\n",
               g_failed == 0 ? "passed" : "FAILED", g_checks, g_size);
    }
    rp_finalize(g_job);
    return g_failed == 0 ? 0 : 1;
}
