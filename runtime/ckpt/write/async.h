/*
 * Async mode (async.c): the snapshot into staging on the application's
 * thread, and the writer thread that writes and fsyncs the shard from it.
 */
#ifndef RP_CKPT_ASYNC_H
#define RP_CKPT_ASYNC_H

#include <stdbool.h>

#include "ckpt/engine/engine.h"

/* Copy this rank's part into staging on the caller's thread (the CRCs and
 * the device bytes may be left to the writer). */
rp_status_t rp__ckpt_async_snapshot(rp__ckpt_engine_t *e);
/* This rank's shard from staging, the snapshot's deferred part done
 * first. Runs on the writer thread, or inline for a checkpoint waited
 * for. */
rp_status_t rp__ckpt_write_staged(rp__ckpt_engine_t *e);
/* Hand the staged shard to the writer thread. */
rp_status_t rp__ckpt_async_start(rp__ckpt_engine_t *e);
/* Has the writer finished the posted shard? Non-blocking. */
bool rp__ckpt_async_done(rp__ckpt_engine_t *e);
/* Block until the writer finished the posted shard. */
void rp__ckpt_async_wait(rp__ckpt_engine_t *e);
/* Wait for the writer and stop it. */
void rp__ckpt_async_stop(rp__ckpt_engine_t *e);

#endif /* RP_CKPT_ASYNC_H */
