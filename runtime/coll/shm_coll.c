/*
 * The collectives over the node's shared segment (shm.h).
 *
 * Allreduce, one piece of at most a slot at a time: every rank copies its
 * input into its slot (step A); then either every rank reduces the whole
 * piece straight from all the slots into its output (small pieces: one
 * step, no second copy), or each reduces its 1/n share into its other slot
 * (step B) and every rank copies the n shares out (larger pieces: each
 * byte is reduced once, not n times).
 *
 * The bits are the transport's: the per-element expression is the one
 * recursive doubling or the ring would have evaluated for this world size
 * and count (select.c picks it the same way for every path), and the
 * reduction kernels are element-wise and commutative bit for bit, so how
 * the elements are shared out never shows. Recursive doubling: ranks past
 * the largest power of two p2 folded into rank - p2 first, then pairs,
 * quadruples, ... of consecutive ranks. The ring: block b (of the n blocks
 * rp__chunk_* cut) is ((x_b OP x_b+1) OP ...) OP x_b-1. float16/bfloat16
 * accumulate in float32 and round once, unless half_wire asks for every
 * operation's result in the half type; AVG divides at the end.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"
#include "coll/shm.h"
#include "coll/shm_eval.h"
#include "reduce/reduce.h"

#include <stdint.h>
#include <string.h>

/* Elements per pass of the expression: the temporaries stay in L1/L2. */
#define RP_SHM_BLK 1024

/* Rank q's elements from @i on (i within the piece). */
static const char *rp_src(const rp__shm_ar_t *a, int q, size_t i)
{
    return (const char *)a->src[q] + (i - a->p0) * a->es;
}

/* AVG's division and the rounding of half types, on a finished block in
 * the working type (@acc) that ends in @dst. */
static void rp_finish(const rp__shm_ar_t *a, void *acc, char *dst, size_t len)
{
    if (a->op == RP_OP_AVG) {
        rp__reduce_scale(a->wtype, acc, len, a->n);
    }
    if (a->half) {
        rp__half_narrow(a->dtype, dst, acc, len);
    }
}

/* Recursive doubling's value of elements [i, i + len), len <= BLK. */
static void rp_eval_rd(const rp__shm_ar_t *a, size_t i, size_t len, char *dst)
{
    const int n = a->n, p2 = rp__pow2_floor(n), rem = n - p2;
    const size_t blk = (size_t)RP_SHM_BLK * a->wes;
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
    for (int mask = 1; mask < p2; mask <<= 1) {
        for (int q = 0; q < p2; q += 2 * mask) {
            out = 2 * mask == p2 && !a->half ? dst : a->tmp + (size_t)q * blk;
            rp__reduce(a->wtype, a->rop, out, v[q], v[q + mask], len);
            v[q] = out;
        }
    }
    rp_finish(a, (void *)v[0], dst, len);
}

/* The ring's value of elements [i, i + len) of block @b, len <= BLK. */
static void rp_eval_ring(const rp__shm_ar_t *a, int b, size_t i, size_t len,
                         char *dst)
{
    const int n = a->n;

    if (a->half) {
        float *acc = (float *)a->tmp;

        rp__half_widen(a->dtype, acc, rp_src(a, b, i), len);
        for (int s = 1; s < n; s++) {
            rp__reduce_acc_f32(a->rop, acc, rp_src(a, (b + s) % n, i),
                               a->dtype, len);
        }
        rp_finish(a, acc, dst, len);
        return;
    }
    rp__reduce(a->dtype, a->rop, dst, rp_src(a, b, i),
               rp_src(a, (b + 1) % n, i), len);
    for (int s = 2; s < n; s++) {
        rp__reduce_inplace(a->dtype, a->rop, dst, rp_src(a, (b + s) % n, i),
                           len);
    }
    rp_finish(a, dst, dst, len);
}

void rp__shm_eval(const rp__shm_ar_t *a, size_t lo, size_t len, char *dst)
{
    const size_t end = lo + len;
    size_t i = lo;

    while (i < end) {
        size_t k = end - i < RP_SHM_BLK ? end - i : RP_SHM_BLK;
        int b = 0;

        if (!a->rd) {
            /* The ring's block of element i, and where that block ends. */
            size_t base = a->count / (size_t)a->n, extra = a->count % (size_t)a->n;
            size_t big = (base + 1) * extra;
            size_t bend;

            b = i < big ? (int)(i / (base + 1))
                        : (int)(extra + (i - big) / base);
            bend = rp__chunk_offset(a->count, a->n, b) +
                   rp__chunk_count(a->count, a->n, b);
            if (bend - i < k) {
                k = bend - i;
            }
            rp_eval_ring(a, b, i, k, dst + (i - lo) * a->es);
        } else {
            rp_eval_rd(a, i, k, dst + (i - lo) * a->es);
        }
        i += k;
    }
}

static size_t rp_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A piece every rank reduces whole, straight from all the slots. */
static rp_status_t rp_piece_whole(rp_comm_t *c, rp__shm_ar_t *a,
                                  const char *in, char *out, size_t pn)
{
    rp__shm_t *sh = c->shm;
    rp_status_t status = rp__shm_publish(c, in + a->p0 * a->es, pn * a->es);

    if (status == RP_OK) {
        status = rp__shm_wait_all(c, sh->step);
    }
    if (status != RP_OK) {
        return status;
    }
    for (int q = 0; q < sh->n; q++) {
        a->src[q] = rp__shm_data(sh, q, sh->step, pn * a->es);
    }
    rp__shm_eval(a, a->p0, pn, out + a->p0 * a->es);
    return RP_OK;
}

/* A piece shared out: rank r reduces block r (rp__chunk_* over the
 * piece), its own input read where it lies, so only the other blocks go
 * through its slot; then the finished blocks go round. */
static rp_status_t rp_piece_shared(rp_comm_t *c, rp__shm_ar_t *a,
                                   const char *in, char *out, size_t pn)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n, r = sh->rank;
    const size_t es = a->es, off = rp__chunk_offset(pn, n, r);
    const size_t cnt = rp__chunk_count(pn, n, r), end = off + cnt;
    const char *mine = in + a->p0 * es;
    /* In place the result overwrites the input while the ring's
     * expression still reads it: then the own block goes through the
     * slot as well. */
    const bool inplace = in == out;
    char *res = out + a->p0 * es, *slot;
    rp_status_t status;
    uint32_t k;

    status = rp__shm_step(c, SIZE_MAX, &slot);
    if (status != RP_OK) {
        return status;
    }
    if (inplace) {
        memcpy(slot, mine, pn * es);
    } else {
        memcpy(slot, mine, off * es);
        memcpy(slot + end * es, mine + end * es, (pn - end) * es);
    }
    rp__shm_post(c);
    k = sh->step;
    status = rp__shm_wait_all(c, k);
    if (status != RP_OK) {
        return status;
    }
    for (int q = 0; q < n; q++) {
        a->src[q] = q == r && !inplace ? mine : rp__shm_slot(sh, q, k);
    }
    rp__shm_eval(a, a->p0 + off, cnt, res + off * es);
    status = rp__shm_step(c, SIZE_MAX, &slot);
    if (status != RP_OK) {
        return status;
    }
    memcpy(slot + off * es, res + off * es, cnt * es);
    rp__shm_post(c);
    status = rp__shm_wait_all(c, k + 1);
    if (status != RP_OK) {
        return status;
    }
    for (int q = 0; q < n; q++) {
        size_t qoff = rp__chunk_offset(pn, n, q);

        if (q != r) {
            memcpy(res + qoff * es, rp__shm_slot(sh, q, k + 1) + qoff * es,
                   rp__chunk_count(pn, n, q) * es);
        }
    }
    return RP_OK;
}

rp_status_t rp__shm_ar_init(rp_comm_t *c, rp__shm_ar_t *a, size_t count,
                            rp_dtype_t dtype, rp_op_t op, bool half_wire,
                            bool rd)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n;
    const bool half = rp__dtype_is_half(dtype) && !half_wire;
    rp_status_t status;
    void *p;

    *a = (rp__shm_ar_t){
        .n = n, .count = count, .es = rp_dtype_size(dtype),
        .dtype = dtype, .wtype = half ? RP_DTYPE_FLOAT32 : dtype,
        .op = op, .rop = op == RP_OP_AVG ? RP_OP_SUM : op,
        .half = half, .rd = rd, .src = sh->ptrs, .v = sh->ptrs + n,
    };
    a->wes = rp_dtype_size(a->wtype);
    status = rp__comm_scratch(c, &c->tmp,
                              (size_t)(rp__pow2_floor(n) + n) * RP_SHM_BLK *
                                  a->wes,
                              &p);
    a->tmp = p;
    return status;
}

rp_status_t rp__shm_allreduce(rp_comm_t *c, const void *sendbuf,
                              void *recvbuf, size_t count, rp_dtype_t dtype,
                              rp_op_t op, bool half_wire, bool rd)
{
    rp__shm_t *sh = c->shm;
    rp__shm_ar_t a;
    size_t piece;
    rp_status_t status = rp__shm_ar_init(c, &a, count, dtype, op, half_wire,
                                         rd);

    if (status != RP_OK) {
        return status;
    }
    piece = sh->slot_bytes / a.es;
    for (a.p0 = 0; a.p0 < count && status == RP_OK; a.p0 += piece) {
        const size_t pn = rp_min(count - a.p0, piece);

        /* The same choice on every rank: the number of steps follows. */
        status = pn * a.es <= sh->direct_bytes
                     ? rp_piece_whole(c, &a, sendbuf, recvbuf, pn)
                     : rp_piece_shared(c, &a, sendbuf, recvbuf, pn);
    }
    return status;
}

rp_status_t rp__shm_broadcast(rp_comm_t *c, void *buf, size_t bytes, int root)
{
    rp__shm_t *sh = c->shm;
    char *data = buf;
    rp_status_t status;

    for (size_t off = 0; off < bytes; off += sh->slot_bytes) {
        size_t len = rp_min(bytes - off, sh->slot_bytes);

        status = rp__shm_publish(c, sh->rank == root ? data + off : NULL, len);
        if (status != RP_OK) {
            return status;
        }
        if (sh->rank != root) {
            status = rp__shm_wait(c, root, sh->step);
            if (status != RP_OK) {
                return status;
            }
            memcpy(data + off, rp__shm_data(sh, root, sh->step, len), len);
        }
    }
    return RP_OK;
}

rp_status_t rp__shm_allgather(rp_comm_t *c, const void *sendbuf,
                              void *recvbuf, size_t bytes)
{
    rp__shm_t *sh = c->shm;
    const char *in = sendbuf;
    char *out = recvbuf;
    rp_status_t status;

    for (size_t off = 0; off < bytes; off += sh->slot_bytes) {
        size_t len = rp_min(bytes - off, sh->slot_bytes);

        status = rp__shm_publish(c, in + off, len);
        if (status == RP_OK) {
            status = rp__shm_wait_all(c, sh->step);
        }
        if (status != RP_OK) {
            return status;
        }
        for (int q = 0; q < sh->n; q++) {
            char *dst = out + (size_t)q * bytes + off;

            /* Our own block straight from the input, still in cache from
             * the publish, or nowhere when it is already in place. */
            if (q != sh->rank) {
                memcpy(dst, rp__shm_data(sh, q, sh->step, len), len);
            } else if (dst != in + off) {
                memcpy(dst, in + off, len);
            }
        }
    }
    return RP_OK;
}

rp_status_t rp__shm_barrier(rp_comm_t *c)
{
    rp_status_t status = rp__shm_publish(c, NULL, 0);

    return status != RP_OK ? status : rp__shm_wait_all(c, c->shm->step);
}
