/*
 * Where checkpoint bytes live: how the replicated byte stream is cut into
 * one stripe per rank, and the names of checkpoint directories and the
 * files inside them. Every name that the catalog must tell apart is built
 * and recognised here, so the rules ("an in-flight name can never be taken
 * for a committed one") are in one place. See doc/checkpoint-format.md.
 */
#ifndef RP_CKPT_LAYOUT_H
#define RP_CKPT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* Stripes start on multiples of this, so each rank's stripe is 4 KiB
 * aligned in the stream and can be written with O_DIRECT. */
#define RP_CKPT_STRIPE_UNIT 4096u

/* Buffer size that holds any name built here, NUL included. */
#define RP_CKPT_NAME_MAX 128

#define RP_CKPT_MANIFEST_NAME     "MANIFEST"
#define RP_CKPT_MANIFEST_TMP_NAME ".MANIFEST.tmp"
#define RP_CKPT_COMMITTED_PREFIX  "step-"
#define RP_CKPT_INFLIGHT_PREFIX   ".inflight-step-"
#define RP_CKPT_DELETING_PREFIX   ".deleting-"

/*
 * Stripe of rank @rank when a stream of @stream_len bytes is split across
 * @world ranks. The stream is cut into RP_CKPT_STRIPE_UNIT units (the last
 * one possibly short); rank r gets a contiguous run of units, the first
 * (units % world) ranks one unit more than the others. So every stripe
 * starts on a unit boundary, stripes are in rank order without gaps, and
 * their sizes differ by at most one unit (plus the short tail). Ranks past
 * the end get an empty stripe at offset @stream_len.
 *
 * Returns RP_ERR_INVALID_ARG if @world is 0 or @rank >= @world.
 */
rp_status_t rp__ckpt_stripe(uint64_t stream_len, uint32_t world, uint32_t rank,
                            uint64_t *off_p, uint64_t *len_p);

/* "step-%012llu": the only name a committed checkpoint directory has.
 * @len must be at least RP_CKPT_NAME_MAX. */
void rp__ckpt_name_committed(uint64_t step, char *buf, size_t len);

/* ".inflight-step-%012llu-%016llx": a checkpoint being written. The nonce
 * keeps two attempts at one step (a retried job) from colliding. */
void rp__ckpt_name_inflight(uint64_t step, uint64_t nonce, char *buf,
                            size_t len);

/* ".deleting-<name>-%016llx": a directory being removed. @name must be a
 * committed or in-flight name. */
void rp__ckpt_name_deleting(const char *name, uint64_t nonce, char *buf,
                            size_t len);

/* "shard-%06u.rp": rank @rank's shard file inside a checkpoint. */
void rp__ckpt_name_shard(uint32_t rank, char *buf, size_t len);

/*
 * Recognise names. Only the exact canonical form is accepted ("step-" then
 * the step in at least 12 digits, zero-padded to exactly 12 when it fits,
 * nothing else), so each step has one committed name. @step_p may be NULL.
 */
bool rp__ckpt_parse_committed(const char *name, uint64_t *step_p);
bool rp__ckpt_parse_inflight(const char *name, uint64_t *step_p);
bool rp__ckpt_is_deleting(const char *name);

/* Fill @buf with @len bytes from the kernel's random source (getrandom,
 * retried on EINTR). Checkpoint ids and name nonces come from here. */
rp_status_t rp__ckpt_random(void *buf, size_t len);

#endif /* RP_CKPT_LAYOUT_H */
