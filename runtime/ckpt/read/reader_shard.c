/*
 * The restore reader's bytes: payload ranges of old shards, read in whole
 * chunks whose CRC32Cs are checked before anything is used (behind the
 * reads, on a worker, for long runs), with O_DIRECT where the file system
 * takes it. Any failure is a verdict (RP_RD_BAD), logged with the file.
 */
#include "config.h"

#include "ckpt/read/reader_shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/catalog/validate_shard.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/fileio.h"
#include "ckpt/format/worker.h"
#include "ckpt/read/reader_int.h"
#include "util/log.h"

/* Open shard @j (header and length checked against the manifest). */
static int rp__rd_shard(rp__rd_t *r, uint32_t j)
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
static bool rp__rd_pread_direct(int fd, unsigned char *dst, size_t n,
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

static int rp__rd_pread(rp__rd_t *r, void *dst, size_t n, uint64_t poff)
{
    char what[RP_CKPT_LABEL_MAX + RP_CKPT_NAME_MAX + 2], file[RP_CKPT_NAME_MAX];
    uint64_t foff = RP_CKPT_SHARD_HEADER_SIZE + poff;
    size_t got = 0, more = 0;

    if (r->shard_dfd >= 0 && foff % RP_RD_ALIGN == 0 &&
        n % RP_RD_ALIGN == 0 && (uintptr_t)dst % RP_RD_ALIGN == 0 &&
        !rp__rd_pread_direct(r->shard_dfd, dst, n, foff, &got)) {
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
static void rp__rd_bad_crc(const rp__rd_t *r, uint32_t j, uint32_t c,
                           uint32_t crc)
{
    rp__ckpt_verdict_t v;
    char why[640];

    /* Judged and worded as ringpoint-ckpt verify would (validate.h). */
    rp__ckpt_verdict_init(&v, r->name);
    (void)rp__ckpt_judge_chunk(&v, &r->m, j, c, crc);
    rp_warn("restore: %s/%s", r->e->dir,
            rp__ckpt_verdict_format(&v, why, sizeof(why)));
}

/* One read of rp__rd_whole, run by its worker (or inline). */
typedef struct rp__rd_job {
    rp__rd_t *r;
    unsigned char *dst;
    size_t n;
    uint64_t poff;
    int v;
    uint64_t ns;
} rp__rd_job_t;

static void rp__rd_job_run(void *arg)
{
    rp__rd_job_t *jb = arg;
    uint64_t t0 = rp__ckpt_now_ns();

    jb->v = rp__rd_pread(jb->r, jb->dst, jb->n, jb->poff);
    jb->ns = rp__ckpt_now_ns() - t0;
}

/* Map the pages of the run after the one in flight, [@x, min(@x+@run,
 * @b)) of the range at @poff in @dst, while the worker's read waits on
 * the device: a fresh stripe buffer (rp__rd_stripe_buf) is faulted in
 * here, not page by page inside the reads. The bytes written are
 * overwritten by that run's read. */
static void rp__rd_fault(unsigned char *dst, uint64_t poff, uint64_t x,
                         uint64_t b, uint64_t run)
{
    const uint64_t end = x + run < b ? x + run : b;

    for (uint64_t i = x; i < end; i += RP_RD_ALIGN) {
        ((volatile unsigned char *)dst)[i - poff] = 0;
    }
}

/*
 * Whole chunks [@a, @b) of shard @j (chunk boundaries, inside the range
 * that starts at @poff in @dst): read in runs of RP_RD_RUN, a worker
 * reading run k+1 while this thread checks the CRCs of run k, so the
 * checks cost no time beside the device. A bad CRC stops the reads (the
 * worker finishes the one in flight) and makes the verdict bad.
 */
static int rp__rd_whole(rp__rd_t *r, uint32_t j, uint64_t a, uint64_t b,
                        uint64_t poff, unsigned char *dst)
{
    const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
    uint64_t cs = r->m.chunk_size;
    uint64_t run = RP_RD_RUN / cs * cs > 0 ? RP_RD_RUN / cs * cs : cs;
    rp__ckpt_worker_t w;
    rp__rd_job_t job[2];
    bool piped = b - a > run && rp__ckpt_worker_start(&w);
    unsigned k = 0;
    int v = RP_RD_OK;

    job[0].r = job[1].r = r;
    job[0].dst = dst + (a - poff);
    job[0].poff = a;
    job[0].n = (size_t)(b - a < run ? b - a : run);
    if (piped) {
        rp__ckpt_worker_post(&w, rp__rd_job_run, &job[0]);
    } else {
        rp__rd_job_run(&job[0]);
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
                rp__ckpt_worker_post(&w, rp__rd_job_run, &job[k ^ 1u]);
                rp__rd_fault(dst, poff, e + job[k ^ 1u].n, b, run);
            } else {
                rp__rd_job_run(&job[k ^ 1u]);
            }
        }
        t1 = rp__ckpt_now_ns();
        for (x = a; x < e; x += cs) {
            uint64_t y = x + cs < e ? x + cs : e;
            uint32_t c = (uint32_t)(x / cs);
            uint32_t crc = rp__crc32c(0, dst + (x - poff), (size_t)(y - x));

            if (crc != sh->chunk_crc[c]) {
                rp__rd_bad_crc(r, j, c, crc);
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

int rp__rd_payload(rp__rd_t *r, uint32_t j, uint64_t poff, uint64_t n,
                   unsigned char *dst)
{
    const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
    uint64_t cs = r->m.chunk_size, end = poff + n;
    uint32_t c;
    int v;

    if (n == 0) {
        return RP_RD_OK;
    }
    v = rp__rd_shard(r, j);
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
            v = rp__rd_whole(r, j, cstart, span, poff, dst);
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

                v = rp__rd_pread(r, p, len, pos);
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
            rp__rd_bad_crc(r, j, c, crc);
            return RP_RD_BAD;
        }
    }
    return RP_RD_OK;
}

/* Bytes [@off, @off+@n) of the checkpoint's stream, from the old shards
 * whose stripes hold them. */
int rp__rd_stream(rp__rd_t *r, uint64_t off, uint64_t n,
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
        v = rp__rd_payload(r, j, s - sh->stripe_offset, t - s,
                          dst + (s - off));
        if (v != RP_RD_OK) {
            return v;
        }
    }
    return RP_RD_OK;
}
