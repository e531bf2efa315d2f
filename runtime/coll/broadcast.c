/*
 * Broadcast: a pipelined chain from the root round the ring (ring.h with
 * one block). Every rank forwards each segment as soon as it lands, so for
 * large buffers the time approaches one buffer's transfer whatever the
 * number of ranks.
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/chunk.h"
#include "coll/comm.h"
#include "coll/ring.h"

typedef struct rp_bcast {
    char *data;
    bool last; /* the chain ends here: nothing to forward */
} rp_bcast_t;

/* The root's sends, every rank's receives: the buffer itself. */
static void *rp_bcast_seg(void *arg, const rp__ring_unit_t *u,
                          size_t *bytes_p)
{
    rp_bcast_t *b = arg;

    *bytes_p = u->len;
    return b->data + u->off;
}

static const void *rp_bcast_own(void *arg, const rp__ring_unit_t *u,
                                size_t *bytes_p)
{
    return rp_bcast_seg(arg, u, bytes_p);
}

static void *rp_bcast_dest(void *arg, const rp__ring_unit_t *u, size_t idx,
                           size_t *bytes_p)
{
    (void)idx;
    return rp_bcast_seg(arg, u, bytes_p);
}

static const void *rp_bcast_step(void *arg, const rp__ring_unit_t *u,
                                 void *buf, size_t *bytes_p)
{
    rp_bcast_t *b = arg;

    *bytes_p = u->len;
    return b->last ? NULL : buf;
}

static const rp__ring_ops_t rp_bcast_ops = {
    .own = rp_bcast_own,
    .dest = rp_bcast_dest,
    .step = rp_bcast_step,
};

rp_status_t rp__broadcast_ring(rp_comm_t *c, void *buf, size_t bytes,
                               int root)
{
    const int n = c->size, v = rp__mod(c->rank - root, n);
    rp_bcast_t b = {.data = buf, .last = v == n - 1};
    rp__ring_t ring = {.r = 0, .nblocks = 1, .nsteps = v == 0 ? 0 : 1,
                       .count = bytes, .seg = c->seg_bytes,
                       .send_own = v == 0};

    return rp__ring_run(c, &ring, &rp_bcast_ops, &b);
}
