/*
 * Allreduce: the single-rank case, the choice of algorithm, and grouped
 * allreduce (tensor fusion).
 */
#include "config.h"

#include "coll/comm.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <string.h>

rp_status_t rp__comm_allreduce(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op)
{
    size_t bytes = count * rp_dtype_size(dtype);
    rp_coll_algo_t algo = c->algo;
    rp_status_t status;

    status = rp__comm_begin(c, "allreduce");
    if (status != RP_OK || count == 0) {
        return status;
    }
    if (c->size == 1) {
        /* The average of one value is the value: nothing to scale. */
        if (sendbuf != recvbuf) {
            memcpy(recvbuf, sendbuf, bytes);
        }
        return RP_OK;
    }
    if (algo == RP_COLL_ALGO_AUTO) {
        /* Below the threshold (set in rp__comm_create from measurements)
         * the ring's 2(n-1) latency-bound steps cost more than recursive
         * doubling's extra bytes; so does a buffer too small to give every
         * rank a block. */
        algo = bytes <= c->rd_max_bytes || count < (size_t)c->size
                   ? RP_COLL_ALGO_RD
                   : RP_COLL_ALGO_RING;
    }
    if (algo == RP_COLL_ALGO_RD) {
        return rp__allreduce_rd(c, sendbuf, recvbuf, count, dtype, op);
    }
    return rp__allreduce_ring(c, sendbuf, recvbuf, count, dtype, op);
}

/* Largest packed buffer of a grouped allreduce: big enough that the
 * latency of one collective is lost in its transfer time (the ring runs at
 * full speed from about 1 MiB), small enough that the persistent fusion
 * buffer stays a modest fraction of a model (Horovod's default is 64 MiB
 * too). Buffers this large go on their own, with no copy. */
#define RP_FUSION_BYTES (64u * 1024 * 1024)

rp_status_t rp__comm_allreduce_group(rp_comm_t *c, const void *const *sendbufs,
                                     void *const *recvbufs,
                                     const size_t *counts, size_t nbufs,
                                     rp_dtype_t dtype, rp_op_t op)
{
    const size_t es = rp_dtype_size(dtype);
    rp_status_t status = RP_OK;
    size_t i = 0;

    /* Every rank walks the same counts, so every rank forms the same
     * packs and calls the same collectives in the same order. */
    while (i < nbufs && status == RP_OK) {
        size_t first = i, bytes = 0, off = 0;
        char *fuse;
        void *p;

        if (counts[i] * es >= RP_FUSION_BYTES) {
            status = rp__comm_allreduce(c, sendbufs[i], recvbufs[i], counts[i],
                                        dtype, op);
            i++;
            continue;
        }
        while (i < nbufs && counts[i] * es < RP_FUSION_BYTES &&
               bytes + counts[i] * es <= RP_FUSION_BYTES) {
            bytes += counts[i] * es;
            i++;
        }
        if (i - first == 1) {
            status = rp__comm_allreduce(c, sendbufs[first], recvbufs[first],
                                        counts[first], dtype, op);
            continue;
        }
        if (bytes == 0) {
            continue; /* only empty buffers */
        }
        status = rp__comm_scratch(c, &c->fuse, bytes, &p);
        if (status != RP_OK) {
            return status;
        }
        fuse = p;
        for (size_t k = first; k < i; k++) {
            if (counts[k] > 0) {
                memcpy(fuse + off, sendbufs[k], counts[k] * es);
                off += counts[k] * es;
            }
        }
        status = rp__comm_allreduce(c, fuse, fuse, bytes / es, dtype, op);
        off = 0;
        for (size_t k = first; k < i && status == RP_OK; k++) {
            if (counts[k] > 0) {
                memcpy(recvbufs[k], fuse + off, counts[k] * es);
                off += counts[k] * es;
            }
        }
    }
    return status;
}
