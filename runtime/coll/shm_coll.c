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
 * The bits are the allreduce's one expression (eval.h), evaluated per
 * element from the slots: the same as every other path's, however the
 * elements are shared out.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"
#include "coll/shm.h"
#include "coll/eval.h"
#include "reduce/reduce.h"

#include <stdint.h>
#include <string.h>

static size_t rp_min(size_t a, size_t b)
{
    return a < b ? a : b;
}

/* A piece every rank reduces whole, straight from all the slots. */
static rp_status_t rp_piece_whole(rp_comm_t *c, rp__eval_t *a,
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
    rp__eval(a, a->p0, pn, out + a->p0 * a->es);
    return RP_OK;
}

/* A piece shared out: rank r reduces block r (rp__chunk_* over the
 * piece), its own input read where it lies, so only the other blocks go
 * through its slot; then the finished blocks go round. */
static rp_status_t rp_piece_shared(rp_comm_t *c, rp__eval_t *a,
                                   const char *in, char *out, size_t pn)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n, r = sh->rank;
    const size_t es = a->es, off = rp__chunk_offset(pn, n, r);
    const size_t cnt = rp__chunk_count(pn, n, r), end = off + cnt;
    const char *mine = in + a->p0 * es;
    char *res = out + a->p0 * es, *slot;
    rp_status_t status;
    uint32_t k;

    status = rp__shm_step(c, SIZE_MAX, &slot);
    if (status != RP_OK) {
        return status;
    }
    /* In place too: the expression writes each piece of our block after
     * reading all its operands (eval.h). */
    memcpy(slot, mine, off * es);
    memcpy(slot + end * es, mine + end * es, (pn - end) * es);
    rp__shm_post(c);
    k = sh->step;
    status = rp__shm_wait_all(c, k);
    if (status != RP_OK) {
        return status;
    }
    for (int q = 0; q < n; q++) {
        a->src[q] = q == r ? mine : rp__shm_slot(sh, q, k);
    }
    rp__eval(a, a->p0 + off, cnt, res + off * es);
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

rp_status_t rp__shm_allreduce(rp_comm_t *c, const void *sendbuf,
                              void *recvbuf, size_t count, rp_dtype_t dtype,
                              rp_op_t op, bool half_wire)
{
    rp__shm_t *sh = c->shm;
    rp__eval_t a;
    size_t piece;
    rp_status_t status = rp__eval_init(c, &a, sh->n, sh->ptrs, dtype, op,
                                       half_wire);

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
