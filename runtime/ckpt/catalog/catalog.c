/*
 * The checkpoint catalog: every checkpoint of a directory and its state,
 * judged by content (validate.c), sorted by step. See catalog.h.
 */
#include "ckpt/catalog/catalog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt/catalog/catalog_int.h"
#include "util/log.h"

static uint64_t rp__cat_mtime_ns(const struct stat *st)
{
    if (st->st_mtim.tv_sec < 0) {
        return 0;
    }
    return (uint64_t)st->st_mtim.tv_sec * 1000000000ull +
           (uint64_t)st->st_mtim.tv_nsec;
}

/* Apparent size of the regular files directly in @name; best effort, for
 * display only, so errors just leave things uncounted. */
static uint64_t rp__cat_measure(int dfd, const char *name)
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
        rp__cat_close_ro(&cfd);
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

/* The entry's state and reason from its verdict. */
static void rp__cat_judged(rp__ckpt_entry_t *e)
{
    e->state = e->verdict.state;
    (void)rp__ckpt_verdict_format(&e->verdict, e->reason, sizeof(e->reason));
}

/* Fill @e for a committed-name entry. RP_ERR_NOT_FOUND: it vanished. */
static rp_status_t rp__cat_examine(int dfd, rp__cat_depth_t depth,
                                   rp__ckpt_entry_t *e)
{
    rp__ckpt_manifest_t m;
    uint64_t msize = 0;
    struct stat st;
    int cfd;
    rp_status_t rc;

    rp__ckpt_verdict_init(&e->verdict, e->name);
    if (fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        if (errno == ENOENT) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("%s: fstatat: %s", e->name, strerror(errno));
        (void)rp__ckpt_verdict_set(&e->verdict, RP_CKPT_CORRUPT, NULL, NULL,
                                   RP_CKPT_NO_OFFSET, NULL, NULL,
                                   "fstatat: %s", strerror(errno));
        rp__cat_judged(e);
        return RP_OK;
    }
    e->created_ns = rp__cat_mtime_ns(&st);
    if (!S_ISDIR(st.st_mode)) {
        e->total_bytes = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
        (void)rp__ckpt_verdict_set(&e->verdict, RP_CKPT_CORRUPT, NULL, NULL,
                                   RP_CKPT_NO_OFFSET, NULL, NULL,
                                   "not a directory");
        rp__cat_judged(e);
        return RP_OK;
    }
    cfd = openat(dfd, e->name, RP_CAT_DIR_FLAGS);
    if (cfd < 0) {
        if (errno == ENOENT) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("%s: open: %s", e->name, strerror(errno));
        (void)rp__ckpt_verdict_set(&e->verdict, RP_CKPT_CORRUPT, NULL, NULL,
                                   RP_CKPT_NO_OFFSET, NULL, NULL, "open: %s",
                                   strerror(errno));
        rp__cat_judged(e);
        return RP_OK;
    }
    rc = rp__cat_validate_dirfd(cfd, e->name, depth, &e->verdict, &m, &msize);
    rp__cat_close_ro(&cfd);
    if (rc == RP_ERR_NO_MEMORY) {
        rp__ckpt_manifest_free(&m);
        return rc;
    }
    rp__cat_judged(e);
    if (m.shards != NULL) {
        e->world_size = m.world_size;
        e->created_ns = m.created_ns;
        memcpy(e->ckpt_id, m.ckpt_id, RP_CKPT_ID_SIZE);
        e->total_bytes = (uint64_t)m.world_size * RP_CKPT_SHARD_HEADER_SIZE +
                         rp__ckpt_manifest_payload_bytes(&m) + msize;
    } else {
        e->total_bytes = rp__cat_measure(dfd, e->name);
    }
    rp__ckpt_manifest_free(&m);
    return RP_OK;
}

static void rp__cat_examine_inflight(int dfd, rp__ckpt_entry_t *e)
{
    struct stat st;

    rp__ckpt_verdict_init(&e->verdict, e->name);
    (void)rp__ckpt_verdict_set(&e->verdict, RP_CKPT_INFLIGHT, NULL, NULL,
                               RP_CKPT_NO_OFFSET, NULL, NULL,
                               "in-flight (being written, or left by a "
                               "writer that died)");
    rp__cat_judged(e);
    if (fstatat(dfd, e->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        e->created_ns = rp__cat_mtime_ns(&st);
    }
    e->total_bytes = rp__cat_measure(dfd, e->name);
}

static int rp__cat_cmp(const void *a, const void *b)
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

static char *rp__cat_join(const char *dir, const char *name)
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

DIR *rp__cat_opendir_at(int dfd, const char *dir)
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
        rp__cat_close_ro(&fd);
    }
    return d;
}

struct dirent *rp__cat_readdir(DIR *d, const char *dir, const char *sub,
                               rp_status_t *rc_p)
{
    struct dirent *de;

    for (;;) {
        errno = 0;
        de = readdir(d);
        if (de == NULL) {
            if (errno != 0) {
                rp_error("%s%s%s: readdir: %s", dir, sub != NULL ? "/" : "",
                         sub != NULL ? sub : "", strerror(errno));
                *rc_p = RP_ERR_IO;
            }
            return NULL;
        }
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            return de;
        }
    }
}

rp_status_t rp__cat_scan_fd(int dfd, const char *dir, rp__cat_depth_t depth,
                            rp__ckpt_catalog_t *cat)
{
    size_t cap = 0;
    struct dirent *de;
    DIR *d;
    rp_status_t rc = RP_OK;

    memset(cat, 0, sizeof(*cat));
    d = rp__cat_opendir_at(dfd, dir);
    if (d == NULL) {
        return RP_ERR_IO;
    }
    while ((de = rp__cat_readdir(d, dir, NULL, &rc)) != NULL) {
        rp__ckpt_entry_t *e;
        uint64_t step;
        bool committed;

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
            rc = rp__cat_examine(dfd, depth, e);
            if (rc == RP_ERR_NOT_FOUND) {
                rc = RP_OK; /* deleted under us: nothing to list */
                continue;
            }
            if (rc != RP_OK) {
                break;
            }
        } else {
            rp__cat_examine_inflight(dfd, e);
        }
        e->path = rp__cat_join(dir, e->name);
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
        qsort(cat->entries, cat->count, sizeof(*cat->entries), rp__cat_cmp);
    }
    return RP_OK;
}

rp_status_t rp__cat_open_root(const char *dir, int *dfd_p)
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

/* The scans of catalog.h, to @depth. */
static rp_status_t rp__cat_scan(const char *dir, rp__cat_depth_t depth,
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
    rc = rp__cat_open_root(dir, &dfd);
    if (rc != RP_OK) {
        return rc;
    }
    rc = rp__cat_scan_fd(dfd, dir, depth, cat);
    rp__cat_close_ro(&dfd);
    return rc;
}

rp_status_t rp__ckpt_catalog_scan(const char *dir, bool full,
                                  rp__ckpt_catalog_t *cat)
{
    return rp__cat_scan(dir, rp__cat_depth(full), cat);
}

rp_status_t rp__ckpt_catalog_scan_manifests(const char *dir,
                                            rp__ckpt_catalog_t *cat)
{
    return rp__cat_scan(dir, RP_CAT_MANIFEST, cat);
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
                rp_warn("skipping checkpoint %s: %s: %s", e->path,
                        rp__ckpt_state_name(state), why);
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
