/*
 * Shard, manifest and commit writes shared by both checkpoint writers;
 * see shardio.h.
 */
#include "config.h"

#include "ckpt/shardio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/crc32c.h"
#include "ckpt/fileio.h"
#include "ckpt/layout.h"
#include "util/log.h"

#define RP_SIO_FILE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
#define RP_SIO_ALIGN 4096u
/* A transparent huge page (x86-64, arm64 with 4 KiB pages). */
#define RP_SIO_HUGE (2u << 20)
/* Bounce buffer of the cursor path: big enough that the device sees long
 * sequential writes, small enough to stay far below the "one stripe" of
 * host memory a checkpoint may use. */
#define RP_SIO_BOUNCE (8u << 20)
/* Unit of the cursor's copy + CRC (one fused pass, so no longer sized to
 * keep a second pass in L2; big enough that the few bytes each call does
 * outside the three-stream loop do not count). */
#define RP_SIO_BLOCK (1u << 20)
/* Largest single direct write from a caller's buffer. */
#define RP_SIO_MAX_WRITE (64u << 20)

uint64_t rp__ckpt_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void *rp__ckpt_io_alloc(size_t len)
{
    size_t align = len >= RP_SIO_HUGE ? RP_SIO_HUGE : RP_SIO_ALIGN;
    void *p = NULL;
    size_t i;

    if (posix_memalign(&p, align, len > 0 ? len : RP_SIO_ALIGN) != 0) {
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    /* Big buffers (staging, a restore's stripe) in 2 MiB pages where the
     * kernel has transparent huge pages on request: 512 times fewer
     * faults to map them, and fewer TLB misses in every copy through
     * them. Only advice: without it the 4 KiB pages below do. */
    if (align == RP_SIO_HUGE) {
        (void)madvise(p, len - len % RP_SIO_HUGE, MADV_HUGEPAGE);
    }
#endif
    /* One write per page: the kernel maps them now, not during the first
     * snapshot (writing into fresh pages is several times slower). */
    for (i = 0; i < len; i += RP_SIO_ALIGN) {
        ((volatile unsigned char *)p)[i] = 0;
    }
    return p;
}

void rp__ckpt_io_free(void *p)
{
    free(p);
}

uint32_t rp__ckpt_nchunks(uint64_t len, uint64_t chunk_size)
{
    return (uint32_t)(len / chunk_size + (len % chunk_size != 0));
}

void rp__ckpt_cursor_init(rp__ckpt_cursor_t *cur, const rp__ckpt_seg_t *segs,
                          size_t nsegs, uint64_t chunk_size, uint32_t *crcs)
{
    size_t i;

    memset(cur, 0, sizeof(*cur));
    cur->segs = segs;
    cur->nsegs = nsegs;
    cur->chunk_size = chunk_size;
    cur->crcs = crcs;
    for (i = 0; i < nsegs; i++) {
        cur->total += segs[i].len;
    }
    cur->nchunks = rp__ckpt_nchunks(cur->total, chunk_size);
}

size_t rp__ckpt_cursor_fill(rp__ckpt_cursor_t *cur, void *dst, size_t n)
{
    unsigned char *out = dst;
    size_t done = 0;

    while (done < n && cur->pos < cur->total) {
        const rp__ckpt_seg_t *s;
        uint64_t in_chunk = cur->chunk_size - cur->pos % cur->chunk_size;
        uint64_t blk;

        /* Skip empty segments. */
        while (cur->si < cur->nsegs && cur->soff == cur->segs[cur->si].len) {
            cur->si++;
            cur->soff = 0;
        }
        s = &cur->segs[cur->si];
        blk = s->len - cur->soff;
        if (blk > n - done) {
            blk = n - done;
        }
        if (blk > in_chunk) {
            blk = in_chunk;
        }
        if (blk > RP_SIO_BLOCK) {
            blk = RP_SIO_BLOCK;
        }
        if (s->base != NULL) {
            /* One pass: copied and checksummed from the same loads. */
            cur->crc = rp__crc32c_copy(cur->crc, out + done,
                                       (const unsigned char *)s->base +
                                           cur->soff,
                                       (size_t)blk);
        } else {
            memset(out + done, 0, (size_t)blk);
            cur->crc = rp__crc32c(cur->crc, out + done, (size_t)blk);
        }
        cur->soff += blk;
        cur->pos += blk;
        done += (size_t)blk;
        if (cur->pos % cur->chunk_size == 0 || cur->pos == cur->total) {
            uint64_t c = (cur->pos - 1) / cur->chunk_size;

            if (cur->crcs != NULL && c < cur->nchunks) {
                cur->crcs[c] = cur->crc;
            }
            cur->crc = 0;
        }
    }
    return done;
}

/* Turn O_DIRECT off on @fd (for an unaligned tail, or when the file system
 * turns out to refuse it only at write time). */
static rp_status_t rp_sio_buffered(int fd, bool *direct, const char *what)
{
    int fl = fcntl(fd, F_GETFL);

    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_DIRECT) != 0) {
        rp_error("%s: cannot leave O_DIRECT: %s", what, strerror(errno));
        return RP_ERR_IO;
    }
    *direct = false;
    return RP_OK;
}

/* pwrite all @len bytes at @off, falling back from O_DIRECT when the
 * length or address is not aligned or the file system says EINVAL. */
static rp_status_t rp_sio_pwrite(int fd, bool *direct, const void *buf,
                                 size_t len, uint64_t off, const char *what)
{
    const unsigned char *p = buf;
    rp_status_t rc;

    if (*direct && (len % RP_SIO_ALIGN != 0 || off % RP_SIO_ALIGN != 0 ||
                    (uintptr_t)buf % RP_SIO_ALIGN != 0)) {
        rc = rp_sio_buffered(fd, direct, what);
        if (rc != RP_OK) {
            return rc;
        }
    }
    while (len > 0) {
        size_t want = len > RP_SIO_MAX_WRITE ? RP_SIO_MAX_WRITE : len;
        ssize_t n = pwrite(fd, p, want, (off_t)off);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (errno == EINVAL && *direct) {
                rc = rp_sio_buffered(fd, direct, what);
                if (rc != RP_OK) {
                    return rc;
                }
                continue;
            }
            rp_error("write %s at offset %llu: %s", what,
                     (unsigned long long)off, strerror(errno));
            return RP_ERR_IO;
        }
        if (n == 0) {
            rp_error("write %s: no progress", what);
            return RP_ERR_IO;
        }
        p += n;
        off += (uint64_t)n;
        len -= (size_t)n;
    }
    return RP_OK;
}

/* Open a new shard file, with O_DIRECT if the file system takes it. */
static int rp_sio_open(int cfd, const char *name, bool *direct)
{
    int fd = openat(cfd, name, RP_SIO_FILE_FLAGS | O_DIRECT, 0666);

    *direct = true;
    if (fd < 0 && errno == EINVAL) {
        /* Some kernels create the file before refusing O_DIRECT (tmpfs
         * did): the directory is our fresh in-flight one, so an existing
         * regular file of this name can only be that. */
        *direct = false;
        fd = openat(cfd, name, (RP_SIO_FILE_FLAGS & ~O_EXCL) | O_TRUNC, 0666);
    }
    return fd;
}

static void *rp_worker_main(void *arg)
{
    rp__ckpt_worker_t *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && !w->busy) {
            pthread_cond_wait(&w->cv, &w->mu);
        }
        if (!w->busy) {
            break; /* quit, nothing posted */
        }
        pthread_mutex_unlock(&w->mu);
        w->fn(w->arg);
        pthread_mutex_lock(&w->mu);
        w->busy = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

bool rp__ckpt_worker_start(rp__ckpt_worker_t *w)
{
    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, rp_worker_main, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return false;
    }
    return true;
}

void rp__ckpt_worker_wait(rp__ckpt_worker_t *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->busy) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

void rp__ckpt_worker_post(rp__ckpt_worker_t *w, void (*fn)(void *),
                          void *arg)
{
    rp__ckpt_worker_wait(w);
    pthread_mutex_lock(&w->mu);
    w->fn = fn;
    w->arg = arg;
    w->busy = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void rp__ckpt_worker_stop(rp__ckpt_worker_t *w)
{
    rp__ckpt_worker_wait(w);
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}

/* One write of the double-buffered cursor path (sync checkpoints): a
 * worker writes bounce buffer k while the caller's thread copies and
 * checksums buffer k+1, so the copy costs nothing as long as it is faster
 * than the device. One write in flight at a time, in file order; the
 * caller reads @rc and @ns only after waiting for the worker. */
typedef struct rp_sio_job {
    int fd;
    bool *direct;     /* the worker's while a write runs */
    const char *what;
    const void *buf;
    size_t len;
    uint64_t off;
    rp_status_t rc;   /* the first failure */
    uint64_t ns;      /* time in pwrite */
} rp_sio_job_t;

static void rp_sio_job_run(void *arg)
{
    rp_sio_job_t *j = arg;
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc = rp_sio_pwrite(j->fd, j->direct, j->buf, j->len, j->off,
                                   j->what);

    j->ns += rp__ckpt_now_ns() - t0;
    if (j->rc == RP_OK) {
        j->rc = rc;
    }
}

static rp_status_t rp_sio_fault(rp__ckpt_fault_t fault, const char *what)
{
    if (fault == RP_CKPT_FAULT_KILL) {
        rp_warn("%s: RINGPOINT_CKPT_FAULT: killing this process mid-write",
                what);
        raise(SIGKILL);
    }
    rp_error("write %s: injected I/O error (RINGPOINT_CKPT_FAULT)", what);
    return RP_ERR_IO;
}

rp_status_t rp__ckpt_shard_write(int cfd, const char *label,
                                 const rp__ckpt_shard_header_t *hdr,
                                 rp__ckpt_cursor_t *cur, const void *buf,
                                 rp__ckpt_fault_t fault,
                                 rp__ckpt_write_stats_t *stats)
{
    char name[RP_CKPT_NAME_MAX], what[PATH_MAX + RP_CKPT_NAME_MAX + 2];
    uint64_t len = hdr->payload_length, pos = 0, t0 = rp__ckpt_now_ns();
    uint64_t half = len / 2, t1, fill_ns = 0, pwrite_ns = 0, fsync_ns = 0;
    unsigned char *bounce, *bufs[2];
    /* Two bounce buffers when there is more than one to fill. */
    bool two = cur != NULL && len > RP_SIO_BOUNCE, piped = false;
    bool direct;
    unsigned k = 0;
    rp__ckpt_worker_t worker;
    rp_sio_job_t job;
    int fd;
    rp_status_t rc;

    rp__ckpt_name_shard(hdr->rank, name, sizeof(name));
    snprintf(what, sizeof(what), "%s/%s", label, name);
    /* The header goes through the bounce buffer too, so it is aligned. */
    bounce = rp__ckpt_io_alloc(cur == NULL ? RP_CKPT_SHARD_HEADER_SIZE
                               : two       ? 2 * (size_t)RP_SIO_BOUNCE
                                           : RP_SIO_BOUNCE);
    if (bounce == NULL) {
        rp_error("%s: out of memory for the write buffer", what);
        return RP_ERR_NO_MEMORY;
    }
    bufs[0] = bounce;
    bufs[1] = two ? bounce + RP_SIO_BOUNCE : bounce;
    rp__ckpt_shard_header_encode(hdr, bounce);
    fd = rp_sio_open(cfd, name, &direct);
    if (fd < 0) {
        rp_error("create %s: %s", what, strerror(errno));
        rc = RP_ERR_IO;
        goto err_bounce;
    }
    rc = rp_sio_pwrite(fd, &direct, bounce, RP_CKPT_SHARD_HEADER_SIZE, 0,
                       what);
    if (stats != NULL) {
        stats->direct = direct;
    }
    if (rc == RP_OK && two) {
        memset(&job, 0, sizeof(job));
        job.fd = fd;
        job.direct = &direct;
        job.what = what;
        piped = rp__ckpt_worker_start(&worker);
    }
    while (rc == RP_OK && pos < len) {
        const void *src;
        size_t n;

        if (fault != RP_CKPT_FAULT_NONE && pos >= half) {
            /* The first half is written (or being written) first. */
            if (piped) {
                rp__ckpt_worker_wait(&worker);
                rc = job.rc;
            }
            if (rc == RP_OK) {
                rc = rp_sio_fault(fault, what);
            }
            break;
        }
        if (cur != NULL) {
            uint64_t want = len - pos < RP_SIO_BOUNCE ? len - pos
                                                      : RP_SIO_BOUNCE;
            if (fault != RP_CKPT_FAULT_NONE && pos < half &&
                want > half - pos && half > pos) {
                want = half - pos;
            }
            /* With the pipe, bufs[k] was last posted two writes ago and
             * the post of the one after waited for it. */
            src = piped ? bufs[k] : bounce;
            t1 = rp__ckpt_now_ns();
            n = rp__ckpt_cursor_fill(cur, (void *)src, (size_t)want);
            fill_ns += rp__ckpt_now_ns() - t1;
            if (n != want) {
                rp_error("%s: payload ended at %llu of %llu bytes", what,
                         (unsigned long long)(pos + n),
                         (unsigned long long)len);
                rc = RP_ERR_IO;
                break;
            }
        } else {
            uint64_t want = len - pos < RP_SIO_MAX_WRITE ? len - pos
                                                         : RP_SIO_MAX_WRITE;
            if (fault != RP_CKPT_FAULT_NONE && half > pos &&
                want > half - pos) {
                want = half - pos;
            }
            n = (size_t)want;
            src = (const unsigned char *)buf + pos;
        }
        if (piped) {
            /* The write before this one is done (and its buffer free)
             * once the worker is idle. */
            rp__ckpt_worker_wait(&worker);
            rc = job.rc;
            if (rc == RP_OK) {
                job.buf = src;
                job.len = n;
                job.off = RP_CKPT_SHARD_HEADER_SIZE + pos;
                rp__ckpt_worker_post(&worker, rp_sio_job_run, &job);
            }
            k ^= 1u;
        } else {
            t1 = rp__ckpt_now_ns();
            rc = rp_sio_pwrite(fd, &direct, src, n,
                               RP_CKPT_SHARD_HEADER_SIZE + pos, what);
            pwrite_ns += rp__ckpt_now_ns() - t1;
        }
        pos += n;
    }
    if (piped) {
        /* Every path out of the loop joins the helper before the file is
         * synced or closed under it. */
        rp__ckpt_worker_stop(&worker);
        pwrite_ns = job.ns;
        rc = rc != RP_OK ? rc : job.rc;
    }
    if (rc == RP_OK && fault != RP_CKPT_FAULT_NONE) {
        rc = rp_sio_fault(fault, what); /* empty payload */
    }
    t1 = rp__ckpt_now_ns();
    if (rc == RP_OK) {
        rc = rp__ckpt_fsync(fd, what);
    }
    fsync_ns = rp__ckpt_now_ns() - t1;
    if (rc != RP_OK) {
        goto err_fd;
    }
    rc = rp__ckpt_close(&fd, what);
    if (rc != RP_OK) {
        goto err_bounce;
    }
    rp__ckpt_io_free(bounce);
    if (stats != NULL) {
        stats->bytes = len;
        stats->ns = rp__ckpt_now_ns() - t0;
        stats->fill_ns = fill_ns;
        stats->pwrite_ns = pwrite_ns;
        stats->fsync_ns = fsync_ns;
    }
    return RP_OK;

err_fd:
    (void)rp__ckpt_close(&fd, what);
err_bounce:
    rp__ckpt_io_free(bounce);
    return rc;
}

rp_status_t rp__ckpt_manifest_write_at(int cfd, const char *label,
                                       const rp__ckpt_manifest_t *m)
{
    char what[PATH_MAX + RP_CKPT_NAME_MAX + 2], err[256];
    char *text;
    size_t len;
    int fd;
    rp_status_t rc;

    snprintf(what, sizeof(what), "%s/%s", label, RP_CKPT_MANIFEST_NAME);
    rc = rp__ckpt_manifest_encode(m, &text, &len, err, sizeof(err));
    if (rc != RP_OK) {
        rp_error("%s: cannot encode manifest: %s", label, err);
        return rc;
    }
    /* Written in place, not as a temporary file renamed over: the
     * directory is still in flight, and nothing reads a manifest there
     * (only committed names are candidates), so a torn MANIFEST can only
     * be seen in a directory that the next start removes. The rename
     * would be one more journalled step on the commit's critical path.
     * One write of the encoded text, then fdatasync: the data and the
     * size, which is what reading it back needs; the name is made
     * durable by the directory fsync of the commit. */
    fd = openat(cfd, RP_CKPT_MANIFEST_NAME, RP_SIO_FILE_FLAGS, 0666);
    if (fd < 0) {
        rp_error("create %s: %s", what, strerror(errno));
        rc = RP_ERR_IO;
        goto err_text;
    }
    rc = rp__ckpt_write_full(fd, text, len, what);
    if (rc == RP_OK && fdatasync(fd) != 0) {
        rp_error("fdatasync %s: %s", what, strerror(errno));
        rc = RP_ERR_IO;
    }
    if (rc != RP_OK) {
        (void)rp__ckpt_close(&fd, what);
        goto err_text;
    }
    rc = rp__ckpt_close(&fd, what);

err_text:
    free(text);
    return rc;
}

rp_status_t rp__ckpt_commit_at(int dfd, const char *dir, int *cfd_p,
                               const char *inflight, const char *committed,
                               bool *renamed_p)
{
    char label[PATH_MAX];
    rp_status_t rc;

    *renamed_p = false;
    snprintf(label, sizeof(label), "%s/%s", dir, inflight);
    /* 4. the names inside are durable before the directory is renamed */
    rc = rp__ckpt_fsync(*cfd_p, label);
    if (rc != RP_OK) {
        (void)rp__ckpt_close(cfd_p, label);
        return rc;
    }
    rc = rp__ckpt_close(cfd_p, label);
    if (rc != RP_OK) {
        return rc;
    }
    /* 5. the commit */
    if (renameat(dfd, inflight, dfd, committed) != 0) {
        int e = errno;

        rp_error("rename %s to %s: %s", label, committed, strerror(e));
        return (e == EEXIST || e == ENOTEMPTY) ? RP_ERR_STATE : RP_ERR_IO;
    }
    *renamed_p = true;
    /* 6. the commit is durable */
    return rp__ckpt_fsync(dfd, dir);
}
