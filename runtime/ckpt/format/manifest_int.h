/*
 * What the manifest's files share (internal to runtime/ckpt/manifest*.c):
 * the grammar's constants and the structure checks every side applies.
 *
 *   manifest.c         the model: init, plan, queries, and its rules
 *                      (fields, region table, shard layout)
 *   manifest_encode.c  a planned manifest to its canonical text, and
 *                      that text's exact size
 *   manifest_parse.c   text (hostile input) to a checked manifest
 */
#ifndef RP_CKPT_MANIFEST_INT_H
#define RP_CKPT_MANIFEST_INT_H

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

/* The scalar fields within their limits. RP_ERR_INVALID_ARG + @err. */
rp_status_t rp__mf_check_fields(const rp__ckpt_manifest_t *m, char *err,
                                size_t errlen);
/* The region table: names, order, no overlap, within the lengths. */
rp_status_t rp__mf_check_regions(const rp__ckpt_manifest_t *m, char *err,
                                 size_t errlen);
/* Every shard's recorded geometry is the layout's. */
rp_status_t rp__mf_check_shards(const rp__ckpt_manifest_t *m, char *err,
                                size_t errlen);
/* Stripe, length and chunk count of @rank under @m's layout. */
void rp__mf_shard_geometry(const rp__ckpt_manifest_t *m, uint32_t rank,
                           rp__ckpt_shard_info_t *out);
uint64_t rp__mf_nchunks(uint64_t length, uint64_t chunk_size);
/* The exact length of @m's canonical text (shards planned): the one
 * computation that the planner's verdict and the encoder's buffer share. */
uint64_t rp__mf_encoded_size(const rp__ckpt_manifest_t *m);
/* That length within RP_CKPT_MANIFEST_MAX? Stored in *@size_p (may be
 * NULL); RP_ERR_INVALID_ARG + @err if not. */
rp_status_t rp__mf_check_size(const rp__ckpt_manifest_t *m, uint64_t *size_p,
                              char *err, size_t errlen);
/* Plan with an explicit bound on the total chunk count (parse passes one
 * derived from the input size). */
rp_status_t rp__mf_plan(rp__ckpt_manifest_t *m, uint64_t max_chunks,
                        char *err, size_t errlen);

#endif /* RP_CKPT_MANIFEST_INT_H */
