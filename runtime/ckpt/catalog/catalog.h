/*
 * The checkpoint catalog: what is in a checkpoint directory, judged by
 * content alone. Names only say where to look; a checkpoint is complete
 * when its manifest verifies and every shard it lists is present, has the
 * recorded length and a header that matches (checkpoint id, rank, step,
 * world size). A full verification also re-reads every chunk and checks
 * its CRC32C. There is no "latest" pointer to trust or to get wrong.
 *
 * Also here: retention (prune) and removal of leftovers (cleanup), which
 * delete in an order that never makes anything look complete: rename to a
 * ".deleting-" name first, then remove the MANIFEST, then the rest.
 *
 * All file access inside a checkpoint directory is relative to an open
 * descriptor with O_NOFOLLOW, so no symbolic link is ever followed out of
 * it (a symlinked shard or manifest counts as corrupt).
 *
 * Logging: findings about the data (missing shard, bad CRC) are returned
 * as a state and a message and not logged, since whether they matter is
 * the caller's call (a scan meets broken checkpoints routinely); real
 * failures (EIO, EACCES, out of memory) are logged with rp_error where met.
 *
 * The format layer of runtime/ckpt/, file by file (the engine's files are
 * listed in engine.h, the restore reader's in reader.h):
 *   layout.c           stripes of the stream, directory and file names
 *   shard.c            the shard header, encoded and decoded
 *   manifest.c         the manifest as a model, its rules, its plan
 *   manifest_encode.c  ... to its canonical text
 *   manifest_parse.c   ... from text (hostile input)
 *   validate.c         the judgement of one checkpoint (validate.h, and
 *                      this header's rp__ckpt_verify*,
 *                      rp__ckpt_load_manifest_at)
 *   verdict.c          what a judgement found, in its one wording
 *   catalog.c          every checkpoint of a directory and its state
 *   prune.c            retention, cleanup, safe removal
 *   write_local.c      a one-process writer (tests, tools)
 *   crc32c.c, fileio.c checksums; careful read/write/fsync wrappers
 */
#ifndef RP_CKPT_CATALOG_H
#define RP_CKPT_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"
#include "ckpt/catalog/validate.h"

typedef struct rp__ckpt_entry {
    uint64_t step;                /* from the name (checked against manifest) */
    char name[RP_CKPT_NAME_MAX];  /* entry name inside the directory */
    char *path;                   /* directory + "/" + name, owned */
    rp__ckpt_state_t state;
    uint32_t world_size;          /* from the manifest; 0 if unknown */
    /* With a parseable manifest: bytes the checkpoint occupies when
     * complete (shard files + manifest). Otherwise: bytes of the regular
     * files found in the directory. */
    uint64_t total_bytes;
    uint64_t created_ns;          /* manifest's; else directory mtime */
    uint8_t ckpt_id[RP_CKPT_ID_SIZE]; /* zero if unknown */
    rp__ckpt_verdict_t verdict;   /* the judgement (validate.h) */
    char reason[512];             /* the verdict in words; "" when complete */
} rp__ckpt_entry_t;

typedef struct rp__ckpt_catalog {
    size_t count;
    rp__ckpt_entry_t *entries;    /* sorted by step, then name */
} rp__ckpt_catalog_t;

/*
 * List the checkpoints in @dir: committed names are verified (@full:
 * including every chunk CRC), in-flight names are listed as INFLIGHT
 * without looking inside. Other names, ".deleting-" ones included, are
 * ignored. A checkpoint that cannot be read (EACCES, EIO) is listed as
 * CORRUPT with the reason, so one bad entry does not hide the others.
 * Returns RP_ERR_NOT_FOUND if @dir does not exist (not logged: normal on a
 * first run), RP_ERR_IO, RP_ERR_NO_MEMORY. Free with rp__ckpt_catalog_free.
 */
rp_status_t rp__ckpt_catalog_scan(const char *dir, bool full,
                                  rp__ckpt_catalog_t *cat);

/*
 * rp__ckpt_catalog_scan that judges only each MANIFEST and opens no shard:
 * COMPLETE here means "its manifest verifies". For the restore path
 * (reader.c), where every rank then checks its share of the candidate's
 * shards (reader_plan.c) and the ranks agree on the verdict, so that no
 * rank does n opens and header reads (doc/scale.md, part (f)).
 */
rp_status_t rp__ckpt_catalog_scan_manifests(const char *dir,
                                            rp__ckpt_catalog_t *cat);

/* Release what @cat owns and zero it. */
void rp__ckpt_catalog_free(rp__ckpt_catalog_t *cat);

/* Newest COMPLETE entry of @cat, or NULL. */
const rp__ckpt_entry_t *
rp__ckpt_catalog_newest_complete(const rp__ckpt_catalog_t *cat);

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
 * Check rank @rank's shard in the checkpoint directory open at @ckptfd
 * against the verified manifest @m: present, exact length, header
 * matching; with @full, every chunk's CRC. @label prefixes the message
 * (the checkpoint's name; may be NULL). Same returns as rp__ckpt_verify.
 * This is what a restarting rank runs on its own shard.
 */
rp_status_t rp__ckpt_verify_shard(int ckptfd, const char *label,
                                  const rp__ckpt_manifest_t *m, uint32_t rank,
                                  bool full, rp__ckpt_state_t *state_p,
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

/*
 * Newest complete checkpoint in @dir. With @full, candidates are fully
 * verified newest first and the first that passes is returned (a corrupt
 * newest one is logged with rp_warn and skipped). *@path_p (if not NULL)
 * is malloc'd. Returns RP_ERR_NOT_FOUND if there is none.
 */
rp_status_t rp__ckpt_newest_complete(const char *dir, bool full,
                                     uint64_t *step_p, char **path_p);

/*
 * Apply retention to @dir: keep the newest @keep complete checkpoints (at
 * least one, whatever @keep says); delete older complete ones, and
 * incomplete, corrupt and in-flight ones whose step is below the newest
 * complete one. Anything at or above it is left alone, since an in-flight
 * directory there may belong to a live writer. Nothing is deleted when
 * there is no complete checkpoint. Leftover ".deleting-" directories are
 * finished off. *@removed_p (may be NULL) counts checkpoints deleted.
 * Keeps going past a failed deletion and returns the first error.
 * Must not run concurrently with a writer of an older step in @dir.
 * With @full, "complete" means every chunk verified: use it whenever the
 * newest checkpoint was not just written and checked by the caller (a
 * quick scan cannot see a flipped payload byte, and pruning on its word
 * could delete the last good checkpoint while keeping a bad one).
 */
rp_status_t rp__ckpt_prune(const char *dir, unsigned keep, bool full,
                           unsigned *removed_p);

/* What retention did with one checkpoint (rp__ckpt_prune_report). */
typedef enum rp__ckpt_prune_action {
    RP_CKPT_KEPT = 0,          /* complete, among the newest @keep */
    RP_CKPT_KEPT_NEWER = 1,    /* not complete, at or above the newest
                                  complete step (maybe a live writer's) */
    RP_CKPT_KEPT_NO_COMPLETE = 2, /* kept: no complete checkpoint at all */
    RP_CKPT_REMOVED = 3,
    RP_CKPT_REMOVE_FAILED = 4  /* logged */
} rp__ckpt_prune_action_t;

typedef void (*rp__ckpt_prune_fn_t)(const rp__ckpt_entry_t *e,
                                    rp__ckpt_prune_action_t act, void *arg);

/* rp__ckpt_prune that tells @report (may be NULL) what it did with every
 * checkpoint it judged, newest first, with the entry's verdict. */
rp_status_t rp__ckpt_prune_report(const char *dir, unsigned keep, bool full,
                                  unsigned *removed_p,
                                  rp__ckpt_prune_fn_t report, void *arg);

/*
 * Remove every in-flight directory in @dir whatever its step, and leftover
 * ".deleting-" ones. Only for a clean start (job start, before any writer
 * of this job runs): an in-flight directory then can only be debris.
 */
rp_status_t rp__ckpt_cleanup_inflight(const char *dir, unsigned *removed_p);

/*
 * Delete entry @name of the directory open at @dirfd safely: rename it to
 * a ".deleting-" name, fsync @dirfd, then remove its MANIFEST, the rest of
 * its files and the directory. A crash at any point leaves either the
 * original or something no scan takes for a checkpoint. Symbolic links
 * are removed, never followed. Returns RP_ERR_NOT_FOUND if @name is gone
 * (someone else deleted it; not logged), RP_ERR_IO.
 */
rp_status_t rp__ckpt_remove_at(int dirfd, const char *name);

#endif /* RP_CKPT_CATALOG_H */
