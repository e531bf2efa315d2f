/*
 * Allreduce for large messages: each block reduced by its owner, then the
 * ring's allgather.
 *
 * The buffer is cut into n blocks (rp__chunk_*), block b owned by rank b.
 * First every rank sends its share of every other block straight to that
 * block's owner, a segment at a time; the owner, holding all n operands of
 * a segment, evaluates the allreduce's one expression on them (eval.h)
 * into its output. Then the finished blocks go round the ring into every
 * output (ring.h), as the ring allreduce's second half does.
 *
 * Each rank sends and receives (n-1)/n of the buffer in each phase, as the
 * ring does: the same bandwidth. What changes is the bits. The ring
 * reduced block b by a partial sum that started at rank b and went round,
 * so an element's rounding depended on which block it fell in, that is on
 * its offset, the buffer's length and how tensors were grouped into it;
 * a DDP run whose buckets were rebuilt differently after a resume then
 * drifted from the run it resumed. Here every element is the same
 * expression of the same n values, the one recursive doubling and the
 * node's paths evaluate too.
 *
 * The first phase alone is the reduce-scatter (rp_reduce_scatter), with
 * the blocks the caller chose: so a reduce-scatter's block is, bit for
 * bit, that block of the allreduce of the same buffers.
 *
 * The cost is the first phase's messages: n-1 at a time, one from every
 * peer, instead of one from the left neighbour; a window of segments is
 * in flight (RINGPOINT_COLL_WINDOW), each of the n-1 receives into a slot
 * of its own, reposted once the segment is evaluated.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/comm.h"
#include "coll/eval.h"
#include "coll/ring.h"

typedef struct rp_owners {
    rp_comm_t *c;
    const char *in;
    char *out, *slots;
    size_t count, es, seg, win;
    /* The blocks: rank q owns elements [boff[q], boff[q] + bcnt[q]) of
     * the input; element i of this rank's lands at out + (i - out0). */
    const size_t *boff, *bcnt;
    size_t out0;
    rp_treq_t *sends, *recvs;
    rp__eval_t ev;
} rp_owners_t;

/* Segment @j of block @q: its first element and length (0: none). */
static size_t rp_seg(const rp_owners_t *o, int q, size_t j, size_t *len_p)
{
    const size_t bcount = o->bcnt[q];
    const size_t start = j * o->seg;

    *len_p = start < bcount ? (bcount - start < o->seg ? bcount - start
                                                       : o->seg)
                            : 0;
    return o->boff[q] + start;
}

/* Receive slot of peer @p (its place in the list of n-1) for segment @j. */
static char *rp_slot(const rp_owners_t *o, int p, size_t j)
{
    const int n = o->c->size, r = o->c->rank;
    const size_t i = (size_t)rp__mod(p - r, n) - 1;

    return o->slots + ((j % o->win) * (size_t)(n - 1) + i) * o->seg * o->es;
}

/* Post the receives of our block's segment @j from every peer. */
static rp_status_t rp_post(rp_owners_t *o, size_t j)
{
    rp_comm_t *c = o->c;
    size_t len;

    rp_seg(o, c->rank, j, &len);
    for (int i = 1; i < c->size && len > 0; i++) {
        const int p = (c->rank + i) % c->size;
        rp_status_t status =
            rp__comm_irecv(c, p, j, rp_slot(o, p, j), len * o->es,
                           &o->recvs[(j % o->win) * (size_t)(c->size - 1) +
                                     (size_t)(i - 1)]);

        if (status != RP_OK) {
            return status;
        }
    }
    return RP_OK;
}

/* Send segment @j of every other block to its owner. */
static rp_status_t rp_send(rp_owners_t *o, size_t j)
{
    rp_comm_t *c = o->c;

    for (int i = 1; i < c->size; i++) {
        const int q = (c->rank + i) % c->size;
        size_t len, off = rp_seg(o, q, j, &len);
        rp_status_t status;

        if (len == 0) {
            continue;
        }
        status = rp__comm_isend(c, q, j, o->in + off * o->es, len * o->es,
                                &o->sends[j * (size_t)(c->size - 1) +
                                          (size_t)(i - 1)]);
        if (status != RP_OK) {
            return status;
        }
    }
    return RP_OK;
}

/* Wait for our block's segment @j and evaluate it into the output. */
static rp_status_t rp_reduce(rp_owners_t *o, size_t j)
{
    rp_comm_t *c = o->c;
    const int n = c->size;
    size_t len, off = rp_seg(o, c->rank, j, &len);
    rp_status_t status;

    status = rp__comm_wait_all(
        c, &o->recvs[(j % o->win) * (size_t)(n - 1)], (size_t)(n - 1));
    if (status != RP_OK) {
        return status;
    }
    for (int p = 0; p < n; p++) {
        o->ev.src[p] = p == c->rank ? (const void *)(o->in + off * o->es)
                                    : rp_slot(o, p, j);
    }
    o->ev.p0 = off;
    rp__eval(&o->ev, off, len, o->out + (off - o->out0) * o->es);
    return RP_OK;
}

/* Elements in block @q: @counts[q], or the even split of @count. */
static size_t rp_bcount(const size_t *counts, size_t count, int n, int q)
{
    return counts != NULL ? counts[q] : rp__chunk_count(count, n, q);
}

/* The first phase: block r of the output finished. */
static rp_status_t rp_phase1(rp_owners_t *o)
{
    rp_comm_t *c = o->c;
    const int n = c->size;
    size_t mine, most;

    most = 0;
    for (int q = 0; q < n; q++) {
        size_t k = rp__seg_count(o->bcnt[q], o->seg);

        most = k > most ? k : most;
    }
    mine = rp__seg_count(o->bcnt[c->rank], o->seg);
    for (size_t j = 0; j < o->win; j++) {
        rp_status_t status = j < mine ? rp_post(o, j) : RP_OK;

        if (status == RP_OK && j < most) {
            status = rp_send(o, j);
        }
        if (status != RP_OK) {
            return status;
        }
    }
    /* Segment j + win is sent once segment j arrived here: the peers run
     * at the pace of the slowest, and no rank has more than a window of
     * segments on the way to any other. */
    for (size_t j = 0; j < most; j++) {
        rp_status_t status = RP_OK;

        if (j < mine) {
            status = rp_reduce(o, j);
            if (status == RP_OK && j + o->win < mine) {
                status = rp_post(o, j + o->win);
            }
        }
        if (status == RP_OK && j + o->win < most) {
            status = rp_send(o, j + o->win);
        }
        if (status != RP_OK) {
            return status;
        }
    }
    return rp__comm_wait_all(c, o->sends, most * (size_t)(n - 1));
}

/* ---- the second phase: the finished blocks round the ring ---- */

static const void *rp_ag_own(void *arg, const rp__ring_unit_t *u,
                             size_t *bytes_p)
{
    rp_owners_t *o = arg;

    *bytes_p = u->len * o->es;
    return o->out + u->off * o->es;
}

static void *rp_ag_dest(void *arg, const rp__ring_unit_t *u, size_t idx,
                        size_t *bytes_p)
{
    rp_owners_t *o = arg;

    (void)idx;
    *bytes_p = u->len * o->es;
    return o->out + u->off * o->es;
}

static const void *rp_ag_step(void *arg, const rp__ring_unit_t *u, void *buf,
                              size_t *bytes_p)
{
    rp_owners_t *o = arg;

    *bytes_p = u->len * o->es;
    return u->step < o->c->size - 2 ? buf : NULL;
}

static const rp__ring_ops_t rp_ag_ops = {
    .own = rp_ag_own,
    .dest = rp_ag_dest,
    .step = rp_ag_step,
};

/* Set @o up for the blocks @counts (NULL: @o->count split evenly, as
 * rp__chunk_* cuts it), packed in rank order, and run the first phase. */
static rp_status_t rp_owners_run(rp_owners_t *o, const size_t *counts,
                                 rp_dtype_t dtype, rp_op_t op, bool half_wire)
{
    rp_comm_t *c = o->c;
    const int n = c->size;
    const size_t es = rp_dtype_size(dtype);
    const size_t seg = c->seg_bytes / es > 0 ? c->seg_bytes / es : 1;
    /* The operand lists and the block table first, then the slots, a
     * cache line apart. */
    const size_t lists = (2 * (size_t)n * (sizeof(void *) + sizeof(size_t)) +
                          63) & ~(size_t)63;
    size_t most = 0, win, *table;
    rp_treq_t *reqs;
    rp_status_t status;
    void *p;

    for (int q = 0; q < n; q++) {
        size_t k = rp__seg_count(rp_bcount(counts, o->count, n, q), seg);

        most = k > most ? k : most;
    }
    win = (size_t)c->window < most ? (size_t)c->window : most;
    o->es = es;
    o->seg = seg;
    o->win = win;
    status = rp__comm_scratch(c, &c->work,
                              lists + win * (size_t)(n - 1) * seg * es, &p);
    if (status == RP_OK) {
        o->slots = (char *)p + lists;
        table = (size_t *)((char *)p + 2 * (size_t)n * sizeof(void *));
        for (int q = 0; q < n; q++) {
            table[n + q] = rp_bcount(counts, o->count, n, q);
            table[q] = q == 0 ? 0 : table[q - 1] + table[n + q - 1];
        }
        o->boff = table;
        o->bcnt = table + n;
        status = rp__eval_init(c, &o->ev, n, (const void **)p, dtype, op,
                               half_wire);
    }
    if (status == RP_OK) {
        status = rp__comm_reqs(c, (most + win) * (size_t)(n - 1), &reqs);
    }
    if (status != RP_OK) {
        return status;
    }
    o->sends = reqs;
    o->recvs = reqs + most * (size_t)(n - 1);
    status = rp_phase1(o);
    if (status != RP_OK) {
        rp__comm_abandon(c);
    }
    return status;
}

rp_status_t rp__allreduce_owners(rp_comm_t *c, const void *sendbuf,
                                 void *recvbuf, size_t count,
                                 rp_dtype_t dtype, rp_op_t op, bool half_wire)
{
    const int n = c->size;
    rp_owners_t o = {.c = c, .in = sendbuf, .out = recvbuf, .count = count};
    rp__ring_t ring = {.r = c->rank, .nblocks = n, .nsteps = n - 1,
                       .count = count, .send_own = true};
    rp_status_t status = rp_owners_run(&o, NULL, dtype, op, half_wire);

    if (status != RP_OK) {
        return status;
    }
    ring.seg = o.seg;
    /* The second phase under a tag sequence of its own: a neighbour that
     * finished the first may already send, and its messages must not
     * match a receive of ours still posted for the first. */
    status = rp__comm_begin(c, c->op);
    if (status != RP_OK) {
        return status;
    }
    return rp__ring_run(c, &ring, &rp_ag_ops, &o);
}

rp_status_t rp__reduce_scatter_owners(rp_comm_t *c, const void *sendbuf,
                                      void *recvbuf, const size_t *counts,
                                      rp_dtype_t dtype, rp_op_t op)
{
    rp_owners_t o = {.c = c, .in = sendbuf, .out = recvbuf};

    for (int q = 0; q < c->size; q++) {
        o.out0 += q < c->rank ? counts[q] : 0;
        o.count += counts[q];
    }
    return rp_owners_run(&o, counts, dtype, op, false);
}
