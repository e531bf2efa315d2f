/**
 * @file ringpoint/coll.h
 * @brief Collective operations over all ranks of a context.
 *
 * Every rank of the job must call the same collectives in the same order
 * with matching arguments (the same count, dtype, op and root). Buffers are
 * host memory of any alignment. The calls block until this rank's part is
 * done; the rp_i* variants return at once and complete in the background.
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
 * Ranks of one node: when all ranks share a node, collectives up to
 * RINGPOINT_COLL_SHM_MAX bytes (default 128 KiB) go through a shared
 * segment the ranks set up at @ref rp_init. Larger ones (allgather from
 * 16 KiB per rank) may instead read each other's buffers directly (Linux
 * cross-memory attach, process_vm_readv) where ptrace rules and pid
 * namespaces let every rank read every peer (checked at init), or take
 * the ring over UCX; which path serves which size and rank count was
 * measured (doc/benchmarks.md). RINGPOINT_COLL_SHM=0 turns the segment
 * off, RINGPOINT_COLL_CMA=0 the direct reads. Results are the same bits
 * on every path.
 *
 * Ranks on several nodes, several on one: the collectives may go
 * through a hierarchy, within each node through its shared segment, among
 * one leader per node over UCX, then back within the node (only the
 * leaders' messages cross the network). RINGPOINT_COLL_HIER = `auto`
 * (default) takes it only where its bits are the flat algorithm's
 * (integer types; float allreduces in recursive doubling's range when the
 * job has 2^k ranks in equal blocks of consecutive ranks per node, e.g.
 * srun --ntasks-per-node), so results never depend on the layout; `1`
 * for every allreduce and broadcast: then float results are each node's
 * partial result (its ranks combined in rank order by the node's
 * algorithm) combined by the leaders' algorithm in node order, the same
 * on every rank and from run to run on one layout, but not the flat
 * algorithm's last bits, and they change with the layout; `0` never.
 *
 * Tuning table: the switch points (recursive doubling's limit, the
 * segment's limit, the hierarchy's) may come from a file measured by
 * `ringpoint-bench --tune FILE` on the cluster: RINGPOINT_COLL_TUNE_FILE
 * names it (`none`: no table), else SYSCONFDIR/ringpoint/coll-tune.conf
 * is read if present. Rank 0 reads it and sends it to the others, so all
 * ranks switch alike. A switch point's own variable
 * (RINGPOINT_ALLREDUCE_RD_MAX, RINGPOINT_COLL_SHM_MAX) wins over the
 * table. A file of another version or with a malformed line is refused
 * with a warning naming the file and line, and the built-in switch points
 * stay. The switch points choose the algorithm, and so the last bits of
 * float results: keep one table across a job's restarts.
 *
 * UCX: when the job runs over TCP (UCX_TLS confines it to TCP, or its
 * nodes have no RDMA device), messages below 256 KiB go eagerly rather
 * than by rendezvous where no other rank runs on this host, 64 KiB where
 * one does (UCX then uses shared memory to it), and 64 KiB when a node has
 * more ranks than cores; unless UCX_RNDV_THRESH is set. Which ranks share
 * a host comes from PMIx: the ranks of this node, and where some node
 * holds a single rank the host names the ranks trade at @ref rp_init
 * (several Slurm nodes may be one machine; that trade costs one more PMIx
 * fence, and makes the address exchange collect all ranks' data). Only
 * where PMIx cannot tell, a Slurm node not named after its host is taken
 * to share it. The choice and its reason are logged at debug level
 * (`transport: UCX rendezvous ...`).
 *
 * Non-blocking collectives (rp_iallreduce, ...) start the operation and
 * return a request at once; a progress thread of the library, started with
 * the first one, carries them out in call order while the application
 * computes, with no need to call in (it sleeps on the transport's event
 * descriptor, costing no CPU while it waits). Complete each request with
 * @ref rp_test or @ref rp_wait. Several may be outstanding; every rank must
 * start the same collectives in the same order, blocking and non-blocking
 * alike, exactly as for the blocking calls. A blocking collective called
 * while non-blocking ones are outstanding waits for them first (it comes
 * after them, in call order). Their results are bit-identical to the
 * blocking calls'. Until a request completes, its input buffers must not
 * be modified and its outputs not read. Call the collectives of one
 * context from one thread at a time. RINGPOINT_COLL_PROGRESS_SPIN_US: how
 * long the progress thread polls before sleeping on the transport
 * (default: as RINGPOINT_COLL_SPIN_US).
 *
 * Compression (Horovod's, or PyTorch's fp16/bf16 compression hooks):
 * float32 data of a grouped allreduce may travel as float16 or bfloat16,
 * halving the bytes on the wire; see @ref rp_allreduce_opts_t. Off unless
 * asked for per call or by RINGPOINT_COMPRESSION = `none` (default),
 * `fp16` or `bf16`, which applies to float32 grouped allreduces whose
 * options leave it at RP_COMPRESSION_DEFAULT. Tolerance: each rank's value
 * is rounded to the wire format and every partial sum is rounded again, so
 * for SUM with n ranks |result - exact| <= (n + 1) * u * sum_i |x_i| (AVG:
 * the same divided by n), where u = 2^-11 for fp16 and 2^-8 for bf16, plus
 * for fp16 an absolute n * 2^-24 from its subnormal range; fp16 overflows
 * to infinity beyond +-65504 (AVG divides each value by n before sending,
 * as PyTorch's hook does, so its partial sums stay in range). Results stay
 * bit-identical on every rank and run to run.
 */
#ifndef RINGPOINT_COLL_H
#define RINGPOINT_COLL_H

#include <stddef.h>
#include <stdint.h>
#include <ringpoint/api.h>
#include <ringpoint/context.h>
#include <ringpoint/status.h>
#include <ringpoint/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @brief A non-blocking collective in flight; see @ref rp_test. */
typedef struct rp_request *rp_request_h;

/** @brief How float32 data of a grouped allreduce travels. */
typedef enum rp_compression {
    RP_COMPRESSION_DEFAULT = 0, /**< RINGPOINT_COMPRESSION, else none. */
    RP_COMPRESSION_NONE    = 1, /**< As float32, results exact as ever. */
    RP_COMPRESSION_FP16    = 2, /**< As float16 (11-bit significand). */
    RP_COMPRESSION_BF16    = 3, /**< As bfloat16 (float32's range, 8 bits). */
} rp_compression_t;

/**
 * @brief Options of a grouped allreduce; zero-initialise, then set what
 *        you need (zero means the default for every field).
 */
typedef struct rp_allreduce_opts {
    /** Wire format for float32 data. Asking for FP16 or BF16 with another
     *  dtype is an error; the environment's default applies to float32
     *  only. */
    rp_compression_t compression;
    /** Non-zero: before any data moves, check that every rank passed the
     *  same value (a hash of the call's arguments, as the application sees
     *  them: shapes, dtype, op). When they differ, no data moves and the
     *  collective fails on every rank with RP_ERR_MISMATCH, instead of
     *  mixing or hanging; the context stays usable. Costs one 16-byte
     *  allreduce, run in order with the collective itself (so a
     *  non-blocking call still returns at once). Only the upper 63 bits
     *  are compared. */
    uint64_t signature;
} rp_allreduce_opts_t;

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
 * @brief @ref rp_allreduce_group with options (compression).
 *
 * @param opts  NULL for the defaults, as @ref rp_allreduce_group.
 * @return As @ref rp_allreduce; RP_ERR_INVALID_ARG also for compression
 *         asked for with a dtype other than float32; RP_ERR_MISMATCH when
 *         @p opts has a signature and another rank's differs.
 */
RP_API rp_status_t rp_allreduce_group_opts(rp_context_h ctx,
                                           const void *const *sendbufs,
                                           void *const *recvbufs,
                                           const size_t *counts, size_t nbufs,
                                           rp_dtype_t dtype, rp_op_t op,
                                           const rp_allreduce_opts_t *opts);

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

/**
 * @brief Check, before the caller runs collectives of its own making, that
 *        every rank passed the same @p signature (see
 *        rp_allreduce_opts_t.signature); moves no data.
 *
 * Runs in order after the non-blocking collectives started before it.
 * While a rank has joined (@ref rp_join) it fails: the call it guards is
 * not one a joined rank takes part in.
 *
 * @return RP_OK (also for @p signature 0, which checks nothing);
 *         RP_ERR_MISMATCH on every rank when they differ; RP_ERR_STATE
 *         when a rank has joined; as @ref rp_allreduce otherwise.
 */
RP_API rp_status_t rp_check(rp_context_h ctx, uint64_t signature);

/**
 * @brief This rank has no more work (uneven data): take part, with zeros,
 *        in the allreduces the other ranks still run, and return once
 *        every rank has called rp_join (Horovod's join).
 *
 * The other ranks' allreduces and grouped allreduces (with a non-zero
 * signature: only checked calls can be seen by a joined rank) count this
 * rank's input as zeros, so RP_OP_AVG still divides by the number of
 * ranks. Their other checked collectives (broadcast, allgather,
 * reduce-scatter, all-to-all, @ref rp_check, device collectives) fail
 * with RP_ERR_STATE on every active rank while a rank has joined, and move
 * no data. Collective over the job's context (not a sub-communicator).
 *
 * @param ctx     The context from @ref rp_init.
 * @param last_p  Receives the rank that joined last (the highest of those
 *                that joined together), the same on every rank.
 * @return RP_OK; RP_ERR_INVALID_ARG; as @ref rp_allreduce.
 */
RP_API rp_status_t rp_join(rp_context_h ctx, int *last_p);

/**
 * @brief Combine every rank's @p sendbuf with @p op, as @ref rp_allreduce
 *        does, and give rank q only block q of the result:
 *        @p recvcount elements.
 *
 * @p sendbuf holds size * @p recvcount elements, block q (for rank q)
 * from element q * @p recvcount on. Each element of a block has the bits
 * @ref rp_allreduce gives that element: the same expression of the ranks'
 * values, whatever the path, the layout or the block sizes. Each rank
 * sends and receives (size-1)/size of the buffer once, half an
 * allreduce's traffic. Sharded data parallelism (ZeRO, FSDP) reduces
 * gradients straight into each rank's shard with it.
 *
 * @param ctx        A context from @ref rp_init.
 * @param sendbuf    size * @p recvcount elements.
 * @param recvbuf    @p recvcount elements; must not overlap @p sendbuf.
 * @param recvcount  Elements per rank; 0 does nothing.
 * @param dtype      Element type.
 * @param op         Reduction, as for @ref rp_allreduce.
 * @return As @ref rp_allreduce.
 */
RP_API rp_status_t rp_reduce_scatter(rp_context_h ctx, const void *sendbuf,
                                     void *recvbuf, size_t recvcount,
                                     rp_dtype_t dtype, rp_op_t op);

/**
 * @brief @ref rp_reduce_scatter with blocks of their own sizes: rank q
 *        gets @p recvcounts[q] elements, block q starting after blocks
 *        0..q-1 in @p sendbuf. Every rank passes the same array.
 * @return As @ref rp_allreduce; RP_ERR_INVALID_ARG for a NULL array.
 */
RP_API rp_status_t rp_reduce_scatterv(rp_context_h ctx, const void *sendbuf,
                                      void *recvbuf, const size_t *recvcounts,
                                      rp_dtype_t dtype, rp_op_t op);

/**
 * @brief @ref rp_reduce_scatterv of @p nbufs buffers in one operation
 *        (fused, as @ref rp_allreduce_group fuses allreduces).
 *
 * Buffer i is cut into blocks of @p recvcounts[i * size + q] elements
 * (block q for rank q, in rank order); rank q gets block q of each
 * buffer's reduction into @p recvbufs[i]. Each buffer's result has the
 * bits its own @ref rp_reduce_scatterv gives. Every rank passes the same
 * counts.
 *
 * @return As @ref rp_allreduce; RP_ERR_INVALID_ARG for a NULL array with
 *         @p nbufs > 0 or overlapping buffers.
 */
RP_API rp_status_t rp_reduce_scatter_group(rp_context_h ctx,
                                           const void *const *sendbufs,
                                           void *const *recvbufs,
                                           const size_t *recvcounts,
                                           size_t nbufs, rp_dtype_t dtype,
                                           rp_op_t op);

/**
 * @brief Every rank sends block q of @p sendbuf (@p count elements) to
 *        rank q, and receives rank q's block for it into block q of
 *        @p recvbuf.
 *
 * @param sendbuf  size * @p count elements.
 * @param recvbuf  size * @p count elements; must not overlap @p sendbuf.
 * @param count    Elements per pair of ranks; 0 does nothing.
 * @return As @ref rp_allreduce.
 */
RP_API rp_status_t rp_alltoall(rp_context_h ctx, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype);

/**
 * @brief @ref rp_alltoall with shares of their own sizes: @p sendcounts[q]
 *        elements go to rank q (the shares packed in rank order in
 *        @p sendbuf), @p recvcounts[q] elements come from rank q (packed in
 *        rank order in @p recvbuf).
 *
 * Rank q's @p recvcounts[r] must equal rank r's @p sendcounts[q]. Where a
 * rank does not know what it will receive (token routing), exchange the
 * counts first: @ref rp_alltoall of one element per rank.
 *
 * @return As @ref rp_allreduce; RP_ERR_INVALID_ARG for a NULL array.
 */
RP_API rp_status_t rp_alltoallv(rp_context_h ctx, const void *sendbuf,
                                const size_t *sendcounts, void *recvbuf,
                                const size_t *recvcounts, rp_dtype_t dtype);

/**
 * @brief Start @ref rp_allreduce; complete it with @ref rp_test or
 *        @ref rp_wait.
 *
 * The arguments are checked now (a bad one returns an error and no
 * request); the collective runs in the background, after the collectives
 * started before it.
 *
 * @param req  Receives the request (NULL after an error).
 * @return RP_OK once started; RP_ERR_INVALID_ARG; RP_ERR_NO_MEMORY. The
 *         collective's own outcome comes from @ref rp_test or
 *         @ref rp_wait.
 */
RP_API rp_status_t rp_iallreduce(rp_context_h ctx, const void *sendbuf,
                                 void *recvbuf, size_t count, rp_dtype_t dtype,
                                 rp_op_t op, rp_request_h *req);

/**
 * @brief Start @ref rp_allreduce_group_opts. The arrays are copied: they
 *        may be reused at once; the buffers they point to may not.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_iallreduce_group(rp_context_h ctx,
                                       const void *const *sendbufs,
                                       void *const *recvbufs,
                                       const size_t *counts, size_t nbufs,
                                       rp_dtype_t dtype, rp_op_t op,
                                       const rp_allreduce_opts_t *opts,
                                       rp_request_h *req);

/**
 * @brief Start @ref rp_broadcast.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ibroadcast(rp_context_h ctx, void *buf, size_t count,
                                 rp_dtype_t dtype, int root, rp_request_h *req);

/**
 * @brief Start @ref rp_allgather.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_iallgather(rp_context_h ctx, const void *sendbuf,
                                 void *recvbuf, size_t count, rp_dtype_t dtype,
                                 rp_request_h *req);

/**
 * @brief Start @ref rp_barrier: the request completes once every rank has
 *        started it.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ibarrier(rp_context_h ctx, rp_request_h *req);

/**
 * @brief Start @ref rp_reduce_scatter.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ireduce_scatter(rp_context_h ctx, const void *sendbuf,
                                      void *recvbuf, size_t recvcount,
                                      rp_dtype_t dtype, rp_op_t op,
                                      rp_request_h *req);

/**
 * @brief Start @ref rp_reduce_scatterv. The array is copied: it may be
 *        reused at once.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ireduce_scatterv(rp_context_h ctx, const void *sendbuf,
                                       void *recvbuf, const size_t *recvcounts,
                                       rp_dtype_t dtype, rp_op_t op,
                                       rp_request_h *req);

/**
 * @brief Start @ref rp_reduce_scatter_group. The arrays are copied.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ireduce_scatter_group(rp_context_h ctx,
                                            const void *const *sendbufs,
                                            void *const *recvbufs,
                                            const size_t *recvcounts,
                                            size_t nbufs, rp_dtype_t dtype,
                                            rp_op_t op, rp_request_h *req);

/**
 * @brief Start @ref rp_alltoall.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ialltoall(rp_context_h ctx, const void *sendbuf,
                                void *recvbuf, size_t count, rp_dtype_t dtype,
                                rp_request_h *req);

/**
 * @brief Start @ref rp_alltoallv. The arrays are copied.
 * @return As @ref rp_iallreduce.
 */
RP_API rp_status_t rp_ialltoallv(rp_context_h ctx, const void *sendbuf,
                                 const size_t *sendcounts, void *recvbuf,
                                 const size_t *recvcounts, rp_dtype_t dtype,
                                 rp_request_h *req);

/**
 * @brief Has the request completed? Never blocks.
 *
 * When it has, @p *done is set to 1, the request is freed and @p *req set
 * to NULL, and the collective's status is returned; otherwise @p *done is
 * 0 and RP_OK returned. A NULL @p *req counts as complete.
 *
 * @param req   The request, from a start call.
 * @param done  Set to 1 when complete, 0 when not.
 * @return RP_OK, or the collective's error (as @ref rp_allreduce's);
 *         RP_ERR_INVALID_ARG for a NULL pointer.
 */
RP_API rp_status_t rp_test(rp_request_h *req, int *done);

/**
 * @brief Wait until the request completes, free it and set @p *req to
 *        NULL. A NULL @p *req returns RP_OK at once.
 * @return As @ref rp_test.
 */
RP_API rp_status_t rp_wait(rp_request_h *req);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_COLL_H */
