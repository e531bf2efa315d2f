/**
 * @file ringpoint/coll.h
 * @brief Collective operations over all ranks of a context.
 *
 * Every rank of the job must call the same collectives in the same order
 * with matching arguments (the same count, dtype, op and root). Buffers are
 * host memory of any alignment. The calls block until this rank's part is
 * done.
 *
 * Results are deterministic: for a given world size and input, every rank
 * gets the same bits, and so does every run, whatever the timing. This is
 * what lets a job resumed from a checkpoint continue exactly.
 *
 * Failures: if a peer dies or sends nothing for RINGPOINT_COLL_TIMEOUT
 * (default 5m; a duration such as `90s` or `10:00`, `0` for never), the
 * collective returns RP_ERR_PEER_FAILED or RP_ERR_TIMEOUT and logs which
 * rank failed; ranks further away learn it from a notice and fail too. The
 * context cannot run collectives after that: finalize it and restart the
 * job from its last checkpoint.
 *
 * Tuning (environment, read by @ref rp_init): RINGPOINT_ALLREDUCE_ALGO =
 * `auto` (default), `ring` or `rd` (recursive doubling; results differ in
 * the last bits between algorithms, so keep one setting across a job's
 * restarts); RINGPOINT_ALLREDUCE_RD_MAX, the largest message in bytes that
 * `auto` sends with recursive doubling (default 8 KiB at 2 ranks, 64 KiB
 * beyond; results depend on the algorithm, so never on the rank layout); RINGPOINT_COLL_SEGMENT, the pipelining
 * unit in bytes (default 128 KiB; 512 KiB at 2 ranks; 1 MiB when UCX_TLS
 * confines the job to TCP; results do not depend on it);
 * RINGPOINT_COLL_WINDOW, segments received ahead (default 4);
 * RINGPOINT_COLL_SPIN_US, how long a wait polls before sleeping on
 * the transport (default 200; when the node has more ranks than cores the
 * polling yields the CPU between polls, and the default is 1000).
 *
 * UCX: when UCX_TLS confines the job to TCP (or the job spans nodes that
 * have no RDMA device), messages below 256 KiB go eagerly rather than by
 * rendezvous, unless UCX_RNDV_THRESH is set.
 */
#ifndef RINGPOINT_COLL_H
#define RINGPOINT_COLL_H

#include <stddef.h>
#include <ringpoint/api.h>
#include <ringpoint/context.h>
#include <ringpoint/status.h>
#include <ringpoint/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Combine @p count elements from every rank with @p op and give the
 *        result to every rank.
 *
 * float16 and bfloat16 are accumulated in float32 and rounded once.
 * RP_OP_AVG sums, then divides once by the number of ranks (integers
 * truncate toward zero). Integer sums and products wrap.
 *
 * @param ctx      A context from @ref rp_init.
 * @param sendbuf  This rank's input, @p count elements of @p dtype; may be
 *                 equal to @p recvbuf (in place) but must not otherwise
 *                 overlap it.
 * @param recvbuf  Where the result goes, @p count elements.
 * @param count    Number of elements; 0 does nothing (buffers may be NULL).
 * @param dtype    Element type.
 * @param op       Reduction.
 * @return RP_OK; RP_ERR_INVALID_ARG for a bad argument;
 *         RP_ERR_PEER_FAILED or RP_ERR_TIMEOUT when a rank failed;
 *         RP_ERR_NO_MEMORY; RP_ERR_TRANSPORT.
 */
RP_API rp_status_t rp_allreduce(rp_context_h ctx, const void *sendbuf,
                                void *recvbuf, size_t count, rp_dtype_t dtype,
                                rp_op_t op);

/**
 * @brief Allreduce many buffers as one operation (tensor fusion).
 *
 * Buffer i holds @p counts[i] elements, reduced with @p op exactly as
 * @ref rp_allreduce would, but small buffers are packed together, up to
 * 64 MiB at a time, so that a model's hundreds of gradient tensors cost a
 * few collectives instead of hundreds of latency-bound ones. Buffers of
 * 64 MiB or more are reduced on their own, without a copy.
 *
 * Results are deterministic for a given world size and list of counts
 * (every rank packs alike), but a float element may differ in its last
 * bits from what @ref rp_allreduce of that buffer alone gives, because its
 * position in the packed buffer decides its reduction order.
 *
 * @param ctx       A context from @ref rp_init.
 * @param sendbufs  @p nbufs inputs; sendbufs[i] may equal recvbufs[i] (in
 *                  place). No output may overlap another buffer.
 * @param recvbufs  @p nbufs outputs.
 * @param counts    Elements per buffer; 0 skips that buffer.
 * @param nbufs     Number of buffers; 0 does nothing.
 * @param dtype     Element type, the same for every buffer.
 * @param op        Reduction.
 * @return As @ref rp_allreduce.
 */
RP_API rp_status_t rp_allreduce_group(rp_context_h ctx,
                                      const void *const *sendbufs,
                                      void *const *recvbufs,
                                      const size_t *counts, size_t nbufs,
                                      rp_dtype_t dtype, rp_op_t op);

/**
 * @brief Copy @p count elements from rank @p root's @p buf into @p buf on
 *        every other rank.
 *
 * @param ctx    A context from @ref rp_init.
 * @param buf    Input on the root, output elsewhere.
 * @param count  Number of elements; 0 does nothing.
 * @param dtype  Element type (only its size matters).
 * @param root   The rank that holds the data, 0 .. size-1.
 * @return As @ref rp_allreduce.
 */
RP_API rp_status_t rp_broadcast(rp_context_h ctx, void *buf, size_t count,
                                rp_dtype_t dtype, int root);

/**
 * @brief Gather @p count elements from every rank, in rank order, into
 *        @p recvbuf on every rank.
 *
 * @param ctx      A context from @ref rp_init.
 * @param sendbuf  This rank's @p count elements. In place when it equals
 *                 @p recvbuf + rank * count * element size; it must not
 *                 overlap another rank's part of @p recvbuf.
 * @param recvbuf  size * @p count elements.
 * @param count    Elements per rank; 0 does nothing.
 * @param dtype    Element type (only its size matters).
 * @return As @ref rp_allreduce.
 */
RP_API rp_status_t rp_allgather(rp_context_h ctx, const void *sendbuf,
                                void *recvbuf, size_t count, rp_dtype_t dtype);

/**
 * @brief Return only once every rank has entered the barrier.
 * @return As @ref rp_allreduce.
 */
RP_API rp_status_t rp_barrier(rp_context_h ctx);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_COLL_H */
