/*
 * Allreduce for large messages between two ranks: the pipelined ring,
 * reduce-scatter then allgather, cut into segments that flow as a
 * pipeline.
 *
 * Rank r sends block r; it receives a segment of the other rank's block,
 * folds its own data in and keeps the finished segment, which the
 * allgather step then carries back, received straight into the other
 * rank's output. The allgather of one segment overlaps the reduction of
 * the next, which the owners' reduce-scatter (allreduce_owners.c, the
 * algorithm for more ranks) cannot do: between two ranks the ring is the
 * faster of the two at the same bytes.
 *
 * The bits are the allreduce's one expression (eval.h), x0 OP x1 for
 * every element: rank 1 folds its own data in after the partial from rank
 * 0 (partial OP own), rank 0 before the partial from rank 1 (own OP
 * partial). With more ranks a ring's block would start at a different
 * rank for every block, so an element's rounding would depend on its
 * offset; that is why the ring serves two ranks only.
 *
 * The loop, the message numbering and the window are the pipelined ring's
 * (ring.h); this file is the per-step operation. Out of place partials
 * land in the output itself, in place in a few scratch slots (the input
 * must survive until folded in). float16/bfloat16 partials travel as
 * float32 and are combined in float32 and rounded once, by the block's
 * owner; with half_wire (compression) they travel as they are.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/comm.h"
#include "coll/ring.h"
#include "reduce/reduce.h"

typedef struct rp_ar {
    int n;
    bool own_first; /* rank 0: own OP partial */
    const char *in;
    char *out, *work, *slots, *wide;
    size_t es, wes, nslots, seg;
    rp_dtype_t dtype, wtype;
    rp_op_t op, rop;
    bool half, inplace;
} rp_ar_t;

/* Step 0: our own block, as float32 for half types. */
static const void *rp_ar_own(void *arg, const rp__ring_unit_t *u,
                             size_t *bytes_p)
{
    rp_ar_t *a = arg;
    const void *src = a->in + u->off * a->es;

    if (a->half) {
        rp__half_widen(a->dtype, (float *)(a->work + u->off * a->wes), src,
                       u->len);
        src = a->work + u->off * a->wes;
    }
    *bytes_p = u->len * a->wes;
    return src;
}

/* Receive unit @u goes where it will be folded in or kept. */
static void *rp_ar_dest(void *arg, const rp__ring_unit_t *u, size_t idx,
                        size_t *bytes_p)
{
    rp_ar_t *a = arg;

    if (u->step >= a->n - 1) {
        *bytes_p = u->len * a->es;
        return a->out + u->off * a->es;
    }
    *bytes_p = u->len * a->wes;
    if (a->half) {
        return a->work + u->off * a->wes;
    }
    if (a->inplace) {
        return a->slots + (idx % a->nslots) * a->seg * a->wes;
    }
    return a->out + u->off * a->es;
}

static const void *rp_ar_step(void *arg, const rp__ring_unit_t *u, void *buf,
                              size_t *bytes_p)
{
    rp_ar_t *a = arg;
    const int n = a->n;
    char *acc;

    if (u->step >= n - 1) {
        /* Allgather: forward the final bytes but at the last step. */
        *bytes_p = u->len * a->es;
        return u->step < 2 * n - 3 ? buf : NULL;
    }
    acc = (a->half ? a->work : a->out) + u->off * a->wes;
    if (a->half && a->own_first) {
        /* Our widened values first, then the partial: the operand order
         * matters for MIN/MAX of signed zeros and NaNs. */
        rp__half_widen(a->dtype, (float *)a->wide, a->in + u->off * a->es,
                       u->len);
        rp__reduce(RP_DTYPE_FLOAT32, a->rop, acc, a->wide, acc, u->len);
    } else if (a->half) {
        rp__reduce_acc_f32(a->rop, (float *)acc, a->in + u->off * a->es,
                           a->dtype, u->len);
    } else if (a->inplace) {
        rp__reduce(a->dtype, a->rop, acc, a->own_first ? acc : buf,
                   a->own_first ? buf : acc, u->len);
    } else if (a->own_first) {
        rp__reduce(a->dtype, a->rop, acc, a->in + u->off * a->es, acc,
                   u->len);
    } else {
        rp__reduce_inplace(a->dtype, a->rop, acc, a->in + u->off * a->es,
                           u->len);
    }
    *bytes_p = u->len * a->wes;
    if (u->step < n - 2) {
        return acc;
    }
    /* This rank owns the block: finish it once, for all. */
    if (a->op == RP_OP_AVG) {
        rp__reduce_scale(a->wtype, acc, u->len, n);
    }
    if (a->half) {
        rp__half_narrow(a->dtype, a->out + u->off * a->es,
                        (const float *)acc, u->len);
    }
    *bytes_p = u->len * a->es;
    return a->out + u->off * a->es;
}

static const rp__ring_ops_t rp_ar_ops = {
    .own = rp_ar_own,
    .dest = rp_ar_dest,
    .step = rp_ar_step,
};

rp_status_t rp__allreduce_ring(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op, bool half_wire)
{
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    const rp_dtype_t wtype = half ? RP_DTYPE_FLOAT32 : dtype;
    const size_t wes = rp_dtype_size(wtype);
    rp_ar_t a = {
        .n = c->size, .own_first = c->rank == 0, .in = sendbuf,
        .out = recvbuf, .work = recvbuf,
        .es = rp_dtype_size(dtype), .wes = wes,
        .nslots = (size_t)c->window + 1,
        .seg = c->seg_bytes / wes > 0 ? c->seg_bytes / wes : 1,
        .dtype = dtype, .wtype = wtype, .op = op,
        .rop = op == RP_OP_AVG ? RP_OP_SUM : op,
        .half = half, .inplace = sendbuf == recvbuf && !half,
    };
    rp__ring_t ring = {.r = c->rank, .nblocks = c->size,
                       .nsteps = 2 * c->size - 2, .count = count,
                       .seg = a.seg, .send_own = true};
    rp_status_t status = RP_OK;
    void *p;

    if (half) {
        status = rp__comm_scratch(c, &c->work, count * wes, &p);
        a.work = p;
        if (status == RP_OK) {
            status = rp__comm_scratch(c, &c->tmp, a.seg * wes, &p);
            a.wide = p;
        }
    } else if (a.inplace) {
        status = rp__comm_scratch(c, &c->tmp, a.nslots * a.seg * wes, &p);
        a.slots = p;
    }
    if (status != RP_OK) {
        return status;
    }
    return rp__ring_run(c, &ring, &rp_ar_ops, &a);
}
