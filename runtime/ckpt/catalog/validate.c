/*
 * The judgement of one checkpoint (validate.h): its MANIFEST parsed and
 * checked, then every shard (validate_shard.c) present, of the recorded
 * length, with a header that belongs to it, and (full) every chunk's
 * CRC32C, in that order, stopping at the first failure.
 * doc/checkpoint-format.md has the format checked.
 *
 * Findings about the data go into the verdict and are not logged (whether
 * they matter is the caller's call); failures to read (EIO, EACCES) are
 * logged where met and are also a CORRUPT verdict, so that a listing shows
 * them.
 */
#include "ckpt/catalog/validate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/catalog/catalog_int.h"
#include "ckpt/catalog/checkfile.h"
#include "ckpt/catalog/validate_shard.h"
#include "ckpt/format/fileio.h"
#include "ckpt/format/manifest_parse.h"
#include "ckpt/format/shard.h"
#include "util/log.h"

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
    rp__ckpt_verdict_report(&v, state_p, msg, msglen);
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
    rp__ckpt_verdict_report(&v, state_p, msg, msglen);
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
