/*
 * Single-process checkpoint writer; see write_local.h for the protocol.
 * Each step checks its result, and any failure before the commit rename
 * removes the in-flight directory so a failed write leaves no debris.
 */
#include "ckpt/write/write_local.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog/prune.h"
#include "ckpt/format/cursor.h"
#include "ckpt/format/fileio.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/shard.h"
#include "ckpt/format/shardio.h"
#include "util/log.h"

#define RP_WL_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* Rank @rank's payload as segments: its stripe, then its own bytes. */
static void rp_wl_segs(const rp__ckpt_manifest_t *m, uint32_t rank,
                       const void *stream, const void *const *per_rank,
                       rp__ckpt_seg_t segs[2])
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];

    /* No arithmetic on a NULL stream (L = 0): that is undefined. */
    segs[0].base = stream != NULL
                       ? (const unsigned char *)stream + sh->stripe_offset
                       : NULL;
    segs[0].len = sh->stripe_length;
    segs[1].base = m->per_rank_length > 0 ? per_rank[rank] : NULL;
    segs[1].len = m->per_rank_length;
}

/* Step 2 for rank @rank: the chunk CRCs are computed from the bytes as
 * they are copied out to the file, straight into the manifest. */
static rp_status_t rp_wl_write_shard(int cfd, const char *label,
                                     rp__ckpt_manifest_t *m, uint32_t rank,
                                     const void *stream,
                                     const void *const *per_rank)
{
    rp__ckpt_shard_header_t hdr;
    rp__ckpt_cursor_t cur;
    rp__ckpt_seg_t segs[2];

    rp_wl_segs(m, rank, stream, per_rank, segs);
    rp__ckpt_cursor_init(&cur, segs, 2, m->chunk_size,
                         m->shards[rank].chunk_crc);
    rp__ckpt_manifest_shard_header(m, rank, &hdr);
    return rp__ckpt_shard_write(cfd, label, &hdr, &cur, NULL,
                                RP_CKPT_FAULT_NONE, NULL);
}

/* Fill and plan the manifest (the CRCs come with the writes). */
static rp_status_t rp_wl_build_manifest(rp__ckpt_manifest_t *m, uint64_t step,
                                        uint32_t world_size,
                                        const rp__ckpt_region_t *regions,
                                        uint32_t nregions,
                                        uint64_t stream_length,
                                        uint64_t per_rank_length,
                                        const rp__ckpt_write_opts_t *opts)
{
    char err[256];
    struct timespec now;
    rp_status_t rc;

    rc = rp__ckpt_manifest_init(m, world_size, nregions);
    if (rc != RP_OK) {
        rp_error("checkpoint step %llu: cannot set up a manifest for %u "
                 "ranks and %u regions", (unsigned long long)step,
                 world_size, nregions);
        return rc;
    }
    if (nregions > 0) {
        memcpy(m->regions, regions, nregions * sizeof(*regions));
    }
    m->step = step;
    m->job_id = opts != NULL ? opts->job_id : 0;
    m->restart_count = opts != NULL ? opts->restart_count : 0;
    if (opts != NULL && opts->chunk_size != 0) {
        m->chunk_size = opts->chunk_size;
    }
    m->stream_length = stream_length;
    m->per_rank_length = per_rank_length;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) {
        rp_error("clock_gettime: %s", strerror(errno));
        return RP_ERR_IO;
    }
    m->created_ns = (uint64_t)now.tv_sec * 1000000000ull +
                    (uint64_t)now.tv_nsec;
    rc = rp__ckpt_random(m->ckpt_id, sizeof(m->ckpt_id));
    if (rc != RP_OK) {
        return rc;
    }
    rc = rp__ckpt_manifest_plan(m, err, sizeof(err));
    if (rc != RP_OK) {
        rp_error("checkpoint step %llu: %s", (unsigned long long)step, err);
        return rc;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_write_local(const char *dir, uint64_t step,
                                 uint32_t world_size,
                                 const rp__ckpt_region_t *regions,
                                 uint32_t nregions,
                                 const void *stream, uint64_t stream_length,
                                 const void *const *per_rank,
                                 uint64_t per_rank_length,
                                 const rp__ckpt_write_opts_t *opts,
                                 uint8_t ckpt_id_out[RP_CKPT_ID_SIZE])
{
    char inflight[RP_CKPT_NAME_MAX], committed[RP_CKPT_NAME_MAX];
    char label[PATH_MAX];
    rp__ckpt_manifest_t m;
    struct stat st;
    uint64_t nonce;
    uint32_t r;
    int dfd = -1, cfd = -1;
    bool renamed = false;
    rp_status_t rc;

    memset(&m, 0, sizeof(m));
    if (dir == NULL || world_size == 0 ||
        (nregions > 0 && regions == NULL) ||
        (stream_length > 0 && stream == NULL) ||
        (per_rank_length > 0 && per_rank == NULL) ||
        stream_length > SIZE_MAX || per_rank_length > SIZE_MAX) {
        rp_error("checkpoint write: invalid arguments");
        return RP_ERR_INVALID_ARG;
    }
    for (r = 0; per_rank_length > 0 && r < world_size; r++) {
        if (per_rank[r] == NULL) {
            rp_error("checkpoint write: no per-rank data for rank %u", r);
            return RP_ERR_INVALID_ARG;
        }
    }
    rc = rp_wl_build_manifest(&m, step, world_size, regions, nregions,
                              stream_length, per_rank_length, opts);
    if (rc != RP_OK) {
        goto err_manifest;
    }

    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        rp_error("open checkpoint directory %s: %s", dir, strerror(errno));
        rc = RP_ERR_IO;
        goto err_manifest;
    }
    rp__ckpt_name_committed(step, committed, sizeof(committed));
    if (fstatat(dfd, committed, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        rp_error("%s/%s already exists", dir, committed);
        rc = RP_ERR_STATE;
        goto err_dfd;
    }
    if (errno != ENOENT) {
        rp_error("%s/%s: fstatat: %s", dir, committed, strerror(errno));
        rc = RP_ERR_IO;
        goto err_dfd;
    }

    /* 1. in-flight directory */
    rc = rp__ckpt_random(&nonce, sizeof(nonce));
    if (rc != RP_OK) {
        goto err_dfd;
    }
    rp__ckpt_name_inflight(step, nonce, inflight, sizeof(inflight));
    snprintf(label, sizeof(label), "%s/%s", dir, inflight);
    if (mkdirat(dfd, inflight, 0777) != 0) {
        rp_error("mkdir %s: %s", label, strerror(errno));
        rc = RP_ERR_IO;
        goto err_dfd;
    }
    cfd = openat(dfd, inflight, RP_WL_DIR_FLAGS);
    if (cfd < 0) {
        rp_error("open %s: %s", label, strerror(errno));
        rc = RP_ERR_IO;
        goto err_inflight;
    }

    /* 2. shards, each durable before the manifest names it */
    for (r = 0; r < world_size; r++) {
        rc = rp_wl_write_shard(cfd, label, &m, r, stream, per_rank);
        if (rc != RP_OK) {
            goto err_cfd;
        }
    }

    /* 3. manifest; 4.-6. directory fsync, commit rename, root fsync */
    rc = rp__ckpt_manifest_write_at(cfd, label, &m);
    if (rc != RP_OK) {
        goto err_cfd;
    }
    rc = rp__ckpt_commit_at(dfd, dir, &cfd, inflight, committed, &renamed);
    if (rc != RP_OK) {
        if (renamed) {
            /* Committed but maybe not durable: report it, remove nothing. */
            goto err_dfd;
        }
        goto err_inflight;
    }
    if (ckpt_id_out != NULL) {
        memcpy(ckpt_id_out, m.ckpt_id, RP_CKPT_ID_SIZE);
    }
    rp_info("checkpoint %s/%s committed: %u shards, %llu bytes", dir,
            committed, world_size,
            (unsigned long long)rp__ckpt_manifest_payload_bytes(&m));
    (void)rp__ckpt_close(&dfd, dir);
    rp__ckpt_manifest_free(&m);
    return RP_OK;

err_cfd:
    (void)rp__ckpt_close(&cfd, label);
err_inflight:
    /* Best effort; a leftover is cleaned by rp__ckpt_cleanup_inflight. */
    (void)rp__ckpt_remove_at(dfd, inflight);
err_dfd:
    (void)rp__ckpt_close(&dfd, dir);
err_manifest:
    rp__ckpt_manifest_free(&m);
    return rc;
}
