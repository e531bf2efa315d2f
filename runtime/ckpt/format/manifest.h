/*
 * The checkpoint manifest: the one file that says what a checkpoint is.
 * Rank 0 writes it last; a checkpoint without a manifest that parses and
 * verifies does not exist. It is line-oriented text so `cat MANIFEST`
 * answers most questions, with a CRC32C over the whole file on its last
 * line. The grammar (exact key order, canonical numbers, limits) is in
 * doc/checkpoint-format.md; the encoding is canonical, so for any accepted
 * input, encoding the parsed manifest gives back the same bytes.
 *
 * Typical use, writer side:
 *
 *     rp__ckpt_manifest_init(&m, world, nregions);   // zeroed, version set
 *     fill m.step, m.ckpt_id, ..., m.regions[], m.stream_length, ...
 *     rp__ckpt_manifest_plan(&m, err, errlen);        // shard sizes, CRC slots
 *     fill m.shards[r].chunk_crc[0 .. nchunks-1]
 *     rp__ckpt_manifest_encode(&m, &text, &len, err, errlen);
 *     rp__ckpt_manifest_free(&m);
 *
 * Reader side: rp__ckpt_manifest_parse() then rp__ckpt_manifest_free().
 *
 * The model is manifest.c's (this header); the text is manifest_encode.h's
 * and manifest_parse.h's.
 */
#ifndef RP_CKPT_MANIFEST_H
#define RP_CKPT_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/format/shard.h"

#define RP_CKPT_MANIFEST_MAGIC   "ringpoint-manifest"
#define RP_CKPT_MANIFEST_VERSION 1u

/* Limits. Each keeps parse-time allocations proportional to the input and
 * every sum far from overflow. */
#define RP_CKPT_MAX_WORLD        (1u << 20)           /* ranks */
#define RP_CKPT_MAX_REGIONS      65536u
#define RP_CKPT_REGION_NAME_MAX  128u                 /* bytes, no NUL */
#define RP_CKPT_MAX_LENGTH       (1ull << 56)         /* stream / per-rank bytes */
#define RP_CKPT_MIN_CHUNK_SIZE   4096ull
#define RP_CKPT_MAX_CHUNK_SIZE   (1ull << 30)
#define RP_CKPT_DEFAULT_CHUNK_SIZE (4ull << 20)
#define RP_CKPT_MAX_TOTAL_CHUNKS (1u << 26)           /* over all shards */
#define RP_CKPT_MANIFEST_MAX     (512u << 20)         /* bytes of text */
#define RP_CKPT_MANIFEST_LINE_MAX 1024u               /* bytes, newline included */
#define RP_CKPT_CRCS_PER_LINE    8u

typedef enum rp__ckpt_region_kind {
    /* Identical on every rank; stored once, striped across all shards. */
    RP_CKPT_REGION_REPLICATED = 0,
    /* Different on every rank; each shard holds its rank's copy. */
    RP_CKPT_REGION_PER_RANK = 1
} rp__ckpt_region_kind_t;

typedef struct rp__ckpt_region {
    /* 1..RP_CKPT_REGION_NAME_MAX printable ASCII characters, no space;
     * unique within a manifest. */
    char name[RP_CKPT_REGION_NAME_MAX + 1];
    rp__ckpt_region_kind_t kind;
    /* Byte offset inside the replicated stream (REPLICATED) or inside each
     * rank's per-rank section (PER_RANK). Regions of one kind appear in
     * increasing offset order and do not overlap; gaps (padding) are
     * allowed. */
    uint64_t offset;
    uint64_t size;
    uint32_t flags; /* opaque to ringpoint, for the application */
} rp__ckpt_region_t;

typedef struct rp__ckpt_shard_info {
    /* Derived by rp__ckpt_manifest_plan from the layout; recorded in the
     * text for readers and checked on parse. */
    uint64_t stripe_offset;  /* of this rank's stripe in the stream */
    uint64_t stripe_length;
    uint64_t length;         /* payload bytes: stripe + per_rank_length */
    uint32_t nchunks;        /* ceil(length / chunk_size) */
    uint32_t *chunk_crc;     /* nchunks CRC32Cs; points into crc_pool */
} rp__ckpt_shard_info_t;

typedef struct rp__ckpt_manifest {
    uint32_t version;
    uint64_t step;
    uint32_t world_size;
    uint32_t job_id;          /* SLURM_JOB_ID, 0 outside Slurm */
    uint32_t restart_count;   /* SLURM_RESTART_COUNT, 0 if unset */
    uint64_t created_ns;      /* CLOCK_REALTIME, ns since the epoch */
    uint8_t ckpt_id[RP_CKPT_ID_SIZE]; /* random; also in every shard header */
    uint64_t chunk_size;      /* multiple of 4096 in [4 KiB, 1 GiB] */
    uint64_t stripe_unit;     /* RP_CKPT_STRIPE_UNIT in version 1 */
    uint64_t stream_length;   /* L: bytes of the replicated stream */
    uint64_t per_rank_length; /* bytes of per-rank data in each shard */
    uint32_t nregions;
    rp__ckpt_region_t *regions;  /* nregions entries */
    rp__ckpt_shard_info_t *shards; /* world_size entries */
    uint32_t *crc_pool;       /* all chunk CRCs, owned */
    uint64_t total_chunks;
} rp__ckpt_manifest_t;

/*
 * Zero @m and allocate @world_size shard slots and @nregions zeroed
 * regions. Sets version, stripe_unit and chunk_size to their defaults.
 * Returns RP_ERR_INVALID_ARG for sizes over the limits, RP_ERR_NO_MEMORY.
 * On failure @m is left zeroed (safe to free).
 */
rp_status_t rp__ckpt_manifest_init(rp__ckpt_manifest_t *m, uint32_t world_size,
                                   uint32_t nregions);

/*
 * Check the scalar fields and the region table, then compute every shard's
 * stripe, length and chunk count and allocate its (zeroed) CRC slots.
 * Returns RP_ERR_INVALID_ARG (reason in @err) if the manifest breaks a
 * rule, RP_ERR_NO_MEMORY. May be called again after changing the layout.
 */
rp_status_t rp__ckpt_manifest_plan(rp__ckpt_manifest_t *m, char *err,
                                   size_t errlen);

/* Release what @m owns and zero it. NULL and zeroed manifests are fine. */
void rp__ckpt_manifest_free(rp__ckpt_manifest_t *m);

/* Index of the region called @name, or -1. */
long rp__ckpt_manifest_find_region(const rp__ckpt_manifest_t *m,
                                   const char *name);

/* Sum of all shard payload lengths (bytes of data, headers excluded). */
uint64_t rp__ckpt_manifest_payload_bytes(const rp__ckpt_manifest_t *m);

/* The header shard @rank of @m carries: what a writer of @m's shards
 * writes and what the validator expects to find. */
void rp__ckpt_manifest_shard_header(const rp__ckpt_manifest_t *m,
                                    uint32_t rank,
                                    rp__ckpt_shard_header_t *hdr);

/* Format a checkpoint id as 32 lower-case hex digits into @buf (33+ bytes). */
void rp__ckpt_id_format(const uint8_t id[RP_CKPT_ID_SIZE], char *buf,
                        size_t len);

#endif /* RP_CKPT_MANIFEST_H */
