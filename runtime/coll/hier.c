/*
 * The hierarchy across nodes (hier.h): setup, the choice, allreduce and
 * broadcast through a node's ranks and the nodes' leaders.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/hier.h"
#include "coll/shm.h"
#include "reduce/reduce.h"
#include "util/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A sub-communicator of @c over the job ranks @world[0..n), in which this
 * rank is @rank: the job's settings, its own sequence numbers, scratch and
 * requests; failures go to @c. */
static rp_status_t rp_hier_sub(rp_comm_t *c, const int *world, int n,
                               int rank, rp_comm_t **sub_p)
{
    rp_comm_t *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        rp_error("coll: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    s->tp = c->tp;
    s->rank = rank;
    s->size = n;
    s->op = "collective";
    s->timeout_ns = c->timeout_ns;
    s->spin_ns = s->spin_fg_ns = s->spin_bg_ns = c->spin_ns;
    s->yield = c->yield;
    s->algo = c->algo;
    s->rd_max_bytes = c->rd_max_bytes;
    s->seg_bytes = c->seg_bytes;
    s->window = c->window;
    s->compression = c->compression;
    s->shm_on = c->shm_on;
    s->cma_on = c->cma_on;
    s->shm_max_set = c->shm_max_set;
    s->shm_max = s->shm_ar_max = s->shm_ag_max = c->shm_max;
    /* As rp__comm_create decides for a node of this many ranks. */
    if (!c->shm_max_set && c->yield) {
        s->shm_ar_max = SIZE_MAX;
    }
    s->world = world;
    s->parent = c;
    s->seq_base = RP_COMM_SEQ_SUB;
    *sub_p = s;
    return RP_OK;
}

static void rp_hier_sub_free(rp_comm_t *s)
{
    if (s == NULL) {
        return;
    }
    rp__shm_destroy(s->shm);
    free(s->reqs);
    free(s->work.ptr);
    free(s->tmp.ptr);
    free(s->fuse.ptr);
    free(s);
}

void rp__hier_destroy(rp__hier_t *h)
{
    if (h == NULL) {
        return;
    }
    if (h->lane != h->leader) {
        rp_hier_sub_free(h->lane);
    }
    rp_hier_sub_free(h->leader);
    rp_hier_sub_free(h->local);
    free(h->lane_world);
    free(h->members);
    free(h->leaders);
    free(h->lidx_of);
    free(h->node_of);
    free(h);
}

/* Nodes, leaders and places from every rank's node id; true when the
 * layout has more than one node and more than one rank on some node. */
static bool rp_hier_layout(rp__hier_t *h, const int32_t *ids, int n, int me)
{
    int maxl = 0;

    h->nnodes = 0;
    for (int r = 0; r < n; r++) {
        int k = 0;

        /* Nodes in the order of their lowest rank. */
        while (k < h->nnodes && ids[h->leaders[k]] != ids[r]) {
            k++;
        }
        if (k == h->nnodes) {
            h->leaders[h->nnodes++] = r;
        }
        h->node_of[r] = k;
        h->lidx_of[r] = 0;
        for (int q = 0; q < r; q++) {
            h->lidx_of[r] += h->node_of[q] == k;
        }
        if (h->lidx_of[r] + 1 > maxl) {
            maxl = h->lidx_of[r] + 1;
        }
    }
    h->node = h->node_of[me];
    h->lsize = 0;
    for (int r = 0; r < n; r++) {
        if (h->node_of[r] == h->node) {
            h->members[h->lsize++] = r;
        }
    }
    /* Recursive doubling's expression: 2^k ranks in equal blocks of
     * consecutive ranks, one block a node. */
    h->rd_aligned = (n & (n - 1)) == 0 && n % h->nnodes == 0;
    for (int r = 0; r < n && h->rd_aligned; r++) {
        const int per = n / h->nnodes;

        h->rd_aligned = h->node_of[r] == r / per && h->lidx_of[r] == r % per;
    }
    return h->nnodes > 1 && maxl > 1;
}

/* Every node the same size: this rank's lane, local rank i of every node
 * in node order (lane 0: the leaders). The layout decides it, so every
 * rank alike. */
static rp_status_t rp_hier_lanes(rp_comm_t *c, rp__hier_t *h)
{
    const int me = h->lidx_of[c->rank];

    h->uniform = h->lsize > 1 && c->size == h->nnodes * h->lsize;
    for (int r = 0; r < c->size && h->uniform; r++) {
        h->uniform = h->lidx_of[r] < h->lsize;
    }
    if (!h->uniform) {
        return RP_OK;
    }
    h->lane_world = calloc((size_t)h->nnodes, sizeof(int));
    if (h->lane_world == NULL) {
        rp_error("coll: out of memory for the hierarchy's lanes");
        return RP_ERR_NO_MEMORY;
    }
    for (int r = 0; r < c->size; r++) {
        if (h->lidx_of[r] == me) {
            h->lane_world[h->node_of[r]] = r;
        }
    }
    if (me == 0) {
        h->lane = h->leader;
        return RP_OK;
    }
    return rp_hier_sub(c, h->lane_world, h->nnodes, h->node, &h->lane);
}

rp_status_t rp__hier_setup(rp_comm_t *c, int mode)
{
    const int n = c->size;
    rp__hier_t *h = NULL;
    int32_t id = c->tp->bs->node_id, *ids = NULL;
    rp_status_t status;

    if (mode == 0 || c->shm != NULL || n == 1) {
        /* Off, or all on one node: the segment covers everyone. */
        return RP_OK;
    }
    h = calloc(1, sizeof(*h));
    ids = calloc((size_t)n, sizeof(*ids));
    if (h != NULL) {
        h->node_of = calloc((size_t)n, sizeof(int));
        h->lidx_of = calloc((size_t)n, sizeof(int));
        h->leaders = calloc((size_t)n, sizeof(int));
        h->members = calloc((size_t)n, sizeof(int));
    }
    if (h == NULL || ids == NULL || h->node_of == NULL ||
        h->lidx_of == NULL || h->leaders == NULL || h->members == NULL) {
        rp_error("coll: out of memory for the hierarchy of %d ranks", n);
        status = RP_ERR_NO_MEMORY;
        goto err_free;
    }
    /* Over the transport, flat: c->hier is still NULL. */
    status = rp__comm_allgather(c, &id, ids, sizeof(id));
    if (status != RP_OK) {
        goto err_free;
    }
    if (!rp_hier_layout(h, ids, n, c->rank)) {
        rp_debug("coll: no hierarchy (%s)", h->nnodes == 1
                                                ? "one node"
                                                : "one rank a node");
        status = RP_OK;
        goto err_free;
    }
    h->forced = mode == 1;
    h->max_bytes = c->hier_max;
    if (h->lsize > 1) {
        status = rp_hier_sub(c, h->members, h->lsize,
                             h->lidx_of[c->rank], &h->local);
        if (status == RP_OK) {
            /* Within the node, as for a job on one node. */
            status = rp__shm_setup(h->local);
        }
        if (status != RP_OK) {
            goto err_free;
        }
    }
    if (h->leaders[h->node] == c->rank) {
        status = rp_hier_sub(c, h->leaders, h->nnodes, h->node, &h->leader);
        if (status != RP_OK) {
            goto err_free;
        }
    }
    status = rp_hier_lanes(c, h);
    if (status != RP_OK) {
        goto err_free;
    }
    free(ids);
    c->hier = h;
    if (c->rank == 0) {
        rp_debug("coll: hierarchy of %d nodes (this node: %d ranks%s), "
                 "leaders over the transport%s; %s", h->nnodes, h->lsize,
                 h->local != NULL && h->local->shm != NULL
                     ? ", shared segment" : "",
                 h->uniform ? ", lanes from 256 KiB" : "",
                 h->forced ? "every allreduce and broadcast "
                             "(RINGPOINT_COLL_HIER=1)"
                 : h->rd_aligned ? "integer allreduces and recursive "
                                   "doubling's sizes"
                                 : "integer allreduces");
    }
    return RP_OK;

err_free:
    rp__hier_destroy(h);
    free(ids);
    return status;
}

bool rp__hier_wants(const rp_comm_t *c, size_t bytes, rp_dtype_t dtype,
                    int algo)
{
    const rp__hier_t *h = c->hier;
    const bool exact = dtype == RP_DTYPE_UINT8 || dtype == RP_DTYPE_INT32 ||
                       dtype == RP_DTYPE_INT64;

    if (h->forced) {
        return true;
    }
    return bytes <= h->max_bytes &&
           (exact || (algo == RP_COLL_ALGO_RD && h->rd_aligned));
}

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

/* One level's allreduce with the flat algorithm's choice: recursive
 * doubling stays recursive doubling at both levels (its expression). */
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

rp_status_t rp__hier_allreduce(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op, bool half_wire, int algo)
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

rp_status_t rp__hier_broadcast(rp_comm_t *c, void *buf, size_t bytes,
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
