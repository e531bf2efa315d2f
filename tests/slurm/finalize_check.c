/*
 * ringpoint-finalize-check: rp_finalize with non-blocking collectives not
 * yet waited for (a program that leaves on an exception, Python's atexit
 * shutdown). The queued collectives run to the end on the progress thread
 * before the context goes (the peers expect them), so their results are in
 * the buffers when rp_finalize returns; and rp_finalize's own barrier must
 * wait for them instead of driving the UCX worker beside the progress
 * thread: it did, and UCX aborted every such run ("ucp_worker.c: Assertion
 * `worker->inprogress++ == 0' failed", 5 of 5 at 3 ranks over TCP).
 *
 *   ringpoint-finalize-check        (2 or more ranks)
 *
 * Prints "finalize-check: ok" on rank 0; exits 1 on a wrong result.
 */
#include <ringpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BIG (8u << 20) /* floats: 32 MiB, still in flight at rp_finalize */

int main(void)
{
    rp_context_attr_t attr;
    rp_request_h big_req, bar_req;
    rp_context_h ctx;
    float *big;
    int rank, size;

    big = malloc(BIG * sizeof(float));
    if (big == NULL || rp_init(NULL, &ctx) != RP_OK) {
        return 2;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE;
    if (rp_context_query(ctx, &attr) != RP_OK) {
        return 2;
    }
    rank = attr.rank;
    size = attr.size;
    for (size_t i = 0; i < BIG; i++) {
        big[i] = 1.0f;
    }
    if (rp_iallreduce(ctx, big, big, BIG, RP_DTYPE_FLOAT32, RP_OP_SUM,
                      &big_req) != RP_OK ||
        rp_ibarrier(ctx, &bar_req) != RP_OK) {
        return 2;
    }
    /* Neither request is waited for: rp_finalize runs them first. (The
     * handles are not used again; their memory goes with the process.) */
    rp_finalize(ctx);
    for (size_t i = 0; i < BIG; i += 4099) {
        if (big[i] != (float)size) {
            fprintf(stderr, "finalize-check[%d]: allreduce[%zu] = %g, "
                    "expected %d\n", rank, i, (double)big[i], size);
            return 1;
        }
    }
    free(big);
    if (rank == 0) {
        printf("finalize-check: ok\n");
    }
    return 0;
}
