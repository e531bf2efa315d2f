/*
 * Grouped reduce-scatter: many buffers, each cut into per-rank blocks, in
 * one reduce-scatter. Rank q's blocks of every buffer are packed side by
 * side into block q of one buffer, the library's reduce-scatter runs once,
 * and this rank's packed block is cut back into the buffers' outputs.
 * The expression per element does not depend on where the element lies
 * (eval.h), so each buffer's result has the bits its own reduce-scatter
 * (and its allreduce) would give.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/select.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

rp_status_t rp__comm_reduce_scatter_group(rp_comm_t *c,
                                          const void *const *sendbufs,
                                          void *const *recvbufs,
                                          const size_t *counts, size_t nbufs,
                                          rp_dtype_t dtype, rp_op_t op)
{
    const int n = c->size, r = c->rank;
    const size_t es = rp_dtype_size(dtype);
    size_t *total = calloc((size_t)n, sizeof(*total));
    size_t all = 0, at = 0;
    char *packed = NULL, *mine = NULL;
    rp_status_t status = RP_OK;
    void *p;

    if (total == NULL) {
        rp_error("reduce-scatter: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < nbufs; i++) {
        for (int q = 0; q < n; q++) {
            total[q] += counts[i * (size_t)n + (size_t)q];
        }
    }
    for (int q = 0; q < n; q++) {
        all += total[q];
    }
    if (all > 0) {
        status = rp__comm_scratch(c, &c->fuse, all * es, &p);
        packed = p;
        mine = status == RP_OK ? malloc(total[r] * es + 1) : NULL;
        if (status == RP_OK && mine == NULL) {
            rp_error("reduce-scatter: out of memory for %zu bytes",
                     total[r] * es);
            status = RP_ERR_NO_MEMORY;
        }
    }
    /* Block q: every buffer's block q, in buffer order. */
    for (int q = 0; q < n && status == RP_OK && all > 0; q++) {
        for (size_t i = 0; i < nbufs; i++) {
            const size_t *ci = counts + i * (size_t)n;
            size_t off = 0, len = ci[q] * es;

            for (int k = 0; k < q; k++) {
                off += ci[k];
            }
            if (len > 0) {
                memcpy(packed + at, (const char *)sendbufs[i] + off * es, len);
            }
            at += len;
        }
    }
    if (status == RP_OK) {
        /* Even with nothing to move: every rank takes part alike. */
        status = rp__comm_reduce_scatter(c, packed, mine, total, dtype, op);
    }
    at = 0;
    for (size_t i = 0; i < nbufs && status == RP_OK; i++) {
        const size_t len = counts[i * (size_t)n + (size_t)r] * es;

        if (len > 0) {
            memcpy(recvbufs[i], mine + at, len);
        }
        at += len;
    }
    free(mine);
    free(total);
    return status;
}
