/*
 * Broadcast: a pipelined chain from the root round the ring. Every rank
 * forwards each segment as soon as it lands, so for large buffers the time
 * approaches one buffer's transfer whatever the number of ranks.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"

rp_status_t rp__comm_broadcast(rp_comm_t *c, void *buf, size_t bytes, int root)
{
    const int n = c->size, v = rp__mod(c->rank - root, n);
    const int prev = rp__mod(c->rank - 1, n), next = rp__mod(c->rank + 1, n);
    const bool last = v == n - 1;
    const size_t seg = c->seg_bytes, nseg = rp__seg_count(bytes, seg);
    rp_treq_t *reqs, *sends, *recvs;
    rp_status_t status;
    size_t posted = 0;
    char *data = buf;

    status = rp__comm_begin(c, "broadcast");
    if (status != RP_OK || n == 1 || bytes == 0) {
        return status;
    }
    status = rp__comm_reqs(c, 2 * nseg, &reqs);
    if (status != RP_OK) {
        return status;
    }
    sends = reqs;
    recvs = reqs + nseg;

#define RP_SEG_LEN(j) ((j) == nseg - 1 ? bytes - (j) * seg : seg)
    if (v == 0) {
        for (size_t j = 0; j < nseg; j++) {
            status = rp__comm_isend(c, next, j, data + j * seg, RP_SEG_LEN(j),
                                    &sends[j]);
            if (status != RP_OK) {
                goto err_abandon;
            }
        }
    } else {
        for (; posted < nseg && posted < (size_t)c->window; posted++) {
            status = rp__comm_irecv(c, prev, posted, data + posted * seg,
                                    RP_SEG_LEN(posted), &recvs[posted]);
            if (status != RP_OK) {
                goto err_abandon;
            }
        }
        for (size_t j = 0; j < nseg; j++) {
            status = rp__comm_wait(c, &recvs[j]);
            if (status != RP_OK) {
                goto err_abandon;
            }
            if (posted < nseg) {
                status = rp__comm_irecv(c, prev, posted, data + posted * seg,
                                        RP_SEG_LEN(posted), &recvs[posted]);
                if (status != RP_OK) {
                    goto err_abandon;
                }
                posted++;
            }
            if (!last) {
                status = rp__comm_isend(c, next, j, data + j * seg,
                                        RP_SEG_LEN(j), &sends[j]);
                if (status != RP_OK) {
                    goto err_abandon;
                }
            }
        }
    }
#undef RP_SEG_LEN
    status = rp__comm_wait_all(c, sends, nseg);
    if (status != RP_OK) {
        goto err_abandon;
    }
    return RP_OK;

err_abandon:
    rp__comm_abandon(c);
    return status;
}
