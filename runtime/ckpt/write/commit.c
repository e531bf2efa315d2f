/*
 * The coordinated two-phase commit of one checkpoint, over the
 * collectives (doc/checkpoint-format.md, section 5):
 *
 *   begin   rank 0 removes leftovers (first time only), makes
 *           .inflight-step-S-<nonce> and draws the checkpoint id; every
 *           rank sets up its agreement buffer; one allreduce gives every
 *           rank the name, id and time and tells everyone whether every
 *           rank is ready (a rank out of memory fails the begin everywhere)
 *   write   every rank writes and fsyncs shard-<rank>.rp (sync: here, from
 *           the registered memory; async: the writer thread, from staging)
 *   finish  one allreduce is the agreement: every rank's ok flag, chunk
 *           count and chunk CRCs, each in its own slot of one buffer
 *           (zeros elsewhere, summed), so every rank learns the vote and
 *           rank 0 the CRCs in log2(n) exchanges. If any rank failed,
 *           rank 0 removes the in-flight directory and the previous
 *           checkpoint stays the latest; else rank 0 writes the manifest,
 *           fsyncs the directory, renames it into place and fsyncs the
 *           root; a second allreduce (rank 0's result, zeros elsewhere)
 *           tells everyone; then rank 0 prunes (after the commit is
 *           durable, so retention never leaves fewer good checkpoints) on
 *           a helper thread, off the training loop's time.
 *
 * Allreduce and not broadcast/allgather: below a few KiB the library runs
 * allreduce by recursive doubling (log2 n steps), while broadcast is a
 * chain and allgather a ring (n - 1 steps each).
 */
#include "config.h"

#include "ckpt/write/commit.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog/prune.h"
#include "ckpt/engine/engine.h"
#include "ckpt/engine/regions.h"
#include "ckpt/engine/root.h"
#include "ckpt/format/cursor.h"
#include "ckpt/format/fileio.h"
#include "core/context.h"
#include "ringpoint/coll.h"
#include "util/log.h"

#define RP_CM_DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* What rank 0 tells everyone at begin, and what every rank adds: summed
 * as int64, rank 0's fields are zero on the other ranks, so the sum is
 * rank 0's value (x + 0 cannot overflow); @unready counts the ranks that
 * could not set up their part. */
typedef struct rp_cm_begin_msg {
    int64_t status;
    int64_t unready;
    uint64_t nonce;
    uint64_t created_ns;
    uint8_t ckpt_id[RP_CKPT_ID_SIZE];
} rp_cm_begin_msg_t;

/* One rank's slot of the agreement buffer: the vote, the chunk count,
 * then its chunk CRCs (maxn slots). */
#define RP_CM_SLOT_OK 0
#define RP_CM_SLOT_N 1
#define RP_CM_SLOT_HDR 2

rp__ckpt_fault_t rp__ckpt_fault_for(const rp__ckpt_engine_t *e, uint64_t step)
{
    if ((e->fault == RP_CKPT_FAULT_WRITE || e->fault == RP_CKPT_FAULT_KILL) &&
        e->fault_rank == e->rank && step >= e->fault_step) {
        return e->fault;
    }
    return RP_CKPT_FAULT_NONE;
}

static uint32_t rp_cm_env_u32(const char *name)
{
    const char *v = getenv(name);
    char *end;
    unsigned long long x;

    if (v == NULL || *v == '\0') {
        return 0;
    }
    errno = 0;
    x = strtoull(v, &end, 10);
    return (errno != 0 || *end != '\0' || x > UINT32_MAX) ? 0 : (uint32_t)x;
}

/* Rank 0's half of begin: root, leftovers, in-flight directory. */
static rp_status_t rp_cm_begin_root(rp__ckpt_engine_t *e, uint64_t step,
                                    rp_cm_begin_msg_t *msg)
{
    char name[RP_CKPT_NAME_MAX];
    struct timespec now;
    struct stat st;
    rp_status_t rc;

    /* The last retention pass is over before this checkpoint's name is
     * chosen (it never touches an in-flight directory above the newest
     * complete step, but one pass at a time keeps that easy to see). */
    rp__ckpt_prune_join(e);
    rc = rp__ckpt_open_root(e, true);
    if (rc != RP_OK) {
        return rc;
    }
    rp__ckpt_cleanup_once(e, RP_LOG_INFO, "checkpoint");
    rp__ckpt_name_committed(step, name, sizeof(name));
    if (fstatat(e->rootfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
        rp_warn("checkpoint %s/%s exists already; not taking it again",
                e->dir, name);
        return RP_ERR_STATE;
    }
    rc = rp__ckpt_random(&msg->nonce, sizeof(msg->nonce));
    if (rc == RP_OK) {
        rc = rp__ckpt_random(msg->ckpt_id, sizeof(msg->ckpt_id));
    }
    if (rc != RP_OK) {
        return rc;
    }
    clock_gettime(CLOCK_REALTIME, &now);
    msg->created_ns = (uint64_t)now.tv_sec * 1000000000ull +
                      (uint64_t)now.tv_nsec;
    rp__ckpt_name_inflight(step, msg->nonce, name, sizeof(name));
    if (mkdirat(e->rootfd, name, 0777) != 0) {
        rp_error("mkdir %s/%s: %s", e->dir, name, strerror(errno));
        return RP_ERR_IO;
    }
    return RP_OK;
}

/* The largest chunk count of any rank for a stream of @stream_len bytes:
 * rank 0's stripe is never shorter than another's, but computing it keeps
 * that fact out of the protocol. */
static uint32_t rp_cm_max_chunks(const rp__ckpt_engine_t *e,
                                 uint64_t stream_len, uint64_t per_rank_len)
{
    uint32_t r, maxn = 0;

    for (r = 0; r < e->size; r++) {
        uint64_t off, len;
        uint32_t n;

        (void)rp__ckpt_stripe(stream_len, e->size, r, &off, &len);
        n = rp__ckpt_nchunks(len + per_rank_len, e->chunk_size);
        maxn = n > maxn ? n : maxn;
    }
    return maxn;
}

/* This rank's part of a checkpoint that needs no collective: its stripe,
 * the agreement buffer (its CRC slots are where the writer puts the CRCs)
 * and the copy of the region table. False when out of memory. */
static bool rp_cm_setup(rp__ckpt_engine_t *e, uint64_t step)
{
    rp__ckpt_pending_t *p = &e->pend;
    uint32_t i;

    memset(p, 0, sizeof(*p));
    p->cfd = -1;
    p->step = step;
    p->stream_len = e->stream_len;
    p->per_rank_len = e->per_rank_len;
    if (rp__ckpt_stripe(p->stream_len, e->size, e->rank, &p->stripe_off,
                        &p->stripe_len) != RP_OK) {
        return false;
    }
    p->payload_len = p->stripe_len + p->per_rank_len;
    p->nchunks = rp__ckpt_nchunks(p->payload_len, e->chunk_size);
    p->maxn = rp_cm_max_chunks(e, p->stream_len, p->per_rank_len);
    p->agree = calloc((size_t)(RP_CM_SLOT_HDR + p->maxn) * e->size,
                      sizeof(int32_t));
    p->layout = calloc(e->nregs > 0 ? e->nregs : 1, sizeof(*p->layout));
    if (p->agree == NULL || p->layout == NULL) {
        rp_error("checkpoint step %llu: out of memory for %u CRCs of %u "
                 "ranks and %u regions", (unsigned long long)step, p->maxn,
                 e->size, e->nregs);
        free(p->agree);
        free(p->layout);
        p->agree = NULL;
        p->layout = NULL;
        return false;
    }
    p->crcs = (uint32_t *)(p->agree + (size_t)(RP_CM_SLOT_HDR + p->maxn) *
                                          e->rank + RP_CM_SLOT_HDR);
    p->nlayout = e->nregs;
    for (i = 0; i < e->nregs; i++) {
        memcpy(p->layout[i].name, e->regs[i].name, sizeof(p->layout[i].name));
        p->layout[i].kind = e->regs[i].kind;
        p->layout[i].offset = e->regs[i].offset;
        p->layout[i].size = e->regs[i].size;
    }
    return true;
}

static void rp_cm_release(rp__ckpt_pending_t *p)
{
    free(p->agree);
    p->agree = NULL;
    p->crcs = NULL;
    free(p->layout);
    p->layout = NULL;
    p->nlayout = 0;
}

rp_status_t rp__ckpt_begin(rp__ckpt_engine_t *e, uint64_t step)
{
    rp__ckpt_pending_t *p = &e->pend;
    rp_cm_begin_msg_t msg;
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc;

    memset(&msg, 0, sizeof(msg));
    /* Every allocation comes before the collective, so a rank without
     * memory says so here and no rank is ever left alone in one. */
    msg.unready = rp_cm_setup(e, step) ? 0 : 1;
    if (e->rank == 0) {
        msg.status = (int64_t)rp_cm_begin_root(e, step, &msg);
    }
    rc = rp_allreduce(e->ctx, &msg, &msg, sizeof(msg) / sizeof(int64_t),
                      RP_DTYPE_INT64, RP_OP_SUM);
    if (rc == RP_OK && msg.status == RP_OK && msg.unready != 0) {
        if (e->rank == 0) {
            char name[RP_CKPT_NAME_MAX];

            rp_error("checkpoint step %llu: %lld rank%s out of memory: not "
                     "taken", (unsigned long long)step,
                     (long long)msg.unready, msg.unready == 1 ? "" : "s");
            rp__ckpt_name_inflight(step, msg.nonce, name, sizeof(name));
            (void)rp__ckpt_remove_at(e->rootfd, name);
        }
        msg.status = RP_ERR_NO_MEMORY;
    }
    if (rc != RP_OK || msg.status != RP_OK) {
        rp_cm_release(p);
        if (rc != RP_OK) {
            return rc;
        }
        if (e->rank != 0 && msg.status != RP_ERR_STATE &&
            msg.unready == 0) {
            rp_error("checkpoint step %llu: rank 0 could not start it (%s)",
                     (unsigned long long)step,
                     rp_status_string((rp_status_t)msg.status));
        }
        return (rp_status_t)msg.status;
    }
    e->stats.snap_ns = 0; /* set by an async snapshot only */
    e->stats.begin_ns = rp__ckpt_now_ns() - t0;
    p->t_begin_ns = t0;
    p->created_ns = msg.created_ns;
    memcpy(p->ckpt_id, msg.ckpt_id, RP_CKPT_ID_SIZE);
    rp__ckpt_name_inflight(step, msg.nonce, p->inflight, sizeof(p->inflight));
    rp__ckpt_name_committed(step, p->committed, sizeof(p->committed));
    p->active = true;
    /* From here on every failure is this rank's write failing: it is
     * reported through the agreement in finish, so no rank is left alone
     * in a collective. */
    if (e->rank != 0) {
        rc = rp__ckpt_open_root(e, false);
        if (rc != RP_OK) {
            if (rc == RP_ERR_NOT_FOUND) {
                rp_error("checkpoint directory %s does not exist on this "
                         "node (it must be shared by all nodes)", e->dir);
                rc = RP_ERR_IO;
            }
            p->write_status = rc;
            return RP_OK;
        }
    }
    p->cfd = openat(e->rootfd, p->inflight, RP_CM_DIR_FLAGS);
    if (p->cfd < 0) {
        rp_error("open %s/%s: %s%s", e->dir, p->inflight, strerror(errno),
                 errno == ENOENT ? " (is the checkpoint directory shared by "
                                   "all nodes?)" : "");
        p->write_status = RP_ERR_IO;
    }
    return RP_OK;
}

void rp__ckpt_pending_header(const rp__ckpt_engine_t *e,
                             rp__ckpt_shard_header_t *hdr)
{
    memset(hdr, 0, sizeof(*hdr));
    memcpy(hdr->ckpt_id, e->pend.ckpt_id, RP_CKPT_ID_SIZE);
    hdr->step = e->pend.step;
    hdr->rank = e->rank;
    hdr->world_size = e->size;
    hdr->payload_length = e->pend.payload_len;
}

void rp__ckpt_write_sync(rp__ckpt_engine_t *e)
{
    rp__ckpt_pending_t *p = &e->pend;
    rp__ckpt_shard_header_t hdr;
    rp__ckpt_cursor_t cur;
    rp__ckpt_seg_t *segs;
    char label[RP_CKPT_LABEL_MAX];
    size_t nsegs;

    if (p->write_status != RP_OK) {
        return;
    }
    p->write_status = rp__ckpt_regions_segments(e, p->stripe_off,
                                                p->stripe_len, &segs, &nsegs);
    if (p->write_status != RP_OK) {
        return;
    }
    rp__ckpt_cursor_init(&cur, segs, nsegs, e->chunk_size, p->crcs);
    rp__ckpt_pending_header(e, &hdr);
    snprintf(label, sizeof(label), "%s/%s", e->dir, p->inflight);
    p->write_status = rp__ckpt_shard_write(p->cfd, label, &hdr, &cur, NULL,
                                           rp__ckpt_fault_for(e, p->step),
                                           &p->wstats);
    free(segs);
}

/* Rank 0: the manifest from the gathered CRCs, then the commit. */
static rp_status_t rp_cm_commit_root(rp__ckpt_engine_t *e,
                                     bool *renamed_p)
{
    rp__ckpt_pending_t *p = &e->pend;
    rp__ckpt_manifest_t m;
    char label[RP_CKPT_LABEL_MAX], err[256];
    uint64_t t0, t1;
    uint32_t r;
    rp_status_t rc;

    *renamed_p = false;
    snprintf(label, sizeof(label), "%s/%s", e->dir, p->inflight);
    /* The layout of the snapshot, not the live table. */
    rc = rp__ckpt_manifest_init(&m, e->size, p->nlayout);
    if (rc != RP_OK) {
        rp_error("%s: cannot set up the manifest", label);
        return rc;
    }
    memcpy(m.regions, p->layout, p->nlayout * sizeof(m.regions[0]));
    m.step = p->step;
    m.job_id = rp_cm_env_u32("SLURM_JOB_ID");
    m.restart_count = rp_cm_env_u32("SLURM_RESTART_COUNT");
    m.created_ns = p->created_ns;
    memcpy(m.ckpt_id, p->ckpt_id, RP_CKPT_ID_SIZE);
    m.chunk_size = e->chunk_size;
    m.stream_length = p->stream_len;
    m.per_rank_length = p->per_rank_len;
    rc = rp__ckpt_manifest_plan(&m, err, sizeof(err));
    if (rc != RP_OK) {
        rp_error("%s: %s", label, err);
        goto out;
    }
    for (r = 0; r < e->size; r++) {
        const int32_t *slot = p->agree + (size_t)(RP_CM_SLOT_HDR + p->maxn) * r;

        /* The sizes every rank wrote against the plan of the layout. */
        if (m.shards[r].nchunks > p->maxn ||
            (uint32_t)slot[RP_CM_SLOT_N] != m.shards[r].nchunks) {
            rp_error("%s: rank %u wrote %u chunks, the layout gives %u",
                     label, r, (uint32_t)slot[RP_CM_SLOT_N],
                     m.shards[r].nchunks);
            rc = RP_ERR_STATE;
            goto out;
        }
        memcpy(m.shards[r].chunk_crc, slot + RP_CM_SLOT_HDR,
               m.shards[r].nchunks * sizeof(uint32_t));
    }
    t0 = rp__ckpt_now_ns();
    rc = rp__ckpt_manifest_write_at(p->cfd, label, &m);
    t1 = rp__ckpt_now_ns();
    e->stats.manifest_ns = t1 - t0;
    if (rc == RP_OK) {
        rc = rp__ckpt_commit_at(e->rootfd, e->dir, &p->cfd, p->inflight,
                                p->committed, renamed_p);
        e->stats.rename_ns = rp__ckpt_now_ns() - t1;
    }
out:
    rp__ckpt_manifest_free(&m);
    return rc;
}

static void rp_cm_end(rp__ckpt_engine_t *e)
{
    rp__ckpt_pending_t *p = &e->pend;
    char label[RP_CKPT_LABEL_MAX];

    snprintf(label, sizeof(label), "%s/%s", e->dir, p->inflight);
    (void)rp__ckpt_close(&p->cfd, label);
    rp_cm_release(p);
    p->active = false;
}

/* The vote of the agreement: every rank's ok flag, from its slot. */
static bool rp_cm_all_ok(const rp__ckpt_engine_t *e)
{
    const rp__ckpt_pending_t *p = &e->pend;
    uint32_t r;

    for (r = 0; r < e->size; r++) {
        if (p->agree[(size_t)(RP_CM_SLOT_HDR + p->maxn) * r +
                     RP_CM_SLOT_OK] != 1) {
            return false;
        }
    }
    return true;
}

rp_status_t rp__ckpt_finish(rp__ckpt_engine_t *e)
{
    rp__ckpt_pending_t *p = &e->pend;
    int32_t *mine = p->agree + (size_t)(RP_CM_SLOT_HDR + p->maxn) * e->rank;
    int32_t result = RP_OK;
    uint64_t t0 = rp__ckpt_now_ns(), t1, t2;
    bool renamed = false;
    rp_status_t rc;

    /* The CRCs are in place (the writer filled this rank's slot). */
    mine[RP_CM_SLOT_OK] = p->write_status == RP_OK ? 1 : 0;
    mine[RP_CM_SLOT_N] = (int32_t)p->nchunks;
    rc = rp_allreduce(e->ctx, p->agree, p->agree,
                      (size_t)(RP_CM_SLOT_HDR + p->maxn) * e->size,
                      RP_DTYPE_INT32, RP_OP_SUM);
    /* The vote also waits for the slowest rank's write: that wait is not
     * a cost of the commit (the benchmark subtracts it). */
    t1 = rp__ckpt_now_ns();
    e->stats.vote_ns = t1 - t0;
    if (rc != RP_OK) {
        goto out; /* the job is broken; the next start cleans up */
    }
    if (!rp_cm_all_ok(e)) {
        if (e->rank == 0) {
            rp_error("checkpoint step %llu failed on at least one rank: not "
                     "committed; the previous checkpoint stays the latest",
                     (unsigned long long)p->step);
            (void)rp__ckpt_close(&p->cfd, p->inflight);
            (void)rp__ckpt_remove_at(e->rootfd, p->inflight);
        }
        rc = p->write_status != RP_OK ? p->write_status : RP_ERR_IO;
        goto out;
    }
    if (e->rank == 0) {
        result = (int32_t)rp_cm_commit_root(e, &renamed);
        if (result != RP_OK && !renamed) {
            (void)rp__ckpt_close(&p->cfd, p->inflight);
            (void)rp__ckpt_remove_at(e->rootfd, p->inflight);
        }
    }
    /* The outcome: rank 0's result, zeros elsewhere. */
    t2 = rp__ckpt_now_ns();
    rc = rp_allreduce(e->ctx, &result, &result, 1, RP_DTYPE_INT32,
                      RP_OP_SUM);
    e->stats.outcome_ns = rp__ckpt_now_ns() - t2;
    if (rc != RP_OK) {
        goto out;
    }
    rc = (rp_status_t)result;
    if (rc != RP_OK) {
        if (e->rank != 0) {
            rp_error("checkpoint step %llu: rank 0 could not commit it (%s)",
                     (unsigned long long)p->step, rp_status_string(rc));
        }
        goto out;
    }
    e->stats.commit_ns = rp__ckpt_now_ns() - t0;
    e->stats.total_ns = rp__ckpt_now_ns() - p->t_begin_ns;
    if (e->nrecent == RP_CKPT_RECENT) {
        memmove(e->recent_ns, e->recent_ns + 1,
                (RP_CKPT_RECENT - 1) * sizeof(e->recent_ns[0]));
        e->nrecent--;
    }
    /* Writing and committing, not the wait for the safe point that
     * commits a background write: what a stop checkpoint costs. */
    e->recent_ns[e->nrecent++] = p->wstats.ns + e->stats.commit_ns;
    e->have_ckpt_step = true;
    e->ckpt_step = p->step;
    e->stats.write_ns = p->wstats.ns;
    e->stats.fill_ns = p->wstats.fill_ns;
    e->stats.pwrite_ns = p->wstats.pwrite_ns;
    e->stats.fsync_ns = p->wstats.fsync_ns;
    e->stats.direct = p->wstats.direct;
    e->stats.bytes_total = p->stream_len +
                           (uint64_t)p->per_rank_len * e->size;
    if (e->rank == 0) {
        /* Each step of the commit, so a slow one in a job's log says
         * which: the vote waits for the slowest rank's write, the rest is
         * the commit's own cost. */
        rp_info("checkpoint step %llu committed: %s/%s, %u shards, %llu "
                "bytes, commit %.2f ms after the vote (manifest %.2f, "
                "dir fsync + rename + root fsync %.2f, outcome %.2f; vote "
                "%.2f)", (unsigned long long)p->step, e->dir,
                p->committed, e->size,
                (unsigned long long)e->stats.bytes_total,
                (double)(e->stats.commit_ns - e->stats.vote_ns) / 1e6,
                (double)e->stats.manifest_ns / 1e6,
                (double)e->stats.rename_ns / 1e6,
                (double)e->stats.outcome_ns / 1e6,
                (double)e->stats.vote_ns / 1e6);
        rp__ckpt_prune_start(e);
    }
out:
    rp_cm_end(e);
    return rc;
}
