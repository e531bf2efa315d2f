/*
 * mpi-allreduce-bench: MPI_Allreduce (or MPI_Bcast, MPI_Allgather,
 * MPI_Barrier, MPI_Reduce_scatter_block, MPI_Alltoall with -C) timed and
 * printed exactly like ringpoint-bench, so that scripts/bench-allreduce.sh
 * can put the two side by side (same sizes, same inputs, same statistic).
 *
 *   mpirun -np N mpi-allreduce-bench [-C allreduce|broadcast|allgather|
 *        barrier|reduce_scatter|alltoall] [-b MIN] [-e MAX] [-f FACTOR]
 *        [-n ITERS] [-w WARMUP]
 *        [-c 0|1] [-o sum|prod|min|max] [-d float|double|int32|int64]
 *        [-m median|mean|loop]
 *
 * Sizes as ringpoint-bench's: the buffer (allgather: the whole output,
 * whole blocks per rank); broadcast from rank 0; barrier prints one row of
 * size 0. For those three #wrong counts bytes that differ from the
 * pattern each rank wrote.
 *
 * Reduce-scatter and all-to-all as ringpoint-bench's: the size is a rank's
 * whole send buffer (whole blocks per rank), their inputs and checks are
 * ringpoint-bench's (the allreduce's inputs, each rank checking its block;
 * bt_a2a_input), and their in-place columns say N/A: ringpoint has no
 * in-place form to set MPI_IN_PLACE against.
 *
 * Each iteration is timed alone; the per-iteration times are combined with
 * MPI_MAX over ranks and the row shows their median (or mean); -m loop
 * times them back to back instead, as ringpoint-bench -m loop. In place,
 * the input is copied back before each iteration, untimed. Inputs are the
 * small integers ringpoint-bench uses, so #wrong is an exact comparison;
 * those, the statistic and the table are ringpoint-bench's own code
 * (runtime/tools/benchtable.c).
 */
#include <mpi.h>

#include "tools/benchtable.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { T_FLOAT, T_DOUBLE, T_INT32, T_INT64 } type_t;

static const char *const type_names[] = {"float", "double", "int32", "int64"};
static const size_t type_sizes[] = {4, 8, 4, 8};
static const char *const op_names[] = {"sum", "prod", "min", "max"};

typedef enum {
    C_ALLREDUCE,
    C_BROADCAST,
    C_ALLGATHER,
    C_BARRIER,
    C_REDUCE_SCATTER,
    C_ALLTOALL,
    C_COUNT
} coll_t;

/* ringpoint-bench's names, then the aliases it takes too. */
static const char *const coll_names[] = {
    "allreduce", "broadcast", "allgather", "barrier", "reduce_scatter",
    "alltoall", "reducescatter", "reduce-scatter", "all_to_all"};
static const coll_t coll_alias_of[] = {C_REDUCE_SCATTER, C_REDUCE_SCATTER,
                                       C_ALLTOALL};
static const char *const coll_calls[] = {
    "MPI_Allreduce", "MPI_Bcast", "MPI_Allgather", "MPI_Barrier",
    "MPI_Reduce_scatter_block", "MPI_Alltoall"};

static int g_rank, g_size;

static MPI_Datatype mpi_type(type_t t)
{
    switch (t) {
    case T_FLOAT: return MPI_FLOAT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_INT32: return MPI_INT32_T;
    default: return MPI_INT64_T;
    }
}

static MPI_Op mpi_op(int op)
{
    switch (op) {
    case 0: return MPI_SUM;
    case 1: return MPI_PROD;
    case 2: return MPI_MIN;
    default: return MPI_MAX;
    }
}

static void store(type_t t, void *buf, size_t i, int64_t v)
{
    char *p = (char *)buf + i * type_sizes[t];
    float f = (float)v;
    double d = (double)v;
    int32_t i32 = (int32_t)(uint32_t)(uint64_t)v;

    switch (t) {
    case T_FLOAT: memcpy(p, &f, 4); break;
    case T_DOUBLE: memcpy(p, &d, 8); break;
    case T_INT32: memcpy(p, &i32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

typedef struct row {
    double time_us;
    int64_t wrong;
} row_t;

/* The iterations' times -> the row's: each iteration's slowest rank,
 * then their median (or mean). */
/* -m loop: the iterations back to back, timed as one (ringpoint-bench's
 * -m loop, bench.c). */
static bool g_loop;

/* -m loop: @iters calls of @call after @warmup, between a barrier and the
 * clock; the time per call, MAX over ranks, into @res. */
static void time_loop(void (*call)(void *), void *arg, int iters, int warmup,
                      row_t *res)
{
    double t0, per;

    for (int it = 0; it < warmup; it++) {
        call(arg);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        call(arg);
    }
    per = (MPI_Wtime() - t0) * 1e6 / iters;
    MPI_Allreduce(&per, &res->time_us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    res->wrong = -1;
}

static void summarize(double *times, int iters, bool mean, row_t *res)
{
    MPI_Allreduce(MPI_IN_PLACE, times, iters, MPI_DOUBLE, MPI_MAX,
                  MPI_COMM_WORLD);
    res->time_us = bt_stat(times, iters, mean);
    res->wrong = -1;
}

/* A row's calls of @call, each after @prepare (untimed; @checked on the
 * one whose result is checked): timed one by one, or with -m loop back to
 * back and then the checked one. The row's time into @res. */
static void time_row(void (*call)(void *), void (*prepare)(void *, bool),
                     void *arg, int iters, int warmup, bool check, bool mean,
                     double *times, row_t *res)
{
    if (g_loop) {
        prepare(arg, false);
        time_loop(call, arg, iters, warmup, res);
        prepare(arg, check);
        call(arg);
        return;
    }
    for (int it = 0; it < warmup + iters; it++) {
        double t0, t1;

        prepare(arg, check && it == warmup + iters - 1);
        t0 = MPI_Wtime();
        call(arg);
        t1 = MPI_Wtime();
        if (it >= warmup) {
            times[it - warmup] = (t1 - t0) * 1e6;
        }
    }
    summarize(times, iters, mean, res);
}

/* Broadcast's and allgather's byte pattern: rank r's byte i. */
static unsigned char pattern(int r, size_t i)
{
    return (unsigned char)(i * 7 + (size_t)r * 13 + 1);
}

/* One MPI_Bcast, MPI_Allgather or MPI_Barrier. */
typedef struct other_call {
    coll_t coll;
    size_t bytes, block;
    bool inplace;
    void *in, *out;
} other_call_t;

static void call_other(void *arg)
{
    const other_call_t *a = arg;

    if (a->coll == C_BROADCAST) {
        MPI_Bcast(a->out, (int)a->bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    } else if (a->coll == C_ALLGATHER) {
        MPI_Allgather(a->inplace ? MPI_IN_PLACE : a->in, (int)a->block,
                      MPI_BYTE, a->out, (int)a->block, MPI_BYTE,
                      MPI_COMM_WORLD);
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
    }
}

/* Before a call, untimed, as ringpoint-bench prepares its iterations
 * (bench_loop.c): the receivers' buffer poisoned before the checked one
 * only (poisoning it every time delayed the receivers' arrival in every
 * call, which changes which rank waits inside the timed call; the two
 * loops must be the same to be compared), the root's data into place, an
 * in-place allgather's own block into place. */
static void prepare_other(void *arg, bool checked)
{
    const other_call_t *a = arg;

    if (a->coll == C_BROADCAST) {
        if (g_rank != 0 && checked) {
            memset(a->out, 0xA5, a->bytes);
        }
        if (g_rank == 0) {
            memcpy(a->out, a->in, a->bytes);
        }
    } else if (a->coll == C_ALLGATHER && a->inplace) {
        memcpy((char *)a->out + (size_t)g_rank * a->block, a->in, a->block);
    }
}

/* One MPI_Bcast, MPI_Allgather or MPI_Barrier per iteration, timed as
 * run_row times MPI_Allreduce. @bytes: the buffer (allgather: the whole
 * output). */
static void run_row_other(coll_t coll, size_t bytes, bool inplace, int iters,
                          int warmup, bool check, bool mean, void *in,
                          void *out, double *times, row_t *res)
{
    other_call_t a = {.coll = coll, .bytes = bytes, .inplace = inplace,
                      .in = in, .out = out,
                      .block = coll == C_ALLGATHER ? bytes / (size_t)g_size
                                                   : bytes};
    int64_t wrong = 0;

    time_row(call_other, prepare_other, &a, iters, warmup, check, mean, times,
             res);
    if (check && coll != C_BARRIER) {
        for (size_t i = 0; i < bytes; i++) {
            int r = coll == C_BROADCAST ? 0 : (int)(i / a.block);
            size_t j = coll == C_BROADCAST ? i : i % a.block;

            wrong += ((unsigned char *)out)[i] != pattern(r, j);
        }
        MPI_Allreduce(&wrong, &res->wrong, 1, MPI_INT64_T, MPI_SUM,
                      MPI_COMM_WORLD);
    }
}

/* One MPI_Allreduce. */
typedef struct ar_call {
    type_t t;
    int op;
    size_t count;
    bool inplace;
    const void *in;
    void *out;
} ar_call_t;

static void call_ar(void *arg)
{
    const ar_call_t *a = arg;

    MPI_Allreduce(a->inplace ? MPI_IN_PLACE : a->in, a->out, (int)a->count,
                  mpi_type(a->t), mpi_op(a->op), MPI_COMM_WORLD);
}

/* Before a call, untimed: the output poisoned before the checked one, an
 * in-place input restored. */
static void prepare_ar(void *arg, bool checked)
{
    const ar_call_t *a = arg;
    const size_t bytes = a->count * type_sizes[a->t];

    if (checked) {
        memset(a->out, 0xA5, bytes);
    }
    if (a->inplace) {
        memcpy(a->out, a->in, bytes);
    }
}

static void run_row(type_t t, int op, size_t count, bool inplace, int iters,
                    int warmup, bool check, bool mean, const void *in,
                    void *out, double *times, row_t *res)
{
    const size_t es = type_sizes[t];
    ar_call_t a = {.t = t, .op = op, .count = count, .inplace = inplace,
                   .in = in, .out = out};
    int64_t wrong = 0;

    time_row(call_ar, prepare_ar, &a, iters, warmup, check, mean, times, res);
    if (check) {
        char e[8];

        for (size_t i = 0; i < count; i++) {
            store(t, e, 0, bt_ar_expected(op, i, g_size));
            wrong += memcmp(e, (char *)out + i * es, es) != 0;
        }
        MPI_Allreduce(&wrong, &res->wrong, 1, MPI_INT64_T, MPI_SUM,
                      MPI_COMM_WORLD);
    }
}

/* Rank 0 prints a row: out of place, then in place. */
static void print_row(size_t bytes, size_t count, const char *type,
                      const char *op, int root, const row_t res[2], double bf)
{
    if (g_rank == 0) {
        bt_print_row_head(bytes, count, type, op, root);
        bt_print_result(res[0].time_us, res[0].wrong, bytes, bf);
        bt_print_result(res[1].time_us, res[1].wrong, bytes, bf);
        printf("\n");
    }
}

/* @name's index among the @n @names into *@i; false if none. */
static bool pick(const char *name, const char *const *names, int n, int *i)
{
    for (int k = 0; k < n; k++) {
        if (strcmp(name, names[k]) == 0) {
            *i = k;
            return true;
        }
    }
    return false;
}

/* The rows of broadcast, allgather (sizes in whole float32 per rank, as
 * ringpoint-bench cuts them) or barrier (one row); the total #wrong. */
static int64_t run_others(coll_t coll, size_t minb, size_t maxb, double factor,
                          int iters, int warmup, bool check, bool mean,
                          double bf)
{
    int64_t wrong_total = 0;
    size_t last = (size_t)-1;

    for (double sz = (double)minb; sz <= (double)maxb;
         sz = sz == 0 ? 1 : sz * factor) {
        size_t unit = 4 * (coll == C_ALLGATHER ? (size_t)g_size : 1);
        size_t bytes = (size_t)sz / unit * unit;
        size_t block = coll == C_ALLGATHER ? bytes / (size_t)g_size : bytes;
        double *times = calloc((size_t)iters, sizeof(double));
        unsigned char *in = malloc(block + 1), *out = malloc(bytes + 1);
        row_t res[2];

        if (times == NULL || in == NULL || out == NULL ||
            (bytes == 0 && coll != C_BARRIER) || bytes == last) {
            free(times);
            free(in);
            free(out);
            if (coll == C_BARRIER) {
                break;
            }
            continue;
        }
        last = bytes;
        for (size_t i = 0; i < block; i++) {
            in[i] = pattern(coll == C_BROADCAST ? 0 : g_rank, i);
        }
        for (int ip = 0; ip < 2; ip++) {
            run_row_other(coll, bytes, ip == 1, iters, warmup, check, mean,
                          in, out, times, &res[ip]);
            if (res[ip].wrong > 0) {
                wrong_total += res[ip].wrong;
            }
        }
        print_row(bytes, bytes / 4, "float", "none",
                  coll == C_BROADCAST ? 0 : -1, res, bf);
        free(times);
        free(in);
        free(out);
        if (coll == C_BARRIER) {
            break;
        }
    }
    if (g_rank == 0) {
        bt_print_wrong_total(wrong_total);
    }
    return wrong_total;
}

/* One MPI_Reduce_scatter_block or MPI_Alltoall: @per elements per block,
 * a rank's input @size blocks. */
typedef struct block_call {
    coll_t coll;
    type_t t;
    int op;
    size_t per, out_bytes;
    const void *in;
    void *out;
} block_call_t;

static void call_block(void *arg)
{
    const block_call_t *a = arg;

    if (a->coll == C_REDUCE_SCATTER) {
        MPI_Reduce_scatter_block(a->in, a->out, (int)a->per, mpi_type(a->t),
                                 mpi_op(a->op), MPI_COMM_WORLD);
    } else {
        MPI_Alltoall(a->in, (int)a->per, mpi_type(a->t), a->out, (int)a->per,
                     mpi_type(a->t), MPI_COMM_WORLD);
    }
}

/* Before a call, untimed: the output poisoned before the checked one. */
static void prepare_block(void *arg, bool checked)
{
    const block_call_t *a = arg;

    if (checked) {
        memset(a->out, 0xA5, a->out_bytes);
    }
}

/* The #wrong elements of this rank's output: reduce-scatter's block of the
 * allreduce's expected result, all-to-all's block q from rank q. */
static int64_t block_wrong(const block_call_t *a)
{
    const size_t es = type_sizes[a->t];
    const size_t n = a->coll == C_ALLTOALL ? a->per * (size_t)g_size : a->per;
    int64_t wrong = 0;
    char e[8];

    for (size_t i = 0; i < n; i++) {
        int64_t v = a->coll == C_ALLTOALL
                        ? bt_a2a_input((int)(i / a->per), g_rank, i % a->per)
                        : bt_ar_expected(a->op, (size_t)g_rank * a->per + i,
                                         g_size);

        store(a->t, e, 0, v);
        wrong += memcmp(e, (const char *)a->out + i * es, es) != 0;
    }
    return wrong;
}

/* The rows of reduce-scatter or all-to-all, sizes a rank's whole send
 * buffer in whole blocks of @t, out of place only; the total #wrong. */
static int64_t run_blocks(coll_t coll, type_t t, int op, size_t minb,
                          size_t maxb, double factor, int iters, int warmup,
                          bool check, bool mean, double bf)
{
    const size_t es = type_sizes[t], unit = es * (size_t)g_size;
    int64_t wrong_total = 0;
    size_t last = (size_t)-1;

    for (double sz = (double)minb; sz <= (double)maxb;
         sz = sz == 0 ? 1 : sz * factor) {
        size_t bytes = (size_t)sz / unit * unit, count = bytes / es;
        block_call_t a = {.coll = coll, .t = t, .op = op,
                          .per = count / (size_t)g_size};
        double *times;
        void *in = NULL, *out = NULL;
        row_t res;
        int64_t wrong = 0;

        a.out_bytes = (coll == C_ALLTOALL ? count : a.per) * es;
        if (count == 0 || bytes == last) {
            continue;
        }
        last = bytes;
        times = calloc((size_t)iters, sizeof(double));
        if (times == NULL || posix_memalign(&in, 4096, bytes) != 0 ||
            posix_memalign(&out, 4096, a.out_bytes) != 0) {
            free(times);
            free(in);
            continue;
        }
        memset(out, 0, a.out_bytes);
        for (size_t i = 0; i < count; i++) {
            store(t, in, i,
                  coll == C_ALLTOALL
                      ? bt_a2a_input(g_rank, (int)(i / a.per), i % a.per)
                      : bt_ar_input(op, i, g_rank, g_size));
        }
        a.in = in;
        a.out = out;
        time_row(call_block, prepare_block, &a, iters, warmup, check, mean,
                 times, &res);
        if (check) {
            wrong = block_wrong(&a);
            MPI_Allreduce(&wrong, &res.wrong, 1, MPI_INT64_T, MPI_SUM,
                          MPI_COMM_WORLD);
            wrong_total += res.wrong > 0 ? res.wrong : 0;
        }
        if (g_rank == 0) {
            bt_print_row_head(bytes, count, type_names[t],
                              coll == C_ALLTOALL ? "none" : op_names[op], -1);
            bt_print_result(res.time_us, res.wrong, bytes, bf);
            bt_print_absent();
            printf("\n");
        }
        free(times);
        free(in);
        free(out);
    }
    if (g_rank == 0) {
        bt_print_wrong_total(wrong_total);
    }
    return wrong_total;
}

int main(int argc, char **argv)
{
    size_t minb = 8, maxb = 32 * 1024 * 1024;
    double factor = 2, bf;
    int iters = 20, warmup = 5, op = 0, ch;
    bool check = true, mean = false;
    type_t t = T_FLOAT;
    coll_t coll = C_ALLREDUCE;
    int64_t wrong_total = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    setvbuf(stdout, NULL, _IOLBF, 0);
    while ((ch = getopt(argc, argv, "C:b:e:f:n:w:c:o:d:m:")) != -1) {
        bool ok = true;

        switch (ch) {
        case 'C': {
            int k = 0;

            ok = pick(optarg, coll_names,
                      (int)(sizeof(coll_names) / sizeof(coll_names[0])), &k);
            coll = k < C_COUNT ? (coll_t)k : coll_alias_of[k - C_COUNT];
            break;
        }
        case 'b': ok = bt_parse_size(optarg, &minb); break;
        case 'e': ok = bt_parse_size(optarg, &maxb); break;
        case 'f': factor = atof(optarg); ok = factor > 1; break;
        case 'n': iters = atoi(optarg); ok = iters > 0; break;
        case 'w': warmup = atoi(optarg); ok = warmup >= 0; break;
        case 'c': check = atoi(optarg) != 0; break;
        case 'm':
            ok = bt_parse_stat(optarg, &mean, &g_loop);
            break;
        case 'o': ok = pick(optarg, op_names, 4, &op); break;
        case 'd': ok = pick(optarg, type_names, 4, (int *)&t); break;
        default:
            ok = false;
        }
        if (!ok) {
            if (g_rank == 0) {
                fprintf(stderr, "usage: mpi-allreduce-bench [-C COLL] "
                        "[-b MIN] [-e MAX] "
                        "[-f F] [-n N] [-w N] [-c 0|1] [-o OP] [-d TYPE] "
                        "[-m median|mean|loop]\n");
            }
            MPI_Finalize();
            return 64;
        }
    }
    bf = coll == C_ALLREDUCE ? 2.0 * (g_size - 1) / g_size
         : coll == C_ALLGATHER || coll == C_REDUCE_SCATTER ||
                 coll == C_ALLTOALL
             ? (double)(g_size - 1) / g_size
             : 1.0;
    if (coll == C_BARRIER) {
        minb = maxb = 0;
    }
    if (g_rank == 0) {
        printf("# mpi-allreduce-bench: %s, %d ranks, minBytes %zu "
               "maxBytes %zu step %g iters %d warmup %d check %d\n",
               coll_calls[coll], g_size, minb, maxb, factor, iters, warmup,
               check ? 1 : 0);
        bt_print_time_note(g_loop, mean);
        printf("#\n");
        bt_print_heads();
    }
    if (coll == C_REDUCE_SCATTER || coll == C_ALLTOALL) {
        wrong_total = run_blocks(coll, t, op, minb, maxb, factor, iters,
                                 warmup, check, mean, bf);
        MPI_Finalize();
        return wrong_total ? 1 : 0;
    }
    if (coll != C_ALLREDUCE) {
        wrong_total = run_others(coll, minb, maxb, factor, iters, warmup,
                                 check, mean, bf);
        MPI_Finalize();
        return wrong_total ? 1 : 0;
    }
    for (double sz = (double)minb; sz <= (double)maxb; sz *= factor) {
        size_t es = type_sizes[t], bytes = (size_t)sz / es * es;
        size_t count = bytes / es;
        void *in = NULL, *out = NULL;
        double *times = calloc((size_t)iters, sizeof(double));
        row_t res[2];

        if (count == 0 || times == NULL ||
            posix_memalign(&in, 4096, bytes) != 0 ||
            posix_memalign(&out, 4096, bytes) != 0) {
            free(times);
            free(in);
            continue;
        }
        memset(out, 0, bytes);
        for (size_t i = 0; i < count; i++) {
            store(t, in, i, bt_ar_input(op, i, g_rank, g_size));
        }
        for (int ip = 0; ip < 2; ip++) {
            run_row(t, op, count, ip == 1, iters, warmup, check, mean, in, out,
                    times, &res[ip]);
            if (res[ip].wrong > 0) {
                wrong_total += res[ip].wrong;
            }
        }
        print_row(bytes, count, type_names[t], op_names[op], -1, res, bf);
        free(times);
        free(in);
        free(out);
    }
    if (g_rank == 0) {
        bt_print_wrong_total(wrong_total);
    }
    MPI_Finalize();
    return wrong_total ? 1 : 0;
}
