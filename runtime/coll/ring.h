/*
 * The pipelined ring, written once. Allgather, broadcast and the ring
 * allreduce are the same loop: a schedule of chunks (which segment of which
 * block arrives at each step) and a per-step operation (copy it, reduce
 * into it, forward it), which this header separates.
 *
 * The schedule: @count elements over @nblocks blocks (rp__chunk_*), each
 * cut into segments of @seg elements. At step s a rank receives, from its
 * left neighbour, every segment of block (r - s - 1) mod nblocks, in
 * order; empty blocks are skipped. With nblocks == n that is the ring
 * (allgather: n-1 steps; allreduce: 2n-2, reduce-scatter then allgather);
 * with nblocks == 1 a chain carrying one buffer (broadcast: one step).
 *
 * The messages: receives are numbered in arrival order (0 .. nunits-1) and
 * the number is the message's tag index. A rank first sends the segments
 * of its own block, if it has data to start with (@send_own: numbers 0 ..
 * nsend0-1), then whatever the per-step operation forwards after receive
 * u, as number nsend0 + u; so the right neighbour's receive u is always
 * this rank's send u. A window of receives is posted ahead, and the next
 * one is posted before the operation runs on the current one.
 */
#ifndef RP_COLL_RING_H
#define RP_COLL_RING_H

#include <stdbool.h>
#include <stddef.h>

#include "coll/chunk.h"
#include "coll/comm.h"

typedef struct rp__ring {
    int r;          /* this rank's position: its own block is r % nblocks */
    int nblocks;    /* n for a ring, 1 for a chain */
    int nsteps;     /* receive steps */
    size_t count;   /* elements in all blocks together */
    size_t seg;     /* elements per segment (>= 1) */
    bool send_own;  /* start by sending the own block's segments */
} rp__ring_t;

/* One segment of the schedule. */
typedef struct rp__ring_unit {
    int step;   /* -1: the own block's initial send */
    int block;
    size_t j;   /* segment within the block */
    size_t off; /* first element, from the start of block 0 */
    size_t len; /* elements */
    /* The cursor's own: the block's elements, first element, segments. */
    size_t bcount, boff, bnseg;
} rp__ring_unit_t;

/* What a collective does with the schedule; @arg is its state. */
typedef struct rp__ring_ops {
    /* The own block's segment @u, to send at the start: the buffer and
     * its length in bytes. */
    const void *(*own)(void *arg, const rp__ring_unit_t *u, size_t *bytes_p);
    /* Where receive number @idx (unit @u) lands, and its bytes. */
    void *(*dest)(void *arg, const rp__ring_unit_t *u, size_t idx,
                  size_t *bytes_p);
    /* The per-step operation, once @u landed in @buf (dest's): copy,
     * reduce, finish. Returns what to forward to the right and its bytes,
     * or NULL to forward nothing. */
    const void *(*step)(void *arg, const rp__ring_unit_t *u, void *buf,
                        size_t *bytes_p);
} rp__ring_ops_t;

/* ---- the loop ----
 *
 * Inline, and always: each collective passes a constant ops table, so the
 * compiler turns the per-step operations into direct calls and inlines
 * them, and a chain's one block folds away. Through function pointers
 * (the loop in a .c file of its own) every step of a small broadcast or
 * allgather would pay indirect calls that its transfer does not hide
 * (doc/benchmarks.md). Inline, it also adds no object to the link graph:
 * each algorithm's object holds its own copy of the loop and calls only
 * the ground (comm.c). */

/* The block arithmetic of rp__chunk_count/offset and rp__seg_count,
 * divided out once per collective: the cursor then moves with additions
 * and comparisons only, so a small broadcast or allgather pays no more for
 * the shared loop than its own loop cost (a 64-bit division costs tens of
 * cycles, and the schedule is walked twice per unit). */
typedef struct rp_ring_plan {
    const rp__ring_t *ring;
    size_t base, extra;     /* blocks below extra hold base + 1 elements */
    size_t nseg_small, nseg_big;
} rp_ring_plan_t;

static inline void rp_ring_plan(const rp__ring_t *ring, rp_ring_plan_t *p)
{
    p->ring = ring;
    p->base = ring->count;
    p->extra = 0;
    if (ring->nblocks > 1) { /* a chain (broadcast) has one block */
        p->base = ring->count / (size_t)ring->nblocks;
        p->extra = ring->count % (size_t)ring->nblocks;
    }
    p->nseg_small = rp__seg_count(p->base, ring->seg);
    p->nseg_big = p->extra > 0 ? rp__seg_count(p->base + 1, ring->seg) : 0;
}

/* Block @b's place and segment count into @u. */
static inline void rp_ring_enter(const rp_ring_plan_t *p, int block,
                          rp__ring_unit_t *u)
{
    size_t b = (size_t)block;
    bool big = b < p->extra;

    u->block = block;
    u->bcount = p->base + (big ? 1 : 0);
    u->boff = p->base * b + (big ? b : p->extra);
    u->bnseg = big ? p->nseg_big : p->nseg_small;
}

/* Segment u->j of the block entered. */
static inline void rp_ring_fill(const rp_ring_plan_t *p, rp__ring_unit_t *u)
{
    size_t start = u->j * p->ring->seg;

    u->off = u->boff + start;
    u->len = u->bcount - start < p->ring->seg ? u->bcount - start
                                                : p->ring->seg;
}

/* Move @u to the next non-empty receive unit; false past the last. Step s
 * receives block r - s - 1: one block back per step. */
static inline bool rp_ring_next(const rp_ring_plan_t *p, rp__ring_unit_t *u)
{
    u->j++;
    while (u->j >= u->bnseg) {
        if (u->step + 1 >= p->ring->nsteps) {
            return false;
        }
        u->step++;
        rp_ring_enter(p, u->block == 0 ? p->ring->nblocks - 1 : u->block - 1,
                      u);
        u->j = 0;
    }
    rp_ring_fill(p, u);
    return true;
}

static inline bool rp_ring_first(const rp_ring_plan_t *p, rp__ring_unit_t *u)
{
    /* Before step 0, on the own block: next() steps back to r - 1. */
    u->step = -1;
    u->block = p->ring->r % p->ring->nblocks;
    u->bnseg = 0;
    u->j = 0;
    return rp_ring_next(p, u);
}

static inline size_t rp_ring_units(const rp_ring_plan_t *p)
{
    int block = p->ring->r % p->ring->nblocks;
    size_t total = 0;

    for (int step = 0; step < p->ring->nsteps; step++) {
        block = block == 0 ? p->ring->nblocks - 1 : block - 1;
        total += (size_t)block < p->extra ? p->nseg_big : p->nseg_small;
    }
    return total;
}

/* Run the schedule on the running collective (rp__comm_begin called).
 * On error the communicator is broken and its requests abandoned. */
static inline __attribute__((always_inline)) rp_status_t
rp__ring_run(rp_comm_t *c, const rp__ring_t *ring, const rp__ring_ops_t *ops,
             void *arg)
{
    const int n = c->size;
    const int left = rp__mod(c->rank - 1, n), right = rp__mod(c->rank + 1, n);
    rp_ring_plan_t plan;
    rp__ring_unit_t own = {0}, pu = {0}, u = {0};
    rp_treq_t *reqs, *sends, *recvs;
    rp_status_t status;
    size_t nsend0, nunits, posted = 0, bytes;
    bool more;

    rp_ring_plan(ring, &plan);
    rp_ring_enter(&plan, ring->r % ring->nblocks, &own);
    nsend0 = ring->send_own ? own.bnseg : 0;
    nunits = rp_ring_units(&plan);

    status = rp__comm_reqs(c, nsend0 + 2 * nunits, &reqs);
    if (status != RP_OK) {
        return status;
    }
    sends = reqs;
    recvs = reqs + nsend0 + nunits;

    /* Pre-post the first window. */
    more = rp_ring_first(&plan, &pu);
    for (; more && posted < (size_t)c->window; posted++) {
        void *dst = ops->dest(arg, &pu, posted, &bytes);

        status = rp__comm_irecv(c, left, posted, dst, bytes, &recvs[posted]);
        if (status != RP_OK) {
            goto err_abandon;
        }
        more = rp_ring_next(&plan, &pu);
    }

    /* The data this rank starts with. */
    own.step = -1;
    for (own.j = 0; own.j < nsend0; own.j++) {
        const size_t j = own.j;
        const void *src;

        rp_ring_fill(&plan, &own);
        src = ops->own(arg, &own, &bytes);
        status = rp__comm_isend(c, right, j, src, bytes, &sends[j]);
        if (status != RP_OK) {
            goto err_abandon;
        }
    }

    more = rp_ring_first(&plan, &u);
    for (size_t idx = 0; more; idx++) {
        void *buf = ops->dest(arg, &u, idx, &bytes);
        const void *fwd;

        status = rp__comm_wait(c, &recvs[idx]);
        if (status != RP_OK) {
            goto err_abandon;
        }
        /* Keep the window full before spending time on the operation. */
        if (posted < nunits) {
            void *dst = ops->dest(arg, &pu, posted, &bytes);

            status = rp__comm_irecv(c, left, posted, dst, bytes,
                                    &recvs[posted]);
            if (status != RP_OK) {
                goto err_abandon;
            }
            posted++;
            rp_ring_next(&plan, &pu);
        }
        fwd = ops->step(arg, &u, buf, &bytes);
        if (fwd != NULL) {
            status = rp__comm_isend(c, right, nsend0 + idx, fwd, bytes,
                                    &sends[nsend0 + idx]);
            if (status != RP_OK) {
                goto err_abandon;
            }
        }
        more = rp_ring_next(&plan, &u);
    }

    status = rp__comm_wait_all(c, sends, nsend0 + nunits);
    if (status != RP_OK) {
        goto err_abandon;
    }
    return RP_OK;

err_abandon:
    rp__comm_abandon(c);
    return status;
}


#endif /* RP_COLL_RING_H */
