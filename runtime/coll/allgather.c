/*
 * Allgather: the ring (ring.h). At step t rank r passes block r-t to its
 * right and receives block r-t-1 from its left straight into the output,
 * segment by segment, forwarding each segment as soon as it lands.
 *
 * Out of place, the own block is sent from the input, and copied into the
 * output while the waits for the peers' blocks find nothing to do, instead
 * of before the first send: the first message leaves sooner, and the copy
 * fills time the transfer leaves this core idle (over TCP the copy still
 * competes with the transport for the core; on a real network, where the
 * transfer does not need this core, it hides entirely).
 */
#include "config.h"

#include "coll/algo.h"
#include "coll/comm.h"
#include "coll/ring.h"

#include <stdint.h>
#include <string.h>

typedef struct rp_allgather {
    char *out;
    int nsteps;
    const char *in;  /* out of place: this rank's input, else NULL */
    char *mine;      /* this rank's block in the output */
    size_t bytes;    /* its length */
    size_t copied;   /* how much of it the input has filled so far */
} rp_allgather_t;

static const void *rp_allgather_own(void *arg, const rp__ring_unit_t *u,
                                    size_t *bytes_p)
{
    rp_allgather_t *g = arg;

    *bytes_p = u->len;
    return g->in != NULL ? g->in + (u->off - u->boff) : g->out + u->off;
}

/* The own block's copy, input to output, a piece per idle poll of the
 * transfer's waits (comm.h: idle): small enough that a message landing
 * meanwhile is seen soon after. */
#define RP_AG_IDLE_PIECE (64u * 1024)

static bool rp_allgather_idle(void *arg)
{
    rp_allgather_t *g = arg;
    size_t len = RP_AG_IDLE_PIECE;

    if (len > g->bytes - g->copied) {
        len = g->bytes - g->copied;
    }
    memcpy(g->mine + g->copied, g->in + g->copied, len);
    g->copied += len;
    return g->copied < g->bytes;
}

/* Every block is received where it belongs in the output. */
static void *rp_allgather_dest(void *arg, const rp__ring_unit_t *u,
                               size_t idx, size_t *bytes_p)
{
    rp_allgather_t *g = arg;

    (void)idx;
    *bytes_p = u->len;
    return g->out + u->off;
}

/* Forward everything but the last step's blocks, which the right
 * neighbour started with. */
static const void *rp_allgather_step(void *arg, const rp__ring_unit_t *u,
                                     void *buf, size_t *bytes_p)
{
    rp_allgather_t *g = arg;

    *bytes_p = u->len;
    return u->step < g->nsteps - 1 ? buf : NULL;
}

static const rp__ring_ops_t rp_allgather_ops = {
    .own = rp_allgather_own,
    .dest = rp_allgather_dest,
    .step = rp_allgather_step,
};

rp_status_t rp__allgather_ring(rp_comm_t *c, const void *sendbuf,
                               void *recvbuf, size_t bytes)
{
    const int n = c->size, r = c->rank;
    rp_allgather_t g = {.out = recvbuf, .nsteps = n - 1};
    rp__ring_t ring = {.r = r, .nblocks = n, .nsteps = n - 1,
                       .count = bytes * (size_t)n, .seg = c->seg_bytes,
                       .send_own = true};
    rp_status_t status;

    g.mine = g.out + (size_t)r * bytes;
    g.bytes = bytes;
    if (sendbuf != g.mine) {
        const uintptr_t in = (uintptr_t)sendbuf, at = (uintptr_t)g.mine;

        if (n == 1 || (in < at + bytes && at < in + bytes)) {
            /* Nothing to overlap with, or an input that overlaps our
             * block without being it: into place first, sent from there. */
            memmove(g.mine, sendbuf, bytes);
        } else {
            g.in = sendbuf;
        }
    }
    if (n == 1) {
        return RP_OK;
    }
    if (g.in != NULL) {
        c->idle = rp_allgather_idle;
        c->idle_arg = &g;
    }
    status = rp__ring_run(c, &ring, &rp_allgather_ops, &g);
    c->idle = NULL;
    /* What the waits left of the own block. */
    while (status == RP_OK && g.in != NULL && rp_allgather_idle(&g)) {
    }
    return status;
}
