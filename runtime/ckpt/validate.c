/*
 * The judgement of one checkpoint: its MANIFEST parsed and checked, every
 * shard present, of the recorded length, with a header that belongs to it,
 * and (full) every chunk's CRC32C. See catalog.h for the rules and
 * doc/checkpoint-format.md for the format being checked.
 */
#include "ckpt/catalog_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/crc32c.h"
#include "ckpt/fileio.h"
#include "ckpt/shard.h"
#include "util/log.h"

/* Read size for full verification: large enough for streaming rates,
 * small enough to not matter next to a training job's memory. */
#define RP_CAT_READ_BUF (4u << 20)

/* What one verification found, and where to describe it. */
typedef struct rp__cat_ctx {
    const char *label; /* checkpoint name for messages; "" if none */
    rp__ckpt_state_t state;
    char *msg;
    size_t msglen;
} rp__cat_ctx_t;

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

static void rp__cat_vdescribe(rp__cat_ctx_t *x, const char *file,
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
static rp_status_t rp__cat_finding(rp__cat_ctx_t *x, rp__ckpt_state_t state,
                                   const char *file, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static rp_status_t rp__cat_finding(rp__cat_ctx_t *x, rp__ckpt_state_t state,
                                   const char *file, const char *fmt, ...)
{
    va_list ap;

    x->state = state;
    va_start(ap, fmt);
    rp__cat_vdescribe(x, file, fmt, ap);
    va_end(ap);
    return RP_ERR_CORRUPT;
}

/* Record and log a failure to read something (not a finding about it). */
static rp_status_t rp__cat_ioerr(rp__cat_ctx_t *x, const char *file,
                                 const char *op, int err)
{
    rp_error("%s%s%s: %s: %s", x->label, x->label[0] != '\0' ? "/" : "",
             file, op, strerror(err));
    (void)rp__cat_finding(x, RP_CKPT_CORRUPT, file, "%s: %s", op,
                         strerror(err));
    return RP_ERR_IO;
}

static rp_status_t rp__cat_load_manifest(int cfd, rp__cat_ctx_t *x,
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
                return rp__cat_finding(x, RP_CKPT_INCOMPLETE, file,
                                      "missing, " RP_CKPT_MANIFEST_TMP_NAME
                                      " present (commit was interrupted)");
            }
            return rp__cat_finding(x, RP_CKPT_INCOMPLETE, file, "missing");
        }
        if (errno == ELOOP) {
            return rp__cat_finding(x, RP_CKPT_CORRUPT, file,
                                  "is a symbolic link");
        }
        return rp__cat_ioerr(x, file, "open", errno);
    }
    if (fstat(fd, &st) != 0) {
        rc = rp__cat_ioerr(x, file, "fstat", errno);
        goto err_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file,
                            "not a regular file");
        goto err_fd;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size > RP_CKPT_MANIFEST_MAX) {
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file,
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
        (void)rp__cat_finding(x, RP_CKPT_CORRUPT, file, "read error");
        goto err_buf;
    }
    if (got != size) {
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file,
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
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file, "%s", why);
        goto err_buf;
    }
    free(buf);
    rp__cat_close_ro(&fd);
    *size_p = size;
    return RP_OK;

err_buf:
    free(buf);
err_fd:
    rp__cat_close_ro(&fd);
    return rc;
}

/* Re-read every chunk of an open shard and compare CRCs. */
static rp_status_t rp__cat_check_chunks(int fd, rp__cat_ctx_t *x,
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
                (void)rp__cat_finding(x, RP_CKPT_CORRUPT, file,
                                     "read error in chunk %u", c);
                break;
            }
            if (got != want) {
                rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file,
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
            rc = rp__cat_finding(x, RP_CKPT_CORRUPT, where,
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

static rp_status_t rp__cat_verify_shard(int cfd, rp__cat_ctx_t *x,
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
            return rp__cat_finding(x, RP_CKPT_INCOMPLETE, file, "missing");
        }
        if (errno == ELOOP) {
            return rp__cat_finding(x, RP_CKPT_CORRUPT, file,
                                  "is a symbolic link");
        }
        return rp__cat_ioerr(x, file, "open", errno);
    }
    if (fstat(fd, &st) != 0) {
        rc = rp__cat_ioerr(x, file, "fstat", errno);
        goto err_fd;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file, "not a regular file");
        goto err_fd;
    }
    if (st.st_size < 0 || (uint64_t)st.st_size != want_size) {
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file,
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
        (void)rp__cat_finding(x, RP_CKPT_CORRUPT, file, "read error");
        goto err_hbuf;
    }
    if (got != RP_CKPT_SHARD_HEADER_SIZE) {
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file,
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
        rc = rp__cat_finding(x, RP_CKPT_CORRUPT, file, "%s", why);
        goto err_hbuf;
    }
    free(hbuf);
    hbuf = NULL;
    if (full) {
        rc = rp__cat_check_chunks(fd, x, file, what, m, rank);
        if (rc != RP_OK) {
            goto err_fd;
        }
    }
    rp__cat_close_ro(&fd);
    return RP_OK;

err_hbuf:
    free(hbuf);
err_fd:
    rp__cat_close_ro(&fd);
    return rc;
}

rp_status_t rp__ckpt_verify_shard(int ckptfd, const char *label,
                                  const rp__ckpt_manifest_t *m, uint32_t rank,
                                  bool full, rp__ckpt_state_t *state_p,
                                  char *msg, size_t msglen)
{
    rp__cat_ctx_t x = {label != NULL ? label : "", RP_CKPT_COMPLETE, msg,
                      msglen};
    rp_status_t rc;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    if (m == NULL || m->shards == NULL || rank >= m->world_size ||
        state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rc = rp__cat_verify_shard(ckptfd, &x, m, rank, full);
    *state_p = x.state;
    return rc;
}

rp_status_t rp__ckpt_load_manifest_at(int ckptfd, const char *label,
                                      rp__ckpt_manifest_t *m,
                                      rp__ckpt_state_t *state_p,
                                      char *msg, size_t msglen)
{
    rp__cat_ctx_t x = {label != NULL ? label : "", RP_CKPT_COMPLETE, msg,
                      msglen};
    uint64_t size = 0;
    rp_status_t rc;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    memset(m, 0, sizeof(*m));
    rc = rp__cat_load_manifest(ckptfd, &x, m, &size);
    *state_p = x.state;
    return rc;
}

rp_status_t rp__cat_verify_dirfd(int cfd, const char *name, bool full,
                                 rp__ckpt_state_t *state_p,
                                 rp__ckpt_manifest_t *m_out,
                                 uint64_t *manifest_size_p,
                                 char *msg, size_t msglen)
{
    rp__cat_ctx_t x = {name, RP_CKPT_COMPLETE, msg, msglen};
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
    rc = rp__cat_load_manifest(cfd, &x, &m, &msize);
    if (rc != RP_OK) {
        goto out;
    }
    if (has_step && m.step != name_step) {
        rc = rp__cat_finding(&x, RP_CKPT_CORRUPT, RP_CKPT_MANIFEST_NAME,
                            "step %llu does not match the directory name",
                            (unsigned long long)m.step);
        goto out;
    }
    for (r = 0; r < m.world_size; r++) {
        rc = rp__cat_verify_shard(cfd, &x, &m, r, full);
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
    rp__cat_ctx_t x = {"", RP_CKPT_CORRUPT, msg, msglen};
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
            (void)rp__cat_finding(&x, RP_CKPT_INCOMPLETE, name,
                                 "does not exist");
            *state_p = RP_CKPT_INCOMPLETE;
            return RP_ERR_NOT_FOUND;
        }
        if (errno == ENOTDIR || errno == ELOOP) {
            return rp__cat_finding(&x, RP_CKPT_CORRUPT, name,
                                  "not a directory");
        }
        return rp__cat_ioerr(&x, name, "open", errno);
    }
    rc = rp__cat_verify_dirfd(cfd, name, full, state_p, m_out, NULL, msg,
                             msglen);
    rp__cat_close_ro(&cfd);
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
    rp__cat_close_ro(&pfd);
    return rc;
}
