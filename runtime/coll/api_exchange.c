/*
 * The public reduce-scatter and all-to-all: argument checks, the blocks'
 * table the dispatcher takes (dispatch.h), then a backend, as api.c does
 * for the other collectives.
 */
#include "config.h"

#include "ringpoint/coll.h"
#include "coll/api.h"
#include "coll/comm.h"
#include "core/context.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Sum of @counts[0..n) elements of @es bytes, or SIZE_MAX on overflow. */
static size_t rp_total(const size_t *counts, int n, size_t es)
{
    size_t total = 0;

    for (int q = 0; q < n; q++) {
        if (counts[q] > (SIZE_MAX / es - total)) {
            return SIZE_MAX;
        }
        total += counts[q];
    }
    return total;
}

/* Run @a (blocking), or start it (@nb: *@req completes with it); then
 * free the table (a started request holds a copy). @status: the argument
 * check's. */
static rp_status_t rp_go(const char *what, rp_context_h ctx,
                         const rp__coll_args_t *a, rp_status_t status,
                         bool nb, rp_request_h *req, size_t *table)
{
    if (nb) {
        status = rp__api_start(what, ctx, a, status, req);
    } else if (status == RP_OK) {
        status = rp__api_blocking(what, ctx, a);
    }
    free(table);
    return status;
}

static rp_status_t rp_rs_args(const char *what, rp_context_h ctx,
                              const void *sendbuf, void *recvbuf,
                              const size_t *recvcounts, size_t recvcount,
                              rp_dtype_t dtype, rp_op_t op, rp__coll_args_t *a,
                              size_t **table_p)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    size_t es, total, *t;
    int n;

    *table_p = NULL;
    if (status != RP_OK) {
        return status;
    }
    n = ctx->comm->size;
    es = rp_dtype_size(dtype);
    if (!rp__reduce_supported(dtype, op)) {
        rp_error("%s: invalid op %d", what, (int)op);
        return RP_ERR_INVALID_ARG;
    }
    t = malloc((size_t)n * sizeof(*t));
    if (t == NULL) {
        rp_error("%s: out of memory", what);
        return RP_ERR_NO_MEMORY;
    }
    *table_p = t;
    for (int q = 0; q < n; q++) {
        t[q] = recvcounts != NULL ? recvcounts[q] : recvcount;
    }
    total = rp_total(t, n, es);
    if (total == SIZE_MAX) {
        rp_error("%s: the counts overflow", what);
        return RP_ERR_INVALID_ARG;
    }
    if ((total > 0 && sendbuf == NULL) ||
        (t[ctx->comm->rank] > 0 && recvbuf == NULL)) {
        rp_error("%s: NULL buffer with %zu elements to send, %zu to receive",
                 what, total, t[ctx->comm->rank]);
        return RP_ERR_INVALID_ARG;
    }
    if (rp__api_overlap(sendbuf, total * es, recvbuf,
                        t[ctx->comm->rank] * es)) {
        rp_error("%s: sendbuf and recvbuf overlap: the result needs a buffer "
                 "of its own", what);
        return RP_ERR_INVALID_ARG;
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_REDUCE_SCATTER,
                           .sendbuf = sendbuf, .recvbuf = recvbuf,
                           .count = t[ctx->comm->rank], .dtype = dtype,
                           .op = op, .table = t, .ntable = (size_t)n,
                           .compression = RP_COMPRESSION_NONE};
    return RP_OK;
}

rp_status_t rp_reduce_scatter(rp_context_h ctx, const void *sendbuf,
                              void *recvbuf, size_t recvcount,
                              rp_dtype_t dtype, rp_op_t op)
{
    static const char what[] = "rp_reduce_scatter";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_rs_args(what, ctx, sendbuf, recvbuf, NULL,
                                    recvcount, dtype, op, &a, &t);

    return rp_go(what, ctx, &a, status, false, NULL, t);
}

rp_status_t rp_ireduce_scatter(rp_context_h ctx, const void *sendbuf,
                               void *recvbuf, size_t recvcount,
                               rp_dtype_t dtype, rp_op_t op,
                               rp_request_h *req)
{
    static const char what[] = "rp_ireduce_scatter";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_rs_args(what, ctx, sendbuf, recvbuf, NULL,
                                    recvcount, dtype, op, &a, &t);

    return rp_go(what, ctx, &a, status, true, req, t);
}

/* The v-forms: @recvcounts must be given. */
static rp_status_t rp_rsv_args(const char *what, rp_context_h ctx,
                               const void *sendbuf, void *recvbuf,
                               const size_t *recvcounts, rp_dtype_t dtype,
                               rp_op_t op, rp__coll_args_t *a,
                               size_t **table_p)
{
    *table_p = NULL;
    if (recvcounts == NULL) {
        rp_error("%s: recvcounts is NULL (one count per rank)", what);
        return RP_ERR_INVALID_ARG;
    }
    return rp_rs_args(what, ctx, sendbuf, recvbuf, recvcounts, 0, dtype, op,
                      a, table_p);
}

rp_status_t rp_reduce_scatterv(rp_context_h ctx, const void *sendbuf,
                               void *recvbuf, const size_t *recvcounts,
                               rp_dtype_t dtype, rp_op_t op)
{
    static const char what[] = "rp_reduce_scatterv";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_rsv_args(what, ctx, sendbuf, recvbuf, recvcounts,
                                     dtype, op, &a, &t);

    return rp_go(what, ctx, &a, status, false, NULL, t);
}

rp_status_t rp_ireduce_scatterv(rp_context_h ctx, const void *sendbuf,
                                void *recvbuf, const size_t *recvcounts,
                                rp_dtype_t dtype, rp_op_t op,
                                rp_request_h *req)
{
    static const char what[] = "rp_ireduce_scatterv";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_rsv_args(what, ctx, sendbuf, recvbuf, recvcounts,
                                     dtype, op, &a, &t);

    return rp_go(what, ctx, &a, status, true, req, t);
}

/* The all-to-all's table in bytes: send counts and displacements, receive
 * counts and displacements; equal shares of @count where the arrays are
 * NULL. */
static rp_status_t rp_a2a_args(const char *what, rp_context_h ctx,
                               const void *sendbuf, const size_t *sendcounts,
                               void *recvbuf, const size_t *recvcounts,
                               size_t count, rp_dtype_t dtype,
                               rp__coll_args_t *a, size_t **table_p)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    size_t es, stotal, rtotal, *t;
    int n;

    *table_p = NULL;
    if (status != RP_OK) {
        return status;
    }
    n = ctx->comm->size;
    es = rp_dtype_size(dtype);
    t = malloc(4 * (size_t)n * sizeof(*t));
    if (t == NULL) {
        rp_error("%s: out of memory", what);
        return RP_ERR_NO_MEMORY;
    }
    *table_p = t;
    for (int q = 0; q < n; q++) {
        t[q] = sendcounts != NULL ? sendcounts[q] : count;
        t[2 * n + q] = recvcounts != NULL ? recvcounts[q] : count;
    }
    stotal = rp_total(t, n, es);
    rtotal = rp_total(t + 2 * n, n, es);
    if (stotal == SIZE_MAX || rtotal == SIZE_MAX) {
        rp_error("%s: the counts overflow", what);
        return RP_ERR_INVALID_ARG;
    }
    if ((stotal > 0 && sendbuf == NULL) || (rtotal > 0 && recvbuf == NULL)) {
        rp_error("%s: NULL buffer with %zu elements to send, %zu to receive",
                 what, stotal, rtotal);
        return RP_ERR_INVALID_ARG;
    }
    if (rp__api_overlap(sendbuf, stotal * es, recvbuf, rtotal * es)) {
        rp_error("%s: sendbuf and recvbuf overlap: the result needs a buffer "
                 "of its own", what);
        return RP_ERR_INVALID_ARG;
    }
    /* In bytes, the displacements packed in rank order. */
    for (int q = 0; q < n; q++) {
        t[q] *= es;
        t[2 * n + q] *= es;
        t[n + q] = q == 0 ? 0 : t[n + q - 1] + t[q - 1];
        t[3 * n + q] = q == 0 ? 0 : t[3 * n + q - 1] + t[2 * n + q - 1];
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_ALLTOALL, .sendbuf = sendbuf,
                           .recvbuf = recvbuf, .count = stotal, .dtype = dtype,
                           .table = t, .ntable = 4 * (size_t)n};
    return RP_OK;
}

rp_status_t rp_alltoall(rp_context_h ctx, const void *sendbuf, void *recvbuf,
                        size_t count, rp_dtype_t dtype)
{
    static const char what[] = "rp_alltoall";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_a2a_args(what, ctx, sendbuf, NULL, recvbuf, NULL,
                                     count, dtype, &a, &t);

    return rp_go(what, ctx, &a, status, false, NULL, t);
}

rp_status_t rp_ialltoall(rp_context_h ctx, const void *sendbuf, void *recvbuf,
                         size_t count, rp_dtype_t dtype, rp_request_h *req)
{
    static const char what[] = "rp_ialltoall";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_a2a_args(what, ctx, sendbuf, NULL, recvbuf, NULL,
                                     count, dtype, &a, &t);

    return rp_go(what, ctx, &a, status, true, req, t);
}

/* The v-forms: both count arrays must be given. */
static rp_status_t rp_a2av_args(const char *what, rp_context_h ctx,
                                const void *sendbuf, const size_t *sendcounts,
                                void *recvbuf, const size_t *recvcounts,
                                rp_dtype_t dtype, rp__coll_args_t *a,
                                size_t **table_p)
{
    *table_p = NULL;
    if (sendcounts == NULL || recvcounts == NULL) {
        rp_error("%s: %s is NULL (one count per rank)", what,
                 sendcounts == NULL ? "sendcounts" : "recvcounts");
        return RP_ERR_INVALID_ARG;
    }
    return rp_a2a_args(what, ctx, sendbuf, sendcounts, recvbuf, recvcounts, 0,
                       dtype, a, table_p);
}

rp_status_t rp_alltoallv(rp_context_h ctx, const void *sendbuf,
                         const size_t *sendcounts, void *recvbuf,
                         const size_t *recvcounts, rp_dtype_t dtype)
{
    static const char what[] = "rp_alltoallv";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_a2av_args(what, ctx, sendbuf, sendcounts, recvbuf,
                                      recvcounts, dtype, &a, &t);

    return rp_go(what, ctx, &a, status, false, NULL, t);
}

rp_status_t rp_ialltoallv(rp_context_h ctx, const void *sendbuf,
                          const size_t *sendcounts, void *recvbuf,
                          const size_t *recvcounts, rp_dtype_t dtype,
                          rp_request_h *req)
{
    static const char what[] = "rp_ialltoallv";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_a2av_args(what, ctx, sendbuf, sendcounts, recvbuf,
                                      recvcounts, dtype, &a, &t);

    return rp_go(what, ctx, &a, status, true, req, t);
}

/* The grouped reduce-scatter: @recvcounts holds a row of size counts per
 * buffer; the table is a copy of it. */
static rp_status_t rp_rsg_args(const char *what, rp_context_h ctx,
                               const void *const *sendbufs,
                               void *const *recvbufs,
                               const size_t *recvcounts, size_t nbufs,
                               rp_dtype_t dtype, rp_op_t op,
                               rp__coll_args_t *a, size_t **table_p)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    size_t es, *t;
    int n, r;

    *table_p = NULL;
    if (status != RP_OK) {
        return status;
    }
    n = ctx->comm->size;
    r = ctx->comm->rank;
    es = rp_dtype_size(dtype);
    if (!rp__reduce_supported(dtype, op)) {
        rp_error("%s: invalid op %d", what, (int)op);
        return RP_ERR_INVALID_ARG;
    }
    if (nbufs > 0 && (sendbufs == NULL || recvbufs == NULL ||
                      recvcounts == NULL)) {
        rp_error("%s: NULL array with %zu buffers", what, nbufs);
        return RP_ERR_INVALID_ARG;
    }
    if (nbufs > SIZE_MAX / (size_t)n / sizeof(*t)) {
        rp_error("%s: %zu buffers overflow", what, nbufs);
        return RP_ERR_INVALID_ARG;
    }
    t = malloc(nbufs * (size_t)n * sizeof(*t) + 1);
    if (t == NULL) {
        rp_error("%s: out of memory", what);
        return RP_ERR_NO_MEMORY;
    }
    *table_p = t;
    memcpy(t, recvcounts, nbufs * (size_t)n * sizeof(*t));
    for (size_t i = 0; i < nbufs; i++) {
        const size_t *ci = t + i * (size_t)n;
        const size_t total = rp_total(ci, n, es);

        if (total == SIZE_MAX) {
            rp_error("%s: the counts of buffer %zu overflow", what, i);
            return RP_ERR_INVALID_ARG;
        }
        if ((total > 0 && sendbufs[i] == NULL) ||
            (ci[r] > 0 && recvbufs[i] == NULL)) {
            rp_error("%s: buffer %zu is NULL with %zu elements to send, %zu "
                     "to receive", what, i, total, ci[r]);
            return RP_ERR_INVALID_ARG;
        }
        if (rp__api_overlap(sendbufs[i], total * es, recvbufs[i],
                            ci[r] * es)) {
            rp_error("%s: sendbuf and recvbuf %zu overlap: the result needs "
                     "a buffer of its own", what, i);
            return RP_ERR_INVALID_ARG;
        }
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_REDUCE_SCATTER_GROUP,
                           .sendbufs = sendbufs, .recvbufs = recvbufs,
                           .nbufs = nbufs, .dtype = dtype, .op = op,
                           .table = t, .ntable = nbufs * (size_t)n,
                           .compression = RP_COMPRESSION_NONE};
    return RP_OK;
}

rp_status_t rp_reduce_scatter_group(rp_context_h ctx,
                                    const void *const *sendbufs,
                                    void *const *recvbufs,
                                    const size_t *recvcounts, size_t nbufs,
                                    rp_dtype_t dtype, rp_op_t op)
{
    static const char what[] = "rp_reduce_scatter_group";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_rsg_args(what, ctx, sendbufs, recvbufs,
                                     recvcounts, nbufs, dtype, op, &a, &t);

    return rp_go(what, ctx, &a, status, false, NULL, t);
}

rp_status_t rp_ireduce_scatter_group(rp_context_h ctx,
                                     const void *const *sendbufs,
                                     void *const *recvbufs,
                                     const size_t *recvcounts, size_t nbufs,
                                     rp_dtype_t dtype, rp_op_t op,
                                     rp_request_h *req)
{
    static const char what[] = "rp_ireduce_scatter_group";
    rp__coll_args_t a;
    size_t *t;
    rp_status_t status = rp_rsg_args(what, ctx, sendbufs, recvbufs,
                                     recvcounts, nbufs, dtype, op, &a, &t);

    return rp_go(what, ctx, &a, status, true, req, t);
}
