/*
 * The coordinated two-phase commit of one checkpoint (commit.c): begin,
 * this rank's shard written from the registered memory (sync mode), and
 * the agreement that makes it durable or removes it.
 */
#ifndef RP_CKPT_COMMIT_H
#define RP_CKPT_COMMIT_H

#include "ckpt/engine/engine.h"
#include "ckpt/format/shard.h"

/* Collective. Rank 0 makes the in-flight directory; all open it and
 * size this rank's part. RP_ERR_STATE: step already committed (skip). */
rp_status_t rp__ckpt_begin(rp__ckpt_engine_t *e, uint64_t step);
/* This rank's shard from the registered memory, through a bounce buffer
 * (sync mode), into e->pend.write_status. */
void rp__ckpt_write_sync(rp__ckpt_engine_t *e);
/* Collective: agree, gather CRCs, commit, prune. Always ends the pending
 * checkpoint; returns RP_OK when it is durable on every rank's word. */
rp_status_t rp__ckpt_finish(rp__ckpt_engine_t *e);
/* The shard header of this rank's part of the pending checkpoint. */
void rp__ckpt_pending_header(const rp__ckpt_engine_t *e,
                             rp__ckpt_shard_header_t *hdr);
/* Fault knob for this rank and step. */
rp__ckpt_fault_t rp__ckpt_fault_for(const rp__ckpt_engine_t *e,
                                    uint64_t step);

#endif /* RP_CKPT_COMMIT_H */
