/*
 * ringpoint-bench's command line: nccl-tests' flags, and ringpoint's own.
 */
#include "config.h"

#include "bench.h"
#include "benchtable.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* nccl-tests' names first, then ringpoint's. */
static const struct { const char *name; rp_dtype_t t; } g_types[] = {
    {"float", RP_DTYPE_FLOAT32},   {"double", RP_DTYPE_FLOAT64},
    {"half", RP_DTYPE_FLOAT16},    {"bfloat16", RP_DTYPE_BFLOAT16},
    {"int32", RP_DTYPE_INT32},     {"int64", RP_DTYPE_INT64},
    {"uint8", RP_DTYPE_UINT8},     {"float32", RP_DTYPE_FLOAT32},
    {"float64", RP_DTYPE_FLOAT64}, {"float16", RP_DTYPE_FLOAT16},
    {"int", RP_DTYPE_INT32},
};

const char *type_name(rp_dtype_t t)
{
    for (size_t i = 0; i < N_PRINTED_TYPES; i++) {
        if (g_types[i].t == t) {
            return g_types[i].name;
        }
    }
    return "?";
}

static const char *op_names[RP_OP_COUNT] = {"sum", "prod", "min", "max", "avg"};

rp_dtype_t bench_type(int i)
{
    return g_types[i].t;
}

const char *op_name(rp_op_t op)
{
    return op_names[op];
}

const char *coll_name(coll_t c)
{
    switch (c) {
    case COLL_ALLREDUCE: return "allreduce";
    case COLL_BROADCAST: return "broadcast";
    case COLL_ALLGATHER: return "allgather";
    case COLL_REDUCE_SCATTER: return "reduce_scatter";
    default: return "alltoall";
    }
}

bool coll_has_op(coll_t c)
{
    return c == COLL_ALLREDUCE || c == COLL_REDUCE_SCATTER;
}

bool coll_has_inplace(coll_t c)
{
    /* rp_reduce_scatter and rp_alltoall refuse overlapping buffers. */
    return c != COLL_REDUCE_SCATTER && c != COLL_ALLTOALL;
}

size_t coll_in_count(coll_t c, size_t count, int size)
{
    return c == COLL_REDUCE_SCATTER || c == COLL_ALLTOALL
               ? count * (size_t)size
               : count;
}

size_t coll_out_count(coll_t c, size_t count, int size)
{
    return c == COLL_ALLGATHER || c == COLL_ALLTOALL ? count * (size_t)size
                                                     : count;
}

static void usage(FILE *out)
{
    fprintf(out,
        "Usage: ringpoint-bench [allreduce|broadcast|allgather|reduce_scatter|\n"
        "                        alltoall] [options]\n"
        "  -C, --coll NAME       the collective (or give it as the first word;\n"
        "                        also all_reduce, bcast, all_gather,\n"
        "                        reducescatter, reduce-scatter, all_to_all)\n"
        "  -b, --minbytes SIZE   smallest size (default 8; K, M, G suffixes)\n"
        "  -e, --maxbytes SIZE   largest size (default 32M)\n"
        "  -f, --stepfactor F    multiply the size by F each row (default 2)\n"
        "  -n, --iters N         timed iterations per row (default 20)\n"
        "  -w, --warmup_iters N  untimed iterations first (default 5)\n"
        "  -c, --check 0|1       check every result exactly (default 1)\n"
        "  -o, --op OP           allreduce and reduce_scatter: sum, prod, min,\n"
        "                        max, avg or all (default sum)\n"
        "  -d, --datatype T      float, double, half, bfloat16, int32, int64,\n"
        "                        uint8 or all (default float)\n"
        "  -r, --root R          broadcast's root (default 0)\n"
        "  -m, --stat S          median (default) or mean of the iterations,\n"
        "                        or loop: the iterations back to back, the\n"
        "                        loop's time per call (a rate, as nccl-tests\n"
        "                        times; the others time each call alone)\n"
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
        "                        where there is no GPU path. Not with -Z or -O,\n"
        "                        nor reduce_scatter or alltoall (host only)\n"
        "  -T, --tune FILE       measure this layout's switch points (recursive\n"
        "                        doubling/ring, segment slots/single-copy,\n"
        "                        hierarchy on/off; sizes -b..-e, -n, -w) and\n"
        "                        write the tuning table RINGPOINT_COLL_TUNE_FILE\n"
        "                        reads\n"
        "Size is the buffer in bytes (allgather: the whole output;\n"
        "reduce_scatter and alltoall: the whole send buffer of a rank, n\n"
        "blocks), count its elements. time is in microseconds; algbw =\n"
        "size / time; busbw = algbw * 2(n-1)/n for allreduce, (n-1)/n for\n"
        "allgather, reduce_scatter and alltoall, 1 for broadcast (GB/s =\n"
        "1e9 B/s). reduce_scatter and alltoall have no in-place form: those\n"
        "columns say N/A.\n"
        "Launch with srun --mpi=pmix or mpirun; rank 0 prints.\n");
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
    } else if (strcmp(s, "reduce_scatter") == 0 ||
               strcmp(s, "reducescatter") == 0 ||
               strcmp(s, "reduce-scatter") == 0) {
        *c = COLL_REDUCE_SCATTER;
    } else if (strcmp(s, "alltoall") == 0 || strcmp(s, "all_to_all") == 0) {
        *c = COLL_ALLTOALL;
    } else {
        return false;
    }
    return true;
}

int parse_args(int argc, char **argv, opts_t *o)
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
        {"tune", required_argument, NULL, 'T'},
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
            fprintf(stderr, "ringpoint-bench: unknown collective '%s' "
                    "(allreduce, broadcast, allgather, reduce_scatter or "
                    "alltoall)\n", argv[1]);
            return 64;
        }
        argv[1] = argv[0];
        argv++;
        argc--;
    }
    while ((ch = getopt_long(argc, argv, "C:b:e:f:n:w:c:o:d:r:m:G:Z:O:D:T:h", longopts,
                             NULL)) != -1) {
        bool ok = true;

        switch (ch) {
        case 'C': ok = parse_coll(optarg, &o->coll); break;
        case 'b': ok = bt_parse_size(optarg, &o->min_bytes); break;
        case 'e': ok = bt_parse_size(optarg, &o->max_bytes); break;
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
            ok = bt_parse_stat(optarg, &o->mean, &o->loop);
            break;
        case 'T':
            o->tune_path = optarg;
            ok = *optarg != '\0';
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
    /* The library takes host memory only for these two (the GPU module
     * has no path for them): refused here, with the way out, rather than
     * as a failed call in the first row. */
    if (o->device &&
        (o->coll == COLL_REDUCE_SCATTER || o->coll == COLL_ALLTOALL)) {
        fprintf(stderr, "ringpoint-bench: %s runs on host buffers only: "
                "not with -D cuda (use -D host)\n", coll_name(o->coll));
        return 64;
    }
    /* The overlap table and the tuning time single calls by design. */
    if (o->loop && (o->overlap || o->tune_path != NULL)) {
        fprintf(stderr, "ringpoint-bench: -m loop times the rows' iterations "
                "back to back: not with -O or -T\n");
        return 64;
    }
    return 0;
}
