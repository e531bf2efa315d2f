/*
 * A checkpoint's file opened for judgement (checkfile.h): safely (no
 * symbolic link followed, a regular file or a finding), and a failure to
 * read one recorded in the verdict and logged. What the manifest's and
 * the shards' judgements both start with.
 */
#include "ckpt/catalog/checkfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/catalog/catalog_int.h"
#include "util/log.h"

void rp__val_what(const rp__ckpt_verdict_t *v, const char *file, char *buf,
                  size_t len)
{
    (void)snprintf(buf, len, "%s%s%s", v->ckpt, v->ckpt[0] != '\0' ? "/" : "",
                   file);
}

rp_status_t rp__val_ioerr(rp__ckpt_verdict_t *v, const char *file,
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

rp_status_t rp__val_open(int cfd, rp__ckpt_verdict_t *v, const char *file,
                         int *fd_p, uint64_t *size_p)
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
