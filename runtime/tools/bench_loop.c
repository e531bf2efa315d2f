/*
 * One row of ringpoint-bench: every iteration timed on its own, the times
 * combined over ranks and summarized; and the overlap measure of -O.
 */
#include "config.h"

#include "bench.h"
#include "benchtable.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

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
    case COLL_ALLGATHER:
        return req ? rp_iallgather(g_ctx, send, recv, count, t, req)
                   : rp_allgather(g_ctx, send, recv, count, t);
    case COLL_REDUCE_SCATTER:
        return req ? rp_ireduce_scatter(g_ctx, send, recv, count, t, op, req)
                   : rp_reduce_scatter(g_ctx, send, recv, count, t, op);
    default:
        return req ? rp_ialltoall(g_ctx, send, recv, count, t, req)
                   : rp_alltoall(g_ctx, send, recv, count, t);
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
    *out = bt_stat(times, o->iters, o->mean);
    return true;
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

/* -m loop: the row's iterations back to back, prepared once and timed as
 * one loop between two points every rank passes together; *@per_p: the
 * loop's time per call, the slowest rank's. The checked call follows,
 * prepared as usual. */
static rp_status_t run_loop(const opts_t *o, rp_dtype_t t, rp_op_t op,
                            size_t count, bool inplace, const bufs_t *b,
                            void *send, char *out, size_t in_bytes,
                            size_t out_bytes, double *per_p)
{
    rp_status_t st = prepare_iter(o, false, inplace, b, send, in_bytes,
                                  out_bytes);
    double t0, per;

    for (int it = 0; st == RP_OK && it < o->warmup; it++) {
        st = run_once(o, t, op, send, out, count, NULL);
    }
    if (st == RP_OK) {
        st = buf_sync(o);
    }
    if (st == RP_OK) {
        st = rp_barrier(g_ctx);
    }
    t0 = bt_now_us();
    for (int it = 0; st == RP_OK && it < o->iters; it++) {
        st = run_once(o, t, op, send, out, count, NULL);
    }
    if (st == RP_OK) {
        st = buf_sync(o);
    }
    per = (bt_now_us() - t0) / o->iters;
    if (st == RP_OK) {
        st = rp_allreduce(g_ctx, &per, per_p, 1, RP_DTYPE_FLOAT64, RP_OP_MAX);
    }
    if (st == RP_OK && o->check) {
        st = prepare_iter(o, true, inplace, b, send, in_bytes, out_bytes);
    }
    if (st == RP_OK && o->check) {
        st = run_once(o, t, op, send, out, count, NULL);
    }
    return st == RP_OK && o->check ? buf_sync(o) : st;
}

/*
 * @count: the call's count (the buffer for allreduce and broadcast, a
 * rank's block for the others). b->in: this rank's input, kept intact
 * (reduce-scatter, all-to-all: size * count elements); b->out: the output
 * (allgather, all-to-all: size * count elements).
 */
void run_row(const opts_t *o, rp_dtype_t t, rp_op_t op, size_t count,
                    bool inplace, const bufs_t *b, double *times,
                    result_t *res)
{
    const size_t es = rp_dtype_size(t);
    const size_t in_bytes = coll_in_count(o->coll, count, g_size) * es;
    const size_t out_bytes = coll_out_count(o->coll, count, g_size) * es;
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
    if (o->loop) {
        st = run_loop(o, t, op, count, inplace, b, send, out, in_bytes,
                      out_bytes, &res->time_us);
        if (st != RP_OK) {
            fprintf(stderr, "ringpoint-bench: rank %d: %s failed: %s\n",
                    g_rank, coll_name(o->coll), rp_status_string(st));
            res->failed = true;
            return;
        }
        total = 0; /* no per-call loop */
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
        t0 = bt_now_us();
        st = run_once(o, t, op, send, out, count, NULL);
        if (st == RP_OK) {
            st = buf_sync(o); /* device: until the GPU is done */
        }
        t1 = bt_now_us();
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
    if (!o->loop && !summarize(o, times, &res->time_us)) {
        res->failed = true;
        return;
    }
    if (o->check) {
        /* Even when this rank cannot count, it joins the sum: the others
         * are waiting in it. */
        const void *result = bufs_result(o, b, out_bytes);
        int64_t wrong =
            result != NULL ? count_row_wrong(o, t, op, count, result) : 0;

        st = rp_allreduce(g_ctx, &wrong, &res->wrong, 1, RP_DTYPE_INT64,
                          RP_OP_SUM);
        if (st != RP_OK || result == NULL) {
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

void calibrate(void)
{
    long n = 1000;
    double t;

    for (;;) {
        double t0 = bt_now_us();

        g_sink = compute(g_sink, n);
        t = bt_now_us() - t0;
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

/* Time @mode out of place: the non-blocking call alone, the computation
 * alone, or start, compute, wait. */
static bool time_mode(const opts_t *o, int mode, rp_dtype_t t, rp_op_t op,
                      size_t count, const void *pristine, void *buf,
                      double busy_us, double *times, double *out)
{
    for (int it = 0; it < o->warmup + o->iters; it++) {
        rp_request_h req = NULL;
        rp_status_t st = RP_OK;
        double t0 = bt_now_us();

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
            times[it - o->warmup] = bt_now_us() - t0;
        }
    }
    return summarize(o, times, out);
}

bool run_overlap(const opts_t *o, rp_dtype_t t, rp_op_t op,
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

