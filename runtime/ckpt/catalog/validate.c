/*
 * The judgement of one checkpoint (validate.h): its MANIFEST parsed and
 * checked, every shard present, of the recorded length, with a header that
 * belongs to it, and (full) every chunk's CRC32C, in that order, stopping
 * at the first failure. doc/checkpoint-format.md has the format checked.
 *
 * Findings about the data go into the verdict and are not logged (whether
 * they matter is the caller's call); failures to read (EIO, EACCES) are
 * logged where met and are also a CORRUPT verdict, so that a listing shows
 * them.
 */
#include "ckpt/catalog/catalog_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/format/crc32c.h"
#include "ckpt/format/fileio.h"
#include "ckpt/format/shard.h"
#include "util/log.h"

/* Read size for full verification: large enough for streaming rates,
 * small enough to not matter next to a training job's memory. */
#define RP_VAL_READ_BUF (4u << 20)

/* "ckpt/file", for log lines about reading @file. */
static void rp__val_what(const rp__ckpt_verdict_t *v, const char *file,
                         char *buf, size_t len)
{
    (void)snprintf(buf, len, "%s%s%s", v->ckpt, v->ckpt[0] != '\0' ? "/" : "",
                   file);
}

/* Record and log a failure to read something (not a finding about it). */
static rp_status_t rp__val_ioerr(rp__ckpt_verdict_t *v, const char *file,
                                 const char *op, int err)
{
    char what[2 * RP_CKPT_NAME_MAX];

    rp__val_what(v, file, what, sizeof(what));
    rp_error("%s: %s: %s", what, op, strerror(err));
    (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                               RP_CKPT_NO_OFFSET, NULL, NULL, "%s: %s", op,
                               strerror(err));
    return RP_ERR_IO;
}

/*
 * Open @file of the checkpoint at @cfd for reading, as a regular file that
 * is no symbolic link; its size in *@size_p. A finding when it is missing
 * (INCOMPLETE) or not a regular file.
 */
static rp_status_t rp__val_open(int cfd, rp__ckpt_verdict_t *v,
                                const char *file, int *fd_p,
                                uint64_t *size_p)
{
    struct stat st;
    int fd = openat(cfd, file, RP_CAT_FILE_FLAGS);
    rp_status_t rc;

    *fd_p = -1;
    if (fd < 0) {
        if (errno == ENOENT) {
            if (strcmp(file, RP_CKPT_MANIFEST_NAME) == 0 &&
                fstatat(cfd, RP_CKPT_MANIFEST_TMP_NAME, &st,
                        AT_SYMLINK_NOFOLLOW) == 0) {
                return rp__ckpt_verdict_set(
                    v, RP_CKPT_INCOMPLETE, file, NULL, RP_CKPT_NO_OFFSET,
                    NULL, NULL, "missing, " RP_CKPT_MANIFEST_TMP_NAME
                    " present (commit was interrupted)");
            }
            return rp__ckpt_verdict_set(v, RP_CKPT_INCOMPLETE, file, NULL,
                                        RP_CKPT_NO_OFFSET, NULL, NULL,
                                        "missing");
        }
        if (errno == ELOOP) {
            return rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                        RP_CKPT_NO_OFFSET, NULL, NULL,
                                        "is a symbolic link");
        }
        return rp__val_ioerr(v, file, "open", errno);
    }
    if (fstat(fd, &st) != 0) {
        rc = rp__val_ioerr(v, file, "fstat", errno);
        goto err_fd;
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0) {
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  RP_CKPT_NO_OFFSET, NULL, NULL,
                                  "not a regular file");
        goto err_fd;
    }
    *fd_p = fd;
    *size_p = (uint64_t)st.st_size;
    return RP_OK;

err_fd:
    rp__cat_close_ro(&fd);
    return rc;
}

/* Read, parse and check the MANIFEST of the checkpoint open at @cfd; its
 * step must be the one of the checkpoint's name, if that has one. */
static rp_status_t rp__val_manifest(int cfd, rp__ckpt_verdict_t *v,
                                    rp__ckpt_manifest_t *m, uint64_t *size_p)
{
    const char *file = RP_CKPT_MANIFEST_NAME;
    char what[2 * RP_CKPT_NAME_MAX], why[256], exp[48], got[48];
    uint64_t fsize, name_step;
    char *buf;
    size_t size, got_n;
    int fd;
    rp_status_t rc;

    rp__val_what(v, file, what, sizeof(what));
    rc = rp__val_open(cfd, v, file, &fd, &fsize);
    if (rc != RP_OK) {
        return rc;
    }
    if (fsize > RP_CKPT_MANIFEST_MAX) {
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  RP_CKPT_NO_OFFSET, NULL, NULL,
                                  "%llu bytes, more than the %u allowed",
                                  (unsigned long long)fsize,
                                  RP_CKPT_MANIFEST_MAX);
        goto err_fd;
    }
    size = (size_t)fsize;
    /* One byte more than expected, to notice a file that grew. */
    buf = malloc(size + 1);
    if (buf == NULL) {
        rp_error("%s: out of memory for %zu bytes", what, size);
        rc = RP_ERR_NO_MEMORY;
        goto err_fd;
    }
    rc = rp__ckpt_pread_full(fd, buf, size + 1, 0, &got_n, what);
    if (rc != RP_OK) {
        (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                   RP_CKPT_NO_OFFSET, NULL, NULL,
                                   "read error");
        goto err_buf;
    }
    if (got_n != size) {
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  RP_CKPT_NO_OFFSET, NULL, NULL,
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
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  RP_CKPT_NO_OFFSET, NULL, NULL, "%s", why);
        goto err_buf;
    }
    if ((rp__ckpt_parse_committed(v->ckpt, &name_step) ||
         rp__ckpt_parse_inflight(v->ckpt, &name_step)) &&
        m->step != name_step) {
        (void)snprintf(exp, sizeof(exp), "step %llu",
                       (unsigned long long)name_step);
        (void)snprintf(got, sizeof(got), "step %llu",
                       (unsigned long long)m->step);
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  RP_CKPT_NO_OFFSET, exp, got,
                                  "step %llu does not match the directory "
                                  "name", (unsigned long long)m->step);
        goto err_buf; /* @m parsed: handed back for display */
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

/* Re-read every chunk of an open shard and judge its CRC. */
static rp_status_t rp__val_chunks(int fd, rp__ckpt_verdict_t *v,
                                  const char *file, const char *what,
                                  const rp__ckpt_manifest_t *m, uint32_t rank)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    size_t buflen = m->chunk_size < RP_VAL_READ_BUF ? (size_t)m->chunk_size
                                                    : RP_VAL_READ_BUF;
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
        uint64_t off = RP_CKPT_SHARD_HEADER_SIZE + pos;
        char part[32];
        uint32_t crc = 0;

        (void)snprintf(part, sizeof(part), "chunk %u", c);
        while (chunk > 0) {
            size_t want = chunk < buflen ? (size_t)chunk : buflen, got;

            rc = rp__ckpt_pread_full(fd, buf, want,
                                     RP_CKPT_SHARD_HEADER_SIZE + pos, &got,
                                     what);
            if (rc != RP_OK) {
                (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, part,
                                           off, NULL, NULL, "read error");
                break;
            }
            if (got != want) {
                rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, part, off,
                                          NULL, NULL,
                                          "shrank while being read");
                break;
            }
            crc = rp__crc32c(crc, buf, got);
            pos += got;
            chunk -= got;
        }
        if (rc == RP_OK) {
            rc = rp__ckpt_judge_chunk(v, m, rank, c, crc);
        }
    }
    /* A verified checkpoint is usually not read again soon; do not let a
     * scrub push the job's working set out of the page cache. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    free(buf);
    return rc;
}

/* Strip the decoder's "shard header " lead: the verdict's part says it. */
static const char *rp__val_header_why(const char *why)
{
    static const char lead[] = "shard header ";

    return strncmp(why, lead, sizeof(lead) - 1) == 0 ? why + sizeof(lead) - 1
                                                     : why;
}

/* The header field at byte @off (the layout in shard.h). */
static const char *rp__val_header_field(size_t off)
{
    static const struct {
        size_t end;
        const char *name;
    } fields[] = {
        {8, "magic"}, {12, "version"}, {16, "header size"},
        {32, "checkpoint id"}, {40, "step"}, {44, "rank"},
        {48, "world size"}, {56, "payload length"}, {60, "reserved"},
        {64, "crc32c"},
    };
    size_t i;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (off < fields[i].end) {
            return fields[i].name;
        }
    }
    return "padding";
}

/*
 * A bad header of rank @rank's shard, judged against the header the
 * manifest says belongs there (encoded by shard.c, so the layout is not
 * restated): the decoder's reason, and the first byte that differs, its
 * field, and what was expected and found there.
 */
static rp_status_t rp__val_bad_header(rp__ckpt_verdict_t *v, const char *file,
                                      const unsigned char *hbuf,
                                      const rp__ckpt_manifest_t *m,
                                      uint32_t rank, const char *why)
{
    rp__ckpt_shard_header_t want;
    uint8_t *wbuf = malloc(RP_CKPT_SHARD_HEADER_SIZE);
    char exp[48], got[48];
    size_t i = 0;
    rp_status_t rc;

    if (wbuf != NULL) {
        rp__ckpt_manifest_shard_header(m, rank, &want);
        rp__ckpt_shard_header_encode(&want, wbuf);
        while (i < RP_CKPT_SHARD_HEADER_SIZE && hbuf[i] == wbuf[i]) {
            i++;
        }
    }
    if (wbuf == NULL || i == RP_CKPT_SHARD_HEADER_SIZE) {
        /* No memory for the comparison: the reason alone says enough. */
        free(wbuf);
        return rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header",
                                    0, NULL, NULL, "%s",
                                    rp__val_header_why(why));
    }
    (void)snprintf(exp, sizeof(exp), "byte 0x%02x", wbuf[i]);
    (void)snprintf(got, sizeof(got), "byte 0x%02x", hbuf[i]);
    rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header", i,
                              exp, got, "%s (field %s, byte %zu: 0x%02x, "
                              "expected 0x%02x)", rp__val_header_why(why),
                              rp__val_header_field(i), i, hbuf[i], wbuf[i]);
    free(wbuf);
    return rc;
}

static rp_status_t rp__val_shard(int cfd, rp__ckpt_verdict_t *v,
                                 const rp__ckpt_manifest_t *m, uint32_t rank,
                                 bool full)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    unsigned char *hbuf;
    char file[RP_CKPT_NAME_MAX], what[2 * RP_CKPT_NAME_MAX], why[256];
    char exp[48], got_s[48];
    rp__ckpt_shard_header_t hdr;
    uint64_t want_size = RP_CKPT_SHARD_HEADER_SIZE + sh->length, fsize;
    size_t got;
    int fd;
    rp_status_t rc;

    rp__ckpt_name_shard(rank, file, sizeof(file));
    rp__val_what(v, file, what, sizeof(what));
    rc = rp__val_open(cfd, v, file, &fd, &fsize);
    if (rc != RP_OK) {
        return rc;
    }
    if (fsize != want_size) {
        /* Checked before the header: a file cut inside its header is
         * "truncated", which says more than a bad header would. */
        (void)snprintf(exp, sizeof(exp), "%llu bytes",
                       (unsigned long long)want_size);
        (void)snprintf(got_s, sizeof(got_s), "%llu bytes",
                       (unsigned long long)fsize);
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  fsize < want_size ? fsize : want_size, exp,
                                  got_s, "%s: %llu bytes, expected %llu",
                                  fsize < want_size ? "truncated"
                                                    : "too long",
                                  (unsigned long long)fsize,
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
        (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header",
                                   0, NULL, NULL, "read error");
        goto err_hbuf;
    }
    if (got != RP_CKPT_SHARD_HEADER_SIZE) {
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header",
                                  0, NULL, NULL, "shrank while being read");
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
        rc = rp__val_bad_header(v, file, hbuf, m, rank, why);
        goto err_hbuf;
    }
    free(hbuf);
    hbuf = NULL;
    if (full) {
        rc = rp__val_chunks(fd, v, file, what, m, rank);
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

/* The old interface's outputs from a verdict. */
static void rp__val_report(const rp__ckpt_verdict_t *v,
                           rp__ckpt_state_t *state_p, char *msg,
                           size_t msglen)
{
    if (state_p != NULL) {
        *state_p = v->state;
    }
    if (msg != NULL && msglen > 0) {
        (void)rp__ckpt_verdict_format(v, msg, msglen);
    }
}

rp_status_t rp__ckpt_verify_shard(int ckptfd, const char *label,
                                  const rp__ckpt_manifest_t *m, uint32_t rank,
                                  bool full, rp__ckpt_state_t *state_p,
                                  char *msg, size_t msglen)
{
    rp__ckpt_verdict_t v;
    rp_status_t rc;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    if (m == NULL || m->shards == NULL || rank >= m->world_size ||
        state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rp__ckpt_verdict_init(&v, label);
    rc = rp__val_shard(ckptfd, &v, m, rank, full);
    rp__val_report(&v, state_p, msg, msglen);
    return rc;
}

rp_status_t rp__ckpt_load_manifest_at(int ckptfd, const char *label,
                                      rp__ckpt_manifest_t *m,
                                      rp__ckpt_state_t *state_p,
                                      char *msg, size_t msglen)
{
    rp__ckpt_verdict_t v;
    uint64_t size = 0;
    rp_status_t rc;

    memset(m, 0, sizeof(*m));
    rp__ckpt_verdict_init(&v, label);
    rc = rp__val_manifest(ckptfd, &v, m, &size);
    if (rc != RP_OK) {
        rp__ckpt_manifest_free(m);
    }
    rp__val_report(&v, state_p, msg, msglen);
    return rc;
}

rp_status_t rp__cat_validate_dirfd(int cfd, const char *name,
                                   rp__cat_depth_t depth,
                                   rp__ckpt_verdict_t *v,
                                   rp__ckpt_manifest_t *m_out,
                                   uint64_t *manifest_size_p)
{
    rp__ckpt_manifest_t m;
    uint64_t msize = 0;
    uint32_t r;
    rp_status_t rc;

    memset(&m, 0, sizeof(m));
    rp__ckpt_verdict_init(v, name);
    rc = rp__val_manifest(cfd, v, &m, &msize);
    for (r = 0; rc == RP_OK && depth != RP_CAT_MANIFEST && r < m.world_size;
         r++) {
        rc = rp__val_shard(cfd, v, &m, r, depth == RP_CAT_FULL);
    }
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

rp_status_t rp__ckpt_validate_at(int dirfd, const char *name, bool full,
                                 rp__ckpt_verdict_t *v,
                                 rp__ckpt_manifest_t *m_out)
{
    int cfd;
    rp_status_t rc;

    if (m_out != NULL) {
        memset(m_out, 0, sizeof(*m_out));
    }
    if (v == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    /* Findings about the directory itself name it in the file's place. */
    rp__ckpt_verdict_init(v, name);
    if (name == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    cfd = openat(dirfd, name, RP_CAT_DIR_FLAGS);
    if (cfd < 0) {
        if (errno == ENOENT) {
            (void)rp__ckpt_verdict_set(v, RP_CKPT_INCOMPLETE, NULL, NULL,
                                       RP_CKPT_NO_OFFSET, NULL, NULL,
                                       "does not exist");
            return RP_ERR_NOT_FOUND;
        }
        if (errno == ENOTDIR || errno == ELOOP) {
            return rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, NULL, NULL,
                                        RP_CKPT_NO_OFFSET, NULL, NULL,
                                        "not a directory");
        }
        rp_error("%s: open: %s", name, strerror(errno));
        (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, NULL, NULL,
                                   RP_CKPT_NO_OFFSET, NULL, NULL, "open: %s",
                                   strerror(errno));
        return RP_ERR_IO;
    }
    rc = rp__cat_validate_dirfd(cfd, name, rp__cat_depth(full), v, m_out,
                                NULL);
    rp__cat_close_ro(&cfd);
    return rc;
}

rp_status_t rp__ckpt_verify_at(int dirfd, const char *name, bool full,
                               rp__ckpt_state_t *state_p,
                               rp__ckpt_manifest_t *m_out,
                               char *msg, size_t msglen)
{
    rp__ckpt_verdict_t v;
    rp_status_t rc;

    if (state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rc = rp__ckpt_validate_at(dirfd, name, full, &v, m_out);
    rp__val_report(&v, state_p, msg, msglen);
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
