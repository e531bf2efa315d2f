/*
 * The collectives as the rest of the runtime calls them (select.c): each
 * starts the collective on the communicator (rp__comm_begin), handles the
 * trivial cases, and picks one path, in this order: the hierarchy across
 * nodes (hier.h), the node's shared segment, single-copy reads (shm.h),
 * then the transport's algorithms (algo.h). The
 * decisions hang only on what every rank agrees on (sizes, settings, the
 * job's layout), so every rank takes the same path.
 */
#ifndef RP_COLL_SELECT_H
#define RP_COLL_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "coll/comm.h"

/* The most ranks whose large allreduces auto gives the owners'
 * reduce-scatter, which talks to every rank; beyond, recursive halving
 * keeps a rank's peers at 2 log2 n + O(1). */
#define RP_OWNERS_MAX_RANKS 64

/* @half_wire: float16/bfloat16 partial results travel in their own format,
 * rounded at every hop (wire compression), instead of as float32 rounded
 * once. */
rp_status_t rp__comm_allreduce_wire(rp_comm_t *c, const void *sendbuf,
                                    void *recvbuf, size_t count,
                                    rp_dtype_t dtype, rp_op_t op,
                                    bool half_wire);
rp_status_t rp__comm_allreduce(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op);
rp_status_t rp__comm_broadcast(rp_comm_t *c, void *buf, size_t bytes, int root);
rp_status_t rp__comm_allgather(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t bytes_per_rank);
rp_status_t rp__comm_barrier(rp_comm_t *c);
/* Rank q gets block q (@counts[q] elements; the blocks packed in rank
 * order in @sendbuf) of the allreduce of every rank's @sendbuf, with the
 * allreduce's bits. */
rp_status_t rp__comm_reduce_scatter(rp_comm_t *c, const void *sendbuf,
                                    void *recvbuf, const size_t *counts,
                                    rp_dtype_t dtype, rp_op_t op);
/* In bytes: @scounts[q] from @sendbuf + @sdispls[q] to rank q,
 * @rcounts[q] from rank q into @recvbuf + @rdispls[q]. */
rp_status_t rp__comm_alltoall(rp_comm_t *c, const void *sendbuf,
                              const size_t *scounts, const size_t *sdispls,
                              void *recvbuf, const size_t *rcounts,
                              const size_t *rdispls);

#endif /* RP_COLL_SELECT_H */
