/*
 * ringpoint-coll-check: correctness of the collectives on a real launch.
 *
 * Every rank runs every dtype x op x size x buffer placement through
 * rp_allreduce, with integer-valued inputs small enough that every type
 * (bfloat16 included) holds every partial sum exactly, so the expected
 * result is known exactly. Pseudo-random float inputs then check what exact
 * values cannot: that all ranks get identical bits (hashes compared with an
 * allgather) and that a second run prints the same hash. Broadcast from
 * every root, allgather in and out of place, the reduce-scatter and the
 * all-to-all (coll_check_exchange.c), and the barrier follow; then
 * the non-blocking collectives and wire compression (coll_check_nb.c).
 *
 *   ringpoint-coll-check [-q]                 the full check
 *   ringpoint-coll-check -l                   only: results independent of
 *                                             layout (coll_check_layout.c)
 *   ringpoint-coll-check -k RANK -t MS        RANK kills itself (SIGKILL) MS
 *                                             ms in; the others must fail
 *
 * Prints "coll-check: ok ... hash=..." on rank 0 and exits 0 when all is
 * well; on a failure prints what differed and exits 1 (2 for a failing call).
 */
#include "coll_check.h"
#include "reduce/half.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

int g_rank, g_size, g_errors;
uint64_t g_hash = 1469598103934665603ULL; /* of every result, in order */

uint64_t fnv(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;

    for (size_t i = 0; i < len; i++) {
        h = (h ^ p[i]) * 1099511628211ULL;
    }
    return h;
}

double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The inputs' encodings. The random check's inputs (check_random) are
 * defined with bfloat16 truncated and float16 flushed to zero below its
 * normal range, not rounded: the hashes of earlier runs and of other
 * builds are computed from exactly these bits, so they stay. The exact
 * inputs (small integers) encode alike either way. */
static uint16_t to_bf16(float f)
{
    return (uint16_t)(rp__f32_bits(f) >> 16);
}

static uint16_t to_f16(float f)
{
    const uint32_t u = rp__f32_bits(f);

    if ((u & 0x7FFFFFFFu) < (113u << 23)) { /* below 2^-14: signed zero */
        return (uint16_t)((u >> 16) & 0x8000u);
    }
    return rp__f32_to_f16_1(f);
}

void store(rp_dtype_t t, void *buf, size_t i, double v)
{
    char *p = (char *)buf + i * rp_dtype_size(t);
    uint8_t u8;
    int32_t i32;
    int64_t i64;
    uint16_t h;
    float f;

    switch (t) {
    case RP_DTYPE_UINT8: u8 = (uint8_t)v; memcpy(p, &u8, 1); break;
    case RP_DTYPE_INT32: i32 = (int32_t)v; memcpy(p, &i32, 4); break;
    case RP_DTYPE_INT64: i64 = (int64_t)v; memcpy(p, &i64, 8); break;
    case RP_DTYPE_FLOAT16: h = to_f16((float)v); memcpy(p, &h, 2); break;
    case RP_DTYPE_BFLOAT16: h = to_bf16((float)v); memcpy(p, &h, 2); break;
    case RP_DTYPE_FLOAT32: f = (float)v; memcpy(p, &f, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

double load(rp_dtype_t t, const void *buf, size_t i)
{
    const char *p = (const char *)buf + i * rp_dtype_size(t);
    uint8_t u8;
    int32_t i32;
    int64_t i64;
    uint16_t h;
    float f;
    double d;

    switch (t) {
    case RP_DTYPE_UINT8: memcpy(&u8, p, 1); return u8;
    case RP_DTYPE_INT32: memcpy(&i32, p, 4); return i32;
    case RP_DTYPE_INT64: memcpy(&i64, p, 8); return (double)i64;
    case RP_DTYPE_FLOAT16: memcpy(&h, p, 2); return rp__f16_to_f32_1(h);
    case RP_DTYPE_BFLOAT16: memcpy(&h, p, 2); return rp__bf16_to_f32_1(h);
    case RP_DTYPE_FLOAT32: memcpy(&f, p, 4); return f;
    default: memcpy(&d, p, 8); return d;
    }
}

/* Input of @rank at index @i for @op: small integers whose sums, products
 * and averages are exact in every type, including bfloat16 (8 bits). */
static double input(rp_dtype_t t, rp_op_t op, int rank, size_t i)
{
    bool u = t == RP_DTYPE_UINT8;
    long k;

    switch (op) {
    case RP_OP_SUM:
        return u ? (double)((i * 7 + (size_t)rank * 13) % 41)
                 : (double)((long)((i * 7 + (size_t)rank * 13) % 21) - 10);
    case RP_OP_AVG: /* a multiple of the rank count: the mean is exact */
        k = u ? (long)((i * 5 + (size_t)rank * 3) % 9)
              : (long)((i * 5 + (size_t)rank * 3) % 17) - 8;
        return (double)(k * g_size);
    case RP_OP_PROD:
        k = ((i + (size_t)rank) % 3 == 0) ? 2 : 1;
        if (!u && (i * 3 + (size_t)rank) % 5 == 0) {
            k = -k;
        }
        return (double)k;
    default:
        return u ? (double)((i * 11 + (size_t)rank * 17) % 51)
                 : (double)((long)((i * 11 + (size_t)rank * 17) % 51) - 25);
    }
}

static double expected(rp_dtype_t t, rp_op_t op, size_t i)
{
    double acc = input(t, op, 0, i);

    for (int r = 1; r < g_size; r++) {
        double v = input(t, op, r, i);

        switch (op) {
        case RP_OP_SUM: case RP_OP_AVG: acc += v; break;
        case RP_OP_PROD: acc *= v; break;
        case RP_OP_MIN: acc = v < acc ? v : acc; break;
        default: acc = v > acc ? v : acc; break;
        }
    }
    return op == RP_OP_AVG ? acc / g_size : acc;
}

void check_status(const char *what, rp_status_t st)
{
    if (st != RP_OK) {
        fprintf(stderr, "coll-check: rank %d: %s failed: %s\n", g_rank, what,
                rp_status_string(st));
        exit(2);
    }
}

/* All ranks hold the same bits: compare hashes through an allgather. */
void check_identical(rp_context_h ctx, const char *what,
                            const void *buf, size_t len)
{
    uint64_t h = fnv(1469598103934665603ULL, buf, len);
    uint64_t *all = malloc(sizeof(*all) * (size_t)g_size);

    check_status("allgather of hashes",
                 rp_allgather(ctx, &h, all, 1, RP_DTYPE_INT64));
    for (int r = 0; r < g_size; r++) {
        if (all[r] != h) {
            fprintf(stderr, "coll-check: rank %d: %s: rank %d got different "
                    "bits (hash %016" PRIx64 " vs %016" PRIx64 ")\n", g_rank,
                    what, r, all[r], h);
            g_errors++;
            break;
        }
    }
    g_hash = fnv(g_hash, &h, sizeof(h));
    free(all);
}

/* 2048 and 2049 float32 straddle the shared segment's switch from every
 * rank reducing the whole buffer to each reducing its share (8 KiB);
 * (1 << 20) + 3 spans several of its 1 MiB slots in the narrow types. */
static const size_t sizes[] = {0, 1, 2, 3, 7, 17, 1000, 2048, 2049, 4099,
                               65537, (1u << 20) + 3};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Placements: out of place, in place, out of place on odd addresses. */
enum { OUT_OF_PLACE, IN_PLACE, UNALIGNED, NPLACES };
static const char *const place_names[] = {"out-of-place", "in-place",
                                          "unaligned"};

static void check_allreduce(rp_context_h ctx, char *a, char *b,
                            size_t max_count)
{
    for (int t = 0; t < RP_DTYPE_COUNT; t++) {
        size_t es = rp_dtype_size((rp_dtype_t)t);

        for (int op = 0; op < RP_OP_COUNT; op++) {
            for (size_t s = 0; s < NSIZES && sizes[s] <= max_count; s++) {
                for (int pl = 0; pl < NPLACES; pl++) {
                    size_t n = sizes[s];
                    char *in = pl == UNALIGNED ? a + 1 : a;
                    char *out = pl == IN_PLACE ? in : pl == UNALIGNED ? b + 3 : b;
                    char what[128];
                    size_t bad = 0, first = 0;

                    snprintf(what, sizeof(what), "allreduce %s %s count=%zu %s",
                             rp_dtype_name((rp_dtype_t)t),
                             rp_op_name((rp_op_t)op), n, place_names[pl]);
                    for (size_t i = 0; i < n; i++) {
                        store((rp_dtype_t)t, in, i,
                              input((rp_dtype_t)t, (rp_op_t)op, g_rank, i));
                    }
                    if (out != in) {
                        memset(out, 0xa5, n * es); /* no stale right answer */
                    }
                    check_status(what, rp_allreduce(ctx, in, out, n,
                                                    (rp_dtype_t)t, (rp_op_t)op));
                    for (size_t i = 0; i < n; i++) {
                        double want = expected((rp_dtype_t)t, (rp_op_t)op, i);
                        if (load((rp_dtype_t)t, out, i) != want) {
                            if (bad++ == 0) {
                                first = i;
                            }
                        }
                    }
                    if (bad > 0) {
                        fprintf(stderr, "coll-check: rank %d: %s: %zu wrong, "
                                "first at %zu: got %g, expected %g\n", g_rank,
                                what, bad, first,
                                load((rp_dtype_t)t, out, first),
                                expected((rp_dtype_t)t, (rp_op_t)op, first));
                        g_errors++;
                    }
                    check_identical(ctx, what, out, n * es);
                }
            }
        }
    }
}

/* Inexact float sums: only determinism can be checked, not the value. */
static void check_random(rp_context_h ctx, char *a, char *b, size_t max_count)
{
    static const rp_dtype_t types[] = {RP_DTYPE_FLOAT16, RP_DTYPE_BFLOAT16,
                                       RP_DTYPE_FLOAT32, RP_DTYPE_FLOAT64};
    static const rp_op_t ops[] = {RP_OP_SUM, RP_OP_AVG, RP_OP_PROD};

    for (size_t ti = 0; ti < 4; ti++) {
        for (size_t oi = 0; oi < 3; oi++) {
            for (size_t s = 0; s < NSIZES && sizes[s] <= max_count; s++) {
                size_t n = sizes[s];
                uint64_t x = 0x9e3779b97f4a7c15ULL * (uint64_t)(g_rank + 1);
                char what[128];

                for (size_t i = 0; i < n; i++) {
                    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                    store(types[ti], a, i,
                          ((double)(x >> 11) / 9007199254740992.0) * 2.0 - 1.0 +
                              (ops[oi] == RP_OP_PROD ? 1.5 : 0.0));
                }
                snprintf(what, sizeof(what), "allreduce random %s %s count=%zu",
                         rp_dtype_name(types[ti]), rp_op_name(ops[oi]), n);
                check_status(what, rp_allreduce(ctx, a, b, n, types[ti], ops[oi]));
                check_identical(ctx, what, b, n * rp_dtype_size(types[ti]));
                /* In place must give the very same bits. */
                {
                    uint64_t h1 = fnv(1, b, n * rp_dtype_size(types[ti]));
                    check_status(what, rp_allreduce(ctx, a, a, n, types[ti],
                                                    ops[oi]));
                    if (fnv(1, a, n * rp_dtype_size(types[ti])) != h1) {
                        fprintf(stderr, "coll-check: rank %d: %s: in place "
                                "differs from out of place\n", g_rank, what);
                        g_errors++;
                    }
                }
            }
        }
    }
}

static void check_broadcast(rp_context_h ctx, char *a, size_t max_count)
{
    for (int root = 0; root < g_size; root++) {
        for (size_t s = 0; s < NSIZES && sizes[s] <= max_count; s++) {
            size_t n = sizes[s] * 4; /* float32 worth of bytes */
            char *buf = a + (s & 1); /* odd addresses too */
            size_t bad = 0;

            for (size_t i = 0; i < n; i++) {
                buf[i] = (char)(g_rank == root ? (i * 31 + (size_t)root) & 0xff
                                               : 0x5a);
            }
            check_status("broadcast",
                         rp_broadcast(ctx, buf, n / 4, RP_DTYPE_FLOAT32, root));
            for (size_t i = 0; i < n; i++) {
                bad += buf[i] != (char)((i * 31 + (size_t)root) & 0xff);
            }
            if (bad > 0) {
                fprintf(stderr, "coll-check: rank %d: broadcast root=%d "
                        "bytes=%zu: %zu wrong\n", g_rank, root, n, bad);
                g_errors++;
            }
        }
    }
}

static void check_allgather(rp_context_h ctx, char *a, char *b,
                            size_t max_count)
{
    for (size_t s = 0; s < NSIZES && sizes[s] <= max_count / (size_t)g_size;
         s++) {
        for (int inplace = 0; inplace < 2; inplace++) {
            size_t n = sizes[s] * 2; /* bfloat16 worth of bytes */
            char *out = b + 1;
            char *in = inplace ? out + (size_t)g_rank * n : a;
            size_t bad = 0;

            memset(out, 0x77, n * (size_t)g_size);
            for (size_t i = 0; i < n; i++) {
                in[i] = (char)((i * 7 + (size_t)g_rank * 101) & 0xff);
            }
            check_status("allgather",
                         rp_allgather(ctx, in, out, n / 2, RP_DTYPE_BFLOAT16));
            for (int r = 0; r < g_size; r++) {
                for (size_t i = 0; i < n; i++) {
                    bad += out[(size_t)r * n + i] !=
                           (char)((i * 7 + (size_t)r * 101) & 0xff);
                }
            }
            if (bad > 0) {
                fprintf(stderr, "coll-check: rank %d: allgather bytes=%zu %s: "
                        "%zu wrong\n", g_rank, n,
                        inplace ? "in-place" : "out-of-place", bad);
                g_errors++;
            }
        }
    }
}

static void check_barrier(rp_context_h ctx)
{
    double t0;

    /* Rank 0 arrives late: nobody may leave before it arrives. */
    check_status("barrier", rp_barrier(ctx));
    t0 = now_s();
    if (g_rank == 0) {
        usleep(300 * 1000);
    }
    check_status("barrier", rp_barrier(ctx));
    if (g_size > 1 && now_s() - t0 < 0.25) {
        fprintf(stderr, "coll-check: rank %d: left the barrier after %.3fs, "
                "before rank 0 entered it\n", g_rank, now_s() - t0);
        g_errors++;
    }
}

static void die_now(int sig)
{
    (void)sig;
    kill(getpid(), SIGKILL);
}

/* Failure mode: allreduce until something fails; the victim dies. */
static int run_kill(rp_context_h ctx, int victim, long ms)
{
    size_t n = 1u << 18;
    float *buf = calloc(n, sizeof(*buf));
    double start = now_s();
    rp_status_t st = RP_OK;
    long iters = 0;

    if (g_rank == victim) {
        struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};

        signal(SIGALRM, die_now);
        setitimer(ITIMER_REAL, &it, NULL);
    }
    while (st == RP_OK && now_s() - start < 600) {
        st = rp_allreduce(ctx, buf, buf, n, RP_DTYPE_FLOAT32, RP_OP_SUM);
        iters++;
    }
    printf("coll-check: rank %d: allreduce returned '%s' after %ld calls, "
           "%.1fs\n", g_rank, rp_status_string(st), iters, now_s() - start);
    fflush(stdout);
    free(buf);
    rp_finalize(ctx);
    return st == RP_OK ? 1 : 3;
}

int main(int argc, char **argv)
{
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                            RP_CONTEXT_ATTR_FIELD_SIZE};
    size_t max_count = (1u << 20) + 3, bytes;
    int victim = -1, opt, all_errors;
    bool layout = false;
    long kill_ms = 1000;
    rp_context_h ctx;
    char *a, *b;
    double t0;

    while ((opt = getopt(argc, argv, "qlk:t:")) != -1) {
        switch (opt) {
        case 'q': max_count = 65537; break;
        case 'l': layout = true; break;
        case 'k': victim = atoi(optarg); break;
        case 't': kill_ms = atol(optarg); break;
        default:
            fprintf(stderr, "usage: %s [-q | -l] [-k RANK -t MS]\n", argv[0]);
            return 64;
        }
    }
    check_status("rp_init", rp_init(NULL, &ctx));
    check_status("rp_context_query", rp_context_query(ctx, &attr));
    g_rank = attr.rank;
    g_size = attr.size;
    if (victim >= 0) {
        return run_kill(ctx, victim, kill_ms);
    }

    t0 = now_s();
    bytes = max_count * 8 * (size_t)(g_size > 1 ? g_size : 1) + 64;
    a = malloc(bytes);
    b = malloc(bytes);
    if (a == NULL || b == NULL) {
        fprintf(stderr, "coll-check: out of memory\n");
        return 2;
    }
    if (layout) {
        check_layout(ctx);
    } else {
        check_allreduce(ctx, a, b, max_count);
        check_random(ctx, a, b, max_count);
        check_broadcast(ctx, a, max_count);
        check_allgather(ctx, a, b, max_count * 4);
        check_reduce_scatter(ctx, max_count);
        check_alltoall(ctx, max_count);
        check_join(ctx);
        check_barrier(ctx);
        check_nonblocking(ctx, max_count);
        check_compression(ctx, max_count);
        check_signature(ctx);
    }

    /* Everyone learns whether anyone failed, and the run's hash. */
    check_status("allreduce of errors",
                 rp_allreduce(ctx, &g_errors, &all_errors, 1, RP_DTYPE_INT32,
                              RP_OP_SUM));
    if (g_rank == 0) {
        printf("coll-check: %s size=%d errors=%d hash=%016" PRIx64 " %.1fs\n",
               all_errors == 0 ? "ok" : "FAILED", g_size, all_errors, g_hash,
               now_s() - t0);
    }
    free(a);
    free(b);
    rp_finalize(ctx);
    return all_errors == 0 ? 0 : 1;
}
