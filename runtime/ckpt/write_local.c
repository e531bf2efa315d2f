/*
 * Single-process checkpoint writer; see write_local.h for the protocol.
 * Each step checks its result, and any failure before the commit rename
 * removes the in-flight directory so a failed write leaves no debris.
 */
#include "ckpt/write_local.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog.h"
#include "ckpt/crc32c.h"
#include "ckpt/fileio.h"
#include "ckpt/layout.h"
#include "ckpt/shard.h"
#include "util/log.h"

#define RP_WL_FILE_FLAGS (O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC)
#define RP_WL_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* One rank's payload: its stripe of the stream, then its own bytes. */
typedef struct rp_wl_payload {
    const unsigned char *stripe;
    uint64_t stripe_len;
    const unsigned char *mine;
    uint64_t mine_len;
} rp_wl_payload_t;

/* CRC of payload bytes [start, end), which may straddle the two parts. */
static uint32_t rp_wl_crc_range(const rp_wl_payload_t *p, uint64_t start,
                                uint64_t end)
{
    uint32_t crc = 0;

    if (start < p->stripe_len) {
        uint64_t e = end < p->stripe_len ? end : p->stripe_len;
        crc = rp__crc32c(crc, p->stripe + start, (size_t)(e - start));
    }
    if (end > p->stripe_len) {
        uint64_t s = start > p->stripe_len ? start - p->stripe_len : 0;
        crc = rp__crc32c(crc, p->mine + s, (size_t)(end - p->stripe_len - s));
    }
    return crc;
}

static void rp_wl_payload(const rp__ckpt_manifest_t *m, uint32_t rank,
                          const void *stream, const void *const *per_rank,
                          rp_wl_payload_t *p)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];

    /* No arithmetic on a NULL stream (L = 0): that is undefined. */
    p->stripe = stream != NULL
                    ? (const unsigned char *)stream + sh->stripe_offset
                    : NULL;
    p->stripe_len = sh->stripe_length;
    p->mine = m->per_rank_length > 0 ? per_rank[rank] : NULL;
    p->mine_len = m->per_rank_length;
}

static rp_status_t rp_wl_write_shard(int cfd, const char *label,
                                     const rp__ckpt_manifest_t *m,
                                     uint32_t rank, const rp_wl_payload_t *p)
{
    char name[RP_CKPT_NAME_MAX], what[PATH_MAX + RP_CKPT_NAME_MAX + 2];
    rp__ckpt_shard_header_t hdr;
    uint8_t *hbuf;
    int fd;
    rp_status_t rc;

    rp__ckpt_name_shard(rank, name, sizeof(name));
    snprintf(what, sizeof(what), "%s/%s", label, name);
    hbuf = malloc(RP_CKPT_SHARD_HEADER_SIZE);
    if (hbuf == NULL) {
        rp_error("%s: out of memory", what);
        return RP_ERR_NO_MEMORY;
    }
    memset(&hdr, 0, sizeof(hdr));
    memcpy(hdr.ckpt_id, m->ckpt_id, RP_CKPT_ID_SIZE);
    hdr.step = m->step;
    hdr.rank = rank;
    hdr.world_size = m->world_size;
    hdr.payload_length = m->shards[rank].length;
    rp__ckpt_shard_header_encode(&hdr, hbuf);

    fd = openat(cfd, name, RP_WL_FILE_FLAGS, 0666);
    if (fd < 0) {
        rp_error("create %s: %s", what, strerror(errno));
        rc = RP_ERR_IO;
        goto err_hbuf;
    }
    rc = rp__ckpt_write_full(fd, hbuf, RP_CKPT_SHARD_HEADER_SIZE, what);
    if (rc == RP_OK && p->stripe_len > 0) {
        rc = rp__ckpt_write_full(fd, p->stripe, (size_t)p->stripe_len, what);
    }
    if (rc == RP_OK && p->mine_len > 0) {
        rc = rp__ckpt_write_full(fd, p->mine, (size_t)p->mine_len, what);
    }
    if (rc == RP_OK) {
        rc = rp__ckpt_fsync(fd, what);
    }
    if (rc != RP_OK) {
        goto err_fd;
    }
    rc = rp__ckpt_close(&fd, what);
    free(hbuf);
    return rc;

err_fd:
    (void)rp__ckpt_close(&fd, what);
err_hbuf:
    free(hbuf);
    return rc;
}

/* Steps 3: write .MANIFEST.tmp, make it durable, rename it to MANIFEST. */
static rp_status_t rp_wl_write_manifest(int cfd, const char *label,
                                        const rp__ckpt_manifest_t *m)
{
    char what[PATH_MAX + RP_CKPT_NAME_MAX + 2], err[256];
    char *text;
    size_t len;
    int fd;
    rp_status_t rc;

    snprintf(what, sizeof(what), "%s/%s", label, RP_CKPT_MANIFEST_TMP_NAME);
    rc = rp__ckpt_manifest_encode(m, &text, &len, err, sizeof(err));
    if (rc != RP_OK) {
        rp_error("%s: cannot encode manifest: %s", label, err);
        return rc;
    }
    fd = openat(cfd, RP_CKPT_MANIFEST_TMP_NAME, RP_WL_FILE_FLAGS, 0666);
    if (fd < 0) {
        rp_error("create %s: %s", what, strerror(errno));
        rc = RP_ERR_IO;
        goto err_text;
    }
    rc = rp__ckpt_write_full(fd, text, len, what);
    if (rc == RP_OK) {
        rc = rp__ckpt_fsync(fd, what);
    }
    if (rc != RP_OK) {
        (void)rp__ckpt_close(&fd, what);
        goto err_text;
    }
    rc = rp__ckpt_close(&fd, what);
    if (rc != RP_OK) {
        goto err_text;
    }
    if (renameat(cfd, RP_CKPT_MANIFEST_TMP_NAME, cfd,
                 RP_CKPT_MANIFEST_NAME) != 0) {
        rp_error("rename %s to %s: %s", what, RP_CKPT_MANIFEST_NAME,
                 strerror(errno));
        rc = RP_ERR_IO;
        goto err_text;
    }
    free(text);
    return RP_OK;

err_text:
    free(text);
    return rc;
}

/* Fill and plan the manifest, and compute every chunk CRC. */
static rp_status_t rp_wl_build_manifest(rp__ckpt_manifest_t *m, uint64_t step,
                                        uint32_t world_size,
                                        const rp__ckpt_region_t *regions,
                                        uint32_t nregions, const void *stream,
                                        uint64_t stream_length,
                                        const void *const *per_rank,
                                        uint64_t per_rank_length,
                                        const rp__ckpt_write_opts_t *opts)
{
    char err[256];
    struct timespec now;
    uint32_t r, c;
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
    for (r = 0; r < world_size; r++) {
        const rp__ckpt_shard_info_t *sh = &m->shards[r];
        rp_wl_payload_t p;

        rp_wl_payload(m, r, stream, per_rank, &p);
        for (c = 0; c < sh->nchunks; c++) {
            uint64_t start = (uint64_t)c * m->chunk_size;
            uint64_t end = sh->length - start < m->chunk_size
                               ? sh->length
                               : start + m->chunk_size;
            sh->chunk_crc[c] = rp_wl_crc_range(&p, start, end);
        }
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
    rc = rp_wl_build_manifest(&m, step, world_size, regions, nregions, stream,
                              stream_length, per_rank, per_rank_length, opts);
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
        rp_wl_payload_t p;

        rp_wl_payload(&m, r, stream, per_rank, &p);
        rc = rp_wl_write_shard(cfd, label, &m, r, &p);
        if (rc != RP_OK) {
            goto err_cfd;
        }
    }

    /* 3. manifest, 4. its directory entry */
    rc = rp_wl_write_manifest(cfd, label, &m);
    if (rc == RP_OK) {
        rc = rp__ckpt_fsync(cfd, label);
    }
    if (rc != RP_OK) {
        goto err_cfd;
    }
    rc = rp__ckpt_close(&cfd, label);
    if (rc != RP_OK) {
        goto err_inflight;
    }

    /* 5. commit, 6. make the commit durable */
    if (renameat(dfd, inflight, dfd, committed) != 0) {
        int e = errno;
        rp_error("rename %s to %s: %s", label, committed, strerror(e));
        rc = (e == EEXIST || e == ENOTEMPTY) ? RP_ERR_STATE : RP_ERR_IO;
        goto err_inflight;
    }
    rc = rp__ckpt_fsync(dfd, dir);
    if (rc != RP_OK) {
        /* Committed but maybe not durable: report it, remove nothing. */
        goto err_dfd;
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
