/*
 * Restore, ranks on one host: the verdict, and each rank copying the
 * other ranks' verified stripes straight out of their memory into its
 * regions (cross-memory attach, process_vm_readv), instead of rounds of
 * allgather through the transport and a second copy out of its buffers.
 *
 * Every rank reads only its own stripe from disk, so a node whose ranks
 * all restore the same replicated state reads it once; after the verdict
 * each byte of the state is copied once into each rank's memory, the
 * least any restore that verifies before it writes can do. Nothing of the
 * application's memory is written before the verdict.
 *
 * The verdict allreduce carries, per rank, a card: its verdict, its pid,
 * where its stripe lies in its memory, a random token and where that lies,
 * a hash of the host's boot id, and whether it can take part (no GPU
 * regions to restore). Every rank sees every card and so decides the same
 * way. A reader checks the peer's token before it copies anything, so a
 * pid that is another process (another PID namespace, another host with
 * the same boot id) is never read from. A copy that fails on any rank
 * (EPERM where ptrace is restricted) is agreed in one more allreduce and
 * then every rank falls back to the exchange through the transport, which
 * writes the same bytes again.
 */
#include "config.h"

#include "ckpt/reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ckpt/crc32c.h"
#include "ckpt/shardio.h"
#include "ringpoint/coll.h"
#include "util/log.h"

/* Fields of one card, in int64s. */
enum {
    RP_PEER_VERDICT,
    RP_PEER_PID,
    RP_PEER_VBUF,
    RP_PEER_TOKEN,
    RP_PEER_TOKEN_ADDR,
    RP_PEER_HOST,
    RP_PEER_CAN,
    RP_PEER_FIELDS
};

/* Longest single process_vm_readv: the kernel pins the pages of a call;
 * long enough that the system call costs nothing beside the copy. */
#define RP_PEER_MAX_IO (64u << 20)

/* A hash of this host's boot id: the same kernel, so a pid and an address
 * of a peer with the same hash can be meant for this machine. 0: unknown
 * (never matches: a peer with 0 disables the peer copies). */
static int64_t rp_peer_host(void)
{
    char id[64];
    ssize_t n;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        return 0;
    }
    n = read(fd, id, sizeof(id));
    (void)close(fd);
    if (n <= 0) {
        return 0;
    }
    return (int64_t)(rp__crc32c(0, id, (size_t)n) | 0x100000000ull);
}

size_t rp__rd_cards_len(uint32_t size)
{
    return (size_t)RP_PEER_FIELDS * size;
}

rp_status_t rp__rd_agree(rp__rd_t *r, int64_t *cards, int32_t *verdict)
{
    rp__ckpt_engine_t *e = r->e;
    int64_t *mine = cards + (size_t)RP_PEER_FIELDS * e->rank;
    int32_t v = RP_RD_OK;
    uint32_t j;
    bool can = e->size > 1 && *verdict == RP_RD_OK && r->vbuf != NULL;
    rp_status_t rc;

    memset(cards, 0, rp__rd_cards_len(e->size) * sizeof(int64_t));
    for (j = 0; j < r->nreps && can; j++) {
        can = !r->reps[j].device;
    }
    if (can && rp__ckpt_random(&r->token, sizeof(r->token)) != RP_OK) {
        can = false;
    }
    /* Offset by 2 so that every verdict of a slot is positive: a sum
     * with the other ranks' zeros is then the verdict itself. */
    mine[RP_PEER_VERDICT] = *verdict + 2;
    mine[RP_PEER_PID] = (int64_t)getpid();
    mine[RP_PEER_VBUF] = (int64_t)(uintptr_t)r->vbuf;
    mine[RP_PEER_TOKEN] = (int64_t)r->token;
    mine[RP_PEER_TOKEN_ADDR] = (int64_t)(uintptr_t)&r->token;
    mine[RP_PEER_HOST] = rp_peer_host();
    mine[RP_PEER_CAN] = can ? 1 : 0;
    rc = rp_allreduce(e->ctx, cards, cards, rp__rd_cards_len(e->size),
                      RP_DTYPE_INT64, RP_OP_SUM);
    if (rc != RP_OK) {
        return rc;
    }
    r->peer_copy = e->size > 1;
    for (j = 0; j < e->size; j++) {
        const int64_t *c = cards + (size_t)RP_PEER_FIELDS * j;
        int32_t vj = (int32_t)(c[RP_PEER_VERDICT] - 2);

        v = vj < v ? vj : v;
        r->peer_copy = r->peer_copy && c[RP_PEER_CAN] == 1 &&
                       c[RP_PEER_HOST] != 0 &&
                       c[RP_PEER_HOST] == mine[RP_PEER_HOST];
    }
    r->cards = cards;
    *verdict = v;
    return RP_OK;
}

/* Read @n bytes at @remote in @pid into @local. */
static bool rp_peer_read(pid_t pid, void *local, uint64_t remote, uint64_t n)
{
    while (n > 0) {
        size_t len = n < RP_PEER_MAX_IO ? (size_t)n : RP_PEER_MAX_IO;
        struct iovec l = {local, len};
        struct iovec rv = {(void *)(uintptr_t)remote, len};
        ssize_t got = process_vm_readv(pid, &l, 1, &rv, 1, 0);

        if (got <= 0) {
            if (got < 0 && errno == EINTR) {
                continue;
            }
            rp_warn("restore: reading rank memory of pid %d: %s (falling "
                    "back to the exchange through the transport)", (int)pid,
                    got < 0 ? strerror(errno) : "nothing read");
            return false;
        }
        local = (unsigned char *)local + got;
        remote += (uint64_t)got;
        n -= (uint64_t)got;
    }
    return true;
}

/* Rank @j's stripe of the restore stream into this rank's regions. */
static bool rp_peer_stripe(rp__rd_t *r, uint32_t j)
{
    const int64_t *c = r->cards + (size_t)RP_PEER_FIELDS * j;
    pid_t pid = (pid_t)c[RP_PEER_PID];
    uint64_t vbuf = (uint64_t)c[RP_PEER_VBUF], o, l, token = 0;
    uint32_t i;

    (void)rp__ckpt_stripe(r->rlen, r->e->size, j, &o, &l);
    if (l == 0) {
        return true;
    }
    /* The right process: its token where it said it would be. */
    if (!rp_peer_read(pid, &token, (uint64_t)c[RP_PEER_TOKEN_ADDR],
                      sizeof(token))) {
        return false;
    }
    if (token != (uint64_t)c[RP_PEER_TOKEN]) {
        rp_warn("restore: pid %d is not rank %u (another PID namespace?): "
                "falling back to the exchange through the transport",
                (int)pid, j);
        return false;
    }
    for (i = 0; i < r->nreps; i++) {
        const rp__rd_rep_t *p = &r->reps[i];
        uint64_t s = o, t = o + l;

        if (t <= p->voff || s >= p->voff + p->size) {
            continue;
        }
        s = s < p->voff ? p->voff : s;
        t = t > p->voff + p->size ? p->voff + p->size : t;
        if (!rp_peer_read(pid, (unsigned char *)p->addr + (s - p->voff),
                          vbuf + (s - o), t - s)) {
            return false;
        }
    }
    return true;
}

rp_status_t rp__rd_peer_apply(rp__rd_t *r, bool *done_p)
{
    rp__ckpt_engine_t *e = r->e;
    int32_t ok = 1;
    uint64_t t0 = rp__ckpt_now_ns(), t1;
    uint32_t k;
    rp_status_t rc;

    *done_p = false;
    /* Own stripe by memcpy, then the peers', each starting at the next
     * rank so that two ranks do not read the same stripe at once. */
    rp__rd_scatter(r, r->voff, r->vlen, r->vbuf);
    t1 = rp__ckpt_now_ns();
    r->scatter_ns += t1 - t0;
    for (k = 1; k < e->size && ok; k++) {
        ok = rp_peer_stripe(r, (e->rank + k) % e->size) ? 1 : 0;
    }
    if (e->fault == RP_CKPT_FAULT_PEER && e->fault_rank == e->rank) {
        /* Test hook: after the copies, so the fallback must rewrite
         * memory that already holds data. */
        rp_warn("restore: RINGPOINT_CKPT_FAULT: copies from the other "
                "ranks' memory fail on this rank");
        ok = 0;
    }
    /* Also the barrier that keeps every stripe alive until every rank has
     * copied what it needs of it. */
    rc = rp_allreduce(e->ctx, &ok, &ok, 1, RP_DTYPE_INT32, RP_OP_MIN);
    r->gather_ns += rp__ckpt_now_ns() - t1;
    if (rc == RP_OK) {
        *done_p = ok == 1;
        if (!*done_p && e->rank == 0) {
            rp_warn("restore: a rank could not read another's memory; the "
                    "state goes through the transport instead");
        } else if (e->rank == 0) {
            rp_info("restore: %u ranks on one host copied one another's "
                    "verified stripes from memory", e->size);
        }
    }
    return rc;
}
