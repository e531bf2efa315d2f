/*
 * The hierarchy across nodes: with several ranks on some node of a job
 * that spans nodes, an allreduce is reduced within each node first (the
 * node's shared segment, shm.h), then among one leader per node over the
 * transport (algo.h), then handed back within the
 * node (a broadcast through the segment). A broadcast goes within the
 * root's node, among the leaders, then within every other node. Only the
 * leaders' messages cross the network: one per node and step instead of
 * one per rank.
 *
 * Lanes: when every node has the same number L of ranks, an allreduce of
 * at least RP_HIER_LANES_MIN bytes whose count L divides goes in L lanes
 * instead: after the node's reduction, local rank i reduces the i-th L-th
 * of the elements with local rank i of every other node (lane 0 is the
 * leaders), all lanes at once, and the node's ranks then gather the
 * slices (an allgather through the segment). Each rank sends 1/L of the
 * bytes over the network, on L connections a node instead of one. The
 * per-element expression is the leaders' (every path's is the same
 * element by element, eval.h).
 *
 * Node membership is the job's: every rank publishes its PMIx node id
 * (an allgather at setup), and a node's ranks are ordered by job rank.
 * Its leader is its lowest rank; the nodes are ordered by their leaders.
 *
 * The reduction order. Every rank gets the leaders' result, bit for bit
 * (the last step is a copy). What the result is depends on the order the
 * values are combined in:
 *  - integer types: any order gives the same bits (wrap-around sums and
 *    products, min and max are associative);
 *  - floating point: every flat path evaluates one expression (eval.h),
 *    recursive doubling's. The node's, then the leaders', is that same
 *    expression when the job size is a power of two and every node holds
 *    the same number of consecutive ranks (2 nodes x 2 ranks:
 *    (x0 + x1) + (x2 + x3), operand for operand);
 *  - otherwise the hierarchy's expression is the leaders' expression of
 *    the nodes' partial results: the same on every rank and from run to
 *    run on the same layout, but not the flat paths' bits, and it changes
 *    with the layout.
 * float16/bfloat16 are widened to float32 on entry, combined in float32 at
 * every level and rounded once (with wire compression, as themselves).
 *
 * So RINGPOINT_COLL_HIER unset (auto) takes the hierarchy only where its
 * bits are the flat paths' (integer types, and such an aligned layout): a
 * job's results never depend on its layout.
 * RINGPOINT_COLL_HIER=1 takes it for every allreduce and broadcast of a
 * job that spans nodes with several ranks on one (layout-dependent float
 * bits, as above); 0 never.
 */
#ifndef RP_COLL_HIER_H
#define RP_COLL_HIER_H

#include <stdbool.h>
#include <stddef.h>

#include "ringpoint/status.h"
#include "ringpoint/types.h"

struct rp_comm;

/* The hierarchy's collectives (hier.c), rp__comm_begin already called,
 * arguments checked, count/bytes > 0. @algo: the flat algorithm's choice
 * (RD or RING). The path selector (select.c) calls them through the
 * hierarchy's table: their legs are the selector's own collectives on the
 * sub-communicators, so calling them by name would make select.c and
 * hier.c call each other. */
typedef struct rp__hier_ops {
    rp_status_t (*allreduce)(struct rp_comm *c, const void *sendbuf,
                             void *recvbuf, size_t count, rp_dtype_t dtype,
                             rp_op_t op, bool half_wire, int algo);
    rp_status_t (*broadcast)(struct rp_comm *c, void *buf, size_t bytes,
                             int root);
} rp__hier_ops_t;

/* The table rp__hier_setup installs (hier.c). */
extern const rp__hier_ops_t rp__hier_ops;

typedef struct rp__hier {
    const rp__hier_ops_t *ops; /* &rp__hier_ops */
    int nnodes;
    int node;          /* this rank's node */
    int *node_of;      /* [job size] each rank's node */
    int *lidx_of;      /* [job size] each rank's place within its node */
    int *leaders;      /* [nnodes] each node's leader (job rank) */
    int *members;      /* [local size] this node's ranks (job ranks) */
    int lsize;
    struct rp_comm *local;  /* this node's ranks; NULL when alone */
    struct rp_comm *leader; /* the leaders; NULL unless this rank leads */
    struct rp_comm *lane;   /* local rank i of every node, when uniform;
                               the leaders' for i == 0 */
    int *lane_world;        /* [nnodes] its ranks */
    bool uniform;           /* every node has lsize ranks */
    bool forced;       /* RINGPOINT_COLL_HIER=1 */
    bool rd_aligned;   /* recursive doubling's bits (see above) */
    size_t max_bytes;  /* auto: allreduces up to this size */
} rp__hier_t;

/* Set up c->hier if the layout and @mode (RINGPOINT_COLL_HIER: -1 auto,
 * 0 never, 1 always) call for it: a collective over the transport at
 * rp__comm_create (after the shared segment's setup, which leaves c->shm
 * NULL across nodes). Only a failing transport fails it (hier_setup.c). */
rp_status_t rp__hier_setup(struct rp_comm *c, int mode);
/* After the transport is gone (as rp__comm_destroy). NULL is ignored. */
void rp__hier_destroy(rp__hier_t *h);

/* The smallest allreduce that goes in lanes: below it the lanes' extra
 * local allgather costs more than the bytes they save. */
#define RP_HIER_LANES_MIN (256u * 1024)

#endif /* RP_COLL_HIER_H */
