/*
 * Barrier: dissemination. In round k every rank signals rank + 2^k and
 * waits for rank - 2^k; after ceil(log2 n) rounds each rank has heard,
 * directly or not, from every other.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/chunk.h"
#include "coll/comm.h"

rp_status_t rp__barrier_dissem(rp_comm_t *c)
{
    const int n = c->size, r = c->rank;
    rp_treq_t *reqs;
    rp_status_t status;
    size_t k = 0;

    status = rp__comm_reqs(c, 2, &reqs);
    if (status != RP_OK) {
        return status;
    }
    for (int d = 1; d < n; d <<= 1, k++) {
        status = rp__comm_irecv(c, rp__mod(r - d, n), k, NULL, 0, &reqs[1]);
        if (status == RP_OK) {
            status = rp__comm_isend(c, (r + d) % n, k, NULL, 0, &reqs[0]);
        }
        if (status == RP_OK) {
            status = rp__comm_wait_all(c, reqs, 2);
        }
        if (status != RP_OK) {
            rp__comm_abandon(c);
            return status;
        }
    }
    return RP_OK;
}
