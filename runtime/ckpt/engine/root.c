/*
 * The checkpoint root of this job: made and opened once, its leftovers of
 * a killed job removed once, and retention after each commit on a helper
 * thread (root.h). Both directions use it: the writer before a begin, the
 * reader before a restore or a find.
 */
#include "config.h"

#include "ckpt/engine/root.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/catalog/prune.h"
#include "core/settings.h"
#include "util/log.h"

rp_status_t rp__ckpt_mkdirs(const char *path)
{
    char buf[RP_CKPT_DIR_LEN];
    size_t i, n = strlen(path);

    if (n >= sizeof(buf)) {
        rp_error("checkpoint directory %s: path too long", path);
        return RP_ERR_INVALID_ARG;
    }
    memcpy(buf, path, n + 1);
    for (i = 1; i <= n; i++) {
        if (buf[i] == '/' || buf[i] == '\0') {
            char c = buf[i];

            buf[i] = '\0';
            if (mkdir(buf, 0777) != 0 && errno != EEXIST) {
                rp_error("create checkpoint directory %s: %s", buf,
                         strerror(errno));
                return RP_ERR_IO;
            }
            buf[i] = c;
        }
    }
    return RP_OK;
}

rp_status_t rp__ckpt_open_root(rp__ckpt_engine_t *e, bool create)
{
    rp_status_t rc;

    if (e->rootfd >= 0) {
        return RP_OK;
    }
    if (create) {
        rc = rp__ckpt_mkdirs(e->dir);
        if (rc != RP_OK) {
            return rc;
        }
    }
    /* The root itself may be a symbolic link the user chose; everything
     * inside it is opened relative to this descriptor with O_NOFOLLOW. */
    e->rootfd = open(e->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (e->rootfd < 0) {
        if (errno == ENOENT && !create) {
            return RP_ERR_NOT_FOUND;
        }
        rp_error("open checkpoint directory %s: %s", e->dir, strerror(errno));
        return RP_ERR_IO;
    }
    return RP_OK;
}

void rp__ckpt_cleanup_once(rp__ckpt_engine_t *e, rp_log_level_t level,
                           const char *who)
{
    unsigned removed = 0;

    if (e->cleaned) {
        return;
    }
    if (rp__ckpt_cleanup_inflight(e->dir, &removed) == RP_OK && removed > 0) {
        rp__log(level, "%s: removed %u leftover in-flight director%s in %s",
                who, removed, removed == 1 ? "y" : "ies", e->dir);
    }
    e->cleaned = true;
}

/* Retention on rank 0, off the application's thread. */
static void rp_root_prune_job(void *arg)
{
    rp__ckpt_engine_t *e = arg;
    uint64_t t0 = rp__ckpt_now_ns();

    /* Quick verification is right here: the newest checkpoint was just
     * written and agreed on by every rank. */
    (void)rp__ckpt_prune(e->dir, (unsigned)e->keep, false, NULL);
    e->stats.prune_ns = rp__ckpt_now_ns() - t0;
}

void rp__ckpt_prune_join(rp__ckpt_engine_t *e)
{
    if (e->prune_up) {
        rp__ckpt_worker_stop(&e->pruner);
        e->prune_up = false;
    }
}

void rp__ckpt_prune_start(rp__ckpt_engine_t *e)
{
    rp__ckpt_prune_join(e);
    /* One thread per pass, ended by the join: between commits rank 0
     * keeps no idle thread for it. */
    if (rp__ckpt_worker_start(&e->pruner)) {
        e->prune_up = true;
        rp__ckpt_worker_post(&e->pruner, rp_root_prune_job, e);
    } else {
        rp_root_prune_job(e);
    }
}
