/*
 * Checkpoint catalog: classify, verify, prune and clean up checkpoint
 * directories by what they contain. See catalog.h for the rules and
 * doc/checkpoint-format.md for the format being checked.
 */
#include "ckpt/catalog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/crc32c.h"
#include "ckpt/fileio.h"
#include "ckpt/shard.h"
#include "util/log.h"

/* Read size for full verification: large enough for streaming rates,
 * small enough to not matter next to a training job's memory. */
#define RP_CAT_READ_BUF (4u << 20)
/* Checkpoints contain no subdirectories; anything deeper than this in a
 * directory being deleted is not ours and is left for a human. */
#define RP_CAT_MAX_DEPTH 4
/* O_NONBLOCK: opening a FIFO planted under a checkpoint name must not
 * hang the scan (it is then rejected as not a regular file). It has no
 * effect on reads from regular files. */
#define RP_CAT_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
#define RP_CAT_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* What one verification found, and where to describe it. */
typedef struct rp_cat_ctx {
    const char *label; /* checkpoint name for messages; "" if none */
    rp__ckpt_state_t state;
    char *msg;
    size_t msglen;
} rp_cat_ctx_t;

const char *rp__ckpt_state_name(rp__ckpt_state_t state)
{
    switch (state) {
    case RP_CKPT_COMPLETE:   return "complete";
    case RP_CKPT_INCOMPLETE: return "incomplete";
    case RP_CKPT_CORRUPT:    return "corrupt";
    case RP_CKPT_INFLIGHT:   return "in-flight";
    }
    return "invalid";
}

static void rp_cat_vdescribe(rp_cat_ctx_t *x, const char *file,
                             const char *fmt, va_list ap)
{
    int n;

    if (x->msg == NULL || x->msglen == 0) {
        return;
    }
    n = snprintf(x->msg, x->msglen, "%s%s%s: ", x->label,
                 x->label[0] != '\0' ? "/" : "", file);
    if (n < 0 || (size_t)n >= x->msglen) {
        return;
    }
    vsnprintf(x->msg + n, x->msglen - (size_t)n, fmt, ap);
}

/* Record a finding about the data: @state, message "label/file: ...". */
static rp_status_t rp_cat_finding(rp_cat_ctx_t *x, rp__ckpt_state_t state,
                                  const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static rp_status_t rp_cat_finding(rp_cat_ctx_t *x, rp__ckpt_state_t state,
                                  const char *file, const char *fmt, ...)
{
    va_list ap;

    x->state = state;
    va_start(ap, fmt);
    rp_cat_vdescribe(x, file, fmt, ap);
    va_end(ap);
    return RP_ERR_CORRUPT;
}

/* Record and log a failure to read something (not a finding about it). */
static rp_status_t rp_cat_ioerr(rp_cat_ctx_t *x, const char *file,
                                const char *op, int err)
{
    rp_error("%s%s%s: %s: %s", x->label, x->label[0] != '\0' ? "/" : "",
             file, op, strerror(err));
    (void)rp_cat_finding(x, RP_CKPT_CORRUPT, file, "%s: %s", op,
                         strerror(err));
    return RP_ERR_IO;
}

static uint64_t rp_cat_mtime_ns(const struct stat *st)
{
    if (st->st_mtim.tv_sec < 0) {
        return 0;
    }
    return (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
           (uint64_t)st->st_mtim.tv_nsec;
}

/* Close a descriptor we only read from: nothing was written, so a failure
 * cannot lose data, and there is nothing to do about it. */
static void rp_cat_close_ro(int *fd_p)
{
    if (*fd_p >= 0) {
        (void)close(*fd_p);
        *fd_p = -1;
    }
}

/* ---- verification ------------------------------------------------------ */

static rp_status_t rp_cat_load_manifest(int cfd, rp_cat_ctx_t *x,
                                        rp__ckpt_manifest_t *m,
                                        uint64_t *size_p)
{
    const char *file = RP_CKPT_MANIFEST_NAME;
    char what[RP_CKPT_NAME_MAX + 16], why[256];
    struct stat st;
    char *buf;
    size_t size, got;
    int fd;
    rp_status_t rc;

    snprintf(what, sizeof(what), "%s%s%s", x->label,
             x->label[0] != '\0' ? "/" : "", file);
    fd = openat(cfd, file, RP_CAT_FILE_FLAGS);
    if (fd < 0) {
        if (errno == ENOENT) {
            if (fstatat(cfd, RP_CKPT_MANIFEST_TMP_NAME, &st,
                        AT_SYMLINK_NOFOLLOW) == 0) {
                return rp_cat_finding(x, RP_CKPT_INCOMPLETE, file,
                                      "missing, " RP_CKPT_MANIFEST_TMP_NAME
                                      " present (commit was interrupted)");
            }
            return rp_cat_finding(x, RP_CKPT_INCOMPLETE, file, "missing");
        }
        if (errno == ELOOP) {
            return rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                                  "is a symbolic link");
        }
        return rp_cat_ioerr(x, file, "open", errno);
    }
    if (fstat(fd, &st) != 0) {
        rc = rp_cat_ioerr(x, file, "fstat", errno);
        goto err_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                            "not a regular file");
        goto err_fd;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > RP_CKPT_MANIFEST_MAX) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                            "%lld bytes, more than the %u allowed",
                            (long long)st.st_size, RP_CKPT_MANIFEST_MAX);
        goto err_fd;
    }
    size = (size_t)st.st_size;
    /* One byte more than expected, to notice a file that grew. */
    buf = malloc(size + 1);
    if (buf == NULL) {
        rp_error("%s: out of memory for %zu bytes", what, size);
        rc = RP_ERR_NO_MEMORY;
        goto err_fd;
    }
    rc = rp__ckpt_pread_full(fd, buf, size + 1, 0, &got, what);
    if (rc != RP_OK) {
        (void)rp_cat_finding(x, RP_CKPT_CORRUPT, file, "read error");
        goto err_buf;
    }
    if (got != size) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                            "changed size while being read");
        goto err_buf;
    }
    why[0] = '\0';
    rc = rp__ckpt_manifest_parse(buf, size, m, why, sizeof(why));
    if (rc == RP_ERR_NO_MEMORY) {
        rp_error("%s: %s", what, why);
        goto err_buf;
    }
    if (rc != RP_OK) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file, "%s", why);
        goto err_buf;
    }
    free(buf);
    rp_cat_close_ro(&fd);
    *size_p = size;
    return RP_OK;

err_buf:
    free(buf);
err_fd:
    rp_cat_close_ro(&fd);
    return rc;
}

/* Re-read every chunk of an open shard and compare CRCs. */
static rp_status_t rp_cat_check_chunks(int fd, rp_cat_ctx_t *x,
                                       const char *file, const char *what,
                                       const rp__ckpt_manifest_t *m,
                                       uint32_t rank)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    size_t buflen = m->chunk_size < RP_CAT_READ_BUF ? (size_t)m->chunk_size
                                                    : RP_CAT_READ_BUF;
    uint64_t pos = 0;
    uint32_t c;
    unsigned char *buf;
    rp_status_t rc = RP_OK;

    if (sh->nchunks == 0) {
        return RP_OK;
    }
    buf = malloc(buflen);
    if (buf == NULL) {
        rp_error("%s: out of memory for a %zu byte read buffer", what, buflen);
        return RP_ERR_NO_MEMORY;
    }
    /* Advice only; failure changes nothing but speed. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (c = 0; c < sh->nchunks && rc == RP_OK; c++) {
        uint64_t left = sh->length - pos;
        uint64_t chunk = left < m->chunk_size ? left : m->chunk_size;
        uint32_t crc = 0;

        while (chunk > 0) {
            size_t want = chunk < buflen ? (size_t)chunk : buflen, got;

            rc = rp__ckpt_pread_full(fd, buf, want,
                                     RP_CKPT_SHARD_HEADER_SIZE + pos, &got,
                                     what);
            if (rc != RP_OK) {
                (void)rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                                     "read error in chunk %u", c);
                break;
            }
            if (got != want) {
                rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                                    "shrank while being read (chunk %u)", c);
                break;
            }
            crc = rp__crc32c(crc, buf, got);
            pos += got;
            chunk -= got;
        }
        if (rc == RP_OK && crc != sh->chunk_crc[c]) {
            char where[RP_CKPT_NAME_MAX + 32];

            /* "<ckpt>/<shard> chunk N: ..." names the exact bytes to
             * inspect (chunk N starts at file offset 4096 + N*chunk_size). */
            snprintf(where, sizeof(where), "%s chunk %u", file, c);
            rc = rp_cat_finding(x, RP_CKPT_CORRUPT, where,
                                "crc32c 0x%08x != manifest 0x%08x", crc,
                                sh->chunk_crc[c]);
        }
    }
    /* A verified checkpoint is usually not read again soon; do not let a
     * scrub push the job's working set out of the page cache. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    free(buf);
    return rc;
}

static rp_status_t rp_cat_verify_shard(int cfd, rp_cat_ctx_t *x,
                                       const rp__ckpt_manifest_t *m,
                                       uint32_t rank, bool full)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    unsigned char *hbuf;
    char file[RP_CKPT_NAME_MAX], what[2 * RP_CKPT_NAME_MAX + 2], why[256];
    rp__ckpt_shard_header_t hdr;
    uint64_t want_size = RP_CKPT_SHARD_HEADER_SIZE + sh->length;
    struct stat st;
    size_t got;
    int fd;
    rp_status_t rc;

    rp__ckpt_name_shard(rank, file, sizeof(file));
    snprintf(what, sizeof(what), "%s%s%s", x->label,
             x->label[0] != '\0' ? "/" : "", file);
    fd = openat(cfd, file, RP_CAT_FILE_FLAGS);
    if (fd < 0) {
        if (errno == ENOENT) {
            return rp_cat_finding(x, RP_CKPT_INCOMPLETE, file, "missing");
        }
        if (errno == ELOOP) {
            return rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                                  "is a symbolic link");
        }
        return rp_cat_ioerr(x, file, "open", errno);
    }
    if (fstat(fd, &st) != 0) {
        rc = rp_cat_ioerr(x, file, "fstat", errno);
        goto err_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file, "not a regular file");
        goto err_fd;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size != want_size) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                            "%s: %lld bytes, expected %llu",
                            (uint64_t)st.st_size < want_size ? "truncated"
                                                             : "too long",
                            (long long)st.st_size,
                            (unsigned long long)want_size);
        goto err_fd;
    }
    hbuf = malloc(RP_CKPT_SHARD_HEADER_SIZE);
    if (hbuf == NULL) {
        rp_error("%s: out of memory", what);
        rc = RP_ERR_NO_MEMORY;
        goto err_fd;
    }
    rc = rp__ckpt_pread_full(fd, hbuf, RP_CKPT_SHARD_HEADER_SIZE, 0, &got,
                             what);
    if (rc != RP_OK) {
        (void)rp_cat_finding(x, RP_CKPT_CORRUPT, file, "read error");
        goto err_hbuf;
    }
    if (got != RP_CKPT_SHARD_HEADER_SIZE) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file,
                            "shrank while being read");
        goto err_hbuf;
    }
    why[0] = '\0';
    rc = rp__ckpt_shard_header_decode(hbuf, got, &hdr, why, sizeof(why));
    if (rc == RP_OK) {
        rc = rp__ckpt_shard_header_check(&hdr, m->ckpt_id, m->step,
                                         m->world_size, rank, sh->length,
                                         why, sizeof(why));
    }
    if (rc != RP_OK) {
        rc = rp_cat_finding(x, RP_CKPT_CORRUPT, file, "%s", why);
        goto err_hbuf;
    }
    free(hbuf);
    hbuf = NULL;
    if (full) {
        rc = rp_cat_check_chunks(fd, x, file, what, m, rank);
        if (rc != RP_OK) {
            goto err_fd;
        }
    }
    rp_cat_close_ro(&fd);
    return RP_OK;

err_hbuf:
    free(hbuf);
err_fd:
    rp_cat_close_ro(&fd);
    return rc;
}

rp_status_t rp__ckpt_verify_shard(int ckptfd, const char *label,
                                  const rp__ckpt_manifest_t *m, uint32_t rank,
                                  bool full, rp__ckpt_state_t *state_p,
                                  char *msg, size_t msglen)
{
    rp_cat_ctx_t x = {label != NULL ? label : "", RP_CKPT_COMPLETE, msg,
                      msglen};
    rp_status_t rc;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    if (m == NULL || m->shards == NULL || rank >= m->world_size ||
        state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rc = rp_cat_verify_shard(ckptfd, &x, m, rank, full);
    *state_p = x.state;
    return rc;
}

rp_status_t rp__ckpt_load_manifest_at(int ckptfd, const char *label,
                                      rp__ckpt_manifest_t *m,
                                      rp__ckpt_state_t *state_p,
                                      char *msg, size_t msglen)
{
    rp_cat_ctx_t x = {label != NULL ? label : "", RP_CKPT_COMPLETE, msg,
                      msglen};
    uint64_t size = 0;
    rp_status_t rc;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    memset(m, 0, sizeof(*m));
    rc = rp_cat_load_manifest(ckptfd, &x, m, &size);
    *state_p = x.state;
    return rc;
}

/* Verify the checkpoint open at @cfd. */
static rp_status_t rp_cat_verify_dirfd(int cfd, const char *name, bool full,
                                       rp__ckpt_state_t *state_p,
                                       rp__ckpt_manifest_t *m_out,
                                       uint64_t *manifest_size_p,
                                       char *msg, size_t msglen)
{
    rp_cat_ctx_t x = {name, RP_CKPT_COMPLETE, msg, msglen};
    rp__ckpt_manifest_t m;
    uint64_t name_step, msize = 0;
    bool has_step;
    uint32_t r;
    rp_status_t rc;

    memset(&m, 0, sizeof(m));
    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    has_step = rp__ckpt_parse_committed(name, &name_step) ||
               rp__ckpt_parse_inflight(name, &name_step);
    rc = rp_cat_load_manifest(cfd, &x, &m, &msize);
    if (rc != RP_OK) {
        goto out;
    }
    if (has_step && m.step != name_step) {
        rc = rp_cat_finding(&x, RP_CKPT_CORRUPT, RP_CKPT_MANIFEST_NAME,
                            "step %llu does not match the directory name",
                            (unsigned long long)m.step);
        goto out;
    }
    for (r = 0; r < m.world_size; r++) {
        rc = rp_cat_verify_shard(cfd, &x, &m, r, full);
        if (rc != RP_OK) {
            break;
        }
    }
out:
    *state_p = x.state;
    if (manifest_size_p != NULL) {
        *manifest_size_p = msize;
    }
    if (m_out != NULL) {
        *m_out = m; /* ownership moves; zeroed if the manifest failed */
    } else {
        rp__ckpt_manifest_free(&m);
    }
    return rc;
}

rp_status_t rp__ckpt_verify_at(int dirfd, const char *name, bool full,
                               rp__ckpt_state_t *state_p,
                               rp__ckpt_manifest_t *m_out,
                               char *msg, size_t msglen)
{
    /* Messages about the directory itself name it as the file. */
    rp_cat_ctx_t x = {"", RP_CKPT_CORRUPT, msg, msglen};
    int cfd;
    rp_status_t rc;

    if (m_out != NULL) {
        memset(m_out, 0, sizeof(*m_out));
    }
    if (name == NULL || state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    *state_p = RP_CKPT_CORRUPT;
    cfd = openat(dirfd, name, RP_CAT_DIR_FLAGS);
    if (cfd < 0) {
        if (errno == ENOENT) {
            (void)rp_cat_finding(&x, RP_CKPT_INCOMPLETE, name,
                                 "does not exist");
            *state_p = RP_CKPT_INCOMPLETE;
            return RP_ERR_NOT_FOUND;
        }
        if (errno == ENOTDIR || errno == ELOOP) {
            return rp_cat_finding(&x, RP_CKPT_CORRUPT, name,
                                  "not a directory");
        }
        return rp_cat_ioerr(&x, name, "open", errno);
    }
    rc = rp_cat_verify_dirfd(cfd, name, full, state_p, m_out, NULL, msg,
                             msglen);
    rp_cat_close_ro(&cfd);
    return rc;
}

rp_status_t rp__ckpt_verify(const char *path, bool full,
                            rp__ckpt_state_t *state_p,
                            rp__ckpt_manifest_t *m_out,
                            char *msg, size_t msglen)
{
    char parent[4096], name[RP_CKPT_NAME_MAX];
    size_t len, base;
    int pfd;
    rp_status_t rc;

    if (m_out != NULL) {
        memset(m_out, 0, sizeof(*m_out));
    }
    if (path == NULL || state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    /* Split into parent and last component (trailing slashes dropped), so
     * the checkpoint itself is opened with O_NOFOLLOW. */
    len = strlen(path);
    while (len > 1 && path[len - 1] == '/') {
        len--;
    }
    base = len;
    while (base > 0 && path[base - 1] != '/') {
        base--;
    }
    if (len - base == 0 || len - base >= sizeof(name) ||
        base >= sizeof(parent)) {
        rp_error("checkpoint path '%s' is not usable", path);
        return RP_ERR_INVALID_ARG;
    }
    memcpy(name, path + base, len - base);
    name[len - base] = '\0';
    if (base == 0) {
        strcpy(parent, ".");
    } else {
        memcpy(parent, path, base);
        parent[base] = '\0';
    }
    pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) {
        if (errno == ENOENT) {
            *state_p = RP_CKPT_INCOMPLETE;
            if (msg != NULL && msglen > 0) {
                snprintf(msg, msglen, "%s: does not exist", path);
            }
            return RP_ERR_NOT_FOUND;
        }
        rp_error("open %s: %s", parent, strerror(errno));
        *state_p = RP_CKPT_CORRUPT;
        return RP_ERR_IO;
    }
    rc = rp__ckpt_verify_at(pfd, name, full, state_p, m_out, msg, msglen);
    rp_cat_close_ro(&pfd);
    return rc;
}

/* ---- scanning ---------------------------------------------------------- */

/* Apparent size of the regular files directly in @name; best effort, for
 * display only, so errors just leave things uncounted. */
static uint64_t rp_cat_measure(int dfd, const char *name)
{
    uint64_t total = 0;
    struct dirent *de;
    struct stat st;
    DIR *d;
    int cfd = openat(dfd, name, RP_CAT_DIR_FLAGS);

    if (cfd < 0) {
        return 0;
    }
    d = fdopendir(cfd);
    if (d == NULL) {
        rp_cat_close_ro(&cfd);
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            S_ISREG(st.st_mode) && st.st_size > 0) {
            total += (uint64_t)st.st_size;
        }
    }
    (void)closedir(d);
    return total;
}

/* Fill @e for a committed-name entry. RP_ERR_NOT_FOUND: it vanished. */
static rp_status_t rp_cat_examine(int dfd, bool full, rp__ckpt_entry_t *e)
{
    rp__ckpt_manifest_t m;
    uint64_t msize = 0;
    struct stat st;
    int cfd;
    rp_status_t rc;

    if (fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("%s: fstatat: %s", e->name, strerror(errno));
        e->state = RP_CKPT_CORRUPT;
        snprintf(e->reason, sizeof(e->reason), "%s: fstatat: %s", e->name,
                 strerror(errno));
        return RP_OK;
    }
    e->created_ns = rp_cat_mtime_ns(&st);
    if (!S_ISDIR(st.st_mode)) {
        e->state = RP_CKPT_CORRUPT;
        e->total_bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        snprintf(e->reason, sizeof(e->reason), "%s: not a directory",
                 e->name);
        return RP_OK;
    }
    cfd = openat(dfd, e->name, RP_CAT_DIR_FLAGS);
    if (cfd < 0) {
        if (errno == ENOENT) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("%s: open: %s", e->name, strerror(errno));
        e->state = RP_CKPT_CORRUPT;
        snprintf(e->reason, sizeof(e->reason), "%s: open: %s", e->name,
                 strerror(errno));
        return RP_OK;
    }
    rc = rp_cat_verify_dirfd(cfd, e->name, full, &e->state, &m, &msize,
                             e->reason, sizeof(e->reason));
    rp_cat_close_ro(&cfd);
    if (rc == RP_ERR_NO_MEMORY) {
        rp__ckpt_manifest_free(&m);
        return rc;
    }
    if (m.shards != NULL) {
        e->world_size = m.world_size;
        e->created_ns = m.created_ns;
        memcpy(e->ckpt_id, m.ckpt_id, RP_CKPT_ID_SIZE);
        e->total_bytes = (uint64_t)m.world_size * RP_CKPT_SHARD_HEADER_SIZE +
                         rp__ckpt_manifest_payload_bytes(&m) + msize;
    } else {
        e->total_bytes = rp_cat_measure(dfd, e->name);
    }
    rp__ckpt_manifest_free(&m);
    if (e->state == RP_CKPT_COMPLETE) {
        e->reason[0] = '\0';
    }
    return RP_OK;
}

static void rp_cat_examine_inflight(int dfd, rp__ckpt_entry_t *e)
{
    struct stat st;

    e->state = RP_CKPT_INFLIGHT;
    snprintf(e->reason, sizeof(e->reason), "%s: in-flight (being written, "
             "or left by a writer that died)", e->name);
    if (fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        e->created_ns = rp_cat_mtime_ns(&st);
    }
    e->total_bytes = rp_cat_measure(dfd, e->name);
}

static int rp_cat_cmp(const void *a, const void *b)
{
    const rp__ckpt_entry_t *ea = a, *eb = b;
    bool ia = ea->state == RP_CKPT_INFLIGHT, ib = eb->state == RP_CKPT_INFLIGHT;

    if (ea->step != eb->step) {
        return ea->step < eb->step ? -1 : 1;
    }
    if (ia != ib) {
        return ia ? 1 : -1; /* committed name first at equal steps */
    }
    return strcmp(ea->name, eb->name);
}

static char *rp_cat_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    char *p = malloc(a + 1 + b + 1);

    if (p != NULL) {
        memcpy(p, dir, a);
        p[a] = '/';
        memcpy(p + a + 1, name, b + 1);
    }
    return p;
}

/* Open a fresh directory stream on @dfd (independent of @dfd's offset). */
static DIR *rp_cat_opendir_at(int dfd, const char *dir)
{
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;

    if (fd < 0) {
        rp_error("%s: open: %s", dir, strerror(errno));
        return NULL;
    }
    d = fdopendir(fd);
    if (d == NULL) {
        rp_error("%s: fdopendir: %s", dir, strerror(errno));
        rp_cat_close_ro(&fd);
    }
    return d;
}

static rp_status_t rp_cat_scan_fd(int dfd, const char *dir, bool full,
                                  rp__ckpt_catalog_t *cat)
{
    size_t cap = 0;
    struct dirent *de;
    DIR *d;
    rp_status_t rc = RP_OK;

    memset(cat, 0, sizeof(*cat));
    d = rp_cat_opendir_at(dfd, dir);
    if (d == NULL) {
        return RP_ERR_IO;
    }
    for (;;) {
        rp__ckpt_entry_t *e;
        uint64_t step;
        bool committed;

        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                rp_error("%s: readdir: %s", dir, strerror(errno));
                rc = RP_ERR_IO;
            }
            break;
        }
        committed = rp__ckpt_parse_committed(de->d_name, &step);
        if (!committed && !rp__ckpt_parse_inflight(de->d_name, &step)) {
            continue;
        }
        if (cat->count == cap) {
            size_t ncap = cap == 0 ? 16 : cap * 2;
            rp__ckpt_entry_t *ne = realloc(cat->entries, ncap * sizeof(*ne));
            if (ne == NULL) {
                rp_error("%s: out of memory listing checkpoints", dir);
                rc = RP_ERR_NO_MEMORY;
                break;
            }
            cat->entries = ne;
            cap = ncap;
        }
        e = &cat->entries[cat->count];
        memset(e, 0, sizeof(*e));
        e->step = step;
        /* Parsed names are far shorter than the buffer; checked anyway. */
        if (strlen(de->d_name) >= sizeof(e->name)) {
            continue;
        }
        memcpy(e->name, de->d_name, strlen(de->d_name) + 1);
        if (committed) {
            rc = rp_cat_examine(dfd, full, e);
            if (rc == RP_ERR_NOT_FOUND) {
                rc = RP_OK; /* deleted under us: nothing to list */
                continue;
            }
            if (rc != RP_OK) {
                break;
            }
        } else {
            rp_cat_examine_inflight(dfd, e);
        }
        e->path = rp_cat_join(dir, e->name);
        if (e->path == NULL) {
            rp_error("%s: out of memory listing checkpoints", dir);
            rc = RP_ERR_NO_MEMORY;
            break;
        }
        rp_debug("%s: %s%s%s", e->path, rp__ckpt_state_name(e->state),
                 e->reason[0] != '\0' ? ": " : "", e->reason);
        cat->count++;
    }
    (void)closedir(d);
    if (rc != RP_OK) {
        rp__ckpt_catalog_free(cat);
        return rc;
    }
    if (cat->count > 1) {
        qsort(cat->entries, cat->count, sizeof(*cat->entries), rp_cat_cmp);
    }
    return RP_OK;
}

/* Open the checkpoint root. RP_ERR_NOT_FOUND (unlogged) if missing. */
static rp_status_t rp_cat_open_root(const char *dir, int *dfd_p)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd < 0) {
        if (errno == ENOENT) {
            rp_debug("%s: no checkpoint directory", dir);
            return RP_ERR_NOT_FOUND;
        }
        rp_error("%s: open: %s", dir, strerror(errno));
        return RP_ERR_IO;
    }
    *dfd_p = fd;
    return RP_OK;
}

rp_status_t rp__ckpt_catalog_scan(const char *dir, bool full,
                                  rp__ckpt_catalog_t *cat)
{
    int dfd = -1;
    rp_status_t rc;

    if (cat == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    memset(cat, 0, sizeof(*cat));
    if (dir == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rc = rp_cat_open_root(dir, &dfd);
    if (rc != RP_OK) {
        return rc;
    }
    rc = rp_cat_scan_fd(dfd, dir, full, cat);
    rp_cat_close_ro(&dfd);
    return rc;
}

void rp__ckpt_catalog_free(rp__ckpt_catalog_t *cat)
{
    size_t i;

    if (cat == NULL) {
        return;
    }
    for (i = 0; i < cat->count; i++) {
        free(cat->entries[i].path);
    }
    free(cat->entries);
    memset(cat, 0, sizeof(*cat));
}

const rp__ckpt_entry_t *
rp__ckpt_catalog_newest_complete(const rp__ckpt_catalog_t *cat)
{
    size_t i;

    if (cat == NULL) {
        return NULL;
    }
    for (i = cat->count; i > 0; i--) {
        if (cat->entries[i - 1].state == RP_CKPT_COMPLETE) {
            return &cat->entries[i - 1];
        }
    }
    return NULL;
}

rp_status_t rp__ckpt_newest_complete(const char *dir, bool full,
                                     uint64_t *step_p, char **path_p)
{
    rp__ckpt_catalog_t cat;
    size_t i;
    rp_status_t rc;

    if (path_p != NULL) {
        *path_p = NULL;
    }
    rc = rp__ckpt_catalog_scan(dir, false, &cat);
    if (rc != RP_OK) {
        return rc;
    }
    rc = RP_ERR_NOT_FOUND;
    for (i = cat.count; i > 0; i--) {
        const rp__ckpt_entry_t *e = &cat.entries[i - 1];
        char why[512];
        rp__ckpt_state_t state;
        rp_status_t vrc;

        if (e->state != RP_CKPT_COMPLETE) {
            continue;
        }
        if (full) {
            vrc = rp__ckpt_verify(e->path, true, &state, NULL, why,
                                  sizeof(why));
            if (vrc == RP_ERR_NO_MEMORY) {
                rc = vrc;
                break;
            }
            if (vrc != RP_OK) {
                rp_warn("skipping checkpoint %s: %s", e->path, why);
                continue;
            }
        }
        if (step_p != NULL) {
            *step_p = e->step;
        }
        if (path_p != NULL) {
            *path_p = strdup(e->path);
            if (*path_p == NULL) {
                rp_error("out of memory");
                rc = RP_ERR_NO_MEMORY;
                break;
            }
        }
        rc = RP_OK;
        break;
    }
    rp__ckpt_catalog_free(&cat);
    return rc;
}

/* ---- deletion ---------------------------------------------------------- */

/* Remove @name under @dfd, never following symlinks. The MANIFEST goes
 * first, so a directory half removed can never verify. */
static rp_status_t rp_cat_purge(int dfd, const char *label, const char *name,
                                unsigned depth)
{
    struct stat st;
    struct dirent *de;
    DIR *d;
    int cfd, pass;
    bool found = true;
    rp_status_t rc = RP_OK;

    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            return RP_OK;
        }
        rp_error("%s/%s: fstatat: %s", label, name, strerror(errno));
        return RP_ERR_IO;
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(dfd, name, 0) != 0 && errno != ENOENT) {
            rp_error("%s/%s: unlink: %s", label, name, strerror(errno));
            return RP_ERR_IO;
        }
        return RP_OK;
    }
    if (depth >= RP_CAT_MAX_DEPTH) {
        rp_error("%s/%s: unexpectedly deep directory tree; not removed",
                 label, name);
        return RP_ERR_IO;
    }
    cfd = openat(dfd, name, RP_CAT_DIR_FLAGS);
    if (cfd < 0) {
        if (errno == ENOENT) {
            return RP_OK;
        }
        rp_error("%s/%s: open: %s", label, name, strerror(errno));
        return RP_ERR_IO;
    }
    if (unlinkat(cfd, RP_CKPT_MANIFEST_NAME, 0) != 0 && errno != ENOENT) {
        rp_error("%s/%s/%s: unlink: %s", label, name, RP_CKPT_MANIFEST_NAME,
                 strerror(errno));
        rp_cat_close_ro(&cfd);
        return RP_ERR_IO;
    }
    d = fdopendir(cfd);
    if (d == NULL) {
        rp_error("%s/%s: fdopendir: %s", label, name, strerror(errno));
        rp_cat_close_ro(&cfd);
        return RP_ERR_IO;
    }
    /* Removing entries while reading the directory may make readdir skip
     * some; repeat until a pass finds nothing left. */
    for (pass = 0; pass < 4 && found && rc == RP_OK; pass++) {
        found = false;
        rewinddir(d);
        for (;;) {
            errno = 0;
            de = readdir(d);
            if (de == NULL) {
                if (errno != 0) {
                    rp_error("%s/%s: readdir: %s", label, name,
                             strerror(errno));
                    rc = RP_ERR_IO;
                }
                break;
            }
            if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
                continue;
            }
            found = true;
            rc = rp_cat_purge(dirfd(d), label, de->d_name, depth + 1);
            if (rc != RP_OK) {
                break;
            }
        }
    }
    (void)closedir(d);
    if (rc != RP_OK) {
        return rc;
    }
    if (unlinkat(dfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
        rp_error("%s/%s: rmdir: %s", label, name, strerror(errno));
        return RP_ERR_IO;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_remove_at(int dirfd, const char *name)
{
    char delname[RP_CKPT_NAME_MAX];
    uint64_t nonce;
    rp_status_t rc;

    if (name == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rc = rp__ckpt_random(&nonce, sizeof(nonce));
    if (rc != RP_OK) {
        return rc;
    }
    rp__ckpt_name_deleting(name, nonce, delname, sizeof(delname));
    if (renameat(dirfd, name, dirfd, delname) != 0) {
        if (errno == ENOENT) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("rename %s to %s: %s", name, delname, strerror(errno));
        return RP_ERR_IO;
    }
    /* Make the rename durable before any file inside disappears, so that
     * after a crash the directory either still has its name and all its
     * files, or has the .deleting name. */
    rc = rp__ckpt_fsync(dirfd, "checkpoint directory");
    if (rc != RP_OK) {
        return rc; /* the .deleting leftover is swept later */
    }
    rc = rp_cat_purge(dirfd, ".", delname, 0);
    if (rc == RP_OK) {
        rp_info("removed checkpoint %s", name);
    }
    return rc;
}

static void rp_cat_free_names(char **names, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
}

/* Names in @dfd accepted by @match, read in full before anything is
 * removed (never modify a directory while reading it). */
static rp_status_t rp_cat_collect(int dfd, const char *dir,
                                  bool (*match)(const char *),
                                  char ***names_p, size_t *n_p)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d = rp_cat_opendir_at(dfd, dir);
    rp_status_t rc = RP_OK;

    *names_p = NULL;
    *n_p = 0;
    if (d == NULL) {
        return RP_ERR_IO;
    }
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                rp_error("%s: readdir: %s", dir, strerror(errno));
                rc = RP_ERR_IO;
            }
            break;
        }
        if (!match(de->d_name)) {
            continue;
        }
        if (n == cap) {
            size_t ncap = cap == 0 ? 8 : cap * 2;
            char **nn = realloc(names, ncap * sizeof(*nn));
            if (nn == NULL) {
                rc = RP_ERR_NO_MEMORY;
                break;
            }
            names = nn;
            cap = ncap;
        }
        names[n] = strdup(de->d_name);
        if (names[n] == NULL) {
            rc = RP_ERR_NO_MEMORY;
            break;
        }
        n++;
    }
    (void)closedir(d);
    if (rc != RP_OK) {
        if (rc == RP_ERR_NO_MEMORY) {
            rp_error("%s: out of memory listing entries", dir);
        }
        rp_cat_free_names(names, n);
        return rc;
    }
    *names_p = names;
    *n_p = n;
    return RP_OK;
}

static bool rp_cat_match_inflight(const char *name)
{
    return rp__ckpt_parse_inflight(name, NULL);
}

/* Finish off directories a crashed deletion left behind. */
static rp_status_t rp_cat_sweep_deleting(int dfd, const char *dir)
{
    char **names;
    size_t n, i;
    rp_status_t rc, rc2;

    rc = rp_cat_collect(dfd, dir, rp__ckpt_is_deleting, &names, &n);
    if (rc != RP_OK) {
        return rc;
    }
    for (i = 0; i < n; i++) {
        rp_info("%s: finishing interrupted removal of %s", dir, names[i]);
        rc2 = rp_cat_purge(dfd, dir, names[i], 0);
        if (rc == RP_OK) {
            rc = rc2;
        }
    }
    rp_cat_free_names(names, n);
    return rc;
}

rp_status_t rp__ckpt_prune(const char *dir, unsigned keep, bool full,
                           unsigned *removed_p)
{
    rp__ckpt_catalog_t cat;
    const rp__ckpt_entry_t *newest;
    unsigned kept = 0, removed = 0;
    size_t i;
    int dfd = -1;
    rp_status_t rc, first = RP_OK;

    if (removed_p != NULL) {
        *removed_p = 0;
    }
    if (dir == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    if (keep == 0) {
        keep = 1; /* the newest complete checkpoint is never deleted */
    }
    rc = rp_cat_open_root(dir, &dfd);
    if (rc != RP_OK) {
        return rc;
    }
    rc = rp_cat_scan_fd(dfd, dir, full, &cat);
    if (rc != RP_OK) {
        goto err_dfd;
    }
    newest = rp__ckpt_catalog_newest_complete(&cat);
    for (i = cat.count; newest != NULL && i > 0; i--) {
        const rp__ckpt_entry_t *e = &cat.entries[i - 1];
        bool drop;

        if (e->state == RP_CKPT_COMPLETE) {
            drop = kept >= keep;
            kept += drop ? 0 : 1;
        } else {
            /* At or above the newest complete step it may be a live
             * writer's, or evidence worth keeping; below it, debris. */
            drop = e->step < newest->step;
        }
        if (!drop) {
            continue;
        }
        rp_info("pruning %s (%s)", e->path, rp__ckpt_state_name(e->state));
        rc = rp__ckpt_remove_at(dfd, e->name);
        if (rc == RP_OK) {
            removed++;
        } else if (rc != RP_ERR_NOT_FOUND && first == RP_OK) {
            first = rc;
        }
    }
    rc = rp_cat_sweep_deleting(dfd, dir);
    if (first == RP_OK) {
        first = rc;
    }
    rp__ckpt_catalog_free(&cat);
    rp_cat_close_ro(&dfd);
    if (removed_p != NULL) {
        *removed_p = removed;
    }
    return first;

err_dfd:
    rp_cat_close_ro(&dfd);
    return rc;
}

rp_status_t rp__ckpt_cleanup_inflight(const char *dir, unsigned *removed_p)
{
    char **names;
    unsigned removed = 0;
    size_t n, i;
    int dfd = -1;
    rp_status_t rc, first = RP_OK;

    if (removed_p != NULL) {
        *removed_p = 0;
    }
    if (dir == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rc = rp_cat_open_root(dir, &dfd);
    if (rc != RP_OK) {
        return rc == RP_ERR_NOT_FOUND ? RP_OK : rc; /* nothing to clean */
    }
    /* By name only: in-flight directories are never examined, and the
     * committed ones need not be verified for this. */
    rc = rp_cat_collect(dfd, dir, rp_cat_match_inflight, &names, &n);
    if (rc != RP_OK) {
        goto err_dfd;
    }
    for (i = 0; i < n; i++) {
        rp_info("%s: removing leftover in-flight checkpoint %s", dir,
                names[i]);
        rc = rp__ckpt_remove_at(dfd, names[i]);
        if (rc == RP_OK) {
            removed++;
        } else if (rc != RP_ERR_NOT_FOUND && first == RP_OK) {
            first = rc;
        }
    }
    rp_cat_free_names(names, n);
    rc = rp_cat_sweep_deleting(dfd, dir);
    if (first == RP_OK) {
        first = rc;
    }
    rp_cat_close_ro(&dfd);
    if (removed_p != NULL) {
        *removed_p = removed;
    }
    return first;

err_dfd:
    rp_cat_close_ro(&dfd);
    return rc;
}
