/*
 * The manifest's words and the length of its text (manifest_grammar.c),
 * internal to runtime/ckpt/format/manifest*.c: the grammar's constants,
 * the header keys in their one order, the region kinds' names.
 */
#ifndef RP_CKPT_MANIFEST_GRAMMAR_H
#define RP_CKPT_MANIFEST_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/format/manifest.h"

/* "crc32c " + 8 hex digits + "\n" */
#define RP_MF_TRAILER_LEN 16u
/* Shortest possible lines, for bounding counts by the input left. */
#define RP_MF_MIN_REGION_LINE 33u /* "region a replicated 0 0 00000000\n" */
#define RP_MF_MIN_SHARD_LINE  16u /* "shard 0 0 0 0 0\n" */
#define RP_MF_MIN_CRC_BYTES    9u /* " 00000000" */
#define RP_MF_MAX_TOKENS (3u + RP_CKPT_CRCS_PER_LINE)

/* Header keys, in the only order they may appear. */
enum {
    RP_MF_STEP, RP_MF_WORLD, RP_MF_JOB, RP_MF_RESTART, RP_MF_CREATED,
    RP_MF_ID, RP_MF_CHUNK, RP_MF_UNIT, RP_MF_STREAM, RP_MF_PERRANK,
    RP_MF_REGIONS, RP_MF_NKEYS
};

extern const char *const rp__mf_keys[RP_MF_NKEYS];
extern const char *const rp__mf_kind_names[2];

/* The exact length of @m's canonical text (shards planned): the one
 * computation that the planner's verdict and the encoder's buffer share. */
uint64_t rp__mf_encoded_size(const rp__ckpt_manifest_t *m);
/* That length within RP_CKPT_MANIFEST_MAX? Stored in *@size_p (may be
 * NULL); RP_ERR_INVALID_ARG + @err if not. */
rp_status_t rp__mf_check_size(const rp__ckpt_manifest_t *m, uint64_t *size_p,
                              char *err, size_t errlen);

#endif /* RP_CKPT_MANIFEST_GRAMMAR_H */
