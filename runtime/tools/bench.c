/*
 * ringpoint-bench: collective performance in nccl-tests' shape.
 *
 *   ringpoint-bench [allreduce|broadcast|allgather] [-b MIN] [-e MAX]
 *                   [-f FACTOR] [-n ITERS] [-w WARMUP] [-c 0|1] [-o OP]
 *                   [-d DTYPE] [-r ROOT] [-m median|mean] [-G N]
 *                   [-Z fp16|bf16] [-O cpu|sleep] [-D host|cuda]
 *
 * Started by a PMIx launcher (srun --mpi=pmix, mpirun); rank 0 prints one
 * row per size, out of place then in place, with nccl-tests' columns, so
 * that tables from ringpoint, nccl-tests and contrib/bench/ line up.
 *
 * Timing: every iteration is timed on its own on every rank, the
 * per-iteration times are combined with a MAX allreduce after the loop
 * (the collective is done when its slowest rank is), and the row shows
 * the median of those (or their mean with -m mean). Medians, because on a
 * shared 2-core VM one descheduled iteration can cost more than a hundred
 * good ones. Iterations run back to back, with no barrier between them,
 * like a training loop; in place, the input is restored before each
 * iteration, outside the timed region, so every iteration reduces the
 * same values.
 *
 * Checking (-c 1, the default): inputs are small integers chosen so that
 * every type, bfloat16 included, holds every result exactly, sums and
 * averages included (the ranks' offsets cancel); #wrong counts the elements
 * of the last iteration's result, summed over ranks, whose bits differ from
 * the exact expected value. The exit status is 1 if any is wrong, 2 if a
 * call failed, 64 for a usage error. With -Z (wire compression) sums of
 * those integers stay exact in fp16 and bf16, so the check still holds.
 *
 * Overlap (-O cpu|sleep): per size, the blocking out-of-place time (comm),
 * then the non-blocking call alone (start + wait), "compute" lasting as
 * long as comm alone, and the two together: start, compute, wait (total).
 * cpu: a calibrated arithmetic loop on the application's core; sleep: the
 * application's thread sleeps, as it waits on a GPU kernel, leaving the
 * CPU to the collective. The fraction of communication hidden is OSU's measure,
 * 1 - (total - compute) / comm, clamped to [0, 1]: 1 when the
 * communication vanished behind the computation, 0 when it added its full
 * time.
 *
 * Device mode (-D cuda): the buffers are on the task's GPU, allocated,
 * filled and read back through the GPU module (runtime/gpu/devbuf.h), so
 * this tool never links CUDA; the collectives go to NCCL on a stream of
 * the context's own. Each iteration is timed from the enqueue to the end
 * of a wait on that stream, so times are the GPU's, not the enqueue's;
 * input copies are waited for before the clock starts. The check copies
 * the result back to the host and compares it as the host mode does.
 * Where there is no GPU path (no module, no driver, no device) the tool
 * exits 77, automake's code for a skip, with one line saying why.
 */
#include "config.h"

#include <ringpoint.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/devbuf.h"

typedef enum { COLL_ALLREDUCE, COLL_BROADCAST, COLL_ALLGATHER } coll_t;
enum { OV_CPU = 1, OV_SLEEP = 2 };

typedef struct opts {
    coll_t coll;
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup;
    bool check;
    bool mean;
    int root;
    bool all_ops, all_types;
    int groups; /* allreduce: split into this many buffers, one grouped call */
    rp_compression_t compression; /* -Z: through rp_allreduce_group_opts */
    int overlap;                  /* -O: 0, OV_CPU or OV_SLEEP */
    bool device;                  /* -D cuda: buffers on the GPU */
    rp_op_t op;
    rp_dtype_t dtype;
} opts_t;

static int g_rank, g_size;
static rp_context_h g_ctx;

/* nccl-tests' names first, then ringpoint's. */
static const struct { const char *name; rp_dtype_t t; } g_types[] = {
    {"float", RP_DTYPE_FLOAT32},   {"double", RP_DTYPE_FLOAT64},
    {"half", RP_DTYPE_FLOAT16},    {"bfloat16", RP_DTYPE_BFLOAT16},
    {"int32", RP_DTYPE_INT32},     {"int64", RP_DTYPE_INT64},
    {"uint8", RP_DTYPE_UINT8},     {"float32", RP_DTYPE_FLOAT32},
    {"float64", RP_DTYPE_FLOAT64}, {"float16", RP_DTYPE_FLOAT16},
    {"int", RP_DTYPE_INT32},
};
#define N_PRINTED_TYPES 7 /* the first seven are the distinct ones */

static const char *type_name(rp_dtype_t t)
{
    for (size_t i = 0; i < N_PRINTED_TYPES; i++) {
        if (g_types[i].t == t) {
            return g_types[i].name;
        }
    }
    return "?";
}

static const char *op_names[RP_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: ringpoint-bench [allreduce|broadcast|allgather] [options]\n"
        "  -C, --coll NAME       the collective (or give it as the first word)\n"
        "  -b, --minbytes SIZE   smallest size (default 8; K, M, G suffixes)\n"
        "  -e, --maxbytes SIZE   largest size (default 32M)\n"
        "  -f, --stepfactor F    multiply the size by F each row (default 2)\n"
        "  -n, --iters N         timed iterations per row (default 20)\n"
        "  -w, --warmup_iters N  untimed iterations first (default 5)\n"
        "  -c, --check 0|1       check every result exactly (default 1)\n"
        "  -o, --op OP           sum, prod, min, max, avg or all (default sum)\n"
        "  -d, --datatype T      float, double, half, bfloat16, int32, int64,\n"
        "                        uint8 or all (default float)\n"
        "  -r, --root R          broadcast's root (default 0)\n"
        "  -m, --stat S          median (default) or mean of the iterations\n"
        "  -G, --group N         allreduce: cut the buffer into N buffers of\n"
        "                        unequal sizes, reduced by one rp_allreduce_group\n"
        "  -Z, --compress W      allreduce float32 as fp16 or bf16 on the wire\n"
        "                        (a grouped call, -G 1 by default)\n"
        "  -O, --overlap cpu|sleep  per size: blocking time, non-blocking alone,\n"
        "                        computation as long (a loop, or a sleep as\n"
        "                        while a GPU computes), both together, and\n"
        "                        the fraction of communication hidden\n"
        "  -D, --device host|cuda  where the buffers are (default host); cuda:\n"
        "                        this task's GPU, through NCCL; exit 77 (skip)\n"
        "                        where there is no GPU path. Not with -Z or -O\n"
        "Size is the buffer in bytes (allgather: the whole output). time is\n"
        "in microseconds; algbw = size / time; busbw = algbw * 2(n-1)/n for\n"
        "allreduce, (n-1)/n for allgather, 1 for broadcast (GB/s = 1e9 B/s).\n"
        "Launch with srun --mpi=pmix or mpirun; rank 0 prints.\n");
}

static bool parse_size(const char *s, size_t *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || v < 0) {
        return false;
    }
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > 1e15) {
        return false;
    }
    *out = (size_t)v;
    return true;
}

static bool parse_int(const char *s, int min, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > 1000000000) {
        return false;
    }
    *out = (int)v;
    return true;
}

static bool parse_coll(const char *s, coll_t *c)
{
    if (strcmp(s, "allreduce") == 0 || strcmp(s, "all_reduce") == 0) {
        *c = COLL_ALLREDUCE;
    } else if (strcmp(s, "broadcast") == 0 || strcmp(s, "bcast") == 0) {
        *c = COLL_BROADCAST;
    } else if (strcmp(s, "allgather") == 0 || strcmp(s, "all_gather") == 0) {
        *c = COLL_ALLGATHER;
    } else {
        return false;
    }
    return true;
}

/* Returns 0, or the exit status for a usage error / --help. */
static int parse_args(int argc, char **argv, opts_t *o)
{
    static const struct option longopts[] = {
        {"coll", required_argument, NULL, 'C'},
        {"minbytes", required_argument, NULL, 'b'},
        {"maxbytes", required_argument, NULL, 'e'},
        {"stepfactor", required_argument, NULL, 'f'},
        {"iters", required_argument, NULL, 'n'},
        {"warmup_iters", required_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"op", required_argument, NULL, 'o'},
        {"datatype", required_argument, NULL, 'd'},
        {"root", required_argument, NULL, 'r'},
        {"stat", required_argument, NULL, 'm'},
        {"group", required_argument, NULL, 'G'},
        {"compress", required_argument, NULL, 'Z'},
        {"overlap", required_argument, NULL, 'O'},
        {"device", required_argument, NULL, 'D'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int ch, v;
    char *end;

    memset(o, 0, sizeof(*o));
    o->coll = COLL_ALLREDUCE;
    o->min_bytes = 8;
    o->max_bytes = 32 * 1024 * 1024;
    o->factor = 2;
    o->iters = 20;
    o->warmup = 5;
    o->check = true;
    o->op = RP_OP_SUM;
    o->dtype = RP_DTYPE_FLOAT32;
    o->groups = 1;
    if (argc > 1 && argv[1][0] != '-') {
        if (!parse_coll(argv[1], &o->coll)) {
            fprintf(stderr, "ringpoint-bench: unknown collective '%s'\n", argv[1]);
            return 64;
        }
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    while ((ch = getopt_long(argc, argv, "C:b:e:f:n:w:c:o:d:r:m:G:Z:O:D:h", longopts,
                             NULL)) != -1) {
        bool ok = true;

        switch (ch) {
        case 'C': ok = parse_coll(optarg, &o->coll); break;
        case 'b': ok = parse_size(optarg, &o->min_bytes); break;
        case 'e': ok = parse_size(optarg, &o->max_bytes); break;
        case 'f':
            o->factor = strtod(optarg, &end);
            ok = *end == '\0' && o->factor > 1.0;
            break;
        case 'n': ok = parse_int(optarg, 1, &o->iters); break;
        case 'w': ok = parse_int(optarg, 0, &o->warmup); break;
        case 'c':
            ok = parse_int(optarg, 0, &v) && v <= 1;
            o->check = v == 1;
            break;
        case 'o':
            ok = false;
            o->all_ops = strcmp(optarg, "all") == 0;
            for (int i = 0; i < RP_OP_COUNT; i++) {
                if (o->all_ops || strcmp(optarg, op_names[i]) == 0) {
                    o->op = o->all_ops ? RP_OP_SUM : (rp_op_t)i;
                    ok = true;
                    break;
                }
            }
            break;
        case 'd':
            ok = false;
            o->all_types = strcmp(optarg, "all") == 0;
            for (size_t i = 0; i < sizeof(g_types) / sizeof(g_types[0]); i++) {
                if (o->all_types || strcmp(optarg, g_types[i].name) == 0) {
                    o->dtype = g_types[i].t;
                    ok = true;
                    break;
                }
            }
            break;
        case 'r': ok = parse_int(optarg, 0, &o->root); break;
        case 'G': ok = parse_int(optarg, 1, &o->groups); break;
        case 'Z':
            o->compression = strcmp(optarg, "fp16") == 0   ? RP_COMPRESSION_FP16
                             : strcmp(optarg, "bf16") == 0 ? RP_COMPRESSION_BF16
                             : strcmp(optarg, "none") == 0 ? RP_COMPRESSION_NONE
                                                           : RP_COMPRESSION_DEFAULT;
            ok = o->compression != RP_COMPRESSION_DEFAULT;
            break;
        case 'O':
            o->overlap = strcmp(optarg, "cpu") == 0     ? OV_CPU
                         : strcmp(optarg, "sleep") == 0 ? OV_SLEEP
                                                        : 0;
            ok = o->overlap != 0;
            break;
        case 'D':
            ok = strcmp(optarg, "host") == 0 || strcmp(optarg, "cuda") == 0;
            o->device = strcmp(optarg, "cuda") == 0;
            break;
        case 'm':
            ok = strcmp(optarg, "median") == 0 || strcmp(optarg, "mean") == 0;
            o->mean = strcmp(optarg, "mean") == 0;
            break;
        case 'h':
            usage(stdout);
            return 1;
        default:
            usage(stderr);
            return 64;
        }
        if (!ok) {
            fprintf(stderr, "ringpoint-bench: bad value '%s' for -%c\n",
                    optarg, ch);
            return 64;
        }
    }
    if (optind != argc || o->min_bytes > o->max_bytes) {
        usage(stderr);
        return 64;
    }
    if (o->compression != RP_COMPRESSION_DEFAULT &&
        (o->coll != COLL_ALLREDUCE || o->dtype != RP_DTYPE_FLOAT32 ||
         o->all_types)) {
        fprintf(stderr, "ringpoint-bench: -Z compresses float32 allreduce "
                "only (-d float)\n");
        return 64;
    }
    /* NCCL sends the data type as it is, and the overlap table measures a
     * host computation beside host progress: neither means anything for
     * device buffers, so they are refused rather than silently ignored. */
    if (o->device && o->compression != RP_COMPRESSION_DEFAULT) {
        fprintf(stderr, "ringpoint-bench: -Z (wire compression) is a host-path "
                "feature: not with -D cuda\n");
        return 64;
    }
    if (o->device && o->overlap) {
        fprintf(stderr, "ringpoint-bench: -O (overlap of non-blocking calls with "
                "host computation) is a host-path measure: not with -D cuda\n");
        return 64;
    }
    return 0;
}

/* ---- exact inputs and expected values -------------------------------- */

/* float32 -> float16, round to nearest even (normal range, zero, inf). */
static uint16_t f32_to_f16(float f)
{
    uint32_t u, sign, mant, half, rest;
    int exp;

    memcpy(&u, &f, 4);
    sign = (u >> 16) & 0x8000u;
    exp = (int)((u >> 23) & 0xff) - 127 + 15;
    mant = u & 0x7fffffu;
    if ((u & 0x7fffffffu) == 0 || exp <= 0) {
        return (uint16_t)sign; /* no subnormals among the values used */
    }
    if (exp >= 31) {
        return (uint16_t)(sign | 0x7c00u);
    }
    half = (uint32_t)exp << 10 | (mant >> 13);
    rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) {
        half++; /* may carry into the exponent: still correct */
    }
    return (uint16_t)(sign | half);
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, 4);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Write value @v (an exact small integer for float types; any, wrapping,
 * for integers) as element @i of @buf. */
static void store(rp_dtype_t t, void *buf, size_t i, int64_t iv, double fv)
{
    char *p = (char *)buf + i * rp_dtype_size(t);
    uint8_t u8;
    int32_t i32;
    uint16_t h;
    float f;

    switch (t) {
    case RP_DTYPE_UINT8: u8 = (uint8_t)(uint64_t)iv; memcpy(p, &u8, 1); break;
    case RP_DTYPE_INT32: i32 = (int32_t)(uint32_t)(uint64_t)iv; memcpy(p, &i32, 4); break;
    case RP_DTYPE_INT64: memcpy(p, &iv, 8); break;
    case RP_DTYPE_FLOAT16: h = f32_to_f16((float)fv); memcpy(p, &h, 2); break;
    case RP_DTYPE_BFLOAT16: h = f32_to_bf16((float)fv); memcpy(p, &h, 2); break;
    case RP_DTYPE_FLOAT32: f = (float)fv; memcpy(p, &f, 4); break;
    default: memcpy(p, &fv, 8); break;
    }
}

/* Allreduce inputs: rank r gives c_i + d_r, c_i in 2..8, and d_r in
 * {+1, -1, 0} summing to zero over the ranks, so sums are n*c_i and
 * averages c_i exactly. PROD uses 1s and 2s so products are powers of two. */
static int64_t ar_c(size_t i) { return (int64_t)(i % 7) + 2; }

static int64_t ar_d(int r, int n)
{
    if (n % 2 == 1 && r == n - 1) {
        return 0;
    }
    return r % 2 == 0 ? 1 : -1;
}

static int64_t ar_input(rp_op_t op, size_t i, int r, int n)
{
    if (op == RP_OP_PROD) {
        return (i + (size_t)r) % 2 == 0 ? 2 : 1;
    }
    return ar_c(i) + ar_d(r, n);
}

static int64_t ar_expected(rp_op_t op, size_t i, int n)
{
    int64_t dmin = 0, dmax = 0, twos = 0;

    for (int r = 0; r < n && r < 3; r++) { /* d repeats with period 2 */
        dmin = ar_d(r, n) < dmin ? ar_d(r, n) : dmin;
        dmax = ar_d(r, n) > dmax ? ar_d(r, n) : dmax;
    }
    if (n == 1) {
        dmin = dmax = 0;
    }
    switch (op) {
    case RP_OP_SUM: return (int64_t)n * ar_c(i);
    case RP_OP_AVG: return ar_c(i);
    case RP_OP_MIN: return ar_c(i) + dmin;
    case RP_OP_MAX: return ar_c(i) + dmax;
    default:
        /* ranks r with (i + r) even contribute a 2 */
        twos = i % 2 == 0 ? (n + 1) / 2 : n / 2;
        return twos >= 63 ? 0 : (int64_t)1 << twos;
    }
}

static void store_int(rp_dtype_t t, void *buf, size_t i, int64_t v)
{
    store(t, buf, i, v, (double)v);
}

/* Broadcast and allgather: what rank @r holds at element @i. */
static int64_t bg_input(size_t i, int r)
{
    return (int64_t)((i * 7 + (size_t)r * 31) % 97) + 1;
}

static size_t count_wrong(rp_dtype_t t, const void *buf, size_t count,
                          int64_t (*want)(size_t, void *), void *arg)
{
    const size_t es = rp_dtype_size(t);
    const char *p = buf;
    char exp[8];
    size_t wrong = 0;

    for (size_t i = 0; i < count; i++) {
        store_int(t, exp, 0, want(i, arg));
        wrong += memcmp(exp, p + i * es, es) != 0;
    }
    return wrong;
}

typedef struct want_ar { rp_op_t op; int n; } want_ar_t;
static int64_t want_ar(size_t i, void *arg)
{
    want_ar_t *w = arg;
    return ar_expected(w->op, i, w->n);
}

typedef struct want_bg { int root; size_t per_rank; } want_bg_t;
static int64_t want_bcast(size_t i, void *arg)
{
    return bg_input(i, ((want_bg_t *)arg)->root);
}
static int64_t want_gather(size_t i, void *arg)
{
    want_bg_t *w = arg;
    return bg_input(i % w->per_rank, (int)(i / w->per_rank));
}

/* ---- a row's result and input ---------------------------------------- */

typedef struct result {
    double time_us; /* median or mean of per-iteration max over ranks */
    int64_t wrong;  /* -1: not checked */
    bool failed;
} result_t;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Fill the input of this rank for one run. */
static void fill(const opts_t *o, rp_dtype_t t, rp_op_t op, void *buf,
                 size_t count)
{
    for (size_t i = 0; i < count; i++) {
        int64_t v = o->coll == COLL_ALLREDUCE ? ar_input(op, i, g_rank, g_size)
                                              : bg_input(i, g_rank);
        store_int(t, buf, i, v);
    }
}

/* ---- buffers: host memory, or the GPU's with -D cuda ----------------- */

/* One row's buffers. */
typedef struct bufs {
    void *pristine; /* this rank's input, filled on the host */
    void *in;       /* what the collectives read: pristine, or its device copy */
    void *out;      /* the output, where the collectives write */
    void *host_out; /* -D cuda: the output copied back for the check */
} bufs_t;

static void *buf_alloc(const opts_t *o, size_t bytes)
{
    void *p = NULL;

    if (o->device) {
        return rp__gpu_devbuf_alloc(g_ctx, bytes, &p) == RP_OK ? p : NULL;
    }
    /* Page-aligned, like framework tensors. */
    return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
}

static void buf_free(const opts_t *o, void *p)
{
    if (o->device) {
        rp__gpu_devbuf_free(g_ctx, p);
    } else {
        free(p);
    }
}

/* memset and memcpy; on the device enqueued on the context's stream, in
 * order with the collectives, and done at the next buf_sync. */
static rp_status_t buf_set(const opts_t *o, void *p, int byte, size_t bytes)
{
    if (o->device) {
        return rp__gpu_devbuf_set(g_ctx, p, byte, bytes);
    }
    memset(p, byte, bytes);
    return RP_OK;
}

static rp_status_t buf_copy(const opts_t *o, void *dst, const void *src,
                            size_t bytes)
{
    if (o->device) {
        return rp__gpu_devbuf_copy(g_ctx, dst, src, bytes);
    }
    memcpy(dst, src, bytes);
    return RP_OK;
}

/* Device: wait until the stream ran everything enqueued (copies and
 * collectives); a host collective is done when its call returns. */
static rp_status_t buf_sync(const opts_t *o)
{
    return o->device ? rp__gpu_devbuf_sync(g_ctx) : RP_OK;
}

static void bufs_free(const opts_t *o, bufs_t *b)
{
    if (b->in != b->pristine) {
        buf_free(o, b->in);
    }
    free(b->pristine);
    buf_free(o, b->out);
    free(b->host_out);
    memset(b, 0, sizeof(*b));
}

/* Allocate a row's buffers, fill the input (@in_bytes) and clear the
 * output (@out_bytes) before anything is timed, so that first-touch
 * faults stay out of the figures. */
static bool bufs_prepare(const opts_t *o, rp_dtype_t t, rp_op_t op,
                         size_t count, size_t out_bytes, bufs_t *b)
{
    const size_t in_bytes = count * rp_dtype_size(t);
    rp_status_t st;

    memset(b, 0, sizeof(*b));
    /* +64: a zero-sized row still gets distinct buffers. */
    if (posix_memalign(&b->pristine, 4096, in_bytes + 64) != 0) {
        b->pristine = NULL;
        return false;
    }
    b->in = o->device ? buf_alloc(o, in_bytes + 64) : b->pristine;
    b->out = buf_alloc(o, out_bytes + 64);
    b->host_out = o->device ? malloc(out_bytes + 64) : NULL;
    if (b->in == NULL || b->out == NULL ||
        (o->device && b->host_out == NULL)) {
        bufs_free(o, b);
        return false;
    }
    fill(o, t, op, b->pristine, count);
    st = buf_set(o, b->out, 0, out_bytes + 64);
    if (st == RP_OK && b->in != b->pristine) {
        st = buf_copy(o, b->in, b->pristine, in_bytes);
    }
    if (st == RP_OK) {
        st = buf_sync(o);
    }
    if (st != RP_OK) {
        bufs_free(o, b);
        return false;
    }
    return true;
}

/* ---- one row --------------------------------------------------------- */

/* -G: buffer k of @groups gets a share of @count proportional to
 * 1 + k % 3, so neighbours differ in size (and some may be empty).
 * Started non-blocking when @req is not NULL. */
static rp_status_t run_group(const opts_t *o, rp_dtype_t t, rp_op_t op,
                             const void *send, void *recv, size_t count,
                             rp_request_h *req)
{
    const rp_allreduce_opts_t ropts = {.compression = o->compression};
    const size_t n = (size_t)o->groups, es = rp_dtype_size(t);
    const void **sends = calloc(n, sizeof(*sends));
    void **recvs = calloc(n, sizeof(*recvs));
    size_t *counts = calloc(n, sizeof(*counts));
    size_t weight = 0, off = 0;
    rp_status_t st = RP_ERR_NO_MEMORY;

    if (sends != NULL && recvs != NULL && counts != NULL) {
        for (size_t k = 0; k < n; k++) {
            weight += 1 + k % 3;
        }
        for (size_t k = 0; k < n; k++) {
            counts[k] = k == n - 1 ? count - off : count / weight * (1 + k % 3);
            sends[k] = (const char *)send + off * es;
            recvs[k] = (char *)recv + off * es;
            off += counts[k];
        }
        st = req != NULL
                 ? rp_iallreduce_group(g_ctx, (const void *const *)sends,
                                       (void *const *)recvs, counts, n, t, op,
                                       &ropts, req)
                 : rp_allreduce_group_opts(g_ctx, (const void *const *)sends,
                                           (void *const *)recvs, counts, n, t,
                                           op, &ropts);
    }
    free(sends);
    free(recvs);
    free(counts);
    return st;
}

/* One collective; started non-blocking when @req is not NULL. */
static rp_status_t run_once(const opts_t *o, rp_dtype_t t, rp_op_t op,
                            const void *send, void *recv, size_t count,
                            rp_request_h *req)
{
    switch (o->coll) {
    case COLL_ALLREDUCE:
        if (o->groups > 1 || o->compression != RP_COMPRESSION_DEFAULT) {
            return run_group(o, t, op, send, recv, count, req);
        }
        return req ? rp_iallreduce(g_ctx, send, recv, count, t, op, req)
                   : rp_allreduce(g_ctx, send, recv, count, t, op);
    case COLL_BROADCAST:
        return req ? rp_ibroadcast(g_ctx, recv, count, t, o->root, req)
                   : rp_broadcast(g_ctx, recv, count, t, o->root);
    default:
        return req ? rp_iallgather(g_ctx, send, recv, count, t, req)
                   : rp_allgather(g_ctx, send, recv, count, t);
    }
}

/* The per-iteration times of every rank -> the row's figure: the MAX over
 * ranks of each iteration (the collective is done when its slowest rank
 * is), then their median or mean. False if the allreduce failed. */
static bool summarize(const opts_t *o, double *times, double *out)
{
    if (rp_allreduce(g_ctx, times, times, (size_t)o->iters, RP_DTYPE_FLOAT64,
                     RP_OP_MAX) != RP_OK) {
        return false;
    }
    if (o->mean) {
        double sum = 0;

        for (int i = 0; i < o->iters; i++) {
            sum += times[i];
        }
        *out = sum / o->iters;
    } else {
        qsort(times, (size_t)o->iters, sizeof(*times), cmp_double);
        *out = o->iters % 2 ? times[o->iters / 2]
                            : 0.5 * (times[o->iters / 2 - 1] +
                                     times[o->iters / 2]);
    }
    return true;
}

static const char *coll_name(coll_t c)
{
    return c == COLL_ALLREDUCE ? "allreduce"
           : c == COLL_BROADCAST ? "broadcast"
                                 : "allgather";
}

/* Prepare an iteration (untimed): poison the output before the checked
 * one, restore the input of an in-place one, and on the device wait for
 * those copies so that they stay out of the timed region. */
static rp_status_t prepare_iter(const opts_t *o, bool checked, bool inplace,
                                const bufs_t *b, void *send, size_t in_bytes,
                                size_t out_bytes)
{
    rp_status_t st = RP_OK;

    if (checked) {
        /* The output of earlier iterations is already right: poison it so
         * that the checked iteration has to write every element. */
        st = buf_set(o, b->out, 0xA5, out_bytes);
    }
    if (st == RP_OK && o->coll == COLL_BROADCAST) {
        if (g_rank == o->root) {
            st = buf_copy(o, b->out, b->in, in_bytes);
        }
    } else if (st == RP_OK && inplace) {
        st = buf_copy(o, send, b->in, in_bytes);
    }
    return st == RP_OK ? buf_sync(o) : st;
}

/* #wrong of this rank's output (on the device: copied back first). */
static bool count_row_wrong(const opts_t *o, rp_dtype_t t, rp_op_t op,
                            size_t count, const bufs_t *b, size_t out_bytes,
                            int64_t *wrong)
{
    const void *out = b->out;

    if (o->device) {
        if (buf_copy(o, b->host_out, b->out, out_bytes) != RP_OK ||
            buf_sync(o) != RP_OK) {
            fprintf(stderr, "ringpoint-bench: rank %d: cannot copy the result "
                    "back from the GPU\n", g_rank);
            return false;
        }
        out = b->host_out;
    }
    if (o->coll == COLL_ALLREDUCE) {
        want_ar_t w = {op, g_size};
        *wrong = (int64_t)count_wrong(t, out, count, want_ar, &w);
    } else if (o->coll == COLL_BROADCAST) {
        want_bg_t w = {o->root, count};
        *wrong = (int64_t)count_wrong(t, out, count, want_bcast, &w);
    } else {
        want_bg_t w = {0, count};
        *wrong = (int64_t)count_wrong(t, out, count * (size_t)g_size,
                                      want_gather, &w);
    }
    return true;
}

/*
 * @count: elements per rank (the buffer for allreduce and broadcast).
 * b->in: this rank's input, kept intact; b->out: the output (allgather:
 * size * count elements).
 */
static void run_row(const opts_t *o, rp_dtype_t t, rp_op_t op, size_t count,
                    bool inplace, const bufs_t *b, double *times,
                    result_t *res)
{
    const size_t es = rp_dtype_size(t);
    const size_t in_bytes = count * es;
    const size_t out_bytes =
        o->coll == COLL_ALLGATHER ? in_bytes * (size_t)g_size : in_bytes;
    char *out = b->out;
    void *send = b->in;
    rp_status_t st = RP_OK;
    int total = o->warmup + o->iters;

    res->failed = false;
    res->wrong = -1;
    /* In place, the collective works on the output buffer: the input is
     * copied into it before every iteration (untimed). Out of place, the
     * input buffer is never written. Broadcast is always in place. */
    if (o->coll == COLL_ALLGATHER && inplace) {
        send = out + (size_t)g_rank * in_bytes;
    } else if (o->coll == COLL_ALLREDUCE && inplace) {
        send = out;
    }
    for (int it = 0; it < total; it++) {
        double t0, t1;

        st = prepare_iter(o, o->check && it == total - 1, inplace, b, send,
                          in_bytes, out_bytes);
        if (st != RP_OK) {
            fprintf(stderr, "ringpoint-bench: rank %d: preparing the buffers "
                    "failed: %s\n", g_rank, rp_status_string(st));
            res->failed = true;
            return;
        }
        t0 = now_us();
        st = run_once(o, t, op, send, out, count, NULL);
        if (st == RP_OK) {
            st = buf_sync(o); /* device: until the GPU is done */
        }
        t1 = now_us();
        if (st != RP_OK) {
            fprintf(stderr, "ringpoint-bench: rank %d: %s failed: %s\n",
                    g_rank, coll_name(o->coll), rp_status_string(st));
            res->failed = true;
            return;
        }
        if (it >= o->warmup) {
            times[it - o->warmup] = t1 - t0;
        }
    }
    if (!summarize(o, times, &res->time_us)) {
        res->failed = true;
        return;
    }
    if (o->check) {
        int64_t wrong = 0;
        /* Even when this rank cannot count, it joins the sum: the others
         * are waiting in it. */
        bool counted = count_row_wrong(o, t, op, count, b, out_bytes, &wrong);

        st = rp_allreduce(g_ctx, &wrong, &res->wrong, 1, RP_DTYPE_INT64,
                          RP_OP_SUM);
        if (st != RP_OK || !counted) {
            res->failed = true;
        }
    }
}

/* ---- overlap (-O) ---------------------------------------------------- */

/* The computation to hide communication behind: dependent floating-point
 * operations, no memory traffic (it competes for the core, not for the
 * memory bandwidth the collective needs). */
static volatile double g_sink = 1.0;
static double g_spins_per_us; /* this rank's speed, calibrated once */

static double compute(double x, long n)
{
    for (long i = 0; i < n; i++) {
        x = x * 0.9999999 + 1e-7;
    }
    return x;
}

static void calibrate(void)
{
    long n = 1000;
    double t;

    for (;;) {
        double t0 = now_us();

        g_sink = compute(g_sink, n);
        t = now_us() - t0;
        if (t > 20000) {
            break;
        }
        n *= 2;
    }
    g_spins_per_us = (double)n / t;
}

/* Compute for @us: the loop, or a sleep. */
static void busy(const opts_t *o, double us)
{
    if (o->overlap == OV_SLEEP) {
        struct timespec ts = {(time_t)(us / 1e6),
                              (long)((us - (double)(time_t)(us / 1e6) * 1e6) *
                                     1e3)};

        nanosleep(&ts, NULL);
    } else {
        g_sink = compute(g_sink, (long)(us * g_spins_per_us));
    }
}

enum { OV_NB, OV_COMPUTE, OV_BOTH };

typedef struct overlap {
    double nb, compute, total, hidden; /* us, us, us, fraction */
} overlap_t;

/* Time @mode out of place: the non-blocking call alone, the computation
 * alone, or start, compute, wait. */
static bool time_mode(const opts_t *o, int mode, rp_dtype_t t, rp_op_t op,
                      size_t count, const void *pristine, void *buf,
                      double busy_us, double *times, double *out)
{
    for (int it = 0; it < o->warmup + o->iters; it++) {
        rp_request_h req = NULL;
        rp_status_t st = RP_OK;
        double t0 = now_us();

        if (mode != OV_COMPUTE) {
            st = run_once(o, t, op, pristine, buf, count, &req);
        }
        if (mode != OV_NB) {
            busy(o, busy_us);
        }
        if (st == RP_OK) {
            st = rp_wait(&req);
        }
        if (st != RP_OK) {
            fprintf(stderr, "ringpoint-bench: rank %d: non-blocking call "
                    "failed: %s\n", g_rank, rp_status_string(st));
            return false;
        }
        if (it >= o->warmup) {
            times[it - o->warmup] = now_us() - t0;
        }
    }
    return summarize(o, times, out);
}

static bool run_overlap(const opts_t *o, rp_dtype_t t, rp_op_t op,
                        size_t count, const void *pristine, void *buf,
                        double comm_us, double *times, overlap_t *ov)
{
    if (!time_mode(o, OV_NB, t, op, count, pristine, buf, 0, times, &ov->nb) ||
        !time_mode(o, OV_COMPUTE, t, op, count, pristine, buf, comm_us, times,
                   &ov->compute) ||
        !time_mode(o, OV_BOTH, t, op, count, pristine, buf, comm_us, times,
                   &ov->total)) {
        return false;
    }
    ov->hidden = comm_us > 0 ? 1.0 - (ov->total - ov->compute) / comm_us : 1;
    ov->hidden = ov->hidden < 0 ? 0 : ov->hidden > 1 ? 1 : ov->hidden;
    return true;
}

static double bus_factor(coll_t c, int n)
{
    switch (c) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_ALLGATHER: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

static void print_result(const result_t *r, size_t bytes, double bf)
{
    double algbw = r->time_us > 0 ? (double)bytes / (r->time_us * 1e3) : 0;
    char wrong[32];

    if (r->wrong < 0) {
        snprintf(wrong, sizeof(wrong), "N/A");
    } else {
        snprintf(wrong, sizeof(wrong), "%" PRId64, r->wrong);
    }
    printf("  %8.2f  %6.2f  %6.2f  %6s", r->time_us, algbw, algbw * bf, wrong);
}

/* -D cuda: every rank starts its GPU path, and all learn whether every
 * one did, so that they leave together; the first rank without one says
 * why, in one line. 0, 77 (no GPU path here: a skip) or 2. */
static int device_open(void)
{
    char why[512] = "";
    rp_status_t mine = rp__gpu_devbuf_open(g_ctx, "ringpoint-bench -D cuda",
                                           why, sizeof(why));
    /* One MIN allreduce carries both the first failing rank and whether
     * its failure is a skip. (A broadcast of the verdict after it, right
     * before the ranks leave, was seen to fail on a rank still connecting
     * to one that had already finalized.) */
    int32_t key = mine == RP_OK                 ? 2 * g_size
                  : mine == RP_ERR_NOT_SUPPORTED ? 2 * g_rank
                                                 : 2 * g_rank + 1;
    int first;
    bool skip;

    if (rp_allreduce(g_ctx, &key, &key, 1, RP_DTYPE_INT32, RP_OP_MIN) !=
        RP_OK) {
        fprintf(stderr, "ringpoint-bench: rank %d: cannot agree on the GPU "
                "path with the other ranks\n", g_rank);
        return 2;
    }
    first = key / 2;
    skip = key % 2 == 0;
    if (first == g_size) {
        return 0;
    }
    if (mine == RP_OK) {
        rp__gpu_devbuf_close(g_ctx);
    }
    if (g_rank == first) {
        char who[32] = "";

        if (g_size > 1) {
            snprintf(who, sizeof(who), "rank %d: ", g_rank);
        }
        fprintf(stderr, "ringpoint-bench: %s-D cuda: %s%s\n",
                skip ? "SKIP: " : "", who, why);
    }
    return skip ? 77 : 2;
}

int main(int argc, char **argv)
{
    rp_context_attr_t attr;
    opts_t o;
    rp_status_t st;
    int rc, exit_status = 0;
    double bw_sum = 0, bf;
    int bw_rows = 0;
    int64_t wrong_total = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = parse_args(argc, argv, &o);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    st = rp_init(NULL, &g_ctx);
    if (st != RP_OK) {
        fprintf(stderr, "ringpoint-bench: rp_init: %s\n", rp_status_string(st));
        return 2;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE |
                      RP_CONTEXT_ATTR_FIELD_NODE_COUNT;
    rp_context_query(g_ctx, &attr);
    g_rank = attr.rank;
    g_size = attr.size;
    if (o.coll == COLL_BROADCAST && o.root >= g_size) {
        if (g_rank == 0) {
            fprintf(stderr, "ringpoint-bench: root %d is not a rank (0..%d)\n",
                    o.root, g_size - 1);
        }
        rp_finalize(g_ctx);
        return 64;
    }
    if (o.device) {
        rc = device_open();
        if (rc != 0) {
            rp_finalize(g_ctx);
            return rc;
        }
    }
    bf = bus_factor(o.coll, g_size);

    if (g_rank == 0) {
        const char *cname = o.coll == COLL_ALLREDUCE ? "allreduce"
                            : o.coll == COLL_BROADCAST ? "broadcast"
                                                       : "allgather";
        printf("# ringpoint-bench %s: %s, %d ranks on %d nodes, minBytes %zu "
               "maxBytes %zu step %g iters %d warmup %d check %d%s%s\n",
               PACKAGE_VERSION, cname, g_size, attr.node_count, o.min_bytes,
               o.max_bytes, o.factor, o.iters, o.warmup, o.check ? 1 : 0,
               o.groups > 1 && o.coll == COLL_ALLREDUCE ? " grouped" : "",
               o.device ? " device cuda" : "");
        if (o.device) {
            int dev = -1;

            (void)rp_cuda_device(g_ctx, &dev);
            printf("# device: buffers on each task's GPU (rank 0: CUDA device "
                   "%d), NCCL; time: enqueue to the end of a stream wait\n",
                   dev);
        }
        if (o.groups > 1 && o.coll == COLL_ALLREDUCE) {
            printf("# each row: %d buffers in one rp_allreduce_group\n", o.groups);
        }
        printf("# time: %s over iterations of the slowest rank's time, in us\n",
               o.mean ? "mean" : "median");
        if (o.compression != RP_COMPRESSION_DEFAULT) {
            printf("# wire compression: %s\n",
                   o.compression == RP_COMPRESSION_FP16   ? "fp16"
                   : o.compression == RP_COMPRESSION_BF16 ? "bf16"
                                                          : "none");
        }
        printf("#\n");
        if (o.overlap) {
            printf("# overlap: comm = blocking, nb = non-blocking start+wait, "
                   "compute = %s as long as comm, total = start, compute, "
                   "wait;\n# hidden = 1 - (total - compute) / comm\n",
                   o.overlap == OV_SLEEP ? "a sleep" : "a loop");
            printf("#        size         count      type   redop    root"
                   "      comm        nb   compute     total  hidden #wrong\n");
            printf("#         (B)    (elements)                          "
                   "      (us)      (us)      (us)      (us)     (%%)\n");
        } else {
            printf("#                                                      "
                   "  out-of-place                      in-place\n");
            printf("#        size         count      type   redop    root"
                   "      time   algbw   busbw #wrong      time   algbw   "
                   "busbw #wrong\n");
            printf("#         (B)    (elements)                          "
                   "      (us)  (GB/s)  (GB/s)             (us)  (GB/s)  "
                   "(GB/s)\n");
        }
    }
    if (o.overlap == OV_CPU) {
        calibrate();
    }

    for (int ti = 0; ti < (o.all_types ? N_PRINTED_TYPES : 1); ti++) {
        rp_dtype_t t = o.all_types ? g_types[ti].t : o.dtype;
        size_t es = rp_dtype_size(t);
        bool rooted = o.coll == COLL_BROADCAST;
        int nops = o.coll == COLL_ALLREDUCE && o.all_ops ? RP_OP_COUNT : 1;

        for (int oi = 0; oi < nops; oi++) {
            rp_op_t op = o.all_ops ? (rp_op_t)oi : o.op;
            size_t last = (size_t)-1;

            for (double sz = (double)o.min_bytes; sz <= (double)o.max_bytes;
                 sz *= o.factor) {
                /* Whole elements, and for allgather whole blocks per rank. */
                size_t unit = es * (o.coll == COLL_ALLGATHER ? (size_t)g_size : 1);
                size_t bytes = (size_t)sz / unit * unit;
                size_t count = bytes / es; /* printed: whole buffer */
                size_t per_rank = o.coll == COLL_ALLGATHER ? count / (size_t)g_size
                                                           : count;
                size_t out_bytes = bytes;
                result_t res[2];
                bufs_t b;
                double *times;

                if (bytes == last) {
                    continue;
                }
                last = bytes;
                times = calloc((size_t)o.iters, sizeof(*times));
                if (times == NULL ||
                    !bufs_prepare(&o, t, op, per_rank, out_bytes, &b)) {
                    fprintf(stderr, "ringpoint-bench: rank %d: out of %s "
                            "memory at %zu B\n", g_rank,
                            o.device ? "device" : "host", bytes);
                    exit_status = 2;
                    free(times);
                    goto out;
                }
                for (int ip = 0; ip < 2; ip++) {
                    if (ip == 1 && o.overlap) {
                        overlap_t ov;

                        res[1].failed = false;

                        if (!run_overlap(&o, t, op, per_rank, b.in, b.out,
                                         res[0].time_us, times, &ov)) {
                            res[1].failed = true;
                        } else if (g_rank == 0) {
                            printf("%13zu  %12zu  %8s  %6s  %6d  %8.2f  %8.2f"
                                   "  %8.2f  %8.2f  %6.1f  %5" PRId64 "\n",
                                   bytes, count, type_name(t),
                                   o.coll == COLL_ALLREDUCE ? op_names[op]
                                                            : "none",
                                   rooted ? o.root : -1, res[0].time_us,
                                   ov.nb, ov.compute, ov.total,
                                   100 * ov.hidden, res[0].wrong);
                        }
                        res[1].time_us = 0;
                        res[1].wrong = -1;
                    } else {
                        run_row(&o, t, op, per_rank, ip == 1, &b, times,
                                &res[ip]);
                    }
                    if (res[ip].failed) {
                        exit_status = 2;
                        free(times);
                        bufs_free(&o, &b);
                        goto out;
                    }
                    if (res[ip].wrong > 0) {
                        wrong_total += res[ip].wrong;
                    }
                }
                if (g_rank == 0 && !o.overlap) {
                    printf("%13zu  %12zu  %8s  %6s  %6d", bytes, count,
                           type_name(t),
                           o.coll == COLL_ALLREDUCE ? op_names[op] : "none",
                           rooted ? o.root : -1);
                    print_result(&res[0], bytes, bf);
                    print_result(&res[1], bytes, bf);
                    printf("\n");
                }
                if (res[1].time_us > 0) {
                    bw_sum += (double)bytes / (res[1].time_us * 1e3) * bf;
                    bw_rows++;
                }
                free(times);
                bufs_free(&o, &b);
                if (sz == 0) {
                    sz = 1.0 / o.factor; /* 0 then 1, 2, ... */
                }
            }
        }
    }
    if (g_rank == 0) {
        printf("# Out of bounds values : %" PRId64 " %s\n", wrong_total,
               wrong_total == 0 ? "OK" : "FAILED");
        printf("# Avg bus bandwidth    : %g\n", bw_rows ? bw_sum / bw_rows : 0.0);
        printf("#\n");
    }
    if (wrong_total > 0 && exit_status == 0) {
        exit_status = 1;
    }
out:
    if (o.device) {
        rp__gpu_devbuf_close(g_ctx);
    }
    rp_finalize(g_ctx);
    return exit_status;
}
