/*
 * What one judgement of a checkpoint found, and its one wording
 * (verdict.c): the judgement itself is validate.h's.
 */
#ifndef RP_CKPT_VERDICT_H
#define RP_CKPT_VERDICT_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"

typedef enum rp__ckpt_state {
    RP_CKPT_COMPLETE = 0,   /* verifies */
    RP_CKPT_INCOMPLETE = 1, /* something is missing: no MANIFEST, a shard */
    RP_CKPT_CORRUPT = 2,    /* something present is wrong (CRC, length, ...) */
    RP_CKPT_INFLIGHT = 3    /* in-flight name: being written, or abandoned */
} rp__ckpt_state_t;

/* "complete", "incomplete", "corrupt", "in-flight". */
const char *rp__ckpt_state_name(rp__ckpt_state_t state);

/* No byte offset applies (a missing file, the manifest's text). */
#define RP_CKPT_NO_OFFSET UINT64_MAX

/* What one judgement found. All strings are NUL-terminated, "" when they
 * do not apply; a COMPLETE verdict has nothing but its checkpoint. */
typedef struct rp__ckpt_verdict {
    rp__ckpt_state_t state;
    char ckpt[RP_CKPT_NAME_MAX];  /* the checkpoint's name in its directory */
    char file[RP_CKPT_NAME_MAX];  /* first failing file in it; "" when the
                                     checkpoint directory itself failed
                                     (then @ckpt is in @file's place) */
    char part[32];                /* "shard header", "chunk 17", "" */
    uint64_t offset;              /* in @file where @part starts, or
                                     RP_CKPT_NO_OFFSET */
    char expected[48];            /* e.g. "crc32c 0x89ab0123", "16384 bytes" */
    char found[48];
    char detail[256];             /* the finding, expected and found in words */
} rp__ckpt_verdict_t;

/* A COMPLETE verdict about checkpoint @ckpt (may be NULL: unnamed). */
void rp__ckpt_verdict_init(rp__ckpt_verdict_t *v, const char *ckpt);

/*
 * Record a finding: @state, the failing @file (NULL: the directory), @part
 * (may be NULL) starting at @offset, @expected / @found (may be NULL) and
 * the detail. Returns RP_ERR_CORRUPT, what a finding makes of a call.
 */
rp_status_t rp__ckpt_verdict_set(rp__ckpt_verdict_t *v, rp__ckpt_state_t state,
                                 const char *file, const char *part,
                                 uint64_t offset, const char *expected,
                                 const char *found, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));

/*
 * The verdict as one line, "ckpt/file[ part]: detail", into @buf; "" for a
 * COMPLETE verdict. This is the wording of every message about a bad
 * checkpoint. Returns @buf.
 */
const char *rp__ckpt_verdict_format(const rp__ckpt_verdict_t *v, char *buf,
                                    size_t len);

/*
 * The judgement of one chunk: @crc, computed over chunk @chunk of rank
 * @rank's shard of the checkpoint @v->ckpt described by @m, against the
 * manifest. RP_OK, or RP_ERR_CORRUPT with the verdict naming the shard,
 * the chunk, its file offset and both CRCs. Used by the full check and
 * by the restore reader, which computes the CRC behind its own reads.
 */
rp_status_t rp__ckpt_judge_chunk(rp__ckpt_verdict_t *v,
                                 const rp__ckpt_manifest_t *m, uint32_t rank,
                                 uint32_t chunk, uint32_t crc);

/* The verdict as the older interface gives it: its state into *@state_p
 * and its wording into @msg (each may be NULL). */
void rp__ckpt_verdict_report(const rp__ckpt_verdict_t *v,
                             rp__ckpt_state_t *state_p, char *msg,
                             size_t msglen);

#endif /* RP_CKPT_VERDICT_H */
