/*
 * The manifest model's rules, for its encoder and parser (internal to
 * runtime/ckpt/format/manifest*.c): the structure checks every side
 * applies and the planner with an explicit bound (manifest.c).
 *
 *   manifest_grammar.c  the words of the text and the text's exact size
 *   manifest.c          the model: init, plan, queries, and its rules
 *                       (fields, region table, shard layout)
 *   manifest_encode.c   a planned manifest to its canonical text
 *   manifest_parse.c    text (hostile input) to a checked manifest
 */
#ifndef RP_CKPT_MANIFEST_INT_H
#define RP_CKPT_MANIFEST_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/format/manifest.h"

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
/* Plan with an explicit bound on the total chunk count (parse passes one
 * derived from the input size). */
rp_status_t rp__mf_plan(rp__ckpt_manifest_t *m, uint64_t max_chunks,
                        char *err, size_t errlen);

#endif /* RP_CKPT_MANIFEST_INT_H */
