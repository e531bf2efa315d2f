/*
 * The hierarchy's collectives (hier.h): allreduce and broadcast through a
 * node's ranks and the nodes' leaders. Each leg is a collective of the
 * path selector (select.h) on a sub-communicator, which has no hierarchy
 * of its own; the selector reaches these through rp__hier_ops, so the two
 * files do not call each other.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/hier.h"
#include "coll/select.h"
#include "reduce/reduce.h"

#include <string.h>

/* The sub-communicators wait as the job's communicator does right now
 * (the progress thread polls for its own time). */
static void rp_hier_sync(rp_comm_t *c)
{
    rp__hier_t *h = c->hier;

    if (h->local != NULL) {
        h->local->spin_ns = c->spin_ns;
    }
    if (h->leader != NULL) {
        h->leader->spin_ns = c->spin_ns;
    }
}

/* One level's allreduce with the flat algorithm's choice: a size that
 * is latency-bound for the job is so for each level too. */
static rp_status_t rp_hier_level(rp_comm_t *s, void *buf, size_t count,
                                 rp_dtype_t dtype, rp_op_t op, bool half_wire,
                                 int algo, const void *sendbuf)
{
    const rp_coll_algo_t keep = s->algo;
    rp_status_t status;

    if (algo == RP_COLL_ALGO_RD) {
        s->algo = RP_COLL_ALGO_RD;
    }
    status = rp__comm_allreduce_wire(s, sendbuf, buf, count, dtype, op,
                                     half_wire);
    s->algo = keep;
    return status;
}

/* Steps 2 and 3 in lanes (hier.h): @acc holds the node's partial result
 * (float32 for half types unless @half_wire). */
static rp_status_t rp_hier_lanes_allreduce(rp_comm_t *c, void *recvbuf,
                                           void *acc, size_t count,
                                           rp_dtype_t dtype, rp_op_t op,
                                           bool half_wire, int algo)
{
    rp__hier_t *h = c->hier;
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    const rp_dtype_t wtype = half ? RP_DTYPE_FLOAT32 : dtype;
    const size_t per = count / (size_t)h->lsize, es = rp_dtype_size(dtype);
    const size_t first = per * (size_t)h->lidx_of[c->rank];
    char *mine = (char *)acc + first * rp_dtype_size(wtype);
    char *out = (char *)recvbuf + first * es;
    rp_status_t status;

    status = rp_hier_level(h->lane, mine, per, wtype,
                           op == RP_OP_AVG ? RP_OP_SUM : op, half_wire, algo,
                           mine);
    if (status == RP_OK) {
        if (op == RP_OP_AVG) {
            rp__reduce_scale(wtype, mine, per, c->size);
        }
        if (half) {
            rp__half_narrow(dtype, out, (const float *)mine, per);
        }
        /* Each rank's slice is its block of the result already. */
        status = rp__comm_allgather(h->local, out, recvbuf, per * es);
    }
    if (status != RP_OK && c->broken == RP_OK) {
        c->broken = status;
    }
    return status;
}

static rp_status_t rp_hier_allreduce(rp_comm_t *c, const void *sendbuf,
                                     void *recvbuf, size_t count,
                                     rp_dtype_t dtype, rp_op_t op,
                                     bool half_wire, int algo)
{
    rp__hier_t *h = c->hier;
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    const rp_dtype_t wtype = half ? RP_DTYPE_FLOAT32 : dtype;
    const rp_op_t rop = op == RP_OP_AVG ? RP_OP_SUM : op;
    const size_t wbytes = count * rp_dtype_size(wtype);
    const void *src = sendbuf;
    rp_status_t status;
    void *acc = recvbuf, *p;

    rp_hier_sync(c);
    if (half) {
        /* Combined as float32 at every level and rounded once, as the
         * flat algorithms do. */
        status = rp__comm_scratch(c, &c->work, wbytes, &p);
        if (status != RP_OK) {
            return status;
        }
        acc = p;
        rp__half_widen(dtype, acc, sendbuf, count);
        src = acc;
    }
    /* 1. The node's partial result, on every rank of the node (the
     * leader needs it; the others get the final one in step 3). */
    if (h->local != NULL) {
        status = rp_hier_level(h->local, acc, count, wtype, rop, half_wire,
                               algo, src);
    } else {
        if (src != acc) {
            memcpy(acc, src, wbytes);
        }
        status = RP_OK;
    }
    if (status == RP_OK && h->uniform && count % (size_t)h->lsize == 0 &&
        count * rp_dtype_size(dtype) >= RP_HIER_LANES_MIN) {
        return rp_hier_lanes_allreduce(c, recvbuf, acc, count, dtype, op,
                                       half_wire, algo);
    }
    /* 2. Among the leaders, over the network. */
    if (status == RP_OK && h->leader != NULL) {
        status = rp_hier_level(h->leader, acc, count, wtype, rop, half_wire,
                               algo, acc);
        if (status == RP_OK && op == RP_OP_AVG) {
            rp__reduce_scale(wtype, acc, count, c->size);
        }
        if (status == RP_OK && half) {
            rp__half_narrow(dtype, recvbuf, acc, count);
        }
    }
    /* 3. The leader's result to the node, bit for bit. */
    if (status == RP_OK && h->local != NULL) {
        status = rp__comm_broadcast(h->local, recvbuf,
                                    count * rp_dtype_size(dtype), 0);
    }
    if (status != RP_OK && c->broken == RP_OK) {
        /* A sub-communicator broke the job's already; never leave it
         * healthy behind a failed step. */
        c->broken = status;
    }
    return status;
}

static rp_status_t rp_hier_broadcast(rp_comm_t *c, void *buf, size_t bytes,
                                     int root)
{
    rp__hier_t *h = c->hier;
    const int rnode = h->node_of[root];
    const bool root_leads = h->leaders[rnode] == root;
    rp_status_t status = RP_OK;

    rp_hier_sync(c);
    /* 1. On the root's node, from the root (its leader gets it). */
    if (h->node == rnode && !root_leads && h->local != NULL) {
        status = rp__comm_broadcast(h->local, buf, bytes, h->lidx_of[root]);
    }
    /* 2. Among the leaders, from the root's node's. */
    if (status == RP_OK && h->leader != NULL) {
        status = rp__comm_broadcast(h->leader, buf, bytes, rnode);
    }
    /* 3. Within every node that does not have it yet. */
    if (status == RP_OK && h->local != NULL &&
        (h->node != rnode || root_leads)) {
        status = rp__comm_broadcast(h->local, buf, bytes, 0);
    }
    if (status != RP_OK && c->broken == RP_OK) {
        c->broken = status;
    }
    return status;
}

const rp__hier_ops_t rp__hier_ops = {
    .allreduce = rp_hier_allreduce,
    .broadcast = rp_hier_broadcast,
};
