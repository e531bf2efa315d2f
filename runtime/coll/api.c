/*
 * The public collectives: argument checks, then the communicator.
 */
#include "config.h"

#include "ringpoint/coll.h"
#include "coll/comm.h"
#include "core/context.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <stdint.h>

/* Do [a, a+alen) and [b, b+blen) share a byte? */
static bool rp_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

static rp_status_t rp_check(const char *what, rp_context_h ctx,
                            rp_dtype_t dtype)
{
    if (ctx == NULL) {
        rp_error("%s: ctx is NULL", what);
        return RP_ERR_INVALID_ARG;
    }
    if (rp_dtype_size(dtype) == 0) {
        rp_error("%s: invalid dtype %d", what, (int)dtype);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

rp_status_t rp_allreduce(rp_context_h ctx, const void *sendbuf, void *recvbuf,
                         size_t count, rp_dtype_t dtype, rp_op_t op)
{
    rp_status_t status = rp_check("rp_allreduce", ctx, dtype);
    size_t bytes;

    if (status != RP_OK) {
        return status;
    }
    if (!rp__reduce_supported(dtype, op)) {
        rp_error("rp_allreduce: invalid op %d", (int)op);
        return RP_ERR_INVALID_ARG;
    }
    bytes = count * rp_dtype_size(dtype);
    if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
        rp_error("rp_allreduce: NULL buffer with count %zu", count);
        return RP_ERR_INVALID_ARG;
    }
    if (bytes / rp_dtype_size(dtype) != count) {
        rp_error("rp_allreduce: count %zu overflows", count);
        return RP_ERR_INVALID_ARG;
    }
    if (sendbuf != recvbuf && rp_overlap(sendbuf, bytes, recvbuf, bytes)) {
        rp_error("rp_allreduce: sendbuf and recvbuf overlap without being "
                 "equal");
        return RP_ERR_INVALID_ARG;
    }
    return rp__comm_allreduce(ctx->comm, sendbuf, recvbuf, count, dtype, op);
}

rp_status_t rp_allreduce_group(rp_context_h ctx, const void *const *sendbufs,
                               void *const *recvbufs, const size_t *counts,
                               size_t nbufs, rp_dtype_t dtype, rp_op_t op)
{
    rp_status_t status = rp_check("rp_allreduce_group", ctx, dtype);
    const size_t es = rp_dtype_size(dtype);

    if (status != RP_OK) {
        return status;
    }
    if (!rp__reduce_supported(dtype, op)) {
        rp_error("rp_allreduce_group: invalid op %d", (int)op);
        return RP_ERR_INVALID_ARG;
    }
    if (nbufs > 0 && (sendbufs == NULL || recvbufs == NULL || counts == NULL)) {
        rp_error("rp_allreduce_group: NULL array with %zu buffers", nbufs);
        return RP_ERR_INVALID_ARG;
    }
    for (size_t i = 0; i < nbufs; i++) {
        size_t bytes = counts[i] * es;

        if (counts[i] > 0 && (sendbufs[i] == NULL || recvbufs[i] == NULL)) {
            rp_error("rp_allreduce_group: buffer %zu is NULL with count %zu",
                     i, counts[i]);
            return RP_ERR_INVALID_ARG;
        }
        if (bytes / es != counts[i]) {
            rp_error("rp_allreduce_group: count %zu of buffer %zu overflows",
                     counts[i], i);
            return RP_ERR_INVALID_ARG;
        }
        if (sendbufs[i] != recvbufs[i] &&
            rp_overlap(sendbufs[i], bytes, recvbufs[i], bytes)) {
            rp_error("rp_allreduce_group: sendbuf and recvbuf %zu overlap "
                     "without being equal", i);
            return RP_ERR_INVALID_ARG;
        }
    }
    return rp__comm_allreduce_group(ctx->comm, sendbufs, recvbufs, counts,
                                    nbufs, dtype, op);
}

rp_status_t rp_broadcast(rp_context_h ctx, void *buf, size_t count,
                         rp_dtype_t dtype, int root)
{
    rp_status_t status = rp_check("rp_broadcast", ctx, dtype);
    size_t bytes;

    if (status != RP_OK) {
        return status;
    }
    if (root < 0 || root >= ctx->comm->size) {
        rp_error("rp_broadcast: root %d is not a rank (0..%d)", root,
                 ctx->comm->size - 1);
        return RP_ERR_INVALID_ARG;
    }
    bytes = count * rp_dtype_size(dtype);
    if (count > 0 && buf == NULL) {
        rp_error("rp_broadcast: NULL buffer with count %zu", count);
        return RP_ERR_INVALID_ARG;
    }
    if (bytes / rp_dtype_size(dtype) != count) {
        rp_error("rp_broadcast: count %zu overflows", count);
        return RP_ERR_INVALID_ARG;
    }
    return rp__comm_broadcast(ctx->comm, buf, bytes, root);
}

rp_status_t rp_allgather(rp_context_h ctx, const void *sendbuf, void *recvbuf,
                         size_t count, rp_dtype_t dtype)
{
    rp_status_t status = rp_check("rp_allgather", ctx, dtype);
    size_t bytes;
    const char *mine;

    if (status != RP_OK) {
        return status;
    }
    bytes = count * rp_dtype_size(dtype);
    if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
        rp_error("rp_allgather: NULL buffer with count %zu", count);
        return RP_ERR_INVALID_ARG;
    }
    if (bytes / rp_dtype_size(dtype) != count ||
        (ctx->comm->size > 0 && bytes * (size_t)ctx->comm->size /
                                        (size_t)ctx->comm->size != bytes)) {
        rp_error("rp_allgather: count %zu overflows", count);
        return RP_ERR_INVALID_ARG;
    }
    mine = (const char *)recvbuf + (size_t)ctx->comm->rank * bytes;
    if (count > 0 && sendbuf != mine &&
        (rp_overlap(sendbuf, bytes, recvbuf,
                    (size_t)ctx->comm->rank * bytes) ||
         rp_overlap(sendbuf, bytes, mine + bytes,
                    (size_t)(ctx->comm->size - ctx->comm->rank - 1) * bytes))) {
        rp_error("rp_allgather: sendbuf overlaps another rank's part of "
                 "recvbuf");
        return RP_ERR_INVALID_ARG;
    }
    return rp__comm_allgather(ctx->comm, sendbuf, recvbuf, bytes);
}

rp_status_t rp_barrier(rp_context_h ctx)
{
    if (ctx == NULL) {
        rp_error("rp_barrier: ctx is NULL");
        return RP_ERR_INVALID_ARG;
    }
    return rp__comm_barrier(ctx->comm);
}
