/*
 * Join (rp_join): a rank that has run out of work (uneven data) stands in
 * for the collectives the others still run, contributing zeros to their
 * allreduces, until every rank has joined.
 *
 * There is no coordinator to tell a joined rank what the others call. The
 * cross-rank argument check is where every checked collective meets
 * before it moves data, so the check carries a descriptor of the call:
 * one MAX-allreduce of nine int64s. Active ranks put in their signature
 * (as (s, -s): MAX gives the largest and the smallest at once), the call's
 * kind, count, dtype, op and wire format, and their rank; joined ranks put
 * in values below any of those, and the flags "joined" and "joined just
 * now". Every rank then knows the same things at the same moment: whether
 * the active ranks agree, whether a rank has joined, what the call is,
 * and, once no rank is active, which rank joined last.
 *
 * What a joined rank does for each call:
 * - an allreduce: the same allreduce with zeros (so the others' sums and
 *   averages are those of their own values over all the ranks, Horovod's
 *   join);
 * - a grouped allreduce: the lowest active rank broadcasts the buffers'
 *   counts first (every active rank takes part), then the same grouped
 *   allreduce with zeros, which forms the same fused buffers;
 * - anything else (broadcast, allgather, reduce-scatter, all-to-all, a
 *   check alone, device collectives): nothing; the active ranks fail the
 *   call with RP_ERR_STATE, and no data moves.
 * Collectives without a signature skip the check, so a joined rank cannot
 * see them: with a rank joined, only checked calls may run (ringpoint.torch
 * checks every call unless RINGPOINT_CHECK=0).
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/select.h"
#include "util/log.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
    RP_AG_SIG, RP_AG_NSIG, RP_AG_ACTIVE, RP_AG_JOINED, RP_AG_KIND,
    RP_AG_COUNT, RP_AG_TYPE, RP_AG_LAST, RP_AG_ROOT, RP_AG_N
};

typedef struct rp_agreed {
    bool same;       /* the active ranks' signatures agree */
    int64_t lo, hi;  /* their smallest and largest (when some are active) */
    bool active;     /* some rank is not joined */
    bool joined;     /* some rank is */
    int kind;        /* the active ranks' call */
    size_t count;    /* its count (grouped: the number of buffers) */
    rp_dtype_t dtype;
    rp_op_t op;
    rp_compression_t comp;
    int last;        /* the highest rank that joined in this round, or -1 */
    int root;        /* the lowest active rank */
} rp_agreed_t;

/* One round of the check. @a: this rank's call, or NULL for a joined rank
 * (@first: its first round). */
static rp_status_t rp_agree(rp_comm_t *c, const rp__coll_args_t *a,
                            bool first, rp_agreed_t *g)
{
    int64_t v[RP_AG_N];
    rp_status_t status;

    if (a != NULL) {
        const int64_t s = (int64_t)(a->signature >> 1);

        v[RP_AG_SIG] = s;
        v[RP_AG_NSIG] = -s;
        v[RP_AG_ACTIVE] = 1;
        v[RP_AG_JOINED] = 0;
        v[RP_AG_KIND] = a->kind;
        v[RP_AG_COUNT] = (int64_t)(a->kind == RP__COLL_ALLREDUCE_GROUP
                                       ? a->nbufs : a->count);
        v[RP_AG_TYPE] = (int64_t)a->dtype | (int64_t)a->op << 8 |
                        (int64_t)a->compression << 16;
        v[RP_AG_LAST] = -1;
        v[RP_AG_ROOT] = -(int64_t)c->rank;
    } else {
        for (int i = 0; i < RP_AG_N; i++) {
            v[i] = INT64_MIN;
        }
        v[RP_AG_ACTIVE] = 0;
        v[RP_AG_JOINED] = 1;
        v[RP_AG_LAST] = first ? c->rank : -1;
    }
    status = rp__comm_allreduce(c, v, v, RP_AG_N, RP_DTYPE_INT64, RP_OP_MAX);
    if (status != RP_OK) {
        return status;
    }
    /* With no rank active the signature fields hold INT64_MIN, which has
     * no negation: nothing to compare then. */
    *g = (rp_agreed_t){
        .same = v[RP_AG_ACTIVE] == 0 || v[RP_AG_SIG] == -v[RP_AG_NSIG],
        .active = v[RP_AG_ACTIVE] != 0,
        .joined = v[RP_AG_JOINED] != 0,
        .kind = (int)v[RP_AG_KIND],
        .count = (size_t)v[RP_AG_COUNT],
        .dtype = (rp_dtype_t)(v[RP_AG_TYPE] & 0xFF),
        .op = (rp_op_t)(v[RP_AG_TYPE] >> 8 & 0xFF),
        .comp = (rp_compression_t)(v[RP_AG_TYPE] >> 16 & 0xFF),
        .last = (int)v[RP_AG_LAST],
        .root = v[RP_AG_ACTIVE] != 0 ? (int)-v[RP_AG_ROOT] : -1,
    };
    if (g->active) {
        g->lo = -v[RP_AG_NSIG];
        g->hi = v[RP_AG_SIG];
    }
    if (g->active && !g->same) {
        g->kind = -1; /* a mismatch: the call does not run */
    }
    return RP_OK;
}

static const char *rp_kind_name(int kind)
{
    switch (kind) {
    case RP__COLL_BROADCAST: return "broadcast";
    case RP__COLL_ALLGATHER: return "allgather";
    case RP__COLL_BARRIER: return "barrier";
    case RP__COLL_REDUCE_SCATTER: return "reduce-scatter";
    case RP__COLL_ALLTOALL: return "all-to-all";
    case RP__COLL_CHECK: return "rp_check";
    default: return "collective";
    }
}

rp_status_t rp__coll_agree(rp_comm_t *c, const rp__coll_args_t *a)
{
    rp_agreed_t g;
    rp_status_t status = rp_agree(c, a, false, &g);

    if (status != RP_OK) {
        return status;
    }
    if (!g.same) {
        rp_error("collectives: the ranks called a collective with different "
                 "arguments (signatures %016llx to %016llx): nothing was sent",
                 (unsigned long long)g.lo, (unsigned long long)g.hi);
        return RP_ERR_MISMATCH;
    }
    if (!g.joined || a->kind == RP__COLL_ALLREDUCE ||
        (a->kind == RP__COLL_ALLREDUCE_GROUP && a->nbufs == 0)) {
        return RP_OK;
    }
    if (a->kind == RP__COLL_ALLREDUCE_GROUP) {
        /* The joined ranks need the counts to form the same packs; the
         * broadcast writes into its buffer, so a copy of the caller's. */
        size_t *counts = malloc(a->nbufs * sizeof(*counts));

        if (counts == NULL) {
            rp_error("collectives: out of memory");
            return RP_ERR_NO_MEMORY;
        }
        memcpy(counts, a->counts, a->nbufs * sizeof(*counts));
        status = rp__comm_broadcast(c, counts, a->nbufs * sizeof(*counts),
                                    g.root);
        free(counts);
        return status;
    }
    rp_error("%s: a rank has joined (rp_join, hvd.join): until every rank "
             "joins, only allreduces run; nothing was sent",
             rp_kind_name(a->kind));
    return RP_ERR_STATE;
}

/* A joined rank's part in the allreduce @g describes: zeros. */
static rp_status_t rp_stand_in(rp_comm_t *c, const rp_agreed_t *g)
{
    const size_t es = rp_dtype_size(g->dtype);
    size_t *counts = NULL, most = g->count;
    void **ptrs = NULL;
    char *zeros = NULL, *sink = NULL;
    rp_status_t status = RP_OK;

    if (g->kind == RP__COLL_ALLREDUCE_GROUP && g->count > 0) {
        counts = malloc(g->count * sizeof(*counts));
        ptrs = malloc(2 * g->count * sizeof(*ptrs));
        if (counts == NULL || ptrs == NULL) {
            rp_error("rp_join: out of memory");
            status = RP_ERR_NO_MEMORY;
            goto out;
        }
        status = rp__comm_broadcast(c, counts, g->count * sizeof(*counts),
                                    g->root);
        most = 0;
        for (size_t i = 0; i < g->count && status == RP_OK; i++) {
            most = counts[i] > most ? counts[i] : most;
        }
    }
    if (status == RP_OK && most > 0) {
        zeros = calloc(most, es);
        sink = malloc(most * es);
        if (zeros == NULL || sink == NULL) {
            rp_error("rp_join: out of memory for %zu bytes", most * es);
            status = RP_ERR_NO_MEMORY;
        }
    }
    if (status != RP_OK) {
        goto out;
    }
    if (g->kind == RP__COLL_ALLREDUCE) {
        status = rp__comm_allreduce(c, zeros, sink, g->count, g->dtype, g->op);
    } else if (g->count > 0) {
        for (size_t i = 0; i < g->count; i++) {
            ptrs[i] = zeros;
            ptrs[g->count + i] = sink;
        }
        status = rp__comm_allreduce_group(c, (const void *const *)ptrs,
                                          (void *const *)(ptrs + g->count),
                                          counts, g->count, g->dtype, g->op,
                                          g->comp);
    }
out:
    free(sink);
    free(zeros);
    free(ptrs);
    free(counts);
    return status;
}

rp_status_t rp__coll_join(rp_comm_t *c, int *last_p)
{
    rp_agreed_t g;
    rp_status_t status;
    bool first = true;

    for (;;) {
        status = rp_agree(c, NULL, first, &g);
        if (status != RP_OK) {
            return status;
        }
        first = false;
        if (!g.active) {
            *last_p = g.last;
            return RP_OK;
        }
        if (g.same && (g.kind == RP__COLL_ALLREDUCE ||
                       g.kind == RP__COLL_ALLREDUCE_GROUP)) {
            status = rp_stand_in(c, &g);
            if (status != RP_OK) {
                return status;
            }
        }
    }
}
