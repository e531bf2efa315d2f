/*
 * The public collectives: argument checks, then a backend (backend.h): the
 * context's device backend when it claims the call's buffers, else the
 * host rings. The blocking calls run on the caller's thread (after any
 * non-blocking ones still outstanding), the rp_i* ones are queued.
 * The reduce-scatter and the all-to-all are in api_exchange.c.
 */
#include "config.h"

#include "ringpoint/coll.h"
#include "coll/api.h"
#include "coll/backend.h"
#include "coll/comm.h"
#include "coll/request.h"
#include "core/context.h"
#include "core/fork.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <stdint.h>

/* Do [a, a+alen) and [b, b+blen) share a byte? */
bool rp__api_overlap(const void *a, size_t alen, const void *b, size_t blen)
{
    uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;

    return alen > 0 && blen > 0 && x < y + blen && y < x + alen;
}

rp_status_t rp__api_check(const char *what, rp_context_h ctx,
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

/* The backend that runs @a: the device one if it claims the buffers
 * (barrier has none: always the host), else the host rings. */
static rp_status_t rp_backend(rp_context_h ctx, const rp__coll_args_t *a,
                              const char *what,
                              const rp__coll_backend_t **be_p)
{
    const rp__coll_backend_t *dev = ctx->coll_device;
    bool mine = false;
    rp_status_t status;

    *be_p = &rp__coll_host_backend;
    status = rp__fork_check(what);
    if (status != RP_OK) {
        return status;
    }
    if (dev == NULL || a->kind == RP__COLL_BARRIER ||
        a->kind == RP__COLL_CHECK) {
        return RP_OK;
    }
    status = dev->claim(ctx, a, what, &mine);
    if (status == RP_OK && mine) {
        *be_p = dev;
    }
    return status;
}

/* A blocking collective: after the non-blocking ones still outstanding. */
rp_status_t rp__api_blocking(const char *what, rp_context_h ctx,
                               const rp__coll_args_t *a)
{
    const rp__coll_backend_t *be;
    rp_status_t status = rp_backend(ctx, a, what, &be);

    if (status != RP_OK) {
        return status;
    }
    return be->run(ctx, a, what);
}

/* A non-blocking one: @status is its argument check's. */
rp_status_t rp__api_start(const char *what, rp_context_h ctx,
                            const rp__coll_args_t *a, rp_status_t status,
                            rp_request_h *req)
{
    const rp__coll_backend_t *be;

    if (req == NULL) {
        rp_error("%s: req is NULL", what);
        return RP_ERR_INVALID_ARG;
    }
    *req = NULL;
    if (status == RP_OK) {
        status = rp_backend(ctx, a, what, &be);
    }
    if (status != RP_OK) {
        return status;
    }
    return be->start(ctx, a, what, req);
}

static rp_status_t rp_allreduce_args(const char *what, rp_context_h ctx,
                                     const void *sendbuf, void *recvbuf,
                                     size_t count, rp_dtype_t dtype,
                                     rp_op_t op, rp__coll_args_t *a)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    size_t bytes;

    if (status != RP_OK) {
        return status;
    }
    if (!rp__reduce_supported(dtype, op)) {
        rp_error("%s: invalid op %d", what, (int)op);
        return RP_ERR_INVALID_ARG;
    }
    bytes = count * rp_dtype_size(dtype);
    if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
        rp_error("%s: NULL buffer with count %zu", what, count);
        return RP_ERR_INVALID_ARG;
    }
    if (bytes / rp_dtype_size(dtype) != count) {
        rp_error("%s: count %zu overflows", what, count);
        return RP_ERR_INVALID_ARG;
    }
    if (sendbuf != recvbuf && rp__api_overlap(sendbuf, bytes, recvbuf, bytes)) {
        rp_error("%s: sendbuf and recvbuf overlap without being equal", what);
        return RP_ERR_INVALID_ARG;
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_ALLREDUCE, .sendbuf = sendbuf,
                           .recvbuf = recvbuf, .count = count, .dtype = dtype,
                           .op = op, .compression = RP_COMPRESSION_NONE};
    return RP_OK;
}

rp_status_t rp_allreduce(rp_context_h ctx, const void *sendbuf, void *recvbuf,
                         size_t count, rp_dtype_t dtype, rp_op_t op)
{
    rp__coll_args_t a;
    rp_status_t status = rp_allreduce_args("rp_allreduce", ctx, sendbuf,
                                           recvbuf, count, dtype, op, &a);

    if (status != RP_OK) {
        return status;
    }
    return rp__api_blocking("rp_allreduce", ctx, &a);
}

rp_status_t rp_iallreduce(rp_context_h ctx, const void *sendbuf,
                          void *recvbuf, size_t count, rp_dtype_t dtype,
                          rp_op_t op, rp_request_h *req)
{
    rp__coll_args_t a;
    rp_status_t status = rp_allreduce_args("rp_iallreduce", ctx, sendbuf,
                                           recvbuf, count, dtype, op, &a);

    return rp__api_start("rp_iallreduce", ctx, &a, status, req);
}

/* The wire format a grouped allreduce asked for, resolved against the
 * environment's default. */
static rp_status_t rp_compression(const char *what, rp_context_h ctx,
                                  rp_dtype_t dtype,
                                  const rp_allreduce_opts_t *opts,
                                  rp_compression_t *comp_p)
{
    rp_compression_t comp = opts != NULL ? opts->compression
                                         : RP_COMPRESSION_DEFAULT;

    if ((unsigned)comp > (unsigned)RP_COMPRESSION_BF16) {
        rp_error("%s: invalid compression %d", what, (int)comp);
        return RP_ERR_INVALID_ARG;
    }
    if (comp == RP_COMPRESSION_DEFAULT) {
        /* The environment's choice is for gradients: float32 only. */
        comp = dtype == RP_DTYPE_FLOAT32 ? ctx->comm->compression
                                         : RP_COMPRESSION_NONE;
    } else if (comp != RP_COMPRESSION_NONE && dtype != RP_DTYPE_FLOAT32) {
        rp_error("%s: compression applies to float32 data only, not %s",
                 what, rp_dtype_name(dtype));
        return RP_ERR_INVALID_ARG;
    }
    *comp_p = comp;
    return RP_OK;
}

static rp_status_t rp_group_args(const char *what, rp_context_h ctx,
                                 const void *const *sendbufs,
                                 void *const *recvbufs, const size_t *counts,
                                 size_t nbufs, rp_dtype_t dtype, rp_op_t op,
                                 const rp_allreduce_opts_t *opts,
                                 rp__coll_args_t *a)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    rp_compression_t comp;
    size_t es;

    if (status != RP_OK) {
        return status;
    }
    es = rp_dtype_size(dtype);
    if (!rp__reduce_supported(dtype, op)) {
        rp_error("%s: invalid op %d", what, (int)op);
        return RP_ERR_INVALID_ARG;
    }
    status = rp_compression(what, ctx, dtype, opts, &comp);
    if (status != RP_OK) {
        return status;
    }
    if (nbufs > 0 && (sendbufs == NULL || recvbufs == NULL || counts == NULL)) {
        rp_error("%s: NULL array with %zu buffers", what, nbufs);
        return RP_ERR_INVALID_ARG;
    }
    for (size_t i = 0; i < nbufs; i++) {
        size_t bytes = counts[i] * es;

        if (counts[i] > 0 && (sendbufs[i] == NULL || recvbufs[i] == NULL)) {
            rp_error("%s: buffer %zu is NULL with count %zu", what, i,
                     counts[i]);
            return RP_ERR_INVALID_ARG;
        }
        if (bytes / es != counts[i]) {
            rp_error("%s: count %zu of buffer %zu overflows", what, counts[i],
                     i);
            return RP_ERR_INVALID_ARG;
        }
        if (sendbufs[i] != recvbufs[i] &&
            rp__api_overlap(sendbufs[i], bytes, recvbufs[i], bytes)) {
            rp_error("%s: sendbuf and recvbuf %zu overlap without being equal",
                     what, i);
            return RP_ERR_INVALID_ARG;
        }
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_ALLREDUCE_GROUP,
                           .sendbufs = sendbufs, .recvbufs = recvbufs,
                           .counts = counts, .nbufs = nbufs, .dtype = dtype,
                           .op = op, .compression = comp,
                           .signature = opts != NULL ? opts->signature : 0};
    return RP_OK;
}

rp_status_t rp_allreduce_group(rp_context_h ctx, const void *const *sendbufs,
                               void *const *recvbufs, const size_t *counts,
                               size_t nbufs, rp_dtype_t dtype, rp_op_t op)
{
    return rp_allreduce_group_opts(ctx, sendbufs, recvbufs, counts, nbufs,
                                   dtype, op, NULL);
}

rp_status_t rp_allreduce_group_opts(rp_context_h ctx,
                                    const void *const *sendbufs,
                                    void *const *recvbufs,
                                    const size_t *counts, size_t nbufs,
                                    rp_dtype_t dtype, rp_op_t op,
                                    const rp_allreduce_opts_t *opts)
{
    rp__coll_args_t a;
    rp_status_t status = rp_group_args("rp_allreduce_group", ctx, sendbufs,
                                       recvbufs, counts, nbufs, dtype, op,
                                       opts, &a);

    if (status != RP_OK) {
        return status;
    }
    return rp__api_blocking("rp_allreduce_group", ctx, &a);
}

rp_status_t rp_iallreduce_group(rp_context_h ctx, const void *const *sendbufs,
                                void *const *recvbufs, const size_t *counts,
                                size_t nbufs, rp_dtype_t dtype, rp_op_t op,
                                const rp_allreduce_opts_t *opts,
                                rp_request_h *req)
{
    rp__coll_args_t a;
    rp_status_t status = rp_group_args("rp_iallreduce_group", ctx, sendbufs,
                                       recvbufs, counts, nbufs, dtype, op,
                                       opts, &a);

    return rp__api_start("rp_iallreduce_group", ctx, &a, status, req);
}

static rp_status_t rp_broadcast_args(const char *what, rp_context_h ctx,
                                     void *buf, size_t count,
                                     rp_dtype_t dtype, int root,
                                     rp__coll_args_t *a)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    size_t bytes;

    if (status != RP_OK) {
        return status;
    }
    if (root < 0 || root >= ctx->comm->size) {
        rp_error("%s: root %d is not a rank (0..%d)", what, root,
                 ctx->comm->size - 1);
        return RP_ERR_INVALID_ARG;
    }
    bytes = count * rp_dtype_size(dtype);
    if (count > 0 && buf == NULL) {
        rp_error("%s: NULL buffer with count %zu", what, count);
        return RP_ERR_INVALID_ARG;
    }
    if (bytes / rp_dtype_size(dtype) != count) {
        rp_error("%s: count %zu overflows", what, count);
        return RP_ERR_INVALID_ARG;
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_BROADCAST, .recvbuf = buf,
                           .count = bytes, .dtype = dtype, .root = root};
    return RP_OK;
}

rp_status_t rp_broadcast(rp_context_h ctx, void *buf, size_t count,
                         rp_dtype_t dtype, int root)
{
    rp__coll_args_t a;
    rp_status_t status = rp_broadcast_args("rp_broadcast", ctx, buf, count,
                                           dtype, root, &a);

    if (status != RP_OK) {
        return status;
    }
    return rp__api_blocking("rp_broadcast", ctx, &a);
}

rp_status_t rp_ibroadcast(rp_context_h ctx, void *buf, size_t count,
                          rp_dtype_t dtype, int root, rp_request_h *req)
{
    rp__coll_args_t a;
    rp_status_t status = rp_broadcast_args("rp_ibroadcast", ctx, buf, count,
                                           dtype, root, &a);

    return rp__api_start("rp_ibroadcast", ctx, &a, status, req);
}

static rp_status_t rp_allgather_args(const char *what, rp_context_h ctx,
                                     const void *sendbuf, void *recvbuf,
                                     size_t count, rp_dtype_t dtype,
                                     rp__coll_args_t *a)
{
    rp_status_t status = rp__api_check(what, ctx, dtype);
    size_t bytes;
    const char *mine;

    if (status != RP_OK) {
        return status;
    }
    bytes = count * rp_dtype_size(dtype);
    if (count > 0 && (sendbuf == NULL || recvbuf == NULL)) {
        rp_error("%s: NULL buffer with count %zu", what, count);
        return RP_ERR_INVALID_ARG;
    }
    if (bytes / rp_dtype_size(dtype) != count ||
        (ctx->comm->size > 0 && bytes * (size_t)ctx->comm->size /
                                        (size_t)ctx->comm->size != bytes)) {
        rp_error("%s: count %zu overflows", what, count);
        return RP_ERR_INVALID_ARG;
    }
    mine = (const char *)recvbuf + (size_t)ctx->comm->rank * bytes;
    if (count > 0 && sendbuf != mine &&
        (rp__api_overlap(sendbuf, bytes, recvbuf,
                    (size_t)ctx->comm->rank * bytes) ||
         rp__api_overlap(sendbuf, bytes, mine + bytes,
                    (size_t)(ctx->comm->size - ctx->comm->rank - 1) * bytes))) {
        rp_error("%s: sendbuf overlaps another rank's part of recvbuf", what);
        return RP_ERR_INVALID_ARG;
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_ALLGATHER, .sendbuf = sendbuf,
                           .recvbuf = recvbuf, .count = bytes, .dtype = dtype};
    return RP_OK;
}

rp_status_t rp_allgather(rp_context_h ctx, const void *sendbuf, void *recvbuf,
                         size_t count, rp_dtype_t dtype)
{
    rp__coll_args_t a;
    rp_status_t status = rp_allgather_args("rp_allgather", ctx, sendbuf,
                                           recvbuf, count, dtype, &a);

    if (status != RP_OK) {
        return status;
    }
    return rp__api_blocking("rp_allgather", ctx, &a);
}

rp_status_t rp_iallgather(rp_context_h ctx, const void *sendbuf,
                          void *recvbuf, size_t count, rp_dtype_t dtype,
                          rp_request_h *req)
{
    rp__coll_args_t a;
    rp_status_t status = rp_allgather_args("rp_iallgather", ctx, sendbuf,
                                           recvbuf, count, dtype, &a);

    return rp__api_start("rp_iallgather", ctx, &a, status, req);
}

static rp_status_t rp_barrier_args(const char *what, rp_context_h ctx,
                                   rp__coll_args_t *a)
{
    if (ctx == NULL) {
        rp_error("%s: ctx is NULL", what);
        return RP_ERR_INVALID_ARG;
    }
    *a = (rp__coll_args_t){.kind = RP__COLL_BARRIER};
    return RP_OK;
}

rp_status_t rp_barrier(rp_context_h ctx)
{
    rp__coll_args_t a;
    rp_status_t status = rp_barrier_args("rp_barrier", ctx, &a);

    if (status != RP_OK) {
        return status;
    }
    return rp__api_blocking("rp_barrier", ctx, &a);
}

rp_status_t rp_check(rp_context_h ctx, uint64_t signature)
{
    const rp__coll_args_t a = {.kind = RP__COLL_CHECK, .signature = signature};

    if (ctx == NULL) {
        rp_error("rp_check: ctx is NULL");
        return RP_ERR_INVALID_ARG;
    }
    return signature == 0 ? RP_OK : rp__api_blocking("rp_check", ctx, &a);
}

rp_status_t rp_join(rp_context_h ctx, int *last_p)
{
    rp_status_t status;

    if (ctx == NULL || last_p == NULL) {
        rp_error("rp_join: %s is NULL", ctx == NULL ? "ctx" : "last_p");
        return RP_ERR_INVALID_ARG;
    }
    if (ctx->comm->parent != NULL) {
        rp_error("rp_join: joins the job's context, not a sub-communicator");
        return RP_ERR_INVALID_ARG;
    }
    status = rp__fork_check("rp_join");
    return status != RP_OK ? status : rp__coll_host_join(ctx, last_p);
}

rp_status_t rp_ibarrier(rp_context_h ctx, rp_request_h *req)
{
    rp__coll_args_t a;
    rp_status_t status = rp_barrier_args("rp_ibarrier", ctx, &a);

    return rp__api_start("rp_ibarrier", ctx, &a, status, req);
}
