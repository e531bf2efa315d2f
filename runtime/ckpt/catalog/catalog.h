/*
 * The checkpoint catalog (catalog.c): what is in a checkpoint directory,
 * judged by
 * content alone (validate.h). Names only say where to look; a checkpoint is complete
 * when its manifest verifies and every shard it lists is present, has the
 * recorded length and a header that matches (checkpoint id, rank, step,
 * world size). A full verification also re-reads every chunk and checks
 * its CRC32C. There is no "latest" pointer to trust or to get wrong.
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
 * runtime/ckpt/catalog/, file by file (the format it judges is in
 * runtime/ckpt/format/):
 *   verdict.c          what a judgement found, in its one wording
 *   checkfile.c        a checkpoint's file opened for judgement
 *   validate_shard.c   the judgement of one shard
 *   validate.c         the judgement of one checkpoint
 *   catalog.c          every checkpoint of a directory and its state
 *   prune.c            retention, cleanup, safe removal (prune.h)
 */
#ifndef RP_CKPT_CATALOG_H
#define RP_CKPT_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"
#include "ckpt/catalog/verdict.h"

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
 * Newest complete checkpoint in @dir. With @full, candidates are fully
 * verified newest first and the first that passes is returned (a corrupt
 * newest one is logged with rp_warn and skipped). *@path_p (if not NULL)
 * is malloc'd. Returns RP_ERR_NOT_FOUND if there is none.
 */
rp_status_t rp__ckpt_newest_complete(const char *dir, bool full,
                                     uint64_t *step_p, char **path_p);

#endif /* RP_CKPT_CATALOG_H */
