/*
 * The hierarchy's set-up (hier.h): the job's nodes from every rank's node
 * id, the sub-communicators (a node's ranks, the leaders, the lanes) and
 * their segments, and the teardown. A set-up: it runs a collective on the
 * communicator being created, which is still flat (c->hier NULL).
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/hier.h"
#include "coll/select.h"
#include "coll/shm.h"
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
    /* The flat paths' expression (eval.h): 2^k ranks in equal blocks of
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
    h->ops = &rp__hier_ops;
    c->hier = h;
    if (c->rank == 0) {
        rp_debug("coll: hierarchy of %d nodes (this node: %d ranks%s), "
                 "leaders over the transport%s; %s", h->nnodes, h->lsize,
                 h->local != NULL && h->local->shm != NULL
                     ? ", shared segment" : "",
                 h->uniform ? ", lanes from 256 KiB" : "",
                 h->forced ? "every allreduce and broadcast "
                             "(RINGPOINT_COLL_HIER=1)"
                 : h->rd_aligned ? "every allreduce (an aligned layout)"
                                 : "integer allreduces");
    }
    return RP_OK;

err_free:
    rp__hier_destroy(h);
    free(ids);
    return status;
}
