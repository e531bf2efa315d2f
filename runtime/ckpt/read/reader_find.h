/*
 * The checkpoint a restore would choose, found without restoring it
 * (reader_find.c), for rp_ckpt_find.
 */
#ifndef RP_CKPT_READER_FIND_H
#define RP_CKPT_READER_FIND_H

#include <stdint.h>

#include "ckpt/engine/engine.h"

/* Collective: the newest complete checkpoint older than @before_step as
 * restore would choose it, and its region table on every rank. */
rp_status_t rp__ckpt_find(rp__ckpt_engine_t *e, uint64_t before_step,
                          rp_ckpt_desc_t *desc);

#endif /* RP_CKPT_READER_FIND_H */
