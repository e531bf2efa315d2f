/*
 * The host dispatcher (dispatch.c): a described host collective, checked
 * already, run on the calling thread. The blocking calls (host.c) and the
 * progress thread (progress.c) both run collectives through it, so a
 * non-blocking call gives the blocking call's bits. It sits above the
 * path selector (select.h) and the grouped allreduce. Free of the
 * transport's types, like request.h: the backends' table (backend.h)
 * hands these arguments to the GPU module too.
 */
#ifndef RP_COLL_DISPATCH_H
#define RP_COLL_DISPATCH_H

#include <stddef.h>
#include <stdint.h>

#include "coll/request.h"
#include "ringpoint/coll.h"

struct rp_comm;

/* What the host queue runs (the kinds of host collective). */
typedef enum rp__coll_kind {
    RP__COLL_ALLREDUCE,
    RP__COLL_ALLREDUCE_GROUP,
    RP__COLL_BROADCAST,
    RP__COLL_ALLGATHER,
    RP__COLL_BARRIER,
    RP__COLL_REDUCE_SCATTER,
    RP__COLL_ALLTOALL,
    RP__COLL_CHECK, /* the argument check alone (rp_check) */
    RP__COLL_REDUCE_SCATTER_GROUP,
} rp__coll_kind_t;

/* A host collective's arguments, checked already, in the communicator's
 * units (bytes for broadcast and allgather). The grouped allreduce's
 * arrays are copies owned by the request, so the caller's may go away. */
typedef struct rp__coll_args {
    rp__coll_kind_t kind;
    const void *sendbuf;
    void *recvbuf;
    size_t count; /* elements; bytes (per rank) for broadcast/allgather */
    rp_dtype_t dtype;
    rp_op_t op;
    int root;
    const void *const *sendbufs;
    void *const *recvbufs;
    const size_t *counts;
    size_t nbufs;
    /* Reduce-scatter: the blocks' element counts, one per rank; grouped,
     * one such row per buffer. All-to-all: four such arrays in bytes, send
     * counts, send displacements, receive counts, receive displacements.
     * @ntable entries. */
    const size_t *table;
    size_t ntable;
    rp_compression_t compression; /* resolved: never DEFAULT */
    uint64_t signature; /* non-zero: check it across ranks first */
} rp__coll_args_t;

/* The ranks' signatures of one call agree? RP_ERR_MISMATCH on every rank
 * when they do not (one small allreduce, which also carries what a joined
 * rank needs: join.c); RP_ERR_STATE when a rank has joined and the call is
 * not an allreduce. */
rp_status_t rp__coll_agree(struct rp_comm *c, const rp__coll_args_t *a);
/* Grouped reduce-scatter (reduce_scatter_group.c): @counts holds a row
 * of c->size block counts per buffer. */
rp_status_t rp__comm_reduce_scatter_group(struct rp_comm *c,
                                          const void *const *sendbufs,
                                          void *const *recvbufs,
                                          const size_t *counts, size_t nbufs,
                                          rp_dtype_t dtype, rp_op_t op);

/* rp_join's loop (join.c): this rank stands in for the others' checked
 * allreduces until every rank has joined; *@last_p: the last to join. */
rp_status_t rp__coll_join(struct rp_comm *c, int *last_p);
/* The same for a call the host does not run (a device collective's). */
rp_status_t rp__coll_check(struct rp_comm *c, uint64_t signature);

/* Run one host collective on the calling thread (the blocking calls and
 * the progress thread alike). */
rp_status_t rp__coll_run(struct rp_comm *c, const rp__coll_args_t *a);

/* Grouped allreduce (tensor fusion, allreduce_group.c): the buffers
 * packed into few allreduces. @compression: NONE, FP16 or BF16
 * (resolved, float32 only). */
rp_status_t rp__comm_allreduce_group(struct rp_comm *c, const void *const *sendbufs,
                                     void *const *recvbufs,
                                     const size_t *counts, size_t nbufs,
                                     rp_dtype_t dtype, rp_op_t op,
                                     rp_compression_t compression);

#endif /* RP_COLL_DISPATCH_H */
