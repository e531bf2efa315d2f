/*
 * The checkpoint root of this job (root.c): made and opened, leftovers of
 * a killed job removed once, retention after a commit on a helper thread.
 */
#ifndef RP_CKPT_ROOT_H
#define RP_CKPT_ROOT_H

#include <stdbool.h>

#include "ckpt/engine/engine.h"
#include "util/log.h"

/* Make sure the root exists (rank 0 creates it) and is open; collective
 * only in the sense that every rank calls it at the same point. */
rp_status_t rp__ckpt_open_root(rp__ckpt_engine_t *e, bool create);
/* Rank 0, before the engine's first write or restore: remove the
 * in-flight directories a killed job left (no writer of this job has run
 * yet, so they can only be debris), once; said at @level after @who. */
void rp__ckpt_cleanup_once(rp__ckpt_engine_t *e, rp_log_level_t level,
                           const char *who);
/* mkdir -p @path, each component with the user's umask (logged). */
rp_status_t rp__ckpt_mkdirs(const char *path);
/* Rank 0, after a commit: apply retention on a helper thread, so the
 * deletions of old checkpoints (unlinking shards of any size, an fsync of
 * the root) are not in the training loop's time. Joined before anything else looks at the
 * directory's list: the next begin, restore, find, and destroy. */
void rp__ckpt_prune_start(rp__ckpt_engine_t *e);
void rp__ckpt_prune_join(rp__ckpt_engine_t *e);

#endif /* RP_CKPT_ROOT_H */
