/*
 * Shard, manifest and commit writes shared by both checkpoint writers;
 * see shardio.h.
 */
#include "config.h"

#include "ckpt/format/shardio.h"

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

#include "ckpt/format/crc32c.h"
#include "ckpt/format/fileio.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest_encode.h"
#include "util/log.h"

#define RP_SIO_FILE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
#define RP_SIO_ALIGN 4096u
/* A transparent huge page (x86-64, arm64 with 4 KiB pages). */
#define RP_SIO_HUGE (2u << 20)
/* Bounce buffer of the cursor path: big enough that the device sees long
 * sequential writes, small enough to stay far below the "one stripe" of
 * host memory a checkpoint may use. */
#define RP_SIO_BOUNCE (8u << 20)
/* Bounce buffers in the ring of the cursor path: with 2 the writer finds
 * the next one filled as long as the copy of one buffer and a thread
 * wake-up take less than the write of one; more give slack on a loaded
 * machine. */
#define RP_SIO_NBUF 2u
/* Largest single direct write from a caller's buffer. */
#define RP_SIO_MAX_WRITE (64u << 20)

uint64_t rp__ckpt_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *rp__io_alloc(size_t len, bool touch)
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
    for (i = 0; touch && i < len; i += RP_SIO_ALIGN) {
        ((volatile unsigned char *)p)[i] = 0;
    }
    return p;
}

void *rp__ckpt_io_alloc(size_t len)
{
    return rp__io_alloc(len, true);
}

void *rp__ckpt_io_alloc_lazy(size_t len)
{
    return rp__io_alloc(len, false);
}

void rp__ckpt_io_free(void *p)
{
    free(p);
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

/* The cursor path's writer (sync checkpoints): a ring of bounce buffers
 * between the caller's thread, which copies and checksums the payload
 * into the next free buffer, and a writer thread, which writes the
 * filled buffers in file order, one after the other. The writer takes
 * the next filled buffer by itself: while the copy keeps ahead of the
 * device (it is several times faster), the writer goes from one pwrite
 * straight into the next and never waits for the caller's thread to be
 * scheduled. (When the caller handed each buffer over, every write
 * waited for two thread wake-ups in a row, which on a loaded machine
 * cost more than the copy saved.) */
typedef struct rp_sio_ring {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int fd;
    bool *direct;       /* the writer's from start to join */
    const char *what;
    unsigned char *buf[RP_SIO_NBUF];
    size_t len[RP_SIO_NBUF];
    uint64_t off[RP_SIO_NBUF];
    unsigned filled;    /* buffers handed to the writer (a count) */
    unsigned written;   /* buffers the writer is done with */
    bool closed;        /* nothing more comes */
    bool idle;          /* the writer waits for a buffer */
    bool full;          /* the caller waits for a free one */
    rp_status_t rc;     /* the first failure; later buffers are skipped */
    uint64_t ns;        /* time in pwrite */
} rp_sio_ring_t;

static void *rp_sio_ring_main(void *arg)
{
    rp_sio_ring_t *r = arg;

    pthread_mutex_lock(&r->mu);
    for (;;) {
        unsigned i;
        bool skip;

        while (r->written == r->filled && !r->closed) {
            r->idle = true;
            pthread_cond_wait(&r->cv, &r->mu);
        }
        r->idle = false;
        if (r->written == r->filled) {
            break; /* closed and drained */
        }
        i = r->written % RP_SIO_NBUF;
        skip = r->rc != RP_OK;
        pthread_mutex_unlock(&r->mu);
        if (!skip) {
            uint64_t t0 = rp__ckpt_now_ns();
            rp_status_t rc = rp_sio_pwrite(r->fd, r->direct, r->buf[i],
                                           r->len[i], r->off[i], r->what);

            pthread_mutex_lock(&r->mu);
            r->ns += rp__ckpt_now_ns() - t0;
            if (r->rc == RP_OK) {
                r->rc = rc;
            }
        } else {
            pthread_mutex_lock(&r->mu);
        }
        r->written++;
        if (r->full) {
            pthread_cond_broadcast(&r->cv);
        }
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

/* False when no thread could be made: the caller then writes itself. */
static bool rp_sio_ring_start(rp_sio_ring_t *r, int fd, bool *direct,
                              const char *what, unsigned char *bufs)
{
    unsigned i;

    memset(r, 0, sizeof(*r));
    r->fd = fd;
    r->direct = direct;
    r->what = what;
    for (i = 0; i < RP_SIO_NBUF; i++) {
        r->buf[i] = bufs + (size_t)i * RP_SIO_BOUNCE;
    }
    pthread_mutex_init(&r->mu, NULL);
    pthread_cond_init(&r->cv, NULL);
    if (pthread_create(&r->th, NULL, rp_sio_ring_main, r) != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        return false;
    }
    return true;
}

/* The next free buffer, once the writer is done with it; NULL after a
 * failed write (its status is the ring's). */
static unsigned char *rp_sio_ring_free(rp_sio_ring_t *r)
{
    unsigned char *b = NULL;

    pthread_mutex_lock(&r->mu);
    while (r->filled - r->written == RP_SIO_NBUF && r->rc == RP_OK) {
        r->full = true;
        pthread_cond_wait(&r->cv, &r->mu);
    }
    r->full = false;
    if (r->rc == RP_OK) {
        b = r->buf[r->filled % RP_SIO_NBUF];
    }
    pthread_mutex_unlock(&r->mu);
    return b;
}

/* Hand the buffer from rp_sio_ring_free, filled with @len bytes for file
 * offset @off, to the writer. */
static void rp_sio_ring_push(rp_sio_ring_t *r, size_t len, uint64_t off)
{
    unsigned i;

    pthread_mutex_lock(&r->mu);
    i = r->filled % RP_SIO_NBUF;
    r->len[i] = len;
    r->off[i] = off;
    r->filled++;
    if (r->idle) {
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
}

/* Wait until every buffer handed over is written, end the thread; the
 * first failure, and the time in pwrite into *@ns_p. */
static rp_status_t rp_sio_ring_stop(rp_sio_ring_t *r, uint64_t *ns_p)
{
    pthread_mutex_lock(&r->mu);
    r->closed = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    *ns_p = r->ns;
    return r->rc;
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
    unsigned char *bounce;
    /* The ring when there is more than one buffer to fill. */
    bool ringed = cur != NULL && len > RP_SIO_BOUNCE, piped = false;
    bool direct;
    size_t lead;
    rp_sio_ring_t ring;
    int fd;
    rp_status_t rc = RP_OK;

    rp__ckpt_name_shard(hdr->rank, name, sizeof(name));
    snprintf(what, sizeof(what), "%s/%s", label, name);
    /* The header goes through the bounce buffer too, so it is aligned. */
    bounce = rp__ckpt_io_alloc(cur == NULL ? RP_CKPT_SHARD_HEADER_SIZE
                               : ringed    ? RP_SIO_NBUF * (size_t)RP_SIO_BOUNCE
                                           : RP_SIO_BOUNCE);
    if (bounce == NULL) {
        rp_error("%s: out of memory for the write buffer", what);
        return RP_ERR_NO_MEMORY;
    }
    rp__ckpt_shard_header_encode(hdr, bounce);
    fd = rp_sio_open(cfd, name, &direct);
    if (fd < 0) {
        rp_error("create %s: %s", what, strerror(errno));
        rc = RP_ERR_IO;
        goto err_bounce;
    }
    /* The cursor path writes the header with the first bytes of the
     * payload, from the first bounce buffer: every write then starts on a
     * multiple of the buffer's size in the file, as a plain writer's do.
     * (With the header on its own, each write started 4 KiB past such a
     * multiple, which devices take more slowly than aligned writes, and
     * the header cost one more synchronous write.) */
    lead = cur != NULL && len > 0 ? RP_CKPT_SHARD_HEADER_SIZE : 0;
    if (lead == 0) {
        rc = rp_sio_pwrite(fd, &direct, bounce, RP_CKPT_SHARD_HEADER_SIZE, 0,
                           what);
    }
    if (stats != NULL) {
        stats->direct = direct;
    }
    if (rc == RP_OK && ringed) {
        piped = rp_sio_ring_start(&ring, fd, &direct, what, bounce);
    }
    while (rc == RP_OK && pos < len) {
        const void *src;
        size_t n;

        if (fault != RP_CKPT_FAULT_NONE && pos >= half) {
            /* The first half is written (or being written) first. */
            if (piped) {
                piped = false;
                rc = rp_sio_ring_stop(&ring, &pwrite_ns);
            }
            if (rc == RP_OK) {
                rc = rp_sio_fault(fault, what);
            }
            break;
        }
        if (cur != NULL) {
            uint64_t room = RP_SIO_BOUNCE - lead;
            uint64_t want = len - pos < room ? len - pos : room;
            unsigned char *dst = bounce;

            if (fault != RP_CKPT_FAULT_NONE && pos < half &&
                want > half - pos) {
                want = half - pos;
            }
            if (piped && (dst = rp_sio_ring_free(&ring)) == NULL) {
                break; /* a write failed: the ring's status says which */
            }
            /* The first buffer handed out is @bounce, the header's. */
            t1 = rp__ckpt_now_ns();
            n = rp__ckpt_cursor_fill(cur, dst + lead, (size_t)want);
            fill_ns += rp__ckpt_now_ns() - t1;
            if (n != want) {
                rp_error("%s: payload ended at %llu of %llu bytes", what,
                         (unsigned long long)(pos + n),
                         (unsigned long long)len);
                rc = RP_ERR_IO;
                break;
            }
            src = dst;
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
            rp_sio_ring_push(&ring, lead + n,
                             lead > 0 ? 0 : RP_CKPT_SHARD_HEADER_SIZE + pos);
        } else {
            t1 = rp__ckpt_now_ns();
            rc = rp_sio_pwrite(fd, &direct, src, lead + n,
                               lead > 0 ? 0 : RP_CKPT_SHARD_HEADER_SIZE + pos,
                               what);
            pwrite_ns += rp__ckpt_now_ns() - t1;
        }
        pos += n;
        lead = 0;
    }
    if (piped) {
        /* Every path out of the loop joins the writer before the file is
         * synced or closed under it. */
        rp_status_t wrc = rp_sio_ring_stop(&ring, &pwrite_ns);

        rc = rc != RP_OK ? rc : wrc;
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
