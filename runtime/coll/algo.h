/*
 * The collectives' algorithms over the transport, one file each: they use
 * the point-to-point ground (comm.h), the allreduce's expression (eval.h)
 * and nothing else of coll/. Every allreduce, whichever algorithm or path,
 * gives each element the bits of eval.h's one expression. The path
 * selector (select.c) decides which of them, or of the node segment's
 * paths (shm.h), runs a call. Arguments are checked by the caller,
 * rp__comm_begin called, count/bytes > 0.
 */
#ifndef RP_COLL_ALGO_H
#define RP_COLL_ALGO_H

#include <stdbool.h>
#include <stddef.h>

#include "coll/comm.h"

/* Allreduce. @half_wire: float16/bfloat16 results rounded at every
 * operation (wire compression), instead of combined in float32 and rounded
 * once. */
/* The pipelined ring between two ranks (allreduce_ring.c); c->size == 2. */
rp_status_t rp__allreduce_ring(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op, bool half_wire);
/* Each block reduced by its owner, then the ring's allgather
 * (allreduce_owners.c). */
rp_status_t rp__allreduce_owners(rp_comm_t *c, const void *sendbuf,
                                 void *recvbuf, size_t count,
                                 rp_dtype_t dtype, rp_op_t op, bool half_wire);
/* The owners' first phase alone (allreduce_owners.c): rank q's result is
 * block q, @counts[q] elements, the blocks packed in rank order in
 * @sendbuf; the bits are those of the allreduce's block. */
rp_status_t rp__reduce_scatter_owners(rp_comm_t *c, const void *sendbuf,
                                      void *recvbuf, const size_t *counts,
                                      rp_dtype_t dtype, rp_op_t op);
/* Pairwise exchange (alltoall.c): @scounts[q] bytes from @sendbuf at
 * @sdispls[q] to rank q, @rcounts[q] bytes from rank q into @recvbuf at
 * @rdispls[q]. */
rp_status_t rp__alltoall_pairwise(rp_comm_t *c, const void *sendbuf,
                                  const size_t *scounts, const size_t *sdispls,
                                  void *recvbuf, const size_t *rcounts,
                                  const size_t *rdispls);
/* Recursive halving, then doubling back (allreduce_rh.c): the large
 * messages of jobs past RP_OWNERS_MAX_RANKS ranks (select.h). */
rp_status_t rp__allreduce_rh(rp_comm_t *c, const void *sendbuf, void *recvbuf,
                             size_t count, rp_dtype_t dtype, rp_op_t op,
                             bool half_wire);
/* Recursive doubling (allreduce_rd.c). */
rp_status_t rp__allreduce_rd(rp_comm_t *c, const void *sendbuf, void *recvbuf,
                             size_t count, rp_dtype_t dtype, rp_op_t op,
                             bool half_wire);
/* A pipelined chain from @root round the ring (broadcast.c). */
rp_status_t rp__broadcast_ring(rp_comm_t *c, void *buf, size_t bytes,
                               int root);
/* The ring (allgather.c); @bytes per rank. Also the single-rank copy. */
rp_status_t rp__allgather_ring(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t bytes);
/* Dissemination (barrier.c); more than one rank. */
rp_status_t rp__barrier_dissem(rp_comm_t *c);

#endif /* RP_COLL_ALGO_H */
