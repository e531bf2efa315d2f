/*
 * Retention and removal (prune.c), in an order that never makes anything
 * look complete: rename to a ".deleting-" name first, then remove the
 * MANIFEST, then the rest. The policy asks the catalog what is complete;
 * the catalog never calls back.
 */
#ifndef RP_CKPT_PRUNE_H
#define RP_CKPT_PRUNE_H

#include <stdbool.h>

#include "ringpoint/status.h"
#include "ckpt/catalog/catalog.h"

/*
 * Apply retention to @dir: keep the newest @keep complete checkpoints (at
 * least one, whatever @keep says); delete older complete ones, and
 * incomplete, corrupt and in-flight ones whose step is below the newest
 * complete one. Anything at or above it is left alone, since an in-flight
 * directory there may belong to a live writer. Nothing is deleted when
 * there is no complete checkpoint. Leftover ".deleting-" directories are
 * finished off. *@removed_p (may be NULL) counts checkpoints deleted.
 * Keeps going past a failed deletion and returns the first error.
 * Must not run concurrently with a writer of an older step in @dir.
 * With @full, "complete" means every chunk verified: use it whenever the
 * newest checkpoint was not just written and checked by the caller (a
 * quick scan cannot see a flipped payload byte, and pruning on its word
 * could delete the last good checkpoint while keeping a bad one).
 */
rp_status_t rp__ckpt_prune(const char *dir, unsigned keep, bool full,
                           unsigned *removed_p);

/* What retention did with one checkpoint (rp__ckpt_prune_report). */
typedef enum rp__ckpt_prune_action {
    RP_CKPT_KEPT = 0,          /* complete, among the newest @keep */
    RP_CKPT_KEPT_NEWER = 1,    /* not complete, at or above the newest
                                  complete step (maybe a live writer's) */
    RP_CKPT_KEPT_NO_COMPLETE = 2, /* kept: no complete checkpoint at all */
    RP_CKPT_REMOVED = 3,
    RP_CKPT_REMOVE_FAILED = 4  /* logged */
} rp__ckpt_prune_action_t;

typedef void (*rp__ckpt_prune_fn_t)(const rp__ckpt_entry_t *e,
                                    rp__ckpt_prune_action_t act, void *arg);

/* rp__ckpt_prune that tells @report (may be NULL) what it did with every
 * checkpoint it judged, newest first, with the entry's verdict. */
rp_status_t rp__ckpt_prune_report(const char *dir, unsigned keep, bool full,
                                  unsigned *removed_p,
                                  rp__ckpt_prune_fn_t report, void *arg);

/*
 * Remove every in-flight directory in @dir whatever its step, and leftover
 * ".deleting-" ones. Only for a clean start (job start, before any writer
 * of this job runs): an in-flight directory then can only be debris.
 */
rp_status_t rp__ckpt_cleanup_inflight(const char *dir, unsigned *removed_p);

/*
 * Delete entry @name of the directory open at @dirfd safely: rename it to
 * a ".deleting-" name, fsync @dirfd, then remove its MANIFEST, the rest of
 * its files and the directory. A crash at any point leaves either the
 * original or something no scan takes for a checkpoint. Symbolic links
 * are removed, never followed. Returns RP_ERR_NOT_FOUND if @name is gone
 * (someone else deleted it; not logged), RP_ERR_IO.
 */
rp_status_t rp__ckpt_remove_at(int dirfd, const char *name);

#endif /* RP_CKPT_PRUNE_H */
