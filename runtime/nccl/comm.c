/*
 * The NCCL communicator and the collectives on it. The communicator is
 * non-blocking (ncclConfig_t.blocking = 0): every NCCL call returns at
 * once, and the module itself waits, polling ncclCommGetAsyncError with a
 * deadline. That is what keeps a stop or a finalize from hanging on a
 * dead peer: past RINGPOINT_COLL_TIMEOUT, or as soon as NCCL reports an
 * error, the communicator is aborted (ncclCommAbort), which also releases
 * kernels already waiting on the stream, and the caller gets a status.
 */
#include "config.h"

#include "nccl/nccl_int.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct rp__gpu_comm {
    ncclComm_t nc;
    int timeout_ms;
    bool aborted;
    rp_status_t failed; /* first failure; the communicator is unusable */
};

static uint64_t rp_nc_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Spin briefly, then sleep a little: a wait for a GPU is short or long. */
static void rp_nc_pause(unsigned *polls)
{
    struct timespec ts = {0, 50000}; /* short against a kernel; frees the core */

    if (++*polls > 100) {
        nanosleep(&ts, NULL);
    }
}

static rp_status_t rp_nc_status(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess:
        return RP_OK;
    case ncclRemoteError:
        return RP_ERR_PEER_FAILED;
    case ncclInvalidArgument:
    case ncclInvalidUsage:
        return RP_ERR_INVALID_ARG;
    default:
        return RP_ERR_TRANSPORT;
    }
}

void rp__nc_comm_abort(rp__gpu_comm_t *c)
{
    if (c != NULL && !c->aborted) {
        c->aborted = true;
        if (c->failed == RP_OK) {
            c->failed = RP_ERR_PEER_FAILED;
        }
        (void)ncclCommAbort(c->nc);
    }
}

/* Mark @c failed with @r (an NCCL error of @what), abort it, log once. */
static rp_status_t rp_nc_fail(rp__gpu_comm_t *c, const char *what,
                              ncclResult_t r)
{
    rp_status_t rc = rp_nc_status(r);

    if (c->failed == RP_OK) {
        rp_nc_error("GPU: %s: %s%s%s; the NCCL communicator is aborted, "
                    "restart from the last checkpoint", what,
                    ncclGetErrorString(r), c->aborted ? "" : ": ",
                    c->aborted ? "" : ncclGetLastError(c->nc));
        c->failed = rc;
    }
    rp__nc_comm_abort(c);
    return rc;
}

/* Wait until the communicator leaves ncclInProgress (non-blocking mode),
 * within the deadline. @r is what the call returned. */
static rp_status_t rp_nc_settle(rp__gpu_comm_t *c, const char *what,
                                ncclResult_t r)
{
    uint64_t start = rp_nc_now_ms();
    unsigned polls = 0;

    while (r == ncclInProgress) {
        if (c->timeout_ms > 0 &&
            rp_nc_now_ms() - start > (uint64_t)c->timeout_ms) {
            rp_nc_error("GPU: %s did not finish within %d ms "
                        "(RINGPOINT_COLL_TIMEOUT): aborting NCCL", what,
                        c->timeout_ms);
            c->failed = RP_ERR_TIMEOUT;
            rp__nc_comm_abort(c);
            return RP_ERR_TIMEOUT;
        }
        rp_nc_pause(&polls);
        if (ncclCommGetAsyncError(c->nc, &r) != ncclSuccess) {
            break;
        }
    }
    return r == ncclSuccess ? RP_OK : rp_nc_fail(c, what, r);
}

/* Before enqueuing: an earlier failure, or one NCCL found since. */
static rp_status_t rp_nc_usable(rp__gpu_comm_t *c, const char *what)
{
    ncclResult_t r = ncclSuccess;

    if (c->failed != RP_OK) {
        rp_nc_error("GPU: %s: the NCCL communicator failed earlier (%s)",
                    what, c->failed == RP_ERR_TIMEOUT ? "timeout"
                                                      : "peer or NCCL error");
        return c->failed;
    }
    if (ncclCommGetAsyncError(c->nc, &r) == ncclSuccess &&
        r != ncclSuccess && r != ncclInProgress) {
        return rp_nc_fail(c, what, r);
    }
    return RP_OK;
}

rp_status_t rp__nc_unique_id(void *uid)
{
    ncclResult_t r = ncclGetUniqueId((ncclUniqueId *)uid);

    if (r != ncclSuccess) {
        rp_nc_error("GPU: ncclGetUniqueId: %s", ncclGetErrorString(r));
        return RP_ERR_TRANSPORT;
    }
    return RP_OK;
}

rp_status_t rp__nc_comm_create(const void *uid, int rank, int size,
                               int timeout_ms, rp__gpu_comm_t **comm_p)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    ncclUniqueId id;
    rp__gpu_comm_t *c = calloc(1, sizeof(*c));
    ncclResult_t r;
    rp_status_t rc;

    if (c == NULL) {
        rp_nc_error("GPU: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    memcpy(&id, uid, sizeof(id));
    c->timeout_ms = timeout_ms;
    cfg.blocking = 0;
    r = ncclCommInitRankConfig(&c->nc, size, id, rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        rp_nc_error("GPU: ncclCommInitRankConfig (rank %d of %d): %s", rank,
                    size, ncclGetErrorString(r));
        free(c);
        return rp_nc_status(r);
    }
    rc = rp_nc_settle(c, "creating the NCCL communicator", r);
    if (rc != RP_OK) {
        (void)ncclCommDestroy(c->nc);
        free(c);
        return rc;
    }
    *comm_p = c;
    return RP_OK;
}

void rp__nc_comm_destroy(rp__gpu_comm_t *c)
{
    if (c == NULL) {
        return;
    }
    if (!c->aborted) {
        /* Work still enqueued must finish (or time out) first. */
        if (rp__nc_stream_wait(c, NULL, c->timeout_ms) == RP_OK &&
            rp_nc_settle(c, "finalizing NCCL", ncclCommFinalize(c->nc)) !=
                RP_OK) {
            rp__nc_comm_abort(c);
        }
    }
    if (!c->aborted) {
        (void)ncclCommDestroy(c->nc);
    }
    free(c);
}

static const ncclDataType_t rp_nc_types[RP_DTYPE_COUNT] = {
    [RP_DTYPE_UINT8] = ncclUint8,       [RP_DTYPE_INT32] = ncclInt32,
    [RP_DTYPE_INT64] = ncclInt64,       [RP_DTYPE_FLOAT16] = ncclFloat16,
    [RP_DTYPE_BFLOAT16] = ncclBfloat16, [RP_DTYPE_FLOAT32] = ncclFloat32,
    [RP_DTYPE_FLOAT64] = ncclFloat64,
};

static const ncclRedOp_t rp_nc_ops[RP_OP_COUNT] = {
    [RP_OP_SUM] = ncclSum, [RP_OP_PROD] = ncclProd, [RP_OP_MIN] = ncclMin,
    [RP_OP_MAX] = ncclMax, [RP_OP_AVG] = ncclAvg,
};

rp_status_t rp__nc_allreduce(rp__gpu_comm_t *c, const void *send, void *recv,
                             size_t count, rp_dtype_t dtype, rp_op_t op,
                             void *stream)
{
    rp_status_t rc = rp_nc_usable(c, "rp_allreduce");

    if (rc != RP_OK) {
        return rc;
    }
    return rp_nc_settle(c, "ncclAllReduce",
                        ncclAllReduce(send, recv, count, rp_nc_types[dtype],
                                      rp_nc_ops[op], c->nc,
                                      (cudaStream_t)stream));
}

rp_status_t rp__nc_broadcast(rp__gpu_comm_t *c, void *buf, size_t bytes,
                             int root, void *stream)
{
    rp_status_t rc = rp_nc_usable(c, "rp_broadcast");

    if (rc != RP_OK) {
        return rc;
    }
    return rp_nc_settle(c, "ncclBroadcast",
                        ncclBroadcast(buf, buf, bytes, ncclUint8, root, c->nc,
                                      (cudaStream_t)stream));
}

rp_status_t rp__nc_allgather(rp__gpu_comm_t *c, const void *send, void *recv,
                             size_t bytes, void *stream)
{
    rp_status_t rc = rp_nc_usable(c, "rp_allgather");

    if (rc != RP_OK) {
        return rc;
    }
    return rp_nc_settle(c, "ncclAllGather",
                        ncclAllGather(send, recv, bytes, ncclUint8, c->nc,
                                      (cudaStream_t)stream));
}

rp_status_t rp__nc_group_start(rp__gpu_comm_t *c)
{
    rp_status_t rc = rp_nc_usable(c, "rp_allreduce_group");

    if (rc != RP_OK) {
        return rc;
    }
    return rp_nc_settle(c, "ncclGroupStart", ncclGroupStart());
}

rp_status_t rp__nc_group_end(rp__gpu_comm_t *c)
{
    /* Always called after a start, even when an enqueue failed: the group
     * must be closed for NCCL to stay usable in this thread. */
    ncclResult_t r = ncclGroupEnd();

    return c->failed != RP_OK ? c->failed : rp_nc_settle(c, "ncclGroupEnd", r);
}

/* Wait for a stream (@event NULL) or an event: see gpu.h. */
static rp_status_t rp_nc_wait(rp__gpu_comm_t *c, void *stream, void *event,
                              int timeout_ms, bool block)
{
    uint64_t start = rp_nc_now_ms();
    unsigned polls = 0;
    cudaError_t e;

    for (;;) {
        ncclResult_t r = ncclSuccess;

        e = event != NULL ? cudaEventQuery((cudaEvent_t)event)
                          : cudaStreamQuery((cudaStream_t)stream);
        if (e != cudaErrorNotReady) {
            break;
        }
        if (!block) {
            /* Still the moment to notice a dead peer, as rp_test polls. */
            if (c != NULL && !c->aborted &&
                ncclCommGetAsyncError(c->nc, &r) == ncclSuccess &&
                r != ncclSuccess && r != ncclInProgress) {
                return rp_nc_fail(c, "testing a GPU request", r);
            }
            return RP_ERR_BUSY;
        }
        if (c != NULL && !c->aborted &&
            ncclCommGetAsyncError(c->nc, &r) == ncclSuccess &&
            r != ncclSuccess && r != ncclInProgress) {
            /* A peer failed: the stream would wait for it forever. The
             * abort releases the kernels; the query then ends the wait. */
            (void)rp_nc_fail(c, "waiting for the GPU stream", r);
        }
        if (timeout_ms > 0 && rp_nc_now_ms() - start > (uint64_t)timeout_ms) {
            rp_nc_error("GPU: the stream did not drain within %d ms "
                        "(RINGPOINT_COLL_TIMEOUT)%s", timeout_ms,
                        c != NULL ? ": aborting NCCL" : "");
            if (c != NULL) {
                c->failed = RP_ERR_TIMEOUT;
                rp__nc_comm_abort(c);
            }
            return RP_ERR_TIMEOUT;
        }
        rp_nc_pause(&polls);
    }
    if (e != cudaSuccess) {
        return rp__nc_cuda_fail("the GPU stream", e);
    }
    return c != NULL && c->failed != RP_OK ? c->failed : RP_OK;
}

rp_status_t rp__nc_stream_wait(rp__gpu_comm_t *c, void *stream,
                               int timeout_ms)
{
    return rp_nc_wait(c, stream, NULL, timeout_ms, true);
}

rp_status_t rp__nc_event_record(void *stream, void **event_p)
{
    cudaEvent_t ev;

    RP_NC_CUDA("cudaEventCreateWithFlags",
               cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    if (cudaEventRecord(ev, (cudaStream_t)stream) != cudaSuccess) {
        (void)cudaEventDestroy(ev);
        return rp__nc_cuda_fail("cudaEventRecord", cudaGetLastError());
    }
    *event_p = ev;
    return RP_OK;
}

rp_status_t rp__nc_event_wait(rp__gpu_comm_t *c, void *event, int timeout_ms,
                              bool block)
{
    return rp_nc_wait(c, NULL, event, timeout_ms, block);
}

void rp__nc_event_destroy(void *event)
{
    if (event != NULL) {
        (void)cudaEventDestroy((cudaEvent_t)event);
    }
}
