/*
 * Allreduce for large messages among many ranks: recursive halving, then
 * recursive doubling of the halves back (Rabenseifner's algorithm, MPICH's
 * default for large messages).
 *
 * Ranks past the largest power of two p first hand their buffer to rank -
 * p, which folds it in (its own value first), as recursive doubling does.
 * Then the p ranks halve: at stage k (mask 2^k, smallest first) rank r and
 * its partner r ^ mask split the range both hold, each keeps one half, and
 * receives the partner's values of it, combining (lower rank's) OP (upper
 * rank's). After log2 p stages each rank holds 1/p of the result, every
 * element of it the allreduce's one expression (eval.h): the stages pair
 * the ranks exactly as recursive doubling does. The halves then go back
 * by doubling, largest mask first, and the extra ranks get the result.
 *
 * Each rank talks to log2 p partners (and the extra rank its one), the
 * peers recursive doubling already has: the endpoints a rank opens stay
 * 2 log2 n + O(1) at any job size, where the owners' reduce-scatter
 * (allreduce_owners.c) talks to every rank. The bytes are the ring's,
 * 2(p-1)/p of the buffer, but when n is not a power of two the extra
 * ranks' buffer crosses twice more.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/chunk.h"
#include "coll/comm.h"
#include "reduce/reduce.h"

#include <string.h>

/* Tag indices: 0 the extra ranks' data, 1 + k halving stage k, 32 + k
 * doubling stage k, 0xFFFF the extra ranks' result. */
#define RP_RH_PRE  0
#define RP_RH_HALF 1
#define RP_RH_BACK 32
#define RP_RH_POST 0xFFFF

/* The range [lo, hi) rank @r keeps after the halving stages whose mask is
 * below @upto: each stage splits the range at its middle, and the rank
 * keeps the lower half when its bit of the mask is 0 (as the halving loop
 * does). */
static void rp_rh_range(size_t count, int r, int upto, size_t *lo_p,
                        size_t *hi_p)
{
    size_t lo = 0, hi = count;

    for (int mask = 1; mask < upto; mask <<= 1) {
        size_t mid = lo + (hi - lo) / 2;

        if (r & mask) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    *lo_p = lo;
    *hi_p = hi;
}

rp_status_t rp__allreduce_rh(rp_comm_t *c, const void *sendbuf, void *recvbuf,
                             size_t count, rp_dtype_t dtype, rp_op_t op,
                             bool half_wire)
{
    const int n = c->size, r = c->rank;
    const int p2 = rp__pow2_floor(n), rem = n - p2;
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    const rp_dtype_t wtype = half ? RP_DTYPE_FLOAT32 : dtype;
    const size_t es = rp_dtype_size(dtype), wes = rp_dtype_size(wtype);
    const rp_op_t rop = op == RP_OP_AVG ? RP_OP_SUM : op;
    char *acc, *tmp, *out = recvbuf;
    rp_treq_t *reqs;
    rp_status_t status;
    size_t lo, hi;
    void *p;
    int stages = 0;

    status = rp__comm_reqs(c, 2, &reqs);
    if (status == RP_OK) {
        /* The extra ranks' whole buffer, or the first stage's half. */
        status = rp__comm_scratch(c, &c->tmp, count * wes, &p);
    }
    if (status != RP_OK) {
        return status;
    }
    tmp = p;
    if (half) {
        status = rp__comm_scratch(c, &c->work, count * wes, &p);
        if (status != RP_OK) {
            return status;
        }
        acc = p;
        rp__half_widen(dtype, (float *)acc, sendbuf, count);
    } else {
        acc = recvbuf;
        if (sendbuf != recvbuf) {
            memcpy(acc, sendbuf, count * es);
        }
    }

    if (r >= p2) {
        /* An extra rank: its partner does the work. */
        status = rp__comm_exchange(c, reqs, r - p2, RP_RH_PRE, acc, count * wes,
                                   NULL, 0);
        if (status == RP_OK) {
            status = rp__comm_exchange(c, reqs, r - p2, RP_RH_POST, NULL, 0,
                                       out, count * es);
        }
        goto out;
    }
    if (r < rem) {
        status = rp__comm_exchange(c, reqs, r + p2, RP_RH_PRE, NULL, 0, tmp,
                                   count * wes);
        if (status != RP_OK) {
            goto out;
        }
        rp__reduce(wtype, rop, acc, acc, tmp, count);
    }

    /* Halving: keep one half of the range, fold the partner's in. */
    lo = 0;
    hi = count;
    for (int mask = 1; mask < p2; mask <<= 1, stages++) {
        const int partner = r ^ mask;
        const size_t mid = lo + (hi - lo) / 2;
        const size_t klo = r & mask ? mid : lo, khi = r & mask ? hi : mid;
        const size_t glo = r & mask ? lo : mid, ghi = r & mask ? mid : hi;

        status = rp__comm_exchange(c, reqs, partner,
                                   RP_RH_HALF + (size_t)stages,
                                   acc + glo * wes, (ghi - glo) * wes, tmp,
                                   (khi - klo) * wes);
        if (status != RP_OK) {
            goto out;
        }
        if (r < partner) {
            rp__reduce(wtype, rop, acc + klo * wes, acc + klo * wes, tmp,
                       khi - klo);
        } else {
            rp__reduce(wtype, rop, acc + klo * wes, tmp, acc + klo * wes,
                       khi - klo);
        }
        lo = klo;
        hi = khi;
    }
    /* This rank's share is final: finish it once, into the output. */
    if (op == RP_OP_AVG) {
        rp__reduce_scale(wtype, acc + lo * wes, hi - lo, n);
    }
    if (half) {
        rp__half_narrow(dtype, out + lo * es, (const float *)(acc + lo * wes),
                        hi - lo);
    }

    /* Doubling: the shares back, largest mask first, in the output. */
    for (int mask = p2 >> 1; mask >= 1; mask >>= 1) {
        const int partner = r ^ mask;
        size_t plo, phi;

        stages--;
        rp_rh_range(count, partner, mask << 1, &plo, &phi);
        rp_rh_range(count, r, mask << 1, &lo, &hi);
        status = rp__comm_exchange(c, reqs, partner,
                                   RP_RH_BACK + (size_t)stages,
                                   out + lo * es, (hi - lo) * es,
                                   out + plo * es, (phi - plo) * es);
        if (status != RP_OK) {
            goto out;
        }
    }
    if (r < rem) {
        status = rp__comm_exchange(c, reqs, r + p2, RP_RH_POST, out, count * es,
                                   NULL, 0);
    }

out:
    if (status != RP_OK) {
        rp__comm_abandon(c);
    }
    return status;
}
