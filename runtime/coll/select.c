/*
 * The path selector (select.h): every collective picks its path here, in
 * one order: the hierarchy across nodes, the node's shared segment,
 * single-copy reads of the peers (CMA), then the algorithms over the
 * transport. Every path gives an allreduce the bits of its one expression
 * (eval.h), so the choice, which follows the size, changes the time a
 * call takes, never its bits (the hierarchy forced on is the exception
 * hier.h names).
 *
 * The choices may depend only on what every rank agrees on (the sizes,
 * the settings, the job's layout and the set-ups' joint decisions), never
 * on addresses or timing: ranks that disagree would run different
 * collectives into each other.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/comm.h"
#include "coll/hier.h"
#include "coll/select.h"
#include "coll/shm.h"

#include <stdint.h>
#include <string.h>

/* Does this allreduce take the hierarchy? Auto takes it only where its
 * bits are the flat paths' (hier.h): integer types, and an aligned
 * layout. */
static bool rp_hier_wants(const rp_comm_t *c, size_t bytes, rp_dtype_t dtype)
{
    const rp__hier_t *h = c->hier;
    const bool exact = dtype == RP_DTYPE_UINT8 || dtype == RP_DTYPE_INT32 ||
                       dtype == RP_DTYPE_INT64;

    if (h->forced) {
        return true;
    }
    return bytes <= h->max_bytes &&
           (exact || h->rd_aligned);
}

rp_status_t rp__comm_allreduce(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op)
{
    return rp__comm_allreduce_wire(c, sendbuf, recvbuf, count, dtype, op,
                                   false);
}

rp_status_t rp__comm_allreduce_wire(rp_comm_t *c, const void *sendbuf,
                                    void *recvbuf, size_t count,
                                    rp_dtype_t dtype, rp_op_t op,
                                    bool half_wire)
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
        /* Below the threshold (rp__comm_create's, or the tuning table's)
         * the bandwidth algorithms' latency-bound steps cost more than
         * recursive doubling's extra bytes; so does a buffer too small to
         * give every rank a block. Above it the owners' reduce-scatter,
         * the ring's bandwidth at any rank count, while talking to every
         * rank is affordable; recursive halving beyond. */
        algo = bytes <= c->rd_max_bytes || count < (size_t)c->size
                   ? RP_COLL_ALGO_RD
               : c->size <= RP_OWNERS_MAX_RANKS ? RP_COLL_ALGO_RING
                                                : RP_COLL_ALGO_RH;
    }
    if (c->hier != NULL && rp_hier_wants(c, bytes, dtype)) {
        /* Across nodes: within each, among one rank a node, back. */
        return c->hier->ops->allreduce(c, sendbuf, recvbuf, count, dtype, op,
                                       half_wire, algo);
    }
    if (c->shm != NULL && bytes <= c->shm_ar_max) {
        /* The same expression, evaluated through the node's memory. */
        return rp__shm_allreduce(c, sendbuf, recvbuf, count, dtype, op,
                                 half_wire);
    }
    if (c->shm != NULL && c->shm->cma) {
        /* Larger: read the peers' data where it lies and write each
         * finished block into theirs, the same expression again. */
        return rp__cma_allreduce(c, sendbuf, recvbuf, count, dtype, op,
                                 half_wire);
    }
    if (algo == RP_COLL_ALGO_RD) {
        return rp__allreduce_rd(c, sendbuf, recvbuf, count, dtype, op,
                                half_wire);
    }
    if (algo == RP_COLL_ALGO_RH) {
        return rp__allreduce_rh(c, sendbuf, recvbuf, count, dtype, op,
                                half_wire);
    }
    if (c->size == 2) {
        /* The ring: the same bytes and bits, its phases overlapped. */
        return rp__allreduce_ring(c, sendbuf, recvbuf, count, dtype, op,
                                  half_wire);
    }
    return rp__allreduce_owners(c, sendbuf, recvbuf, count, dtype, op,
                                half_wire);
}

rp_status_t rp__comm_broadcast(rp_comm_t *c, void *buf, size_t bytes, int root)
{
    rp_status_t status;

    status = rp__comm_begin(c, "broadcast");
    if (status != RP_OK || c->size == 1 || bytes == 0) {
        return status;
    }
    if (c->hier != NULL && c->hier->forced) {
        return c->hier->ops->broadcast(c, buf, bytes, root);
    }
    if (c->shm != NULL && bytes <= c->shm_max) {
        return rp__shm_broadcast(c, buf, bytes, root);
    }
    if (c->shm != NULL && c->shm->cma) {
        return rp__cma_broadcast(c, buf, bytes, root);
    }
    return rp__broadcast_ring(c, buf, bytes, root);
}

rp_status_t rp__comm_allgather(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t bytes)
{
    const int n = c->size;
    rp_status_t status;

    status = rp__comm_begin(c, "allgather");
    if (status != RP_OK || bytes == 0) {
        return status;
    }
    if (c->shm != NULL && bytes * (size_t)n <= c->shm_ag_max) {
        /* Straight from the input, which overlaps no other rank's block
         * (rp_allgather refuses that). One that overlaps ours without
         * being it moves into place first: the path may depend only on
         * what every rank shares, the size. */
        char *mine = (char *)recvbuf + (size_t)c->rank * bytes;
        const uintptr_t in = (uintptr_t)sendbuf, at = (uintptr_t)mine;

        if (in != at && in < at + bytes && at < in + bytes) {
            memmove(mine, sendbuf, bytes);
            sendbuf = mine;
        }
        return rp__shm_allgather(c, sendbuf, recvbuf, bytes);
    }
    if (c->shm != NULL && c->shm->cma) {
        /* Larger than the segment's path takes: each rank reads the
         * others' inputs where they lie; one copy of each block. */
        return rp__cma_allgather(c, sendbuf, recvbuf, bytes);
    }
    return rp__allgather_ring(c, sendbuf, recvbuf, bytes);
}

/* A reduce-scatter on one node takes the segment's allreduce up to this
 * many bytes a rank (its whole buffer), the single-copy reads above: at 2
 * ranks they cross near 1.5 KiB, at 4 ranks on 2 cores between 4 and
 * 16 KiB (doc/benchmarks.md). */
#define RP_RS_SEG_PER_RANK 1024u

rp_status_t rp__comm_reduce_scatter(rp_comm_t *c, const void *sendbuf,
                                    void *recvbuf, const size_t *counts,
                                    rp_dtype_t dtype, rp_op_t op)
{
    const size_t es = rp_dtype_size(dtype);
    size_t total = 0, off = 0;
    rp_status_t status;
    void *p;

    status = rp__comm_begin(c, "reduce-scatter");
    for (int q = 0; q < c->size; q++) {
        off += q < c->rank ? counts[q] : 0;
        total += counts[q];
    }
    if (status != RP_OK || total == 0) {
        return status;
    }
    if (c->size == 1) {
        if (sendbuf != recvbuf) {
            memcpy(recvbuf, sendbuf, total * es);
        }
        return RP_OK;
    }
    if (c->shm != NULL && total * es <= c->shm_max &&
        (!c->shm->cma || total * es <= RP_RS_SEG_PER_RANK * (size_t)c->size)) {
        /* Tiny, on one node: latency decides. The segment's allreduce
         * (the same expression) into scratch, our block kept: the whole
         * reduction on every rank, cheaper than a system call per peer
         * only while it is this small. */
        status = rp__comm_scratch(c, &c->fuse, total * es, &p);
        if (status == RP_OK) {
            status = rp__shm_allreduce(c, sendbuf, p, total, dtype, op,
                                       false);
        }
        if (status == RP_OK && counts[c->rank] > 0) {
            memcpy(recvbuf, (char *)p + off * es, counts[c->rank] * es);
        }
        return status;
    }
    if (c->shm != NULL && c->shm->cma) {
        /* Each rank reads its block of the peers' inputs where they lie. */
        return rp__cma_reduce_scatter(c, sendbuf, recvbuf, counts, dtype, op);
    }
    /* Across nodes (the hierarchy's paths are allreduce's only): each
     * block straight to its owner. */
    return rp__reduce_scatter_owners(c, sendbuf, recvbuf, counts, dtype, op);
}

rp_status_t rp__comm_alltoall(rp_comm_t *c, const void *sendbuf,
                              const size_t *scounts, const size_t *sdispls,
                              void *recvbuf, const size_t *rcounts,
                              const size_t *rdispls)
{
    rp_status_t status = rp__comm_begin(c, "alltoall");

    if (status != RP_OK) {
        return status;
    }
    if (c->shm != NULL && c->shm->cma && rp__cma_alltoall_fits(c)) {
        return rp__cma_alltoall(c, sendbuf, scounts, sdispls, recvbuf,
                                rcounts, rdispls);
    }
    return rp__alltoall_pairwise(c, sendbuf, scounts, sdispls, recvbuf,
                                 rcounts, rdispls);
}

rp_status_t rp__comm_barrier(rp_comm_t *c)
{
    rp_status_t status;

    status = rp__comm_begin(c, "barrier");
    if (status != RP_OK || c->size == 1) {
        return status;
    }
    if (c->shm != NULL) {
        return rp__shm_barrier(c);
    }
    return rp__barrier_dissem(c);
}
