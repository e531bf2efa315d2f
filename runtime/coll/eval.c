/*
 * The allreduce's per-element expression (eval.h), evaluated from the
 * operands a path lays out.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"
#include "coll/eval.h"
#include "reduce/reduce.h"

rp_status_t rp__eval_init(rp_comm_t *c, rp__eval_t *a, int n,
                          const void **ptrs, rp_dtype_t dtype, rp_op_t op,
                          bool half_wire)
{
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    rp_status_t status;
    void *p;

    *a = (rp__eval_t){
        .n = n, .es = rp_dtype_size(dtype),
        .dtype = dtype, .wtype = half ? RP_DTYPE_FLOAT32 : dtype,
        .op = op, .rop = op == RP_OP_AVG ? RP_OP_SUM : op,
        .half = half, .src = ptrs, .v = ptrs + n,
    };
    a->wes = rp_dtype_size(a->wtype);
    status = rp__comm_scratch(c, &c->tmp,
                              (size_t)(rp__pow2_floor(n) + n) * RP_EVAL_BLK *
                                  a->wes,
                              &p);
    a->tmp = p;
    return status;
}

/* Rank q's elements from @i on (i within the piece). */
static const char *rp_src(const rp__eval_t *a, int q, size_t i)
{
    return (const char *)a->src[q] + (i - a->p0) * a->es;
}

/* Elements [i, i + len), len <= RP_EVAL_BLK, into @dst. */
static void rp_eval_blk(const rp__eval_t *a, size_t i, size_t len, char *dst)
{
    const int n = a->n, p2 = rp__pow2_floor(n), rem = n - p2;
    const size_t blk = (size_t)RP_EVAL_BLK * a->wes;
    const void **v = a->v;
    void *out;

    for (int q = 0; q < n; q++) {
        if (a->half) {
            float *w = (float *)(a->tmp + (size_t)(p2 + q) * blk);

            rp__half_widen(a->dtype, w, rp_src(a, q, i), len);
            v[q] = w;
        } else {
            v[q] = rp_src(a, q, i);
        }
    }
    for (int q = 0; q < rem; q++) {
        out = a->tmp + (size_t)q * blk;
        rp__reduce(a->wtype, a->rop, out, v[q], v[q + p2], len);
        v[q] = out;
    }
    /* The last operation writes the result: by then every operand of
     * these elements has been read, so @dst may be one of them. */
    for (int mask = 1; mask < p2; mask <<= 1) {
        for (int q = 0; q < p2; q += 2 * mask) {
            out = 2 * mask == p2 && !a->half ? dst : a->tmp + (size_t)q * blk;
            rp__reduce(a->wtype, a->rop, out, v[q], v[q + mask], len);
            v[q] = out;
        }
    }
    if (a->op == RP_OP_AVG) {
        rp__reduce_scale(a->wtype, (void *)v[0], len, n);
    }
    if (a->half) {
        rp__half_narrow(a->dtype, dst, v[0], len);
    }
}

void rp__eval(const rp__eval_t *a, size_t lo, size_t len, char *dst)
{
    for (size_t i = lo; i < lo + len; i += RP_EVAL_BLK) {
        size_t k = lo + len - i < RP_EVAL_BLK ? lo + len - i : RP_EVAL_BLK;

        rp_eval_blk(a, i, k, dst + (i - lo) * a->es);
    }
}
