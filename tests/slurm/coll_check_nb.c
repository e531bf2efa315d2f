/*
 * ringpoint-coll-check, part two: the non-blocking collectives and wire
 * compression.
 *
 * Non-blocking: every kind of collective is first run blocking for a
 * reference, then started again non-blocking, several at once with a
 * blocking allreduce in between, completed by polling rp_test (while
 * computing) and by rp_wait; results must equal the references bit for
 * bit, requests must complete in call order, and a request must complete
 * while the application sleeps without calling the library.
 *
 * Compression: float32 grouped allreduces carried as fp16 and bf16 must
 * land within the documented tolerance of the exact sum, be identical on
 * every rank (and, through the run hash, from run to run), equal their
 * non-blocking twins, and differ from the uncompressed result (or the wire
 * format was not used).
 */
#include "coll_check.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Rank @rank's value at index @i of buffer @salt: in [-1, 1), 24 bits, so
 * exact in float32 (and in double). */
static float rnd(int rank, size_t i, uint32_t salt)
{
    uint64_t x = ((uint64_t)(rank + 1) << 44) ^ ((uint64_t)salt << 32) ^ i;

    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return (float)((double)(x >> 40) / 8388608.0 - 1.0);
}

static void fill(rp_dtype_t t, void *buf, size_t n, uint32_t salt)
{
    for (size_t i = 0; i < n; i++) {
        float f = rnd(g_rank, i, salt);
        double d = (double)f;
        int64_t k = (int64_t)(f * 1e6f);
        uint32_t u;
        uint16_t h;

        switch (t) {
        case RP_DTYPE_FLOAT32: memcpy((float *)buf + i, &f, 4); break;
        case RP_DTYPE_FLOAT64: memcpy((double *)buf + i, &d, 8); break;
        case RP_DTYPE_BFLOAT16:
            memcpy(&u, &f, 4);
            h = (uint16_t)(u >> 16);
            memcpy((uint16_t *)buf + i, &h, 2);
            break;
        default: memcpy((int64_t *)buf + i, &k, 8); break;
        }
    }
}

enum { NB_ALLREDUCE, NB_GROUP, NB_BROADCAST, NB_ALLGATHER, NB_BARRIER };
#define NB_GROUP_BUFS 5

typedef struct nb_case {
    int kind;
    rp_dtype_t dtype;
    rp_op_t op;
    size_t count; /* per rank for allgather; total for a group */
    bool inplace;
    char *in, *out, *ref;
    size_t in_bytes, out_bytes;
    rp_request_h req;
} nb_case_t;

/* A group: four small buffers (one empty), then the rest of c->count. */
static size_t group_count(const nb_case_t *c, size_t k)
{
    static const size_t counts[NB_GROUP_BUFS - 1] = {1, 17, 1000, 0};

    return k < NB_GROUP_BUFS - 1 ? counts[k] : c->count - 1018;
}

/* Input (again: in place consumed it) and a poisoned output. */
static void nb_prepare(nb_case_t *c, uint32_t salt)
{
    fill(c->dtype, c->in, c->in_bytes / rp_dtype_size(c->dtype), salt);
    if (!c->inplace) {
        memset(c->out, 0xa5, c->out_bytes);
    }
}

static char *nb_result(nb_case_t *c)
{
    return c->inplace ? c->in : c->out;
}

/* Run @c blocking (req NULL) or start it. */
static rp_status_t nb_run(rp_context_h ctx, nb_case_t *c, rp_request_h *req)
{
    size_t es = rp_dtype_size(c->dtype);
    char *out = nb_result(c);

    switch (c->kind) {
    case NB_ALLREDUCE:
        return req ? rp_iallreduce(ctx, c->in, out, c->count, c->dtype, c->op,
                                   req)
                   : rp_allreduce(ctx, c->in, out, c->count, c->dtype, c->op);
    case NB_GROUP: {
        const void *ins[NB_GROUP_BUFS];
        void *outs[NB_GROUP_BUFS];
        size_t counts[NB_GROUP_BUFS], off = 0;
        rp_status_t st;

        for (size_t k = 0; k < NB_GROUP_BUFS; k++) {
            counts[k] = group_count(c, k);
            ins[k] = c->in + off * es;
            outs[k] = out + off * es;
            off += counts[k];
        }
        st = req ? rp_iallreduce_group(ctx, ins, outs, counts, NB_GROUP_BUFS,
                                       c->dtype, c->op, NULL, req)
                 : rp_allreduce_group(ctx, ins, outs, counts, NB_GROUP_BUFS,
                                      c->dtype, c->op);
        /* The library must have copied the arrays. */
        memset(ins, 0, sizeof(ins));
        memset(outs, 0, sizeof(outs));
        memset(counts, 0xff, sizeof(counts));
        return st;
    }
    case NB_BROADCAST:
        return req ? rp_ibroadcast(ctx, c->in, c->count, c->dtype, g_size - 1,
                                   req)
                   : rp_broadcast(ctx, c->in, c->count, c->dtype, g_size - 1);
    case NB_ALLGATHER:
        return req ? rp_iallgather(ctx, c->in, c->out, c->count, c->dtype, req)
                   : rp_allgather(ctx, c->in, c->out, c->count, c->dtype);
    default:
        return req ? rp_ibarrier(ctx, req) : rp_barrier(ctx);
    }
}

static void nb_alloc(nb_case_t *c)
{
    size_t es = rp_dtype_size(c->dtype);

    c->in_bytes = c->count * es;
    c->out_bytes = c->in_bytes * (c->kind == NB_ALLGATHER ? (size_t)g_size : 1);
    c->in = malloc(c->in_bytes + 1);
    c->out = malloc(c->out_bytes + 1);
    c->ref = malloc(c->out_bytes + 1);
    if (c->in == NULL || c->out == NULL || c->ref == NULL) {
        fprintf(stderr, "coll-check: out of memory\n");
        exit(2);
    }
}

/* A little arithmetic to overlap with, that the compiler cannot drop. */
static double compute(double x, int n)
{
    for (int i = 0; i < n; i++) {
        x = x * 0.999999 + 1e-9;
    }
    return x;
}

void check_nonblocking(rp_context_h ctx, size_t max_count)
{
    size_t big = max_count < 65537 ? max_count : (size_t)65537 * 4;
    nb_case_t cases[] = {
        {.kind = NB_ALLREDUCE, .dtype = RP_DTYPE_FLOAT32, .op = RP_OP_SUM,
         .count = big},
        {.kind = NB_ALLREDUCE, .dtype = RP_DTYPE_BFLOAT16, .op = RP_OP_AVG,
         .count = 4099, .inplace = true},
        {.kind = NB_GROUP, .dtype = RP_DTYPE_FLOAT32, .op = RP_OP_SUM,
         .count = 5117 + 65537},
        {.kind = NB_BROADCAST, .dtype = RP_DTYPE_FLOAT64, .count = 12347,
         .inplace = true},
        /* the blocking one in the middle */
        {.kind = NB_ALLREDUCE, .dtype = RP_DTYPE_FLOAT64, .op = RP_OP_SUM,
         .count = 1000},
        {.kind = NB_ALLGATHER, .dtype = RP_DTYPE_INT64, .count = 1001},
        {.kind = NB_BARRIER, .dtype = RP_DTYPE_UINT8},
        {.kind = NB_ALLREDUCE, .dtype = RP_DTYPE_INT64, .op = RP_OP_MAX,
         .count = 17},
        {.kind = NB_ALLREDUCE, .dtype = RP_DTYPE_FLOAT32, .op = RP_OP_PROD,
         .count = 3, .inplace = true},
    };
    const size_t ncases = sizeof(cases) / sizeof(cases[0]), blocking = 4;
    size_t polls = 0, last = ncases - 1;
    double x = 1.0, t0;
    int done;

    for (size_t k = 0; k < ncases; k++) {
        nb_alloc(&cases[k]);
        nb_prepare(&cases[k], (uint32_t)k);
        check_status("blocking reference", nb_run(ctx, &cases[k], NULL));
        memcpy(cases[k].ref, nb_result(&cases[k]), cases[k].out_bytes);
    }
    for (size_t k = 0; k < ncases; k++) {
        nb_prepare(&cases[k], (uint32_t)k);
    }
    for (size_t k = 0; k < ncases; k++) {
        if (k == blocking) {
            check_status("blocking allreduce among non-blocking ones",
                         nb_run(ctx, &cases[k], NULL));
        } else {
            check_status("start", nb_run(ctx, &cases[k], &cases[k].req));
        }
    }
    /* Poll the last while computing; when it is done, so are the others
     * (call order). */
    do {
        check_status("rp_test", rp_test(&cases[last].req, &done));
        x = compute(x, 1000);
        polls++;
    } while (!done);
    for (size_t k = 0; k < last; k++) {
        if (cases[k].req == NULL) {
            continue;
        }
        check_status("rp_test", rp_test(&cases[k].req, &done));
        if (!done) {
            fprintf(stderr, "coll-check: rank %d: request %zu not complete "
                    "after request %zu completed\n", g_rank, k, last);
            g_errors++;
        }
        check_status("rp_wait", rp_wait(&cases[k].req));
    }
    for (size_t k = 0; k < ncases; k++) {
        char what[96];

        snprintf(what, sizeof(what), "non-blocking case %zu", k);
        if (memcmp(nb_result(&cases[k]), cases[k].ref, cases[k].out_bytes)) {
            fprintf(stderr, "coll-check: rank %d: %s: differs from the "
                    "blocking call\n", g_rank, what);
            g_errors++;
        }
        check_identical(ctx, what, nb_result(&cases[k]), cases[k].out_bytes);
    }

    /* Progress without calls: start, sleep, and it must get done with no
     * call that could drive it (a host request's rp_test only reads its
     * flag). It takes milliseconds; the bound is generous because a loaded
     * CI machine with more ranks than cores may not run the progress
     * threads for a while. */
    nb_prepare(&cases[0], 0);
    check_status("start", nb_run(ctx, &cases[0], &cases[0].req));
    t0 = now_s();
    done = 0;
    while (!done && now_s() - t0 < 20.0) {
        usleep(100 * 1000);
        check_status("rp_test", rp_test(&cases[0].req, &done));
    }
    if (!done) {
        fprintf(stderr, "coll-check: rank %d: an iallreduce of %zu floats "
                "was not done after 20 s without library calls\n", g_rank,
                cases[0].count);
        g_errors++;
        check_status("rp_wait", rp_wait(&cases[0].req));
    }
    if (memcmp(cases[0].out, cases[0].ref, cases[0].out_bytes) != 0) {
        fprintf(stderr, "coll-check: rank %d: background iallreduce differs "
                "from the blocking call\n", g_rank);
        g_errors++;
    }
    /* Many outstanding, waited for in reverse order; a NULL request is
     * complete. */
    for (size_t k = 0; k < ncases; k++) {
        if (k != blocking) {
            nb_prepare(&cases[k], (uint32_t)k);
            check_status("start", nb_run(ctx, &cases[k], &cases[k].req));
        }
    }
    for (size_t k = ncases; k-- > 0;) {
        check_status("rp_wait", rp_wait(&cases[k].req));
        if (cases[k].req != NULL ||
            memcmp(nb_result(&cases[k]), cases[k].ref, cases[k].out_bytes)) {
            fprintf(stderr, "coll-check: rank %d: case %zu waited in reverse "
                    "order: wrong result or request left set\n", g_rank, k);
            g_errors++;
        }
    }
    if (g_rank == 0) {
        printf("coll-check: non-blocking: %zu requests, %zu polls (x=%g)\n",
               ncases - 1, polls, x > 0 ? 1.0 : 0.0);
    }
    for (size_t k = 0; k < ncases; k++) {
        free(cases[k].in);
        free(cases[k].out);
        free(cases[k].ref);
    }
}

/* Compressed grouped allreduce of float32 buffers against the exact sum. */
static void check_one_compression(rp_context_h ctx, rp_compression_t comp,
                                  rp_op_t op, size_t max_count)
{
    const size_t counts[] = {1, 17, 4099, 0, 65537,
                             max_count < 65537 ? 3 : (size_t)(1u << 20) + 3};
    const size_t nb = sizeof(counts) / sizeof(counts[0]);
    const double u = comp == RP_COMPRESSION_FP16 ? ldexp(1, -11) : ldexp(1, -8);
    const double floor_abs = comp == RP_COMPRESSION_FP16
                                 ? g_size * ldexp(1, -24) : 0.0;
    const rp_allreduce_opts_t opts = {.compression = comp};
    const char *name = comp == RP_COMPRESSION_FP16 ? "fp16" : "bf16";
    const void *ins[8];
    void *outs[8], *plain[8], *nbouts[8];
    size_t total = 0, off = 0, bad = 0, same = 0;
    float *in, *out, *ref, *nbo;
    rp_request_h req;
    char what[96];

    for (size_t k = 0; k < nb; k++) {
        total += counts[k];
    }
    in = malloc(total * 4 + 4);
    out = malloc(total * 4 + 4);
    ref = malloc(total * 4 + 4);
    nbo = malloc(total * 4 + 4);
    if (in == NULL || out == NULL || ref == NULL || nbo == NULL) {
        fprintf(stderr, "coll-check: out of memory\n");
        exit(2);
    }
    for (size_t k = 0; k < nb; k++) {
        fill(RP_DTYPE_FLOAT32, in + off, counts[k], 100 + (uint32_t)k);
        ins[k] = in + off;
        outs[k] = out + off;
        plain[k] = ref + off;
        nbouts[k] = nbo + off;
        off += counts[k];
    }
    snprintf(what, sizeof(what), "compressed %s %s", name, rp_op_name(op));
    check_status(what, rp_allreduce_group_opts(ctx, ins, outs, counts, nb,
                                               RP_DTYPE_FLOAT32, op, &opts));
    check_status(what, rp_iallreduce_group(ctx, ins, nbouts, counts, nb,
                                           RP_DTYPE_FLOAT32, op, &opts, &req));
    check_status(what, rp_wait(&req));
    {
        const rp_allreduce_opts_t none = {.compression = RP_COMPRESSION_NONE};

        check_status(what, rp_allreduce_group_opts(ctx, ins, plain, counts, nb,
                                                   RP_DTYPE_FLOAT32, op,
                                                   &none));
    }
    off = 0;
    for (size_t k = 0; k < nb; k++) {
        for (size_t i = 0; i < counts[k]; i++, off++) {
            double exact = 0, mag = 0, tol;

            for (int r = 0; r < g_size; r++) {
                double v = rnd(r, i, 100 + (uint32_t)k);
                exact += v;
                mag += fabs(v);
            }
            tol = (g_size + 1) * u * mag + floor_abs;
            if (op == RP_OP_AVG) {
                exact /= g_size;
                tol /= g_size;
            }
            if (!(fabs(out[off] - exact) <= tol)) {
                if (bad++ == 0) {
                    fprintf(stderr, "coll-check: rank %d: %s: buffer %zu "
                            "element %zu: %.9g, exact %.9g, tolerance %.3g\n",
                            g_rank, what, k, i, out[off], exact, tol);
                }
            }
            same += out[off] == ref[off];
        }
    }
    if (bad > 0) {
        fprintf(stderr, "coll-check: rank %d: %s: %zu of %zu outside the "
                "tolerance\n", g_rank, what, bad, total);
        g_errors++;
    }
    if (same == total) {
        fprintf(stderr, "coll-check: rank %d: %s: equals the uncompressed "
                "result: the wire format was not used\n", g_rank, what);
        g_errors++;
    }
    if (memcmp(out, nbo, total * 4) != 0) {
        fprintf(stderr, "coll-check: rank %d: %s: non-blocking differs from "
                "blocking\n", g_rank, what);
        g_errors++;
    }
    check_identical(ctx, what, out, total * 4);

    /* One buffer alone, in place and out of place: the same bits (not
     * those of the group: the position in a pack decides the order). */
    fill(RP_DTYPE_FLOAT32, in, counts[2], 102);
    ins[0] = in;
    outs[0] = nbo;
    check_status(what, rp_allreduce_group_opts(ctx, ins, outs, &counts[2], 1,
                                               RP_DTYPE_FLOAT32, op, &opts));
    outs[0] = in;
    check_status(what, rp_allreduce_group_opts(ctx, ins, outs, &counts[2], 1,
                                               RP_DTYPE_FLOAT32, op, &opts));
    if (memcmp(in, nbo, counts[2] * 4) != 0) {
        fprintf(stderr, "coll-check: rank %d: %s: in place differs from out "
                "of place\n", g_rank, what);
        g_errors++;
    }
    free(in);
    free(out);
    free(ref);
    free(nbo);
}

/* RINGPOINT_COMPRESSION, when the test sets it: the default of float32
 * grouped allreduces only. */
static void check_env_compression(rp_context_h ctx)
{
    const char *env = getenv("RINGPOINT_COMPRESSION");
    rp_compression_t comp = env == NULL ? RP_COMPRESSION_NONE
                            : strcmp(env, "fp16") == 0 ? RP_COMPRESSION_FP16
                            : strcmp(env, "bf16") == 0 ? RP_COMPRESSION_BF16
                                                       : RP_COMPRESSION_NONE;
    const rp_allreduce_opts_t opts = {.compression = comp};
    float a[4099], b[4099], c[4099];
    int32_t ia[3] = {1 << 20, 3, -7}, ib[3];
    const void *in = a;
    void *out = b;
    size_t n = 4099, n3 = 3;

    fill(RP_DTYPE_FLOAT32, a, n, 7);
    check_status("env compression",
                 rp_allreduce_group(ctx, &in, &out, &n, 1, RP_DTYPE_FLOAT32,
                                    RP_OP_SUM));
    out = c;
    check_status("env compression",
                 rp_allreduce_group_opts(ctx, &in, &out, &n, 1,
                                         RP_DTYPE_FLOAT32, RP_OP_SUM, &opts));
    if (memcmp(b, c, sizeof(b)) != 0) {
        fprintf(stderr, "coll-check: rank %d: RINGPOINT_COMPRESSION=%s is not "
                "the default of a grouped allreduce\n", g_rank,
                env ? env : "(unset)");
        g_errors++;
    }
    in = ia;
    out = ib;
    check_status("env compression, int32",
                 rp_allreduce_group(ctx, &in, &out, &n3, 1, RP_DTYPE_INT32,
                                    RP_OP_SUM));
    if (ib[0] != g_size * (1 << 20) || ib[2] != -7 * g_size) {
        fprintf(stderr, "coll-check: rank %d: an int32 grouped allreduce was "
                "not exact under RINGPOINT_COMPRESSION\n", g_rank);
        g_errors++;
    }
}

void check_compression(rp_context_h ctx, size_t max_count)
{
    static const rp_op_t ops[] = {RP_OP_SUM, RP_OP_AVG};

    for (size_t o = 0; o < 2; o++) {
        check_one_compression(ctx, RP_COMPRESSION_FP16, ops[o], max_count);
        check_one_compression(ctx, RP_COMPRESSION_BF16, ops[o], max_count);
    }
    check_env_compression(ctx);
}

/* A grouped allreduce with a signature: equal signatures reduce as usual;
 * different ones (here with different counts too, which would otherwise
 * pair unrelated messages) fail on every rank with RP_ERR_MISMATCH, touch
 * no output, and leave the context working, blocking and non-blocking. */
void check_signature(rp_context_h ctx)
{
    float x[8], y[8];
    const void *s[1] = {x};
    void *r[1] = {y};
    size_t n[1] = {4};
    size_t bad[1] = {4 + (size_t)g_rank};
    rp_allreduce_opts_t same = {.signature = 0x5eed0000u};
    rp_allreduce_opts_t differ = {.signature = 0x5eed1000u + 2u * (uint64_t)g_rank};
    rp_request_h q1, q2;
    rp_status_t st;

    for (int i = 0; i < 8; i++) {
        x[i] = (float)(i + 1);
        y[i] = -1.0f;
    }
    check_status("signature: equal",
                 rp_allreduce_group_opts(ctx, s, r, n, 1, RP_DTYPE_FLOAT32,
                                         RP_OP_SUM, &same));
    if (y[0] != (float)g_size || y[3] != 4.0f * (float)g_size) {
        fprintf(stderr, "coll-check: rank %d: signature: wrong sum %g\n",
                g_rank, (double)y[0]);
        g_errors++;
    }
    if (g_size < 2) {
        return;
    }
    y[0] = -1.0f;
    st = rp_allreduce_group_opts(ctx, s, r, bad, 1, RP_DTYPE_FLOAT32,
                                 RP_OP_SUM, &differ);
    if (st != RP_ERR_MISMATCH || y[0] != -1.0f) {
        fprintf(stderr, "coll-check: rank %d: signature: a mismatch gave %s "
                "and output %g\n", g_rank, rp_status_string(st), (double)y[0]);
        g_errors++;
    }
    check_status("signature: start mismatched",
                 rp_iallreduce_group(ctx, s, r, bad, 1, RP_DTYPE_FLOAT32,
                                     RP_OP_SUM, &differ, &q1));
    check_status("signature: start matching",
                 rp_iallreduce_group(ctx, s, r, n, 1, RP_DTYPE_FLOAT32,
                                     RP_OP_SUM, &same, &q2));
    st = rp_wait(&q1);
    if (st != RP_ERR_MISMATCH) {
        fprintf(stderr, "coll-check: rank %d: signature: non-blocking mismatch "
                "gave %s\n", g_rank, rp_status_string(st));
        g_errors++;
    }
    check_status("signature: the next one", rp_wait(&q2));
    if (y[1] != 2.0f * (float)g_size) {
        fprintf(stderr, "coll-check: rank %d: signature: wrong sum after a "
                "mismatch %g\n", g_rank, (double)y[1]);
        g_errors++;
    }
}
