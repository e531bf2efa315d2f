/*
 * ringpoint-bench's parts (bench.c says what the tool does):
 *
 *   bench.c         main: the sizes, types and ops walked, the table printed
 *   bench_opts.c    the command line
 *   bench_loop.c    one row: the timing loop, its statistic, overlap (-O)
 *   bench_check.c   the exact inputs and the #wrong count
 *   bench_device.c  the buffers, on the host or the GPU (-D cuda)
 *   benchtable.c    what it shares with contrib/bench/mpi-allreduce-bench
 */
#ifndef RP_TOOLS_BENCH_H
#define RP_TOOLS_BENCH_H

#include <ringpoint.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum {
    COLL_ALLREDUCE,
    COLL_BROADCAST,
    COLL_ALLGATHER,
    COLL_REDUCE_SCATTER,
    COLL_ALLTOALL,
} coll_t;
enum { OV_CPU = 1, OV_SLEEP = 2 };

typedef struct opts {
    coll_t coll;
    size_t min_bytes, max_bytes;
    double factor;
    int iters, warmup;
    bool check;
    bool mean;
    bool loop;  /* -m loop: the iterations back to back, timed as one */
    int root;
    bool all_ops, all_types;
    int groups; /* allreduce: split into this many buffers, one grouped call */
    rp_compression_t compression; /* -Z: through rp_allreduce_group_opts */
    int overlap;                  /* -O: 0, OV_CPU or OV_SLEEP */
    bool device;                  /* -D cuda: buffers on the GPU */
    rp_op_t op;
    rp_dtype_t dtype;
    const char *tune_path;        /* -T: measure and write the table */
} opts_t;

/* The job, set once by main. */
extern int g_rank, g_size;
extern rp_context_h g_ctx;

typedef struct result {
    double time_us; /* median or mean of per-iteration max over ranks;
                       -m loop: the loop's time per call, max over ranks */
    int64_t wrong;  /* -1: not checked */
    bool failed;
} result_t;

/* One row's buffers. */
typedef struct bufs {
    void *pristine; /* this rank's input, filled on the host */
    void *in;       /* what the collectives read: pristine, or its device copy */
    void *out;      /* the output, where the collectives write */
    void *host_out; /* -D cuda: the output copied back for the check */
} bufs_t;

typedef struct overlap {
    double nb, compute, total, hidden; /* us, us, us, fraction */
} overlap_t;

/* ---- bench_opts.c ---- */

/* 0, or the exit status for a usage error (64) or --help (1). */
int parse_args(int argc, char **argv, opts_t *o);
/* The first seven types of -d all, and their nccl-tests names. */
#define N_PRINTED_TYPES 7
rp_dtype_t bench_type(int i);
const char *type_name(rp_dtype_t t);
const char *op_name(rp_op_t op);
const char *coll_name(coll_t c);
/* Whether @c reduces (takes -o), and whether it has an in-place form. */
bool coll_has_op(coll_t c);
bool coll_has_inplace(coll_t c);
/* The elements of a rank's input and output buffers when the call's count
 * is @count (per rank for allgather, reduce-scatter and all-to-all). */
size_t coll_in_count(coll_t c, size_t count, int size);
size_t coll_out_count(coll_t c, size_t count, int size);

/* ---- bench_tune.c ---- */

/* --tune: the exit status. */
int bench_tune(const opts_t *o);

/* ---- bench_check.c ---- */

/* Fill the input of this rank for one run: @count elements, the whole
 * input buffer. */
void fill(const opts_t *o, rp_dtype_t t, rp_op_t op, void *buf, size_t count);
/* #wrong of this rank's output @out, in host memory (bufs_result); @count
 * is the call's count. */
int64_t count_row_wrong(const opts_t *o, rp_dtype_t t, rp_op_t op,
                        size_t count, const void *out);

/* ---- bench_device.c ---- */

/* Allocate a row's buffers (@count: the input's elements), fill the input
 * and clear the output before anything is timed; free them. */
bool bufs_prepare(const opts_t *o, rp_dtype_t t, rp_op_t op, size_t count,
                  size_t out_bytes, bufs_t *b);
void bufs_free(const opts_t *o, bufs_t *b);
/* The row's output where the host can read it (on the device: copied
 * back into b->host_out first); NULL, said on stderr, when it cannot. */
const void *bufs_result(const opts_t *o, const bufs_t *b, size_t out_bytes);
/* memset and memcpy; on the device enqueued on the context's stream, in
 * order with the collectives, and done at the next buf_sync. */
rp_status_t buf_set(const opts_t *o, void *p, int byte, size_t bytes);
rp_status_t buf_copy(const opts_t *o, void *dst, const void *src,
                     size_t bytes);
rp_status_t buf_sync(const opts_t *o);
/* -D cuda: open every rank's GPU path, or agree that one failed: 0, 77
 * (a skip) or 2. */
int device_open(void);
void device_close(void);

/* ---- bench_loop.c ---- */

void run_row(const opts_t *o, rp_dtype_t t, rp_op_t op, size_t count,
             bool inplace, const bufs_t *b, double *times, result_t *res);
/* -O cpu: the computation's speed on this rank, once. */
void calibrate(void);
bool run_overlap(const opts_t *o, rp_dtype_t t, rp_op_t op, size_t count,
                 const void *pristine, void *buf, double comm_us,
                 double *times, overlap_t *ov);

#endif /* RP_TOOLS_BENCH_H */
