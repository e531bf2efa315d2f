/*
 * What the catalog's files share (internal to runtime/ckpt/catalog/): the
 * open flags that keep every access inside a checkpoint directory, and
 * catalog.c's directory helpers, which retention (prune.c) uses too.
 */
#ifndef RP_CKPT_CATALOG_INT_H
#define RP_CKPT_CATALOG_INT_H

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>

#include "ckpt/catalog/catalog.h"
#include "ckpt/catalog/validate.h"

/* O_NONBLOCK: opening a FIFO planted under a checkpoint name must not
 * hang the scan (it is then rejected as not a regular file). It has no
 * effect on reads from regular files. */
#define RP_CAT_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
#define RP_CAT_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Close a descriptor we only read from: nothing was written, so a failure
 * cannot lose data, and there is nothing to do about it. */
static inline void rp__cat_close_ro(int *fd_p)
{
    if (*fd_p >= 0) {
        (void)close(*fd_p);
        *fd_p = -1;
    }
}

/* Open a fresh directory stream on @dfd (independent of @dfd's offset). */
DIR *rp__cat_opendir_at(int dfd, const char *dir);
/* The next entry of @d other than "." and "..", or NULL at its end. A
 * read error (not the end: readdir tells them apart only by errno) is
 * logged, naming @dir, or @dir/@sub when @sub is not NULL, and sets
 * *@rc_p to RP_ERR_IO. */
struct dirent *rp__cat_readdir(DIR *d, const char *dir, const char *sub,
                               rp_status_t *rc_p);
/* Open the checkpoint root. RP_ERR_NOT_FOUND (unlogged) if missing. */
rp_status_t rp__cat_open_root(const char *dir, int *dfd_p);
/* rp__ckpt_catalog_scan on the root open at @dfd, judging to @depth. */
rp_status_t rp__cat_scan_fd(int dfd, const char *dir, rp__cat_depth_t depth,
                            rp__ckpt_catalog_t *cat);

#endif /* RP_CKPT_CATALOG_INT_H */
