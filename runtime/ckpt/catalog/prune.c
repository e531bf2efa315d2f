/*
 * Retention and leftovers: prune (keep the newest complete checkpoints)
 * and cleanup (in-flight directories at a clean start). Deletion renames
 * to a ".deleting-" name first, then removes the MANIFEST, then the rest,
 * so nothing half removed ever looks complete. See catalog.h.
 */
#include "ckpt/catalog/prune.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/catalog/catalog_int.h"
#include "ckpt/format/fileio.h"
#include "util/log.h"

/* Checkpoints contain no subdirectories; anything deeper than this in a
 * directory being deleted is not ours and is left for a human. */
#define RP_CAT_MAX_DEPTH 4

/* Remove @name under @dfd, never following symlinks. The MANIFEST goes
 * first, so a directory half removed can never verify. */
static rp_status_t rp__cat_purge(int dfd, const char *label, const char *name,
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
        rp__cat_close_ro(&cfd);
        return RP_ERR_IO;
    }
    d = fdopendir(cfd);
    if (d == NULL) {
        rp_error("%s/%s: fdopendir: %s", label, name, strerror(errno));
        rp__cat_close_ro(&cfd);
        return RP_ERR_IO;
    }
    /* Removing entries while reading the directory may make readdir skip
     * some; repeat until a pass finds nothing left. */
    for (pass = 0; pass < 4 && found && rc == RP_OK; pass++) {
        found = false;
        rewinddir(d);
        while ((de = rp__cat_readdir(d, label, name, &rc)) != NULL) {
            found = true;
            rc = rp__cat_purge(dirfd(d), label, de->d_name, depth + 1);
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
    rc = rp__cat_purge(dirfd, ".", delname, 0);
    if (rc == RP_OK) {
        rp_info("removed checkpoint %s", name);
    }
    return rc;
}

static void rp__cat_free_names(char **names, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(names[i]);
    }
    free(names);
}

/* Names in @dfd accepted by @match, read in full before anything is
 * removed (never modify a directory while reading it). */
static rp_status_t rp__cat_collect(int dfd, const char *dir,
                                   bool (*match)(const char *),
                                   char ***names_p, size_t *n_p)
{
    char **names = NULL;
    size_t n = 0, cap = 0;
    struct dirent *de;
    DIR *d = rp__cat_opendir_at(dfd, dir);
    rp_status_t rc = RP_OK;

    *names_p = NULL;
    *n_p = 0;
    if (d == NULL) {
        return RP_ERR_IO;
    }
    while ((de = rp__cat_readdir(d, dir, NULL, &rc)) != NULL) {
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
        rp__cat_free_names(names, n);
        return rc;
    }
    *names_p = names;
    *n_p = n;
    return RP_OK;
}

static bool rp__cat_match_inflight(const char *name)
{
    return rp__ckpt_parse_inflight(name, NULL);
}

/* Finish off directories a crashed deletion left behind. */
static rp_status_t rp__cat_sweep_deleting(int dfd, const char *dir)
{
    char **names;
    size_t n, i;
    rp_status_t rc, rc2;

    rc = rp__cat_collect(dfd, dir, rp__ckpt_is_deleting, &names, &n);
    if (rc != RP_OK) {
        return rc;
    }
    for (i = 0; i < n; i++) {
        rp_info("%s: finishing interrupted removal of %s", dir, names[i]);
        rc2 = rp__cat_purge(dfd, dir, names[i], 0);
        if (rc == RP_OK) {
            rc = rc2;
        }
    }
    rp__cat_free_names(names, n);
    return rc;
}

rp_status_t rp__ckpt_prune(const char *dir, unsigned keep, bool full,
                           unsigned *removed_p)
{
    return rp__ckpt_prune_report(dir, keep, full, removed_p, NULL, NULL);
}

/* The end of a removal pass over the root open at *@dfd_p: the
 * .deleting-* leftovers swept (those of this pass included), the root
 * closed, the count reported. Returns the pass's first error, else the
 * sweep's. */
static rp_status_t rp__cat_end_pass(int *dfd_p, const char *dir,
                                    rp_status_t first, unsigned removed,
                                    unsigned *removed_p)
{
    rp_status_t rc = rp__cat_sweep_deleting(*dfd_p, dir);

    rp__cat_close_ro(dfd_p);
    if (removed_p != NULL) {
        *removed_p = removed;
    }
    return first != RP_OK ? first : rc;
}

rp_status_t rp__ckpt_prune_report(const char *dir, unsigned keep, bool full,
                                  unsigned *removed_p,
                                  rp__ckpt_prune_fn_t report, void *arg)
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
    rc = rp__cat_open_root(dir, &dfd);
    if (rc != RP_OK) {
        return rc;
    }
    rc = rp__cat_scan_fd(dfd, dir, rp__cat_depth(full), &cat);
    if (rc != RP_OK) {
        goto err_dfd;
    }
    newest = rp__ckpt_catalog_newest_complete(&cat);
    for (i = cat.count; i > 0; i--) {
        const rp__ckpt_entry_t *e = &cat.entries[i - 1];
        rp__ckpt_prune_action_t act;

        if (newest == NULL) {
            act = RP_CKPT_KEPT_NO_COMPLETE;
        } else if (e->state == RP_CKPT_COMPLETE) {
            act = kept >= keep ? RP_CKPT_REMOVED : RP_CKPT_KEPT;
            kept += act == RP_CKPT_KEPT ? 1 : 0;
        } else {
            /* At or above the newest complete step it may be a live
             * writer's, or evidence worth keeping; below it, debris. */
            act = e->step < newest->step ? RP_CKPT_REMOVED
                                         : RP_CKPT_KEPT_NEWER;
        }
        if (act == RP_CKPT_REMOVED) {
            rp_info("pruning %s (%s%s%s)", e->path,
                    rp__ckpt_state_name(e->state),
                    e->reason[0] != '\0' ? ": " : "", e->reason);
            rc = rp__ckpt_remove_at(dfd, e->name);
            if (rc != RP_OK && rc != RP_ERR_NOT_FOUND) {
                act = RP_CKPT_REMOVE_FAILED;
                first = first == RP_OK ? rc : first;
            }
            removed += rc == RP_OK ? 1 : 0;
        }
        if (report != NULL) {
            report(e, act, arg);
        }
    }
    rp__ckpt_catalog_free(&cat);
    return rp__cat_end_pass(&dfd, dir, first, removed, removed_p);

err_dfd:
    rp__cat_close_ro(&dfd);
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
    rc = rp__cat_open_root(dir, &dfd);
    if (rc != RP_OK) {
        return rc == RP_ERR_NOT_FOUND ? RP_OK : rc; /* nothing to clean */
    }
    /* By name only: in-flight directories are never examined, and the
     * committed ones need not be verified for this. */
    rc = rp__cat_collect(dfd, dir, rp__cat_match_inflight, &names, &n);
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
    rp__cat_free_names(names, n);
    return rp__cat_end_pass(&dfd, dir, first, removed, removed_p);

err_dfd:
    rp__cat_close_ro(&dfd);
    return rc;
}
