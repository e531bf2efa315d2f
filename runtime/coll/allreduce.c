/*
 * Allreduce: the single-rank case, and the choice of algorithm.
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
