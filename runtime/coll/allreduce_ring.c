/*
 * Allreduce for large messages: the bandwidth-optimal ring, reduce-scatter
 * then allgather, cut into segments that flow as a pipeline.
 *
 * Rank r sends block r at step 0; at reduce-scatter step s it receives a
 * partial of block r-s-1 from its left neighbour, folds its own data in
 * (partial OP own, always in that order) and passes it right. After n-1
 * steps rank r holds block r+1 complete; the allgather steps then carry the
 * final bytes round the ring, received straight into the output. So block
 * b is always reduced as ((x_b OP x_b+1) OP ...) OP x_b-1, and everyone
 * ends with the owner's exact bytes: identical results on every rank and
 * every run for a given world size.
 *
 * Each rank's receives are numbered in the order its left neighbour sends
 * them, which is also the order it processes them: receive u is left's
 * send number u, and processing u sends our number nseg(block r) + u. The
 * number is the message's tag index. A window of receives is posted ahead;
 * out of place they land in the output itself, in place in a few scratch
 * slots (the input must survive until folded in). float16/bfloat16
 * partials travel as float32 in the work buffer and are rounded once, by
 * the block's owner; with half_wire (compression) they travel as they are,
 * each hop's sum computed in float32 and rounded, like any other type.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"
#include "reduce/reduce.h"

#include <string.h>

typedef struct rp_ring {
    int n, r;
    size_t count, seg;
} rp_ring_t;

typedef struct rp_ring_unit {
    int step;   /* 0 .. 2n-3; below n-1 is reduce-scatter */
    int block;
    size_t j;   /* segment within the block */
    size_t off; /* first element */
    size_t len; /* elements */
} rp_ring_unit_t;

static int rp_ring_block(const rp_ring_t *ring, int step)
{
    int n = ring->n;

    return step < n - 1 ? rp__mod(ring->r - step - 1, n)
                        : rp__mod(ring->r - (step - (n - 1)), n);
}

static void rp_ring_fill(const rp_ring_t *ring, rp_ring_unit_t *u)
{
    size_t bcount = rp__chunk_count(ring->count, ring->n, u->block);
    size_t start = u->j * ring->seg;

    u->off = rp__chunk_offset(ring->count, ring->n, u->block) + start;
    u->len = bcount - start < ring->seg ? bcount - start : ring->seg;
}

/* Move @u to the next non-empty receive unit; false past the last. */
static bool rp_ring_next(const rp_ring_t *ring, rp_ring_unit_t *u)
{
    u->j++;
    while (u->step < 2 * ring->n - 2) {
        u->block = rp_ring_block(ring, u->step);
        if (u->j < rp__seg_count(rp__chunk_count(ring->count, ring->n,
                                                 u->block), ring->seg)) {
            rp_ring_fill(ring, u);
            return true;
        }
        u->step++;
        u->j = 0;
    }
    return false;
}

static bool rp_ring_first(const rp_ring_t *ring, rp_ring_unit_t *u)
{
    u->step = 0;
    u->j = (size_t)-1; /* next() starts with segment 0 */
    return rp_ring_next(ring, u);
}

static size_t rp_ring_units(const rp_ring_t *ring)
{
    size_t total = 0;

    for (int step = 0; step < 2 * ring->n - 2; step++) {
        total += rp__seg_count(rp__chunk_count(ring->count, ring->n,
                                               rp_ring_block(ring, step)),
                               ring->seg);
    }
    return total;
}

rp_status_t rp__allreduce_ring(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t count, rp_dtype_t dtype,
                               rp_op_t op, bool half_wire)
{
    const int n = c->size, r = c->rank;
    const int left = rp__mod(r - 1, n), right = rp__mod(r + 1, n);
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    const rp_dtype_t wtype = half ? RP_DTYPE_FLOAT32 : dtype;
    const size_t es = rp_dtype_size(dtype), wes = rp_dtype_size(wtype);
    const rp_op_t rop = op == RP_OP_AVG ? RP_OP_SUM : op;
    const bool inplace = sendbuf == recvbuf && !half;
    const char *in = sendbuf;
    char *out = recvbuf, *work = recvbuf, *slots = NULL;
    size_t nsend0, nunits, nslots = (size_t)c->window + 1;
    rp_ring_unit_t pu, u;
    rp_ring_t ring;
    rp_treq_t *reqs, *sends, *recvs;
    rp_status_t status;
    void *p;
    bool more;

    ring.n = n;
    ring.r = r;
    ring.count = count;
    ring.seg = c->seg_bytes / wes > 0 ? c->seg_bytes / wes : 1;
    nsend0 = rp__seg_count(rp__chunk_count(count, n, r), ring.seg);
    nunits = rp_ring_units(&ring);

    status = rp__comm_reqs(c, nsend0 + 2 * nunits, &reqs);
    if (status != RP_OK) {
        return status;
    }
    sends = reqs;
    recvs = reqs + nsend0 + nunits;
    if (half) {
        status = rp__comm_scratch(c, &c->work, count * wes, &p);
        work = p;
    } else if (inplace) {
        status = rp__comm_scratch(c, &c->tmp, nslots * ring.seg * wes, &p);
        slots = p;
    }
    if (status != RP_OK) {
        return status;
    }

    /* Receive unit @u goes where it will be folded in or kept. */
#define RP_RECV_BUF(unit, idx)                                              \
    ((unit).step >= n - 1 ? out + (unit).off * es                           \
     : half               ? work + (unit).off * wes                         \
     : inplace            ? slots + ((idx) % nslots) * ring.seg * wes      \
                          : out + (unit).off * es)
#define RP_RECV_LEN(unit) ((unit).len * ((unit).step >= n - 1 ? es : wes))

    /* Pre-post the first window. */
    more = rp_ring_first(&ring, &pu);
    size_t posted = 0;
    for (; more && posted < (size_t)c->window; posted++) {
        status = rp__comm_irecv(c, left, posted, RP_RECV_BUF(pu, posted),
                                RP_RECV_LEN(pu), &recvs[posted]);
        if (status != RP_OK) {
            goto err_abandon;
        }
        more = rp_ring_next(&ring, &pu);
    }

    /* Step 0: our own block, as float32 for half types. */
    for (size_t j = 0; j < nsend0; j++) {
        size_t off = rp__chunk_offset(count, n, r) + j * ring.seg;
        size_t len = rp__chunk_count(count, n, r) - j * ring.seg;
        const void *src = in + off * es;

        len = len < ring.seg ? len : ring.seg;
        if (half) {
            if (dtype == RP_DTYPE_FLOAT16) {
                rp__f16_to_f32((float *)(work + off * wes),
                               (const uint16_t *)src, len);
            } else {
                rp__bf16_to_f32((float *)(work + off * wes),
                                (const uint16_t *)src, len);
            }
            src = work + off * wes;
        }
        status = rp__comm_isend(c, right, j, src, len * wes, &sends[j]);
        if (status != RP_OK) {
            goto err_abandon;
        }
    }

    more = rp_ring_first(&ring, &u);
    for (size_t idx = 0; more; idx++) {
        char *rbuf = RP_RECV_BUF(u, idx);
        const void *fwd = NULL;
        size_t fwd_len = 0;

        status = rp__comm_wait(c, &recvs[idx]);
        if (status != RP_OK) {
            goto err_abandon;
        }
        /* Keep the window full before spending time on the reduction. */
        if (posted < nunits) {
            status = rp__comm_irecv(c, left, posted, RP_RECV_BUF(pu, posted),
                                    RP_RECV_LEN(pu), &recvs[posted]);
            if (status != RP_OK) {
                goto err_abandon;
            }
            posted++;
            rp_ring_next(&ring, &pu);
        }
        if (u.step < n - 1) {
            char *acc = (half ? work : out) + u.off * wes;

            if (half) {
                rp__reduce_acc_f32(rop, (float *)acc, in + u.off * es, dtype,
                                   u.len);
            } else if (inplace) {
                rp__reduce(dtype, rop, acc, rbuf, acc, u.len);
            } else {
                rp__reduce_inplace(dtype, rop, acc, in + u.off * es, u.len);
            }
            fwd = acc;
            fwd_len = u.len * wes;
            if (u.step == n - 2) {
                /* This rank owns the block: finish it once, for all. */
                if (op == RP_OP_AVG) {
                    rp__reduce_scale(wtype, acc, u.len, n);
                }
                if (half && dtype == RP_DTYPE_FLOAT16) {
                    rp__f32_to_f16((uint16_t *)(out + u.off * es),
                                   (const float *)acc, u.len);
                } else if (half) {
                    rp__f32_to_bf16((uint16_t *)(out + u.off * es),
                                    (const float *)acc, u.len);
                }
                fwd = out + u.off * es;
                fwd_len = u.len * es;
            }
        } else if (u.step < 2 * n - 3) {
            fwd = rbuf;
            fwd_len = u.len * es;
        }
        if (fwd != NULL) {
            status = rp__comm_isend(c, right, nsend0 + idx, fwd, fwd_len,
                                    &sends[nsend0 + idx]);
            if (status != RP_OK) {
                goto err_abandon;
            }
        }
        more = rp_ring_next(&ring, &u);
    }
#undef RP_RECV_BUF
#undef RP_RECV_LEN

    status = rp__comm_wait_all(c, sends, nsend0 + nunits);
    if (status != RP_OK) {
        goto err_abandon;
    }
    return RP_OK;

err_abandon:
    rp__comm_abandon(c);
    return status;
}
