/*
 * Allgather: the ring. At step t rank r passes block r-t to its right and
 * receives block r-t-1 from its left straight into the output, segment by
 * segment, forwarding each segment as soon as it lands.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"

#include <string.h>

rp_status_t rp__comm_allgather(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t bytes)
{
    const int n = c->size, r = c->rank;
    const int left = rp__mod(r - 1, n), right = rp__mod(r + 1, n);
    const size_t seg = c->seg_bytes, nseg = rp__seg_count(bytes, seg);
    const size_t nunits = (size_t)(n - 1) * nseg;
    rp_treq_t *reqs, *sends, *recvs;
    rp_status_t status;
    char *out = recvbuf;
    size_t posted = 0;

    status = rp__comm_begin(c, "allgather");
    if (status != RP_OK || bytes == 0) {
        return status;
    }
    /* In place when the input already sits at this rank's block. */
    if (sendbuf != out + (size_t)r * bytes) {
        memmove(out + (size_t)r * bytes, sendbuf, bytes);
    }
    if (n == 1) {
        return RP_OK;
    }
    status = rp__comm_reqs(c, 2 * nunits, &reqs);
    if (status != RP_OK) {
        return status;
    }
    sends = reqs;
    recvs = reqs + nunits;

    /* Unit u: step u / nseg, segment u % nseg of block r - step - 1. */
#define RP_UNIT_BUF(u)                                                     \
    (out + (size_t)rp__mod(r - (int)((u) / nseg) - 1, n) * bytes +         \
     ((u) % nseg) * seg)
#define RP_UNIT_LEN(u) ((u) % nseg == nseg - 1 ? bytes - ((u) % nseg) * seg : seg)
    for (; posted < nunits && posted < (size_t)c->window; posted++) {
        status = rp__comm_irecv(c, left, posted, RP_UNIT_BUF(posted),
                                RP_UNIT_LEN(posted), &recvs[posted]);
        if (status != RP_OK) {
            goto err_abandon;
        }
    }
    for (size_t j = 0; j < nseg; j++) {
        status = rp__comm_isend(c, right, j, out + (size_t)r * bytes + j * seg,
                                RP_UNIT_LEN(j), &sends[j]);
        if (status != RP_OK) {
            goto err_abandon;
        }
    }
    for (size_t u = 0; u < nunits; u++) {
        status = rp__comm_wait(c, &recvs[u]);
        if (status != RP_OK) {
            goto err_abandon;
        }
        if (posted < nunits) {
            status = rp__comm_irecv(c, left, posted, RP_UNIT_BUF(posted),
                                    RP_UNIT_LEN(posted), &recvs[posted]);
            if (status != RP_OK) {
                goto err_abandon;
            }
            posted++;
        }
        /* Forward everything but the last step's blocks: our send number
         * u + nseg is the right neighbour's receive number. */
        if (u + nseg < nunits) {
            status = rp__comm_isend(c, right, u + nseg, RP_UNIT_BUF(u),
                                    RP_UNIT_LEN(u), &sends[u + nseg]);
            if (status != RP_OK) {
                goto err_abandon;
            }
        }
    }
#undef RP_UNIT_BUF
#undef RP_UNIT_LEN
    status = rp__comm_wait_all(c, sends, nunits);
    if (status != RP_OK) {
        goto err_abandon;
    }
    return RP_OK;

err_abandon:
    rp__comm_abandon(c);
    return status;
}
