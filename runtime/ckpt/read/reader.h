/*
 * Restore on any world size (reader.c): the candidates, the agreement on
 * one of them, and the regions rebuilt from its shards.
 */
#ifndef RP_CKPT_READER_H
#define RP_CKPT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/engine/engine.h"
#include "ckpt/format/layout.h"

/* Restore the newest complete checkpoint that reads well on every rank,
 * falling back to older ones; with @exact, only the checkpoint of @step
 * (RP_ERR_NOT_FOUND: not a complete checkpoint; RP_ERR_CORRUPT: unusable
 * on some rank; never a fall-back). */
rp_status_t rp__ckpt_restore(rp__ckpt_engine_t *e, const char *const names[],
                             size_t nnames, bool exact, uint64_t step,
                             rp_restore_info_t *info);
/* Rank 0: the complete checkpoints, newest first (quick scan). */
rp_status_t rp__rd_candidates(rp__ckpt_engine_t *e,
                              char (**names_p)[RP_CKPT_NAME_MAX], size_t *n_p);

#endif /* RP_CKPT_READER_H */
