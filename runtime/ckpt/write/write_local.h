/*
 * Write a whole checkpoint from one process, from buffers in memory. Tests
 * use it to build fixtures and tools to write small checkpoints; above
 * all it is the executable statement of the commit protocol that the
 * parallel writer follows with many ranks:
 *
 *   1. mkdir  <dir>/.inflight-step-<step>-<nonce>      (never mistaken for
 *                                                       a committed name)
 *   2. every rank: shard-<rank>.rp = header + payload, fsync, close
 *      (parallel writer: then a barrier, and rank 0 gathers chunk CRCs)
 *   3. rank 0: .MANIFEST.tmp, fsync, close, rename to MANIFEST
 *   4. fsync the in-flight directory (makes the names durable)
 *   5. rename the in-flight directory to step-<step>
 *   6. fsync <dir> (makes the commit durable)
 *
 * A crash before step 5 leaves only an in-flight directory; after step 5
 * the checkpoint is complete. Nothing is ever modified in place.
 */
#ifndef RP_CKPT_WRITE_LOCAL_H
#define RP_CKPT_WRITE_LOCAL_H

#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/format/manifest.h"

typedef struct rp__ckpt_write_opts {
    uint64_t chunk_size;      /* 0: RP_CKPT_DEFAULT_CHUNK_SIZE */
    uint32_t job_id;          /* recorded as slurm_job_id */
    uint32_t restart_count;   /* recorded as slurm_restart_count */
} rp__ckpt_write_opts_t;

/*
 * Write checkpoint @step of a @world_size-rank job into directory @dir
 * (which must exist).
 *   @regions/@nregions  region table as the manifest will record it;
 *                       checked against the two lengths (may be empty).
 *   @stream             the replicated stream, @stream_length bytes
 *                       (NULL if 0); striped across the shards.
 *   @per_rank           @world_size pointers to each rank's
 *                       @per_rank_length bytes (NULL if that is 0).
 *   @opts               may be NULL for defaults.
 *   @ckpt_id_out        if not NULL, receives the new checkpoint id.
 * Returns RP_OK once step-<step> is committed and durable;
 * RP_ERR_STATE if step-<step> already exists; RP_ERR_INVALID_ARG if the
 * layout breaks a format rule; RP_ERR_IO; RP_ERR_NO_MEMORY. On failure the
 * in-flight directory is removed (best effort) and nothing is committed.
 */
rp_status_t rp__ckpt_write_local(const char *dir, uint64_t step,
                                 uint32_t world_size,
                                 const rp__ckpt_region_t *regions,
                                 uint32_t nregions,
                                 const void *stream, uint64_t stream_length,
                                 const void *const *per_rank,
                                 uint64_t per_rank_length,
                                 const rp__ckpt_write_opts_t *opts,
                                 uint8_t ckpt_id_out[RP_CKPT_ID_SIZE]);

#endif /* RP_CKPT_WRITE_LOCAL_H */
