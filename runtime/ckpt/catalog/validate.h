/*
 * The one judgement of a checkpoint. Everything that says whether a
 * checkpoint is usable (ringpoint-ckpt ls, ls --full, verify, show, prune,
 * the catalog scan, retention, and the restore path with its log lines)
 * asks validate.c and prints its verdict with rp__ckpt_verdict_format, so
 * a checkpoint gets the same answer, in the same words, wherever it is
 * looked at. The quick check (manifest, every shard's presence, length
 * and header) and the full one (also every chunk's CRC32C) are the same
 * code; the full one only reads more.
 *
 * A verdict says which checkpoint, which file in it failed first, which
 * part of that file (the shard header, chunk N), where in the file, and
 * what was expected against what was found:
 *
 *   step-000000000244/shard-000001.rp shard header: crc32c 0x5d6c1a2b !=
 *       computed 0x0e4f9c11 (field version, byte 10: 0xff, expected 0x00)
 *   step-000000000244/shard-000001.rp chunk 1: crc32c 0x1234abcd !=
 *       manifest 0x89ab0123 (at file offset 8192)
 *   step-000000000244/shard-000000.rp: truncated: 8000 bytes, expected
 *       16384
 *   step-000000000244/MANIFEST: line 3: ...
 *
 * (one line each). The state name ("corrupt", "incomplete") goes in front
 * where the reader needs it: "step 244: corrupt: step-.../...".
 */
#ifndef RP_CKPT_VALIDATE_H
#define RP_CKPT_VALIDATE_H

#include <stdbool.h>
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

/*
 * Judge the checkpoint named @name in the directory open at @dirfd: its
 * MANIFEST (and that the manifest's step is the name's, for committed and
 * in-flight names), then every shard's presence, length and header, and
 * with @full every chunk's CRC. Stops at the first failure.
 *   @v      the verdict (always filled).
 *   @m_out  if not NULL, receives the parsed manifest whenever the
 *           manifest itself verified (even if a shard did not); else
 *           zeroed. Free with rp__ckpt_manifest_free either way.
 * Returns RP_OK when complete; RP_ERR_CORRUPT when incomplete or corrupt;
 * RP_ERR_NOT_FOUND if @name does not exist (state INCOMPLETE); RP_ERR_IO
 * (state CORRUPT, logged) when something could not be read;
 * RP_ERR_NO_MEMORY.
 */
rp_status_t rp__ckpt_validate_at(int dirfd, const char *name, bool full,
                                 rp__ckpt_verdict_t *v,
                                 rp__ckpt_manifest_t *m_out);

#endif /* RP_CKPT_VALIDATE_H */
