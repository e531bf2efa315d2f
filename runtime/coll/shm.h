/*
 * The node's shared segment: when every rank of the job runs on one node,
 * the collectives move data through memory the ranks share instead of
 * through the transport (as Open MPI's sm/vader and NCCL do within a node).
 *
 * Layout: a header, the ranks' pids, per rank RP_SHM_DEPTH flag lines (one
 * cache line each: a step counter and, for the smallest messages, the
 * data itself, so that a peer fetches one line per step), per rank as
 * many small slots of RP_SHM_SMALL bytes, then per rank two data slots of
 * slot_bytes each. A collective is a series of steps,
 * numbered alike on every rank (they call the same collectives in the
 * same order), and every rank posts every step, in order. In step k a
 * rank may write its line and small slot k % RP_SHM_DEPTH and its slot
 * k % 2, then posts k in that line; a peer reads them once the rank
 * posted k. A rank posts a step only after it finished reading the one
 * before, so the slot may be written again in step k + 2 once every rank
 * posted k + 1, and the line and small slot in step k + RP_SHM_DEPTH once
 * every rank posted k + RP_SHM_DEPTH - 1: rp__shm_step waits for that
 * (normally already true). The deep small ones let a broadcast's root run
 * ahead of slow readers, as an eager send does.
 *
 * Waiting (rp__shm_wait): poll the peer's counter (with sched_yield in
 * between when the node is oversubscribed, so the peer holding the data
 * gets the core), then sleep on a futex on that counter; a rank that posts
 * wakes the sleepers. A post is a plain store: the rare sleeper, not every
 * post, pays for the fence that keeps a wake-up from being missed (a
 * global membarrier; where the kernel refuses it, every post fences).
 * While asleep the wait checks the peer's pid, the failure notices and
 * the timeout, as the transport's waits do.
 *
 * Larger collectives (above RINGPOINT_COLL_SHM_MAX) copy once instead of
 * twice: a rank reads its peers' buffers where they lie with Linux's
 * cross-memory attach (process_vm_readv, as UCX's cma transport and Open
 * MPI's vader do), and the segment carries only the flags and the
 * buffers' addresses (shm_cma.c). That needs the permission to read the
 * peers (same user, no ptrace restriction in the way): probed at setup,
 * used only if every rank can, RINGPOINT_COLL_CMA=0 turns it off.
 *
 * The segment is used only when all ranks are on this node (the shared
 * path then covers everyone; the reductions evaluate the allreduce's one
 * expression (eval.h), so the bits never depend on the path), and not when UCX_TLS leaves shared memory out (an
 * inter-node emulation over loopback must stay on the network).
 * RINGPOINT_COLL_SHM=0 turns it off.
 */
#ifndef RP_COLL_SHM_H
#define RP_COLL_SHM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ringpoint/types.h"

struct rp_comm;
struct iovec;

/* Bytes of data a flag line carries. */
#define RP_SHM_INLINE 56
/* Flag lines and small slots per rank: steps a writer of small data may
 * run ahead. */
#define RP_SHM_DEPTH 8
/* The low half of the word the setup's probe reads (the pid: the high). */
#define RP_SHM_PROBE 0x72706d61u /* "rpma" */
/* Bytes of a small slot. */
#define RP_SHM_SMALL 4096

/* One rank's flag line of one parity. */
typedef struct rp__shm_line {
    _Atomic uint32_t step; /* the last step of this parity posted */
    uint32_t pad;
    char data[RP_SHM_INLINE];
} rp__shm_line_t;

typedef struct rp__shm {
    void *base;
    size_t map_bytes;
    _Atomic uint32_t *sleepers; /* ranks asleep on some counter */
    uint32_t *pids;             /* [n]; 0: not comparable (another pid
                                   namespace) */
    rp__shm_line_t *lines;      /* [n][RP_SHM_DEPTH] */
    char *small;                /* [n][RP_SHM_DEPTH][RP_SHM_SMALL] */
    char *data;                 /* [n][2][slot_bytes] */
    size_t slot_bytes;
    size_t direct_bytes; /* allreduce pieces every rank reduces whole */
    int n, rank;
    uint32_t step; /* this rank's current step */
    bool cma;      /* every rank can read every peer (process_vm_readv) */
    bool fenced;   /* every rank registered for the global membarrier:
                      posts are plain stores (rp__shm_post) */
    uint64_t probe; /* what the peers read to find out */
    const void **ptrs; /* [2n]: the reductions' operand lists */
} rp__shm_t;

/* Set up the segment for @c if the layout allows it (see above); leaves
 * c->shm NULL otherwise. Collective over the transport: every rank calls
 * it at the same point of rp__comm_create. Only a bad setting or an error
 * of the transport fails it; a segment that cannot be made or mapped is
 * logged and left out, by every rank alike. The set-up and the teardown
 * are shm_setup.c's; the steps below are shm.c's. */
rp_status_t rp__shm_setup(struct rp_comm *c);
void rp__shm_destroy(rp__shm_t *sh);

/* Rank @q's flag line for step @k. */
static inline rp__shm_line_t *rp__shm_line(const rp__shm_t *sh, int q,
                                           uint32_t k)
{
    return &sh->lines[(size_t)q * RP_SHM_DEPTH + k % RP_SHM_DEPTH];
}

/* Where rank @q's @bytes of data for step @k lie: its line, small slot
 * or slot. */
static inline char *rp__shm_data(const rp__shm_t *sh, int q, uint32_t k,
                                 size_t bytes)
{
    if (bytes <= RP_SHM_INLINE) {
        return sh->lines[(size_t)q * RP_SHM_DEPTH + k % RP_SHM_DEPTH].data;
    }
    if (bytes <= RP_SHM_SMALL) {
        return sh->small +
               ((size_t)q * RP_SHM_DEPTH + k % RP_SHM_DEPTH) * RP_SHM_SMALL;
    }
    return sh->data + ((size_t)q * 2 + (k & 1u)) * sh->slot_bytes;
}

/* Rank @q's slot for step @k. */
static inline char *rp__shm_slot(const rp__shm_t *sh, int q, uint32_t k)
{
    return sh->data + ((size_t)q * 2 + (k & 1u)) * sh->slot_bytes;
}

/* Begin the next step, in which this rank writes @bytes of data (where
 * rp__shm_data says): wait until every rank is done with what the step
 * overwrites. Returns this rank's slot. */
rp_status_t rp__shm_step(struct rp_comm *c, size_t bytes, char **slot_p);
/* This rank's slot (if written) is ready for the current step. */
void rp__shm_post(struct rp_comm *c);
/* A step whose data is @len bytes of @src (none if NULL), where
 * rp__shm_data puts them: begin it, copy, post. */
rp_status_t rp__shm_publish(struct rp_comm *c, const void *src, size_t len);
/* Wait until rank @q posted step @k. */
rp_status_t rp__shm_wait(struct rp_comm *c, int q, uint32_t k);
/* ... every other rank. */
rp_status_t rp__shm_wait_all(struct rp_comm *c, uint32_t k);

/* The collectives over the segment (shm_coll.c). Arguments checked,
 * count/bytes > 0. */
rp_status_t rp__shm_allreduce(struct rp_comm *c, const void *sendbuf,
                              void *recvbuf, size_t count, rp_dtype_t dtype,
                              rp_op_t op, bool half_wire);
rp_status_t rp__shm_broadcast(struct rp_comm *c, void *buf, size_t bytes,
                              int root);
/* @sendbuf may be this rank's block of @recvbuf, but overlap no other. */
rp_status_t rp__shm_allgather(struct rp_comm *c, const void *sendbuf,
                              void *recvbuf, size_t bytes);
rp_status_t rp__shm_barrier(struct rp_comm *c);

/* The single-copy collectives (shm_cma.c), for c->shm->cma. Arguments
 * checked, count/bytes > 0. */
rp_status_t rp__cma_allreduce(struct rp_comm *c, const void *sendbuf,
                              void *recvbuf, size_t count, rp_dtype_t dtype,
                              rp_op_t op, bool half_wire);
/* Rank r's block of the allreduce's result, @counts[r] elements, into
 * @recvbuf (the blocks packed in rank order in every @sendbuf). */
rp_status_t rp__cma_reduce_scatter(struct rp_comm *c, const void *sendbuf,
                                   void *recvbuf, const size_t *counts,
                                   rp_dtype_t dtype, rp_op_t op);
/* All-to-all in bytes (algo.h's rp__alltoall_pairwise's arguments): each
 * rank reads its share out of every peer's input. Only where
 * rp__cma_alltoall_fits: the displacements travel in the segment. */
bool rp__cma_alltoall_fits(const struct rp_comm *c);
rp_status_t rp__cma_alltoall(struct rp_comm *c, const void *sendbuf,
                             const size_t *scounts, const size_t *sdispls,
                             void *recvbuf, const size_t *rcounts,
                             const size_t *rdispls);
rp_status_t rp__cma_broadcast(struct rp_comm *c, void *buf, size_t bytes,
                              int root);
rp_status_t rp__cma_allgather(struct rp_comm *c, const void *sendbuf,
                              void *recvbuf, size_t bytes);
/* Every rank's buffer @src to every rank, rank q's bytes landing in the
 * pieces @iov[q][0..@niov[q]) in order (this rank's own included, copied
 * from @src): one copy of each byte, read where it lies. The pieces of
 * rank q sum to the length of q's buffer. */
rp_status_t rp__cma_allgather_iov(struct rp_comm *c, const void *src,
                                  const struct iovec *const *iov,
                                  const size_t *niov);
/* Setup: can this rank read rank @q's memory? (the probe) */
bool rp__cma_probe(const rp__shm_t *sh, int q, const void *addr);

#endif /* RP_COLL_SHM_H */
