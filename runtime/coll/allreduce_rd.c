/*
 * Allreduce for small messages: recursive doubling, log2(n) exchanges of
 * the whole buffer with partners rank ^ 2^k.
 *
 * Determinism: at every exchange both partners compute
 * (lower half's value) OP (upper half's value), never "mine OP theirs", so
 * the two sides evaluate the same expression even for operations whose
 * result depends on the operand order (NaN payloads in MIN/MAX). Ranks
 * beyond the largest power of two first hand their data to rank - p2,
 * which folds it in (its own value first), and get the result back at the
 * end. float16/bfloat16 are carried and combined as float32 and rounded
 * once, identically on every rank (with half_wire, as themselves: each
 * exchange's result rounded, still the same expression on both sides).
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/chunk.h"
#include "coll/comm.h"
#include "reduce/reduce.h"

#include <string.h>

/* Tag indices: 0 the extra ranks' data, 1 + k exchange k, 0xFFFF result. */
#define RP_RD_PRE  0
#define RP_RD_POST 0xFFFF

rp_status_t rp__allreduce_rd(rp_comm_t *c, const void *sendbuf, void *recvbuf,
                             size_t count, rp_dtype_t dtype, rp_op_t op,
                             bool half_wire)
{
    const int n = c->size, r = c->rank;
    const int p2 = rp__pow2_floor(n), rem = n - p2;
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    const rp_dtype_t wtype = half ? RP_DTYPE_FLOAT32 : dtype;
    const size_t es = rp_dtype_size(dtype), wes = rp_dtype_size(wtype);
    const size_t wbytes = count * wes;
    const rp_op_t rop = op == RP_OP_AVG ? RP_OP_SUM : op;
    rp_treq_t *reqs;
    rp_status_t status;
    char *acc, *tmp;
    void *p;

    status = rp__comm_reqs(c, 2, &reqs);
    if (status != RP_OK) {
        return status;
    }
    status = rp__comm_scratch(c, &c->tmp, wbytes, &p);
    if (status != RP_OK) {
        return status;
    }
    tmp = p;
    if (half) {
        status = rp__comm_scratch(c, &c->work, wbytes, &p);
        if (status != RP_OK) {
            return status;
        }
        acc = p;
        rp__half_widen(dtype, (float *)acc, sendbuf, count);
    } else {
        acc = recvbuf;
        if (sendbuf != recvbuf) {
            memcpy(acc, sendbuf, wbytes);
        }
    }

    if (r >= p2) {
        /* An extra rank: its partner does the work. */
        status = rp__comm_exchange(c, reqs, r - p2, RP_RD_PRE, acc, wbytes,
                                   NULL, 0);
        if (status == RP_OK) {
            status = rp__comm_exchange(c, reqs, r - p2, RP_RD_POST, NULL, 0,
                                       recvbuf, count * es);
        }
        goto out;
    }
    if (r < rem) {
        status = rp__comm_exchange(c, reqs, r + p2, RP_RD_PRE, NULL, 0, tmp,
                                   wbytes);
        if (status != RP_OK) {
            goto out;
        }
        rp__reduce(wtype, rop, acc, acc, tmp, count);
    }
    for (int mask = 1, k = 1; mask < p2; mask <<= 1, k++) {
        int partner = r ^ mask;

        status = rp__comm_exchange(c, reqs, partner, (size_t)k, acc, wbytes,
                                   tmp, wbytes);
        if (status != RP_OK) {
            goto out;
        }
        if (r < partner) {
            rp__reduce(wtype, rop, acc, acc, tmp, count);
        } else {
            rp__reduce(wtype, rop, acc, tmp, acc, count);
        }
    }
    if (op == RP_OP_AVG) {
        rp__reduce_scale(wtype, acc, count, n);
    }
    if (half) {
        rp__half_narrow(dtype, recvbuf, (const float *)acc, count);
    }
    if (r < rem) {
        status = rp__comm_exchange(c, reqs, r + p2, RP_RD_POST, recvbuf,
                                   count * es, NULL, 0);
    }

out:
    if (status != RP_OK) {
        rp__comm_abandon(c);
    }
    return status;
}
