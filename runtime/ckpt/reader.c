/*
 * Restore on any world size.
 *
 * Rank 0 lists the checkpoints (a quick scan: manifest + shard headers)
 * and proposes the newest complete one; a broadcast names it. The bytes
 * to restore are the requested replicated regions, taken in manifest
 * order as one "restore stream" of R bytes, cut into W stripes of the
 * *current* job exactly as a writer cuts its stream. Each rank reads its
 * stripe of that stream from whichever old shards hold it (several, when
 * the world size changed), reading whole chunks and checking their CRCs,
 * plus its own per-rank regions; nothing is written into the application's
 * memory yet. An allreduce(MIN) of a verdict decides for everyone: all
 * good, then rounds of allgather rebuild the replicated regions on every
 * rank and the per-rank ones are copied in; a bad CRC or unreadable file
 * on any rank, then every rank tries the next older checkpoint; a region
 * that does not fit the checkpoint, then every rank fails.
 *
 * Everything taken from the manifest is checked against the registered
 * table before it sizes an allocation or an offset: names, kinds and sizes
 * must match, so a crafted manifest cannot make this allocate more than
 * the application registered.
 */
#include "config.h"

#include "ckpt/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog.h"
#include "ckpt/crc32c.h"
#include "ckpt/devstage.h"
#include "ckpt/fileio.h"
#include "core/context.h"
#include "ringpoint/coll.h"
#include "util/log.h"
#include "util/str.h"

#define RP_RD_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define RP_RD_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
/* Read unit for bytes outside the wanted range (still CRC-checked). */
#define RP_RD_BUF (4u << 20)
/* Bytes received per allgather round when rebuilding the stream (all
 * ranks' pieces together; each rank sends its share, at most
 * RP_RD_ROUND_MAX and at least RP_RD_ROUND_MIN). Small enough that the
 * receive buffer stays in cache for the scatter copy that reads it, and
 * below the sizes where the transport slows down: measured here with
 * ringpoint-bench allgather at 2 ranks, 11-13 GB/s up to 2 MiB received,
 * 8 GB/s at 8 MiB, 1.4 GB/s at 16 MiB (the old rounds were 32 MiB). */
#define RP_RD_ROUND_BYTES (2u << 20)
#define RP_RD_ROUND_MAX (1u << 20)
#define RP_RD_ROUND_MIN (64u << 10)
/* Longest single read of whole chunks: long requests for the device, and
 * the bytes still in cache for their CRC (here the hypervisor copies
 * O_DIRECT reads through the CPU); 8, 16 and 64 MiB measured alike when
 * the CRCs followed each read on the same thread. */
#define RP_RD_RUN (16u << 20)
/* Direct reads need the file offset, length and buffer on this. */
#define RP_RD_ALIGN 4096u

/* Verdicts, reduced with MIN. */
#define RP_RD_FATAL (-1) /* does not fit the registered regions */
#define RP_RD_BAD   0    /* unreadable or corrupt: try an older one */
#define RP_RD_OK    1

typedef struct rp_rd_rep {
    uint64_t old_off; /* in the checkpoint's stream */
    uint64_t voff;    /* in the restore stream */
    uint64_t size;
    void *addr;
    bool device;      /* GPU memory (ckpt/devstage.h) */
} rp_rd_rep_t;

typedef struct rp_rd_perrank {
    uint64_t off;     /* in the per-rank section */
    uint64_t size;
    void *addr;
    bool device;
    unsigned char *tmp; /* where it is read before the agreement */
} rp_rd_perrank_t;

/* One candidate checkpoint being read. */
typedef struct rp_rd {
    rp__ckpt_engine_t *e;
    const bool *want;
    char name[RP_CKPT_NAME_MAX];
    char label[RP_CKPT_LABEL_MAX];
    int cfd;
    rp__ckpt_manifest_t m;
    rp_rd_rep_t *reps;
    uint32_t nreps;
    uint64_t rlen;         /* R: bytes of the restore stream */
    uint64_t voff, vlen;   /* this rank's stripe of it */
    unsigned char *vbuf;
    rp_rd_perrank_t *pers;
    uint32_t npers;
    int shard_fd;          /* the shard file open now, and its rank */
    int shard_dfd;         /* the same with O_DIRECT; -1: refused */
    uint32_t shard_rank;
    unsigned char *tmp;    /* RP_RD_BUF */
    uint64_t round;        /* bytes per rank per allgather round */
    uint64_t maxlen;       /* longest stripe of the restore stream */
    unsigned char *send, *recv;
    uint64_t bytes_read;
    uint64_t read_ns, crc_ns, gather_ns, scatter_ns; /* phases */
} rp_rd_t;

static void rp_rd_release(rp_rd_t *r)
{
    uint32_t i;

    if (r->shard_fd >= 0) {
        (void)close(r->shard_fd);
    }
    if (r->shard_dfd >= 0) {
        (void)close(r->shard_dfd);
    }
    if (r->cfd >= 0) {
        (void)close(r->cfd);
    }
    for (i = 0; i < r->npers; i++) {
        free(r->pers[i].tmp);
    }
    free(r->pers);
    free(r->reps);
    if (r->vbuf != r->e->staging) {
        rp__ckpt_io_free(r->vbuf);
    }
    free(r->tmp);
    free(r->send);
    free(r->recv);
    r->send = r->recv = NULL;
    rp__ckpt_manifest_free(&r->m);
    r->shard_fd = r->shard_dfd = r->cfd = -1;
    r->pers = NULL;
    r->reps = NULL;
    r->vbuf = r->tmp = NULL;
    r->npers = r->nreps = 0;
}

/*
 * The buffer for this rank's stripe of the restore stream: 4 KiB aligned
 * for O_DIRECT, and already mapped, because faulting in a fresh stripe
 * costs as much as reading it from the disk here (170-280 ms for 128 MiB
 * under load). It is the engine's staging buffer, which async mode keeps
 * for its snapshots anyway: borrowed when big enough; otherwise made
 * (sized for the snapshots too) and, in async mode, handed to the engine
 * as its staging. Sync mode frees it with the candidate (its memory
 * budget is a bounce buffer, not a stripe).
 */
static unsigned char *rp_rd_stripe_buf(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint64_t off, len, want = r->vlen;
    unsigned char *b;

    if (e->staging != NULL && e->staging_len >= want) {
        return e->staging;
    }
    if (!e->async) {
        return rp__ckpt_io_alloc((size_t)want);
    }
    if (rp__ckpt_stripe(e->stream_len, e->size, e->rank, &off, &len) ==
            RP_OK && len + e->per_rank_len > want) {
        want = len + e->per_rank_len;
    }
    b = rp__ckpt_io_alloc((size_t)want);
    if (b != NULL) {
        rp__ckpt_io_free(e->staging);
        e->staging = b;
        e->staging_len = (size_t)want;
        if (want > e->stats.staging_bytes) {
            e->stats.staging_bytes = want;
        }
    }
    return b;
}

/* Open shard @j (header and length checked against the manifest). */
static int rp_rd_shard(rp_rd_t *r, uint32_t j)
{
    char file[RP_CKPT_NAME_MAX], msg[512];
    rp__ckpt_state_t state;
    rp_status_t rc;

    if (r->shard_fd >= 0 && r->shard_rank == j) {
        return RP_RD_OK;
    }
    if (r->shard_fd >= 0) {
        (void)close(r->shard_fd);
        r->shard_fd = -1;
    }
    if (r->shard_dfd >= 0) {
        (void)close(r->shard_dfd);
        r->shard_dfd = -1;
    }
    rc = rp__ckpt_verify_shard(r->cfd, r->name, &r->m, j, false, &state, msg,
                               sizeof(msg));
    if (rc != RP_OK) {
        rp_warn("restore: %s/%s", r->e->dir, msg);
        return RP_RD_BAD;
    }
    rp__ckpt_name_shard(j, file, sizeof(file));
    r->shard_fd = openat(r->cfd, file, RP_RD_FILE_FLAGS);
    if (r->shard_fd < 0) {
        rp_warn("restore: open %s/%s: %s", r->label, file, strerror(errno));
        return RP_RD_BAD;
    }
    (void)posix_fadvise(r->shard_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    /* Aligned pieces are read with O_DIRECT: no copy through the page
     * cache, and none of the job's working set evicted (the bytes are
     * read once). Where the file system refuses it, everything goes
     * through shard_fd. */
    r->shard_dfd = openat(r->cfd, file, RP_RD_FILE_FLAGS | O_DIRECT);
    r->shard_rank = j;
    return RP_RD_OK;
}

/* All @n bytes at @foff with O_DIRECT. False when the file system turns
 * it down only now (EINVAL): the caller reads buffered instead. Short
 * reads and other errors leave *@got_p short; the buffered read then
 * reports them. */
static bool rp_rd_pread_direct(int fd, unsigned char *dst, size_t n,
                               uint64_t foff, size_t *got_p)
{
    size_t done = 0;

    while (done < n) {
        ssize_t k = pread(fd, dst + done, n - done, (off_t)(foff + done));

        if (k < 0 && errno == EINTR) {
            continue;
        }
        if (k <= 0 || (size_t)k % RP_RD_ALIGN != 0) {
            /* EOF, an error, or an unaligned short read that cannot be
             * continued with O_DIRECT: the buffered path does the rest. */
            *got_p = done + (k > 0 ? (size_t)k : 0);
            return !(k < 0 && errno == EINVAL);
        }
        done += (size_t)k;
    }
    *got_p = done;
    return true;
}

static int rp_rd_pread(rp_rd_t *r, void *dst, size_t n, uint64_t poff)
{
    char what[RP_CKPT_LABEL_MAX + RP_CKPT_NAME_MAX + 2], file[RP_CKPT_NAME_MAX];
    uint64_t foff = RP_CKPT_SHARD_HEADER_SIZE + poff;
    size_t got = 0, more = 0;

    if (r->shard_dfd >= 0 && foff % RP_RD_ALIGN == 0 &&
        n % RP_RD_ALIGN == 0 && (uintptr_t)dst % RP_RD_ALIGN == 0 &&
        !rp_rd_pread_direct(r->shard_dfd, dst, n, foff, &got)) {
        (void)close(r->shard_dfd); /* refused: buffered from now on */
        r->shard_dfd = -1;
    }
    rp__ckpt_name_shard(r->shard_rank, file, sizeof(file));
    snprintf(what, sizeof(what), "%s/%s", r->label, file);
    if (got < n &&
        rp__ckpt_pread_full(r->shard_fd, (unsigned char *)dst + got, n - got,
                            foff + got, &more, what) != RP_OK) {
        return RP_RD_BAD; /* logged */
    }
    if (got + more != n) {
        rp_warn("restore: %s: shrank while being read", what);
        return RP_RD_BAD;
    }
    r->bytes_read += n;
    return RP_RD_OK;
}

/*
 * Payload bytes [@poff, @poff+@n) of shard @j into @dst: every chunk that
 * covers part of the range is read whole and its CRC checked; bytes in the
 * range go straight to @dst, the others through a small buffer.
 */
static void rp_rd_bad_crc(const rp_rd_t *r, uint32_t j, uint32_t c,
                          uint32_t crc)
{
    char file[RP_CKPT_NAME_MAX];

    rp__ckpt_name_shard(j, file, sizeof(file));
    rp_warn("restore: %s/%s chunk %u: crc32c 0x%08x != manifest 0x%08x",
            r->label, file, c, crc, r->m.shards[j].chunk_crc[c]);
}

/* One read of rp_rd_whole, run by its worker (or inline). */
typedef struct rp_rd_job {
    rp_rd_t *r;
    unsigned char *dst;
    size_t n;
    uint64_t poff;
    int v;
    uint64_t ns;
} rp_rd_job_t;

static void rp_rd_job_run(void *arg)
{
    rp_rd_job_t *jb = arg;
    uint64_t t0 = rp__ckpt_now_ns();

    jb->v = rp_rd_pread(jb->r, jb->dst, jb->n, jb->poff);
    jb->ns = rp__ckpt_now_ns() - t0;
}

/*
 * Whole chunks [@a, @b) of shard @j (chunk boundaries, inside the range
 * that starts at @poff in @dst): read in runs of RP_RD_RUN, a worker
 * reading run k+1 while this thread checks the CRCs of run k, so the
 * checks cost no time beside the device. A bad CRC stops the reads (the
 * worker finishes the one in flight) and makes the verdict bad.
 */
static int rp_rd_whole(rp_rd_t *r, uint32_t j, uint64_t a, uint64_t b,
                       uint64_t poff, unsigned char *dst)
{
    const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
    uint64_t cs = r->m.chunk_size;
    uint64_t run = RP_RD_RUN / cs * cs > 0 ? RP_RD_RUN / cs * cs : cs;
    rp__ckpt_worker_t w;
    rp_rd_job_t job[2];
    bool piped = b - a > run && rp__ckpt_worker_start(&w);
    unsigned k = 0;
    int v = RP_RD_OK;

    job[0].r = job[1].r = r;
    job[0].dst = dst + (a - poff);
    job[0].poff = a;
    job[0].n = (size_t)(b - a < run ? b - a : run);
    if (piped) {
        rp__ckpt_worker_post(&w, rp_rd_job_run, &job[0]);
    } else {
        rp_rd_job_run(&job[0]);
    }
    while (a < b) {
        uint64_t e = a + job[k].n, t1, x;

        if (piped) {
            rp__ckpt_worker_wait(&w);
        }
        r->read_ns += job[k].ns;
        if (job[k].v != RP_RD_OK) {
            v = job[k].v;
            break;
        }
        if (e < b) {
            job[k ^ 1u].dst = dst + (e - poff);
            job[k ^ 1u].poff = e;
            job[k ^ 1u].n = (size_t)(b - e < run ? b - e : run);
            if (piped) {
                rp__ckpt_worker_post(&w, rp_rd_job_run, &job[k ^ 1u]);
            } else {
                rp_rd_job_run(&job[k ^ 1u]);
            }
        }
        t1 = rp__ckpt_now_ns();
        for (x = a; x < e; x += cs) {
            uint64_t y = x + cs < e ? x + cs : e;
            uint32_t c = (uint32_t)(x / cs);
            uint32_t crc = rp__crc32c(0, dst + (x - poff), (size_t)(y - x));

            if (crc != sh->chunk_crc[c]) {
                rp_rd_bad_crc(r, j, c, crc);
                v = RP_RD_BAD;
                break;
            }
        }
        r->crc_ns += rp__ckpt_now_ns() - t1;
        if (v != RP_RD_OK) {
            break;
        }
        a = e;
        k ^= 1u;
    }
    if (piped) {
        rp__ckpt_worker_stop(&w); /* after a failure: the read in flight */
    }
    return v;
}

static int rp_rd_payload(rp_rd_t *r, uint32_t j, uint64_t poff, uint64_t n,
                         unsigned char *dst)
{
    const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
    uint64_t cs = r->m.chunk_size, end = poff + n;
    uint32_t c;
    int v;

    if (n == 0) {
        return RP_RD_OK;
    }
    v = rp_rd_shard(r, j);
    if (v != RP_RD_OK) {
        return v;
    }
    for (c = (uint32_t)(poff / cs); (uint64_t)c * cs < end; c++) {
        uint64_t cstart = (uint64_t)c * cs;
        uint64_t cend = cstart + cs < sh->length ? cstart + cs : sh->length;
        uint64_t pos = cstart;
        uint32_t crc = 0;

        if (cstart >= poff && cend <= end) {
            /* Whole chunks inside the range from here on: read in place,
             * in long requests, CRCs checked behind the reads. */
            uint64_t span = cend;

            while (span < end && span < sh->length) {
                uint64_t nx = span + cs < sh->length ? span + cs : sh->length;

                if (nx > end) {
                    break;
                }
                span = nx;
            }
            v = rp_rd_whole(r, j, cstart, span, poff, dst);
            if (v != RP_RD_OK) {
                return v;
            }
            c = (uint32_t)((span + cs - 1) / cs) - 1;
            continue;
        }

        while (pos < cend) {
            uint64_t stop = cend;
            bool inside = pos >= poff && pos < end;

            /* Cut pieces at the range's edges: each piece is wholly in
             * the range (read in place) or wholly out (read to tmp). */
            if (inside && end < stop) {
                stop = end;
            } else if (!inside && pos < poff && poff < stop) {
                stop = poff;
            }
            if (!inside && stop - pos > RP_RD_BUF) {
                stop = pos + RP_RD_BUF;
            }
            if (inside && stop - pos > (1u << 30)) {
                stop = pos + (1u << 30);
            }
            {
                unsigned char *p = inside ? dst + (pos - poff) : r->tmp;
                size_t len = (size_t)(stop - pos);

                uint64_t t0 = rp__ckpt_now_ns(), t1;

                v = rp_rd_pread(r, p, len, pos);
                if (v != RP_RD_OK) {
                    return v;
                }
                t1 = rp__ckpt_now_ns();
                crc = rp__crc32c(crc, p, len);
                r->read_ns += t1 - t0;
                r->crc_ns += rp__ckpt_now_ns() - t1;
            }
            pos = stop;
        }
        if (crc != sh->chunk_crc[c]) {
            rp_rd_bad_crc(r, j, c, crc);
            return RP_RD_BAD;
        }
    }
    return RP_RD_OK;
}

/* Bytes [@off, @off+@n) of the checkpoint's stream, from the old shards
 * whose stripes hold them. */
static int rp_rd_stream(rp_rd_t *r, uint64_t off, uint64_t n,
                        unsigned char *dst)
{
    uint32_t j;

    for (j = 0; j < r->m.world_size && n > 0; j++) {
        const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
        uint64_t s = off, t = off + n;
        int v;

        if (sh->stripe_length == 0 || t <= sh->stripe_offset ||
            s >= sh->stripe_offset + sh->stripe_length) {
            continue;
        }
        if (s < sh->stripe_offset) {
            s = sh->stripe_offset;
        }
        if (t > sh->stripe_offset + sh->stripe_length) {
            t = sh->stripe_offset + sh->stripe_length;
        }
        v = rp_rd_payload(r, j, s - sh->stripe_offset, t - s,
                          dst + (s - off));
        if (v != RP_RD_OK) {
            return v;
        }
    }
    return RP_RD_OK;
}

/* Check the manifest against what is asked for; build the read plan. */
static int rp_rd_plan(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint32_t i;

    r->reps = calloc(e->nregs + 1, sizeof(*r->reps));
    r->pers = calloc(e->nregs + 1, sizeof(*r->pers));
    if (r->reps == NULL || r->pers == NULL) {
        rp_error("restore: out of memory");
        return RP_RD_FATAL;
    }
    for (i = 0; i < e->nregs; i++) {
        const rp__ckpt_reg_t *g = &e->regs[i];
        long k;

        if (!r->want[i]) {
            continue;
        }
        k = rp__ckpt_manifest_find_region(&r->m, g->name);
        if (k < 0) {
            rp_error("restore: region '%s' is not in %s", g->name, r->label);
            return RP_RD_FATAL;
        }
        if (r->m.regions[k].kind != g->kind) {
            rp_error("restore: region '%s' is %s in %s but registered as %s",
                     g->name, r->m.regions[k].kind == RP_CKPT_REGION_PER_RANK
                                  ? "per-rank" : "replicated",
                     r->label, g->kind == RP_CKPT_REGION_PER_RANK
                                   ? "per-rank" : "replicated");
            return RP_RD_FATAL;
        }
        if (r->m.regions[k].size != g->size) {
            rp_error("restore: region '%s' has %llu bytes in %s but %llu "
                     "registered", g->name,
                     (unsigned long long)r->m.regions[k].size, r->label,
                     (unsigned long long)g->size);
            return RP_RD_FATAL;
        }
        if (g->kind == RP_CKPT_REGION_PER_RANK) {
            if (r->m.world_size != e->size) {
                rp_error("restore: per-rank region '%s' cannot be restored: "
                         "%s was written by %u ranks and this job has %u "
                         "(restore only the replicated regions by name to "
                         "resume on another size)", g->name, r->label,
                         r->m.world_size, e->size);
                return RP_RD_FATAL;
            }
            r->pers[r->npers].off = r->m.regions[k].offset;
            r->pers[r->npers].size = g->size;
            r->pers[r->npers].addr = g->addr;
            r->pers[r->npers].device = g->device;
            r->npers++;
        } else {
            r->reps[r->nreps].old_off = r->m.regions[k].offset;
            r->reps[r->nreps].size = g->size;
            r->reps[r->nreps].addr = g->addr;
            r->reps[r->nreps].device = g->device;
            r->nreps++;
        }
    }
    /* The restore stream in the checkpoint's order, so consecutive
     * regions read consecutive bytes of the old shards. */
    for (i = 1; i < r->nreps; i++) {
        rp_rd_rep_t x = r->reps[i];
        uint32_t k = i;

        while (k > 0 && r->reps[k - 1].old_off > x.old_off) {
            r->reps[k] = r->reps[k - 1];
            k--;
        }
        r->reps[k] = x;
    }
    r->rlen = 0;
    for (i = 0; i < r->nreps; i++) {
        r->reps[i].voff = r->rlen;
        r->rlen += r->reps[i].size;
    }
    return RP_RD_OK;
}

/* Copy restore-stream bytes [@v, @v+@n) from @src into the regions. */
static void rp_rd_scatter(const rp_rd_t *r, uint64_t v, uint64_t n,
                          const unsigned char *src)
{
    uint32_t i;

    for (i = 0; i < r->nreps && n > 0; i++) {
        const rp_rd_rep_t *p = &r->reps[i];
        uint64_t s = v, t = v + n;

        if (t <= p->voff || s >= p->voff + p->size) {
            continue;
        }
        if (s < p->voff) {
            s = p->voff;
        }
        if (t > p->voff + p->size) {
            t = p->voff + p->size;
        }
        if (p->device) {
            rp__ckpt_devstage_in(r->e, (unsigned char *)p->addr +
                                           (s - p->voff),
                                 src + (s - v), (size_t)(t - s));
        } else {
            memcpy((unsigned char *)p->addr + (s - p->voff), src + (s - v),
                   (size_t)(t - s));
        }
    }
}

/* Read this rank's part of candidate @r->name. Returns a verdict. */
static int rp_rd_read(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    rp__ckpt_state_t state;
    char msg[512];
    uint64_t name_step;
    uint32_t i;
    int v;

    snprintf(r->label, sizeof(r->label), "%s/%s", e->dir, r->name);
    if (rp__ckpt_open_root(e, false) != RP_OK) {
        rp_warn("restore: cannot open %s on this node (it must be shared by "
                "all nodes)", e->dir);
        return RP_RD_BAD;
    }
    r->cfd = openat(e->rootfd, r->name, RP_RD_DIR_FLAGS);
    if (r->cfd < 0) {
        rp_warn("restore: open %s: %s", r->label, strerror(errno));
        return RP_RD_BAD;
    }
    if (rp__ckpt_load_manifest_at(r->cfd, r->name, &r->m, &state, msg,
                                  sizeof(msg)) != RP_OK) {
        rp_warn("restore: %s/%s", e->dir, msg);
        return RP_RD_BAD;
    }
    if (!rp__ckpt_parse_committed(r->name, &name_step) ||
        name_step != r->m.step) {
        rp_warn("restore: %s: manifest step %llu does not match the name",
                r->label, (unsigned long long)r->m.step);
        return RP_RD_BAD;
    }
    v = rp_rd_plan(r);
    if (v != RP_RD_OK) {
        return v;
    }
    if (rp__ckpt_stripe(r->rlen, e->size, e->rank, &r->voff, &r->vlen) !=
        RP_OK) {
        return RP_RD_FATAL;
    }
    for (i = 0; i < e->size; i++) {
        uint64_t o, l;

        (void)rp__ckpt_stripe(r->rlen, e->size, i, &o, &l);
        r->maxlen = l > r->maxlen ? l : r->maxlen;
    }
    r->round = RP_RD_ROUND_BYTES / e->size / RP_RD_ALIGN * RP_RD_ALIGN;
    r->round = r->round > RP_RD_ROUND_MAX   ? RP_RD_ROUND_MAX
               : r->round < RP_RD_ROUND_MIN ? RP_RD_ROUND_MIN
                                            : r->round;
    r->round = r->maxlen < r->round ? r->maxlen : r->round;
    r->tmp = malloc(RP_RD_BUF);
    /* Aligned for O_DIRECT; faulted in here, in one sweep (huge pages
     * where the kernel has them), not page by page under the reads. */
    r->vbuf = rp_rd_stripe_buf(r);
    /* The gather buffers too, before the agreement: running out of memory
     * is then a verdict, not a rank missing from a collective. */
    if (e->size > 1 && r->round > 0) {
        r->send = malloc((size_t)r->round);
        r->recv = malloc((size_t)r->round * e->size * 2);
    }
    if (r->tmp == NULL || r->vbuf == NULL ||
        (e->size > 1 && r->round > 0 && (r->send == NULL || r->recv == NULL))) {
        rp_error("restore: out of memory for %llu bytes",
                 (unsigned long long)r->vlen);
        return RP_RD_FATAL;
    }
    /* My stripe of the restore stream, region by region. */
    for (i = 0; i < r->nreps; i++) {
        const rp_rd_rep_t *p = &r->reps[i];
        uint64_t s = r->voff, t = r->voff + r->vlen;

        if (t <= p->voff || s >= p->voff + p->size) {
            continue;
        }
        if (s < p->voff) {
            s = p->voff;
        }
        if (t > p->voff + p->size) {
            t = p->voff + p->size;
        }
        v = rp_rd_stream(r, p->old_off + (s - p->voff), t - s,
                         r->vbuf + (s - r->voff));
        if (v != RP_RD_OK) {
            return v;
        }
    }
    for (i = 0; i < r->npers; i++) {
        rp_rd_perrank_t *p = &r->pers[i];

        p->tmp = malloc(p->size > 0 ? (size_t)p->size : 1);
        if (p->tmp == NULL) {
            rp_error("restore: out of memory");
            return RP_RD_FATAL;
        }
        v = rp_rd_payload(r, e->rank,
                          r->m.shards[e->rank].stripe_length + p->off,
                          p->size, p->tmp);
        if (v != RP_RD_OK) {
            return v;
        }
    }
    return RP_RD_OK;
}

/* Everyone's stripes to everyone, in rounds of RP_RD_ROUND per rank, then
 * into the regions; per-rank regions from their buffers. */
/* Start round @k of the exchange into @recv (non-blocking: the library's
 * progress thread runs it). */
static rp_status_t rp_rd_post(rp_rd_t *r, uint64_t k, unsigned char *recv,
                              rp_request_h *req)
{
    uint64_t round = r->round, mine = r->vlen > k ? r->vlen - k : 0;

    if (mine < round) {
        /* The last round: the stripe ends inside it (the send buffer is
         * only ever used by this one round). */
        memcpy(r->send, r->vbuf + k, (size_t)mine);
    }
    return rp_iallgather(r->e->ctx, mine < round ? r->send : r->vbuf + k,
                         recv, (size_t)round, RP_DTYPE_UINT8, req);
}

static rp_status_t rp_rd_apply(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint64_t round = r->round, k, t0, t1;
    unsigned char *recv[2];
    rp_request_h req = NULL;
    uint32_t j, i;
    rp_status_t rc = RP_OK;

    if (e->size == 1) {
        rp_rd_scatter(r, 0, r->vlen, r->vbuf);
    }
    /* Two receive buffers: round k+1 travels (on the progress thread)
     * while this thread copies round k into the regions. */
    recv[0] = r->recv;
    recv[1] = r->recv + (size_t)round * e->size;
    if (e->size > 1 && r->maxlen > 0) {
        rc = rp_rd_post(r, 0, recv[0], &req);
    }
    for (k = 0; rc == RP_OK && e->size > 1 && k < r->maxlen; k += round) {
        unsigned char *in = recv[(k / round) % 2];

        t0 = rp__ckpt_now_ns();
        rc = rp_wait(&req);
        if (rc == RP_OK && k + round < r->maxlen) {
            rc = rp_rd_post(r, k + round, recv[(k / round + 1) % 2], &req);
        }
        t1 = rp__ckpt_now_ns();
        r->gather_ns += t1 - t0;
        if (rc != RP_OK) {
            break;
        }
        for (j = 0; j < e->size; j++) {
            uint64_t o, l, n;

            (void)rp__ckpt_stripe(r->rlen, e->size, j, &o, &l);
            n = l > k ? l - k : 0;
            n = n < round ? n : round;
            rp_rd_scatter(r, o + k, n, in + (size_t)j * round);
        }
        r->scatter_ns += rp__ckpt_now_ns() - t1;
    }
    if (req != NULL) {
        (void)rp_wait(&req); /* after a failure: nothing left in flight */
    }
    if (rc != RP_OK) {
        return rc;
    }
    for (i = 0; i < r->npers; i++) {
        if (r->pers[i].size == 0) {
            continue; /* may have no address at all */
        } else if (r->pers[i].device) {
            rp__ckpt_devstage_in(e, r->pers[i].addr, r->pers[i].tmp,
                                 (size_t)r->pers[i].size);
        } else {
            memcpy(r->pers[i].addr, r->pers[i].tmp, (size_t)r->pers[i].size);
        }
    }
    return e->dev != NULL ? e->dev->failed : RP_OK;
}

/* Rank 0: the complete checkpoints, newest first (quick scan). */
static rp_status_t rp_rd_candidates(rp__ckpt_engine_t *e, char (**names_p)[RP_CKPT_NAME_MAX],
                                    size_t *n_p)
{
    rp__ckpt_catalog_t cat;
    char (*names)[RP_CKPT_NAME_MAX];
    size_t i, n = 0;
    rp_status_t rc;

    *names_p = NULL;
    *n_p = 0;
    rp__ckpt_prune_join(e); /* the list is not changing under the scan */
    rc = rp__ckpt_open_root(e, false);
    if (rc == RP_ERR_NOT_FOUND) {
        return RP_OK;
    }
    if (rc != RP_OK) {
        return rc;
    }
    if (!e->cleaned) {
        unsigned removed = 0;

        if (rp__ckpt_cleanup_inflight(e->dir, &removed) == RP_OK &&
            removed > 0) {
            rp_warn("restore: removed %u leftover in-flight director%s in "
                    "%s", removed, removed == 1 ? "y" : "ies", e->dir);
        }
        e->cleaned = true;
    }
    rc = rp__ckpt_catalog_scan(e->dir, false, &cat);
    if (rc == RP_ERR_NOT_FOUND) {
        return RP_OK;
    }
    if (rc != RP_OK) {
        return rc;
    }
    names = calloc(cat.count + 1, sizeof(*names));
    if (names == NULL) {
        rp__ckpt_catalog_free(&cat);
        rp_error("restore: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (i = cat.count; i-- > 0;) {
        const rp__ckpt_entry_t *en = &cat.entries[i];

        if (en->state == RP_CKPT_COMPLETE) {
            snprintf(names[n++], RP_CKPT_NAME_MAX, "%s", en->name);
        } else if (en->state != RP_CKPT_INFLIGHT) {
            rp_warn("restore: skipping %s/%s (%s): %s", e->dir, en->name,
                    rp__ckpt_state_name(en->state), en->reason);
        }
    }
    rp__ckpt_catalog_free(&cat);
    *names_p = names;
    *n_p = n;
    return RP_OK;
}

typedef struct rp_rd_msg {
    int32_t have;
    int32_t status;
    char name[RP_CKPT_NAME_MAX];
} rp_rd_msg_t;

rp_status_t rp__ckpt_restore(rp__ckpt_engine_t *e, const char *const names[],
                             size_t nnames, bool exact, uint64_t step,
                             rp_restore_info_t *info)
{
    char (*cands)[RP_CKPT_NAME_MAX] = NULL;
    size_t ncands = 0, next = 0, i;
    bool *want;
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc;

    if (info != NULL) {
        memset(info, 0, sizeof(*info));
    }
    rc = rp__ckpt_regions_check(e);
    if (rc != RP_OK) {
        return rc;
    }
    e->last_ckpt_ns = rp__ckpt_now_ns();
    e->clock_started = true;
    want = calloc(e->nregs + 1, sizeof(*want));
    if (want == NULL) {
        rp_error("rp_restore: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (i = 0; i < e->nregs; i++) {
        want[i] = names == NULL;
    }
    for (i = 0; names != NULL && i < nnames; i++) {
        long k = names[i] != NULL ? rp__ckpt_regions_find(e, names[i]) : -1;

        if (k < 0) {
            rp_error("rp_restore: '%s' is not a registered region",
                     names[i] != NULL ? names[i] : "(null)");
            free(want);
            return RP_ERR_INVALID_ARG;
        }
        want[k] = true;
    }
    if (e->rank == 0) {
        rc = rp_rd_candidates(e, &cands, &ncands);
        if (rc == RP_OK && exact) {
            /* Only the checkpoint of @step is a candidate. */
            size_t k = 0;
            uint64_t s;

            for (i = 0; i < ncands; i++) {
                if (rp__ckpt_parse_committed(cands[i], &s) && s == step) {
                    memmove(cands[0], cands[i], RP_CKPT_NAME_MAX);
                    k = 1;
                    break;
                }
            }
            ncands = k;
        }
    }
    for (;;) {
        rp_rd_msg_t msg;
        rp_rd_t r;
        int32_t verdict;
        uint64_t tv;

        memset(&msg, 0, sizeof(msg));
        if (e->rank == 0) {
            msg.status = rc;
            msg.have = rc == RP_OK && next < ncands;
            if (msg.have) {
                memcpy(msg.name, cands[next], RP_CKPT_NAME_MAX);
            }
            next++;
        }
        rc = rp_broadcast(e->ctx, &msg, sizeof(msg), RP_DTYPE_UINT8, 0);
        if (rc != RP_OK) {
            break;
        }
        if (msg.status != RP_OK) {
            rc = (rp_status_t)msg.status;
            if (e->rank != 0) {
                rp_error("restore: rank 0 could not list %s (%s)", e->dir,
                         rp_status_string(rc));
            }
            break;
        }
        if (!msg.have && exact) {
            if (e->rank == 0) {
                rp_info("restore: no complete checkpoint of step %llu in %s",
                        (unsigned long long)step, e->dir);
            }
            rc = RP_ERR_NOT_FOUND;
            break;
        }
        if (!msg.have) {
            if (e->rank == 0) {
                rp_info("restore: no complete checkpoint in %s: starting "
                        "fresh", e->dir);
            }
            rc = RP_OK;
            break;
        }
        memset(&r, 0, sizeof(r));
        r.e = e;
        r.want = want;
        r.cfd = r.shard_fd = r.shard_dfd = -1;
        memcpy(r.name, msg.name, RP_CKPT_NAME_MAX);
        r.name[RP_CKPT_NAME_MAX - 1] = '\0';
        verdict = rp_rd_read(&r);
        tv = rp__ckpt_now_ns();
        rc = rp_allreduce(e->ctx, &verdict, &verdict, 1, RP_DTYPE_INT32,
                          RP_OP_MIN);
        e->stats.rd_wait_ns = rp__ckpt_now_ns() - tv;
        if (rc == RP_OK && verdict == RP_RD_OK) {
            rc = rp_rd_apply(&r);
            if (rc == RP_OK) {
                e->have_ckpt_step = true;
                e->ckpt_step = r.m.step;
            }
            if (rc == RP_OK && info != NULL) {
                struct timespec now;
                double created = (double)r.m.created_ns / 1e9;

                clock_gettime(CLOCK_REALTIME, &now);
                info->restored = 1;
                info->step = r.m.step;
                info->age_s = (double)now.tv_sec +
                              (double)now.tv_nsec / 1e9 - created;
                info->world_size = r.m.world_size;
                (void)rp__strlcpy(info->path, r.label, sizeof(info->path));
            }
            if (rc == RP_OK && e->rank == 0) {
                rp_info("restore: step %llu from %s (written by %u ranks)",
                        (unsigned long long)r.m.step, r.label,
                        r.m.world_size);
            }
            e->stats.restore_bytes = r.bytes_read;
            e->stats.rd_read_ns = r.read_ns;
            e->stats.rd_crc_ns = r.crc_ns;
            e->stats.rd_gather_ns = r.gather_ns;
            e->stats.rd_scatter_ns = r.scatter_ns;
        } else if (rc == RP_OK && verdict == RP_RD_FATAL) {
            rc = RP_ERR_INVALID_ARG;
        } else if (rc == RP_OK && exact) {
            /* The caller chooses what to try next. */
            if (e->rank == 0) {
                rp_error("restore: %s is unusable (see the messages above); "
                         "not falling back (rp_restore_step)", r.label);
            }
            rc = RP_ERR_CORRUPT;
        } else if (rc == RP_OK) {
            if (e->rank == 0) {
                rp_warn("restore: %s is unusable (see the messages above); "
                        "falling back to an older checkpoint", r.label);
            }
            rp_rd_release(&r);
            continue;
        }
        rp_rd_release(&r);
        break;
    }
    e->stats.restore_ns = rp__ckpt_now_ns() - t0;
    free(cands);
    free(want);
    return rc;
}

/* What rank 0 tells everyone about the checkpoint rp_ckpt_find chose. */
typedef struct rp_rd_find_msg {
    int32_t status;
    uint32_t world_size;
    uint64_t step;
    uint64_t nregions;
    char name[RP_CKPT_NAME_MAX];
} rp_rd_find_msg_t;

/* Rank 0: the newest complete checkpoint below @before whose manifest
 * reads, as restore would choose it; its table into *@regs_p (malloc'd). */
static rp_status_t rp_rd_find_root(rp__ckpt_engine_t *e, uint64_t before,
                                   rp_rd_find_msg_t *msg,
                                   rp_ckpt_region_desc_t **regs_p)
{
    char (*cands)[RP_CKPT_NAME_MAX] = NULL;
    rp__ckpt_manifest_t m;
    rp__ckpt_state_t state;
    char errmsg[512];
    size_t ncands = 0, i;
    uint32_t k;
    rp_status_t rc;

    rc = rp_rd_candidates(e, &cands, &ncands);
    if (rc != RP_OK) {
        return rc;
    }
    rc = RP_ERR_NOT_FOUND;
    for (i = 0; i < ncands && rc == RP_ERR_NOT_FOUND; i++) {
        uint64_t step;
        int cfd;

        if (!rp__ckpt_parse_committed(cands[i], &step) ||
            (before != UINT64_MAX && step >= before)) {
            continue;
        }
        cfd = openat(e->rootfd, cands[i], RP_RD_DIR_FLAGS);
        if (cfd < 0) {
            rp_warn("rp_ckpt_find: open %s/%s: %s", e->dir, cands[i],
                    strerror(errno));
            continue;
        }
        if (rp__ckpt_load_manifest_at(cfd, cands[i], &m, &state, errmsg,
                                      sizeof(errmsg)) != RP_OK) {
            rp_warn("rp_ckpt_find: skipping %s/%s", e->dir, errmsg);
            (void)close(cfd);
            continue;
        }
        (void)close(cfd);
        if (m.step != step) {
            rp_warn("rp_ckpt_find: skipping %s/%s: manifest step %llu does "
                    "not match the name", e->dir, cands[i],
                    (unsigned long long)m.step);
            rp__ckpt_manifest_free(&m);
            continue;
        }
        *regs_p = calloc(m.nregions > 0 ? m.nregions : 1, sizeof(**regs_p));
        if (*regs_p == NULL) {
            rp_error("rp_ckpt_find: out of memory");
            rp__ckpt_manifest_free(&m);
            rc = RP_ERR_NO_MEMORY;
            break;
        }
        for (k = 0; k < m.nregions; k++) {
            rp_ckpt_region_desc_t *d = &(*regs_p)[k];

            (void)rp__strlcpy(d->name, m.regions[k].name, sizeof(d->name));
            d->kind = m.regions[k].kind == RP_CKPT_REGION_PER_RANK
                          ? RP_REGION_PER_RANK : RP_REGION_REPLICATED;
            d->size = m.regions[k].size;
        }
        msg->step = m.step;
        msg->world_size = m.world_size;
        msg->nregions = m.nregions;
        memcpy(msg->name, cands[i], RP_CKPT_NAME_MAX);
        rp__ckpt_manifest_free(&m);
        rc = RP_OK;
    }
    free(cands);
    return rc;
}

rp_status_t rp__ckpt_find(rp__ckpt_engine_t *e, uint64_t before_step,
                          rp_ckpt_desc_t *desc)
{
    rp_ckpt_region_desc_t *regs = NULL;
    rp_rd_find_msg_t msg;
    char label[RP_CKPT_LABEL_MAX];
    int32_t ok;
    rp_status_t rc;

    memset(&msg, 0, sizeof(msg));
    if (e->rank == 0) {
        msg.status = (int32_t)rp_rd_find_root(e, before_step, &msg, &regs);
    }
    rc = rp_broadcast(e->ctx, &msg, sizeof(msg), RP_DTYPE_UINT8, 0);
    if (rc != RP_OK) {
        goto err_free;
    }
    rc = (rp_status_t)msg.status;
    if (rc != RP_OK) {
        if (e->rank != 0 && rc != RP_ERR_NOT_FOUND) {
            rp_error("rp_ckpt_find: rank 0 could not list %s (%s)", e->dir,
                     rp_status_string(rc));
        }
        goto err_free;
    }
    if (e->rank != 0) {
        regs = calloc(msg.nregions > 0 ? (size_t)msg.nregions : 1,
                      sizeof(*regs));
        if (regs == NULL) {
            rp_error("rp_ckpt_find: out of memory for %llu regions",
                     (unsigned long long)msg.nregions);
        }
    }
    /* Every rank can receive the table, or none tries. */
    ok = regs != NULL;
    rc = rp_allreduce(e->ctx, &ok, &ok, 1, RP_DTYPE_INT32, RP_OP_MIN);
    if (rc != RP_OK) {
        goto err_free;
    }
    if (!ok) {
        rc = RP_ERR_NO_MEMORY;
        goto err_free;
    }
    if (msg.nregions > 0) {
        rc = rp_broadcast(e->ctx, regs,
                          (size_t)msg.nregions * sizeof(*regs),
                          RP_DTYPE_UINT8, 0);
        if (rc != RP_OK) {
            goto err_free;
        }
    }
    msg.name[RP_CKPT_NAME_MAX - 1] = '\0';
    snprintf(label, sizeof(label), "%s/%s", e->dir, msg.name);
    desc->step = msg.step;
    desc->world_size = msg.world_size;
    desc->nregions = (size_t)msg.nregions;
    desc->regions = regs;
    (void)rp__strlcpy(desc->path, label, sizeof(desc->path));
    return RP_OK;

err_free:
    free(regs);
    return rc;
}
