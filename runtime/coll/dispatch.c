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
    const rp__coll_args_t a = {.kind = RP__COLL_CHECK, .signature = signature};

    return rp__coll_agree(c, &a);
}

static rp_status_t rp_coll_run_one(rp_comm_t *c, const rp__coll_args_t *a)
{
    if (a->signature != 0) {
        rp_status_t status = rp__coll_agree(c, a);

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
    case RP__COLL_CHECK:
        return RP_OK; /* the check above was all */
    case RP__COLL_REDUCE_SCATTER_GROUP:
        return rp__comm_reduce_scatter_group(c, a->sendbufs, a->recvbufs,
                                             a->table, a->nbufs, a->dtype,
                                             a->op);
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
