/*
 * Async mode: at the safe point the application's thread copies this
 * rank's stripe and per-rank bytes into a staging buffer and returns; a
 * writer thread then checksums staging (the CRCs describe exactly the
 * snapshot: nothing writes staging until the shard is on disk) and
 * writes and fsyncs the shard from it with O_DIRECT. The staging buffer
 * is allocated and touched once, sized to this rank's payload (stripe +
 * per-rank bytes), and reused: host memory
 * stays flat however many checkpoints are taken. One checkpoint at most
 * is in flight; the commit collectives are the application thread's.
 *
 * Device regions reach the snapshot already copied: rp__ckpt_devstage_out
 * put them in pinned memory the GPU no longer writes. Copying them again
 * and checksumming on the caller's time made the stall several times the
 * GPU's own copy (doc/ has the figures). So where device regions are
 * registered the caller copies only its host bytes, and the writer moves
 * the device bytes into staging and computes the CRCs.
 */
#include "config.h"

#include "ckpt/write/async.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/engine/devstage.h"
#include "ckpt/engine/engine.h"
#include "ckpt/engine/regions.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/cursor.h"
#include "ckpt/write/commit.h"
#include "util/log.h"

/* The writer's job: the staged shard, its status into the pending
 * checkpoint (read by the application's thread once the job is done). */
static void rp_async_write_job(void *arg)
{
    rp__ckpt_engine_t *e = arg;

    e->pend.write_status = rp__ckpt_write_staged(e);
}

/* Does @p point into the device regions' pinned staging? */
static bool rp_async_pinned(const rp__ckpt_engine_t *e, const void *p)
{
    const unsigned char *b = e->dev != NULL ? e->dev->pinned : NULL;
    const unsigned char *q = p;

    return b != NULL && q >= b && q < b + e->dev->pinned_len;
}

/* Host bytes of the snapshot into staging, plainly, on the rank's spare
 * cores where it has some (pcopy.h): the CRCs follow on the writer, with
 * the device bytes (pinned ones are the writer's). */
static rp_status_t rp_async_copy_host(rp__ckpt_engine_t *e,
                                      const rp__ckpt_seg_t *segs, size_t nsegs)
{
    rp__ckpt_span_t *spans = malloc((nsegs > 0 ? nsegs : 1) * sizeof(*spans));
    uint64_t pos = 0;
    size_t n = 0;

    if (spans == NULL) {
        rp_error("checkpoint: out of memory for the snapshot's %zu segments",
                 nsegs);
        return RP_ERR_NO_MEMORY;
    }
    for (size_t i = 0; i < nsegs; i++) {
        if (segs[i].base == NULL || !rp_async_pinned(e, segs[i].base)) {
            spans[n].dst = e->staging + pos;
            spans[n].src = segs[i].base;
            spans[n].len = (size_t)segs[i].len;
            n++;
        }
        pos += segs[i].len;
    }
    if (!e->pcopy_tried && pos >= (64u << 20)) {
        /* Once: a rank without spare cores (or threads) copies alone. */
        e->pcopy_tried = true;
        e->pcopy = rp__ckpt_pcopy_new(e->copy_threads);
    }
    rp__ckpt_pcopy_run(e->pcopy, spans, n);
    free(spans);
    return RP_OK;
}

/* The part of a snapshot left off the caller's time (device bytes from
 * pinned staging, the chunk CRCs); no-op when there is none. Run before
 * the staged shard is written, on whichever thread writes it. */
static void rp_async_complete(rp__ckpt_engine_t *e)
{
    rp__ckpt_pending_t *p = &e->pend;
    uint64_t pos = 0;
    uint32_t n;

    if (e->defer_segs == NULL) {
        return;
    }
    for (size_t i = 0; i < e->defer_nsegs; i++) {
        const rp__ckpt_seg_t *s = &e->defer_segs[i];

        if (s->base != NULL && rp_async_pinned(e, s->base)) {
            memcpy(e->staging + pos, s->base, (size_t)s->len);
        }
        pos += s->len;
    }
    n = rp__ckpt_nchunks(p->payload_len, e->chunk_size);
    for (uint32_t k = 0; k < n; k++) {
        uint64_t off = (uint64_t)k * e->chunk_size;
        uint64_t len = p->payload_len - off < e->chunk_size
                           ? p->payload_len - off : e->chunk_size;

        p->crcs[k] = rp__crc32c(0, e->staging + off, (size_t)len);
    }
    free(e->defer_segs);
    e->defer_segs = NULL;
    e->defer_nsegs = 0;
}

rp_status_t rp__ckpt_write_staged(rp__ckpt_engine_t *e)
{
    rp__ckpt_pending_t *p = &e->pend;
    rp__ckpt_shard_header_t hdr;
    char label[RP_CKPT_LABEL_MAX];

    rp_async_complete(e);
    rp__ckpt_pending_header(e, &hdr);
    snprintf(label, sizeof(label), "%s/%s", e->dir, p->inflight);
    return rp__ckpt_shard_write(p->cfd, label, &hdr, NULL, e->staging,
                                rp__ckpt_fault_for(e, p->step), &p->wstats);
}

rp_status_t rp__ckpt_async_snapshot(rp__ckpt_engine_t *e)
{
    rp__ckpt_pending_t *p = &e->pend;
    rp__ckpt_seg_t *segs;
    size_t nsegs;
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc;

    if (p->write_status != RP_OK) {
        return p->write_status;
    }
    if (e->staging == NULL || e->staging_len < p->payload_len) {
        /* Only when the state grew: once per job unless the application
         * adds or grows regions. */
        rp__ckpt_io_free(e->staging);
        e->staging_len = 0;
        e->staging = rp__ckpt_io_alloc((size_t)p->payload_len);
        if (e->staging == NULL) {
            rp_error("checkpoint: out of memory for %llu bytes of staging",
                     (unsigned long long)p->payload_len);
            return RP_ERR_NO_MEMORY;
        }
        e->staging_len = (size_t)p->payload_len;
        if (e->staging_len > e->stats.staging_bytes) {
            e->stats.staging_bytes = e->staging_len;
        }
    }
    rc = rp__ckpt_regions_segments(e, p->stripe_off, p->stripe_len, &segs,
                                   &nsegs);
    if (rc != RP_OK) {
        return rc;
    }
    free(e->defer_segs); /* a snapshot that was never written */
    e->defer_segs = NULL;
    e->defer_nsegs = 0;
    /* The stall is the copy alone; the CRCs are the writer's, from
     * staging, which nothing writes until the shard is on disk, so they
     * describe the snapshot as exactly as a fused copy + CRC would. On
     * one core that is no faster (the CRC rides on the copy's memory
     * traffic); it lets the copy be split between threads, which the
     * CRCs' chunk order would tie to one. */
    rc = rp_async_copy_host(e, segs, nsegs);
    if (rc != RP_OK) {
        free(segs);
        return rc;
    }
    e->defer_segs = segs;
    e->defer_nsegs = nsegs;
    e->stats.snap_ns = rp__ckpt_now_ns() - t0;
    return RP_OK;
}

rp_status_t rp__ckpt_async_start(rp__ckpt_engine_t *e)
{
    /* The writer keeps the default priority: at a lower one, on a machine
     * shared with other jobs, it got so little CPU that the background
     * write fell behind, and a write that failed half way was not
     * finished for several safe points, so its error surfaced only at
     * rp_finalize (test_ckpt_write_error_async). It needs little CPU
     * anyway: O_DIRECT from staging, and the CRCs of the staged bytes. */
    if (!e->writer_up) {
        if (!rp__ckpt_worker_start(&e->writer)) {
            rp_error("checkpoint: cannot start the writer thread: %s",
                     strerror(errno));
            return RP_ERR_NO_MEMORY;
        }
        e->writer_up = true;
    }
    rp__ckpt_worker_post(&e->writer, rp_async_write_job, e);
    return RP_OK;
}

bool rp__ckpt_async_done(rp__ckpt_engine_t *e)
{
    return !e->writer_up || !rp__ckpt_worker_busy(&e->writer);
}

void rp__ckpt_async_wait(rp__ckpt_engine_t *e)
{
    if (e->writer_up) {
        rp__ckpt_worker_wait(&e->writer);
    }
}

void rp__ckpt_async_stop(rp__ckpt_engine_t *e)
{
    if (!e->writer_up) {
        free(e->defer_segs); /* a snapshot that was never written */
        e->defer_segs = NULL;
        return;
    }
    rp__ckpt_worker_stop(&e->writer);
    e->writer_up = false;
    free(e->defer_segs);
    e->defer_segs = NULL;
}
