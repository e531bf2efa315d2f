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
#include "ckpt/format/manifest.h"
#include "ckpt/catalog/verdict.h"

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

/* How far one judgement looks: the MANIFEST alone (the restore path,
 * whose ranks then check the shards among themselves, reader_plan.c, so
 * that no rank opens all n of them); also every shard's presence, length
 * and header (quick); also every chunk's CRC (full). */
typedef enum rp__cat_depth {
    RP_CAT_MANIFEST,
    RP_CAT_QUICK,
    RP_CAT_FULL
} rp__cat_depth_t;

static inline rp__cat_depth_t rp__cat_depth(bool full)
{
    return full ? RP_CAT_FULL : RP_CAT_QUICK;
}

/*
 * Verify the checkpoint directory @path. If its name is a committed or
 * in-flight name, the manifest's step must match it.
 *   *@state_p   COMPLETE, INCOMPLETE or CORRUPT.
 *   @m_out      if not NULL, receives the parsed manifest whenever the
 *               manifest itself verified (even if a shard did not); else
 *               zeroed. Free with rp__ckpt_manifest_free either way.
 *   @msg        if not NULL, the verdict in words when not complete
 *               (rp__ckpt_verdict_format), naming the file and the part,
 *               e.g. "step-000000000100/shard-000003.rp chunk 17: crc32c
 *               0x1234abcd != manifest 0x89ab0123 (at file offset
 *               73728)"; rp__ckpt_validate_at gives the verdict itself.
 * Returns RP_OK when complete; RP_ERR_CORRUPT when incomplete or corrupt;
 * RP_ERR_NOT_FOUND if @path does not exist; RP_ERR_IO (state CORRUPT) when
 * something could not be read; RP_ERR_NO_MEMORY.
 */
rp_status_t rp__ckpt_verify(const char *path, bool full,
                            rp__ckpt_state_t *state_p,
                            rp__ckpt_manifest_t *m_out,
                            char *msg, size_t msglen);

/* rp__ckpt_verify for entry @name of the directory open at @dirfd. */
rp_status_t rp__ckpt_verify_at(int dirfd, const char *name, bool full,
                               rp__ckpt_state_t *state_p,
                               rp__ckpt_manifest_t *m_out,
                               char *msg, size_t msglen);

/*
 * Read and parse only the MANIFEST of the checkpoint open at @ckptfd
 * (shards untouched): what a restoring rank needs once rank 0 has chosen
 * the checkpoint. @label prefixes the message. Same returns as
 * rp__ckpt_verify; @m is zeroed on failure.
 */
rp_status_t rp__ckpt_load_manifest_at(int ckptfd, const char *label,
                                      rp__ckpt_manifest_t *m,
                                      rp__ckpt_state_t *state_p,
                                      char *msg, size_t msglen);

/* rp__ckpt_validate_at on the checkpoint open at @cfd (named @name in
 * its directory) to @depth; also the MANIFEST's size. */
rp_status_t rp__cat_validate_dirfd(int cfd, const char *name,
                                   rp__cat_depth_t depth,
                                   rp__ckpt_verdict_t *v,
                                   rp__ckpt_manifest_t *m_out,
                                   uint64_t *manifest_size_p);

#endif /* RP_CKPT_VALIDATE_H */
