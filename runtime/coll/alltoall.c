/*
 * All-to-all over the transport: pairwise exchange. At step i (1..n-1)
 * rank r sends its share for rank r+i and receives rank r-i's share for
 * it, straight between the caller's buffers, one message per pair (the
 * transport moves a large one by rendezvous, without copies).
 *
 * Every receive is posted first, so no message arrives unexpected and
 * lands in a bounce buffer; the sends go out a window of steps at a time
 * (RINGPOINT_COLL_WINDOW), so that a rank does not push its whole buffer
 * into the network at once and its peers' receives drain in the order
 * they are sent. Empty shares send nothing: both sides know the count.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/chunk.h"
#include "coll/comm.h"

#include <string.h>

rp_status_t rp__alltoall_pairwise(rp_comm_t *c, const void *sendbuf,
                                  const size_t *scounts, const size_t *sdispls,
                                  void *recvbuf, const size_t *rcounts,
                                  const size_t *rdispls)
{
    const int n = c->size, r = c->rank;
    const size_t win = c->window > 0 ? (size_t)c->window : 1;
    rp_treq_t *reqs, *sends, *recvs;
    rp_status_t status;

    if (scounts[r] > 0) {
        memmove((char *)recvbuf + rdispls[r],
                (const char *)sendbuf + sdispls[r], scounts[r]);
    }
    if (n == 1) {
        return RP_OK;
    }
    status = rp__comm_reqs(c, 2 * (size_t)(n - 1), &reqs);
    if (status != RP_OK) {
        return status;
    }
    sends = reqs;
    recvs = reqs + (n - 1);
    for (int i = 1; i < n && status == RP_OK; i++) {
        const int q = rp__mod(r - i, n);

        if (rcounts[q] > 0) {
            status = rp__comm_irecv(c, q, 0, (char *)recvbuf + rdispls[q],
                                    rcounts[q], &recvs[i - 1]);
        }
    }
    for (int i = 1; i < n && status == RP_OK; i++) {
        const int q = (r + i) % n;

        if ((size_t)i > win) {
            /* The step a window back has left. */
            status = rp__comm_wait(c, &sends[(size_t)i - 1 - win]);
        }
        if (status == RP_OK && scounts[q] > 0) {
            status = rp__comm_isend(c, q, 0, (const char *)sendbuf + sdispls[q],
                                    scounts[q], &sends[i - 1]);
        }
    }
    if (status == RP_OK) {
        status = rp__comm_wait_all(c, reqs, 2 * (size_t)(n - 1));
    }
    if (status != RP_OK) {
        rp__comm_abandon(c);
    }
    return status;
}
