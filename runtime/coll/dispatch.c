/*
 * The host dispatcher (dispatch.h): the cross-rank argument check and
 * running one described host collective through the path selector.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/select.h"
#include "util/log.h"

rp_status_t rp__coll_check(rp_comm_t *c, uint64_t signature)
{
    /* MAX of (s, -s) gives every rank the largest and the smallest
     * signature at once; 63 bits so that -s cannot overflow. */
    int64_t v[2];
    rp_status_t status;

    v[0] = (int64_t)(signature >> 1);
    v[1] = -v[0];
    status = rp__comm_allreduce(c, v, v, 2, RP_DTYPE_INT64, RP_OP_MAX);
    if (status == RP_OK && v[0] != -v[1]) {
        rp_error("collectives: the ranks called a collective with different "
                 "arguments (signatures %016llx to %016llx): nothing was sent",
                 (unsigned long long)-v[1], (unsigned long long)v[0]);
        status = RP_ERR_MISMATCH;
    }
    return status;
}

static rp_status_t rp_coll_run_one(rp_comm_t *c, const rp__coll_args_t *a)
{
    if (a->signature != 0) {
        rp_status_t status = rp__coll_check(c, a->signature);

        if (status != RP_OK) {
            return status;
        }
    }
    switch (a->kind) {
    case RP__COLL_ALLREDUCE:
        return rp__comm_allreduce(c, a->sendbuf, a->recvbuf, a->count,
                                  a->dtype, a->op);
    case RP__COLL_ALLREDUCE_GROUP:
        return rp__comm_allreduce_group(c, a->sendbufs, a->recvbufs,
                                        a->counts, a->nbufs, a->dtype, a->op,
                                        a->compression);
    case RP__COLL_BROADCAST:
        return rp__comm_broadcast(c, a->recvbuf, a->count, a->root);
    case RP__COLL_ALLGATHER:
        return rp__comm_allgather(c, a->sendbuf, a->recvbuf, a->count);
    case RP__COLL_BARRIER:
        return rp__comm_barrier(c);
    case RP__COLL_REDUCE_SCATTER:
        return rp__comm_reduce_scatter(c, a->sendbuf, a->recvbuf, a->table,
                                       a->dtype, a->op);
    case RP__COLL_ALLTOALL: {
        const size_t n = (size_t)c->size;

        return rp__comm_alltoall(c, a->sendbuf, a->table, a->table + n,
                                 a->recvbuf, a->table + 2 * n,
                                 a->table + 3 * n);
    }
    }
    rp_error("collectives: unknown request kind %d", (int)a->kind);
    return RP_ERR_INVALID_ARG;
}

rp_status_t rp__coll_run(rp_comm_t *c, const rp__coll_args_t *a)
{
    rp_status_t status = rp_coll_run_one(c, a);

    /* What this rank owes its peers leaves before the caller may block
     * elsewhere (see the transport's flush). */
    if (status == RP_OK && c->tp != NULL && c->tp->ops->flush != NULL) {
        c->tp->ops->flush(c->tp);
    }
    return status;
}
