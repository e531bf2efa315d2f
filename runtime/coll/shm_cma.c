/*
 * The single-copy collectives on one node (shm.h): each rank reads what it
 * needs from its peers' own buffers with process_vm_readv, or writes what
 * they need into theirs with process_vm_writev (allgather, a broadcast's
 * root), one copy by the kernel, where the segment's path copies into a
 * slot and out again.
 *
 * The segment carries only flags and addresses. Every such collective
 * begins with a step in which each rank posts its buffers' addresses in
 * its flag line, and ends with a step that says "I have read all I need
 * from you": a rank returns, and its caller may reuse the buffers, only
 * once every peer it could be read by posted that. Waits and reads name a
 * rank that died (the wait checks its pid; the read fails with ESRCH).
 *
 * Allreduce reads the peers' data where it lies: rank r evaluates block r
 * of the result (the blocks rp__chunk_* cuts, as the ring does), a chunk
 * at a time, from copies of the peers' chunks in its scratch and its own
 * input, straight into its output, and writes each finished chunk into
 * every peer's output while it is still in the cache. The expression per
 * element is the allreduce's one expression (eval.h), so are the bits.
 */
#include "config.h"

#include "coll/chunk.h"
#include "coll/comm.h"
#include "coll/shm.h"
#include "coll/eval.h"
#include "util/log.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

/* Bytes of each peer's data read per pass of the allreduce: the copies
 * and the operands of the expression stay in L2 (4 ranks: 512 KiB). */
#define RP_CMA_CHUNK (128u * 1024)
/* Pieces per process_vm_readv (the kernel's UIO_MAXIOV is 1024). */
#define RP_CMA_IOV 64

bool rp__cma_probe(const rp__shm_t *sh, int q, const void *addr)
{
    uint64_t v = 0;
    struct iovec l = {&v, sizeof(v)}, r = {(void *)addr, sizeof(v)};

    return sh->pids[q] != 0 &&
           process_vm_readv((pid_t)sh->pids[q], &l, 1, &r, 1, 0) ==
               (ssize_t)sizeof(v) &&
           v == ((uint64_t)sh->pids[q] << 32 | RP_SHM_PROBE);
}

/* How long a reader whose peer's buffer vanished waits for the failure
 * notice that peer sent before it left (rp__comm_fail). */
#define RP_CMA_NOTICE_WAIT_NS (2ull * 1000000000ull)

/* Does a failure notice arrive within RP_CMA_NOTICE_WAIT_NS? */
static bool rp_notice_soon(rp_comm_t *c)
{
    const uint64_t end = rp__comm_now_ns() + RP_CMA_NOTICE_WAIT_NS;

    do {
        c->tp->ops->progress(c->tp);
        if (rp__comm_root(c)->notice_req.done) {
            return true;
        }
        sched_yield();
    } while (rp__comm_now_ns() < end);
    return false;
}

/* @len bytes between @mine here and @theirs in rank @q's memory: read
 * into @mine, or with @write written from it. */
static rp_status_t rp_move(rp_comm_t *c, int q, char *mine, uintptr_t theirs,
                           size_t len, bool write)
{
    const pid_t pid = (pid_t)c->shm->pids[q];

    while (len > 0) {
        struct iovec l = {mine, len}, r = {(void *)theirs, len};
        ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0)
                            : process_vm_readv(pid, &l, 1, &r, 1, 0);

        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0 && errno == ESRCH) {
            rp_error("%s: rank %d (pid %u on this node) has exited", c->op,
                     rp__comm_world(c, q), (unsigned)pid);
            return rp__comm_fail(c, RP_ERR_PEER_FAILED, rp__comm_world(c, q));
        }
        if (got <= 0) {
            /* The address is the peer's own, posted this collective: a
             * fault means its buffer went away under us, which happens
             * when the peer left the collective on a failure of its own
             * (another rank died). Its notice is on the way: name that
             * cause, not the buffer. */
            if (rp_notice_soon(c)) {
                return rp__comm_fail_noticed(c);
            }
            rp_error("%s: %s %zu bytes of rank %d's buffer (pid %u): %s",
                     c->op, write ? "writing" : "reading", len,
                     rp__comm_world(c, q), (unsigned)pid,
                     got < 0 ? strerror(errno) : "nothing moved");
            return rp__comm_fail(c, RP_ERR_TRANSPORT, rp__comm_world(c, q));
        }
        mine += got;
        theirs += (uintptr_t)got;
        len -= (size_t)got;
    }
    return RP_OK;
}

/* @len bytes at @src in rank @q's memory into @dst. */
static rp_status_t rp_read(rp_comm_t *c, int q, void *dst, uintptr_t src,
                           size_t len)
{
    return rp_move(c, q, dst, src, len, false);
}

/* Post this rank's buffer addresses and wait for everyone's; @k_p: the
 * step, where rp_addr finds them. */
static rp_status_t rp_addrs(rp_comm_t *c, const void *a, const void *b,
                            uint32_t *k_p)
{
    const uint64_t v[2] = {(uintptr_t)a, (uintptr_t)b};
    rp_status_t status = rp__shm_publish(c, v, sizeof(v));

    *k_p = c->shm->step;
    return status != RP_OK ? status : rp__shm_wait_all(c, *k_p);
}

/* Rank @q's address @i (0 or 1) posted in step @k. */
static uintptr_t rp_addr(const rp__shm_t *sh, int q, uint32_t k, int i)
{
    uint64_t v[2];

    memcpy(v, rp__shm_data(sh, q, k, sizeof(v)), sizeof(v));
    return (uintptr_t)v[i];
}

/* A step that carries nothing; with @wait, wait for everyone's too. */
static rp_status_t rp_sync(rp_comm_t *c, bool wait)
{
    rp_status_t status = rp__shm_publish(c, NULL, 0);

    if (status != RP_OK || !wait) {
        return status;
    }
    return rp__shm_wait_all(c, c->shm->step);
}

/* The broadcast's root would sit idle while its readers copy: with a
 * core of its own it writes the last 1/n of the buffer into every reader's
 * (process_vm_writev) while each reads the rest. One reader and the root
 * then move half each, in parallel, which nearly halves a 2-rank
 * broadcast from a few hundred KiB up (doc/benchmarks.md). Oversubscribed,
 * the root's share would wait for a core the readers need, and every
 * reader would wait for it. */
static size_t rp_bcast_root_share(const rp_comm_t *c, size_t bytes)
{
    if (c->yield) {
        return 0;
    }
    return bytes / (size_t)c->shm->n & ~(size_t)63; /* whole cache lines */
}

rp_status_t rp__cma_broadcast(rp_comm_t *c, void *buf, size_t bytes,
                              int root)
{
    rp__shm_t *sh = c->shm;
    const size_t tail = rp_bcast_root_share(c, bytes), head = bytes - tail;
    const uint64_t v[2] = {(uintptr_t)buf, 0};
    rp_status_t status;
    uint32_t k;

    /* Everyone posts its buffer: the readers' are where the root writes. */
    status = rp__shm_publish(c, v, sizeof(v));
    k = sh->step;
    if (sh->rank == root) {
        /* The share into every reader's buffer, starting with the next
         * rank; then stay until every reader is done with ours. */
        for (int i = 1; i < sh->n && status == RP_OK && tail > 0; i++) {
            const int q = (root + i) % sh->n;

            status = rp__shm_wait(c, q, k);
            if (status == RP_OK) {
                status = rp_move(c, q, (char *)buf + head,
                                 rp_addr(sh, q, k, 0) + head, tail, true);
            }
        }
        return status != RP_OK ? status : rp_sync(c, true);
    }
    if (status == RP_OK) {
        status = rp__shm_wait(c, root, k);
    }
    if (status == RP_OK) {
        status = rp_read(c, root, buf, rp_addr(sh, root, k, 0), head);
    }
    if (status != RP_OK) {
        return status;
    }
    /* The readers read nothing from each other: they wait for the root
     * alone, and only when it writes into their buffers. */
    status = rp__shm_publish(c, NULL, 0);
    if (status == RP_OK && tail > 0) {
        status = rp__shm_wait(c, root, sh->step);
    }
    return status;
}

/* Bytes of its input an allgather's rank hands out per pass: copied into
 * its own block, then written into every peer's from the cache. Small
 * enough to stay in L2 while every peer's copy is written, large enough
 * that the system calls per pass do not count (the sizes tried:
 * doc/benchmarks.md). */
#define RP_CMA_AG_CHUNK (256u * 1024)

rp_status_t rp__cma_allgather(rp_comm_t *c, const void *sendbuf,
                              void *recvbuf, size_t bytes)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n, r = sh->rank;
    char *out = recvbuf, *mine = out + (size_t)r * bytes;
    const char *src = sendbuf;
    uint32_t k;
    rp_status_t status;

    /* Each rank writes its input into every output, a chunk at a time:
     * the chunk is read from memory once and then from the cache, where
     * reading the peers' inputs read every block from memory once per
     * reader (doc/benchmarks.md). An
     * input that overlaps our block without being it moves there first. */
    if (src != mine && (uintptr_t)src < (uintptr_t)mine + bytes &&
        (uintptr_t)mine < (uintptr_t)src + bytes) {
        memmove(mine, src, bytes);
        src = mine;
    }
    status = rp_addrs(c, out, NULL, &k);
    for (size_t off = 0; off < bytes && status == RP_OK;
         off += RP_CMA_AG_CHUNK) {
        const size_t len = bytes - off < RP_CMA_AG_CHUNK ? bytes - off
                                                         : RP_CMA_AG_CHUNK;

        if (src != mine) {
            memcpy(mine + off, src + off, len);
        }
        /* Starting with the next rank, so that not everyone writes to
         * rank 0 at once. */
        for (int i = 1; i < n && status == RP_OK; i++) {
            const int q = (r + i) % n;

            status = rp_move(c, q, (char *)(uintptr_t)(src + off),
                             rp_addr(sh, q, k, 0) + (size_t)r * bytes + off,
                             len, true);
        }
    }
    /* Every peer's writes into our output are done once it posts. */
    return status != RP_OK ? status : rp_sync(c, true);
}

/* The bytes of rank @q's buffer at @src into the pieces @iov[0..@niov):
 * one process_vm_readv per RP_CMA_IOV pieces, a short read resumed where
 * it stopped (inside a piece if need be). */
static rp_status_t rp_readv(rp_comm_t *c, int q, const struct iovec *iov,
                            size_t niov, uintptr_t src)
{
    size_t i = 0, skip = 0;

    while (i < niov) {
        struct iovec l[RP_CMA_IOV], r;
        size_t n = 0, len = 0, left;
        ssize_t got;

        /* The next pieces that are not empty, the first one less what was
         * read of it. */
        for (size_t j = i; j < niov && n < RP_CMA_IOV; j++) {
            const size_t off = j == i ? skip : 0;

            if (iov[j].iov_len > off) {
                l[n].iov_base = (char *)iov[j].iov_base + off;
                l[n].iov_len = iov[j].iov_len - off;
                len += l[n++].iov_len;
            }
        }
        if (n == 0) {
            return RP_OK; /* only empty pieces left */
        }
        r.iov_base = (void *)src;
        r.iov_len = len;
        got = process_vm_readv((pid_t)c->shm->pids[q], l, n, &r, 1, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            /* rp_read reads the first piece again, and names the failure
             * if it is one. */
            rp_status_t status = rp_read(c, q, l[0].iov_base, src,
                                         l[0].iov_len);

            if (status != RP_OK) {
                return status;
            }
            got = (ssize_t)l[0].iov_len;
        }
        src += (uintptr_t)got;
        /* Step over what arrived, and the empty pieces on the way. */
        for (left = (size_t)got; i < niov && left >= iov[i].iov_len - skip;
             i++, skip = 0) {
            left -= iov[i].iov_len - skip;
        }
        skip += left;
    }
    return RP_OK;
}

rp_status_t rp__cma_allgather_iov(rp_comm_t *c, const void *src,
                                  const struct iovec *const *iov,
                                  const size_t *niov)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n, r = sh->rank;
    const char *mine = src;
    uint32_t k;
    rp_status_t status = rp_addrs(c, src, NULL, &k);

    for (int i = 1; i < n && status == RP_OK; i++) {
        const int q = (r + i) % n;

        status = rp_readv(c, q, iov[q], niov[q], rp_addr(sh, q, k, 0));
    }
    if (status != RP_OK) {
        return status;
    }
    for (size_t j = 0; j < niov[r]; j++) {
        memcpy(iov[r][j].iov_base, mine, iov[r][j].iov_len);
        mine += iov[r][j].iov_len;
    }
    /* Our buffer may go once every peer has read it. */
    return rp_sync(c, true);
}

/* Rank r's block [@off, @end) of the allreduce's result, a chunk at a
 * time, into @out + (i - @out0) for element i; with @to_peers also into
 * every peer's output (the allreduce), else into ours only (the
 * reduce-scatter). */
static rp_status_t rp_cma_reduce(rp_comm_t *c, const void *sendbuf,
                                 void *recvbuf, size_t off, size_t end,
                                 size_t out0, rp_dtype_t dtype, rp_op_t op,
                                 bool half_wire, bool to_peers)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n, r = sh->rank;
    const char *in = sendbuf;
    char *out = recvbuf, *scratch;
    rp__eval_t a;
    size_t ch;
    uint32_t k;
    void *p;
    rp_status_t status = rp__eval_init(c, &a, n, sh->ptrs, dtype, op,
                                       half_wire);

    if (status == RP_OK) {
        status = rp__comm_scratch(c, &c->work, (size_t)n * RP_CMA_CHUNK, &p);
    }
    if (status == RP_OK) {
        status = rp_addrs(c, sendbuf, recvbuf, &k);
    }
    if (status != RP_OK) {
        return status;
    }
    scratch = p;
    ch = RP_CMA_CHUNK / a.es;
    /* Block r: the peers' chunks copied here, ours read where it lies,
     * in place too (the expression writes a piece after reading it). */
    for (size_t lo = off; lo < end && status == RP_OK; lo += ch) {
        const size_t len = end - lo < ch ? end - lo : ch;

        for (int i = 0; i < n && status == RP_OK; i++) {
            const int q = (r + i) % n;
            char *copy = scratch + (size_t)q * RP_CMA_CHUNK;

            a.src[q] = copy;
            if (q != r) {
                status = rp_read(c, q, copy, rp_addr(sh, q, k, 0) + lo * a.es,
                                 len * a.es);
            } else {
                a.src[q] = in + lo * a.es;
            }
        }
        if (status == RP_OK) {
            a.p0 = lo;
            rp__eval(&a, lo, len, out + (lo - out0) * a.es);
        }
        /* The chunk is final: into every peer's output from the cache,
         * rather than read back from ours later. Only this rank touches
         * block r of any buffer, and it read the peers' inputs there
         * above, so in place this overwrites nothing still needed. */
        for (int i = 1; i < n && status == RP_OK && to_peers; i++) {
            const int q = (r + i) % n;

            status = rp_move(c, q, out + lo * a.es,
                             rp_addr(sh, q, k, 1) + lo * a.es, len * a.es,
                             true);
        }
    }
    /* Once every rank posts, it has read what it needed of our input (and
     * written its block into our output). */
    return status != RP_OK ? status : rp_sync(c, true);
}

rp_status_t rp__cma_allreduce(rp_comm_t *c, const void *sendbuf,
                              void *recvbuf, size_t count, rp_dtype_t dtype,
                              rp_op_t op, bool half_wire)
{
    const int n = c->shm->n, r = c->shm->rank;
    const size_t off = rp__chunk_offset(count, n, r);

    return rp_cma_reduce(c, sendbuf, recvbuf, off,
                         off + rp__chunk_count(count, n, r), 0, dtype, op,
                         half_wire, true);
}

rp_status_t rp__cma_reduce_scatter(rp_comm_t *c, const void *sendbuf,
                                   void *recvbuf, const size_t *counts,
                                   rp_dtype_t dtype, rp_op_t op)
{
    size_t off = 0;

    for (int q = 0; q < c->shm->rank; q++) {
        off += counts[q];
    }
    return rp_cma_reduce(c, sendbuf, recvbuf, off, off + counts[c->shm->rank],
                         off, dtype, op, false, false);
}

/* The all-to-all's header, in a rank's small slot: its input's address,
 * where the input is (below), then each peer's share's displacement. */
#define RP_A2A_HDR(n) ((size_t)((n) + 2) * sizeof(uint64_t))
/* Inputs up to this size travel in the segment: below it two copies cost
 * less than a system call per peer; above, one copy by the kernel wins. */
#define RP_A2A_INLINE_MAX (16u * 1024)
/* Where a rank's input is for its peers. */
enum { RP_A2A_READ = 0, RP_A2A_SMALL = 1, RP_A2A_SLOT = 2 };

bool rp__cma_alltoall_fits(const rp_comm_t *c)
{
    return RP_A2A_HDR(c->size) <= RP_SHM_SMALL;
}

/* Rank @q's header field @i for step @k. */
static uint64_t rp_a2a_field(const rp__shm_t *sh, int q, uint32_t k, size_t i)
{
    uint64_t v;

    memcpy(&v, rp__shm_data(sh, q, k, RP_SHM_SMALL) + i * sizeof(v),
           sizeof(v));
    return v;
}

rp_status_t rp__cma_alltoall(rp_comm_t *c, const void *sendbuf,
                             const size_t *scounts, const size_t *sdispls,
                             void *recvbuf, const size_t *rcounts,
                             const size_t *rdispls)
{
    rp__shm_t *sh = c->shm;
    const int n = sh->n, r = sh->rank;
    const size_t hdr = RP_A2A_HDR(n);
    size_t stot = 0;
    uint64_t where, v;
    bool any_read = false;
    uint32_t k;
    char *slot, *small;
    rp_status_t status;

    /* Each rank posts its input's address and where in it each peer's
     * share lies; a small input goes into the segment too (after the
     * header, or in the rank's large slot), so that a small all-to-all
     * costs one copy in and one out, as the segment's allgather does,
     * instead of a system call per peer. Larger inputs are read where
     * they lie, one copy by the kernel. Each rank chooses for its own
     * input, and every rank sees every choice in the headers. */
    for (int q = 0; q < n; q++) {
        stot = sdispls[q] + scounts[q] > stot ? sdispls[q] + scounts[q] : stot;
    }
    where = hdr + stot <= RP_SHM_SMALL                               ? RP_A2A_SMALL
            : stot <= RP_A2A_INLINE_MAX && stot <= sh->slot_bytes ? RP_A2A_SLOT
                                                                  : RP_A2A_READ;
    /* The small slot is reused DEPTH steps on, the large one two. */
    status = rp__shm_step(c, where == RP_A2A_SLOT ? sh->slot_bytes
                                                  : RP_SHM_SMALL, &slot);
    if (status != RP_OK) {
        return status;
    }
    small = rp__shm_data(sh, r, sh->step, RP_SHM_SMALL);
    v = (uintptr_t)sendbuf;
    memcpy(small, &v, sizeof(v));
    memcpy(small + sizeof(v), &where, sizeof(where));
    for (int q = 0; q < n; q++) {
        v = sdispls[q];
        memcpy(small + (size_t)(q + 2) * sizeof(v), &v, sizeof(v));
    }
    if (stot > 0 && where != RP_A2A_READ) {
        memcpy(where == RP_A2A_SMALL ? small + hdr : slot, sendbuf, stot);
    }
    rp__shm_post(c);
    k = sh->step;
    status = rp__shm_wait_all(c, k);
    if (status == RP_OK && scounts[r] > 0) {
        memcpy((char *)recvbuf + rdispls[r],
               (const char *)sendbuf + sdispls[r], scounts[r]);
    }
    /* Starting with the next rank, so that not everyone reads rank 0 at
     * once. */
    for (int i = 1; i < n && status == RP_OK; i++) {
        const int q = (r + i) % n;
        const uint64_t w = rp_a2a_field(sh, q, k, 1);
        const uint64_t disp = rp_a2a_field(sh, q, k, (size_t)r + 2);
        char *dst = (char *)recvbuf + rdispls[q];

        any_read |= w == RP_A2A_READ;
        if (rcounts[q] == 0) {
            continue;
        }
        if (w == RP_A2A_SMALL) {
            memcpy(dst, rp__shm_data(sh, q, k, RP_SHM_SMALL) + hdr + disp,
                   rcounts[q]);
        } else if (w == RP_A2A_SLOT) {
            memcpy(dst, rp__shm_slot(sh, q, k) + disp, rcounts[q]);
        } else {
            status = rp_read(c, q, dst,
                             (uintptr_t)(rp_a2a_field(sh, q, k, 0) + disp),
                             rcounts[q]);
        }
    }
    /* A rank whose input was read where it lies returns only once every
     * peer has read it: all know whether any was (the headers), so all
     * take this step or none. */
    any_read |= where == RP_A2A_READ;
    return status != RP_OK || !any_read ? status : rp_sync(c, true);
}
