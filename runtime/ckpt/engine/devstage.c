/*
 * Device checkpoint regions: the staging plan and the copies. See
 * devstage.h.
 */
#include "config.h"

#include "ckpt/engine/devstage.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/engine/engine.h"
#include "core/context.h"
#include "gpu/path.h"
#include "util/log.h"

static uint64_t rp_ds_align(uint64_t v)
{
    return (v + RP_CKPT_DEVSTAGE_ALIGN - 1) / RP_CKPT_DEVSTAGE_ALIGN *
           RP_CKPT_DEVSTAGE_ALIGN;
}

void rp__ckpt_devstage_plan(const rp__ckpt_reg_t *regs, uint32_t nregs,
                            uint64_t stripe_off, uint64_t stripe_len,
                            rp__ckpt_devcopy_t *copies, uint32_t *ncopies_p,
                            uint64_t *bytes_p)
{
    uint64_t pos = 0, lo, hi;
    uint32_t n = 0;

    for (uint32_t i = 0; i < nregs; i++) {
        const rp__ckpt_reg_t *r = &regs[i];

        if (!r->device || r->size == 0) {
            continue;
        }
        if (r->kind == RP_CKPT_REGION_PER_RANK) {
            lo = 0;
            hi = r->size;
        } else {
            /* The part of the region inside this rank's stripe. */
            lo = stripe_off > r->offset ? stripe_off - r->offset : 0;
            hi = stripe_off + stripe_len < r->offset + r->size
                     ? stripe_off + stripe_len - r->offset
                     : r->size;
            if (stripe_off + stripe_len <= r->offset || lo >= hi) {
                continue;
            }
        }
        pos = rp_ds_align(pos);
        copies[n] = (rp__ckpt_devcopy_t){.reg = i, .src_off = lo,
                                         .dst_off = pos, .len = hi - lo};
        pos += hi - lo;
        n++;
    }
    *ncopies_p = n;
    *bytes_p = pos;
}

const void *rp__ckpt_devstage_at(const rp__ckpt_devstage_t *d, uint32_t reg,
                                 uint64_t off)
{
    for (uint32_t k = 0; d != NULL && k < d->ncopies; k++) {
        const rp__ckpt_devcopy_t *c = &d->copies[k];

        if (c->reg == reg && off >= c->src_off && off < c->src_off + c->len) {
            return d->pinned + c->dst_off + (off - c->src_off);
        }
    }
    return NULL;
}

rp_status_t rp__ckpt_devstage_register(rp__ckpt_engine_t *e, const char *name)
{
    char what[200];
    const rp__gpu_ops_t *ops;
    rp_status_t rc;

    snprintf(what, sizeof(what), "rp_region_register(%.128s)", name);
    rc = rp__gpu_local(e->ctx, what, &ops);
    if (rc != RP_OK) {
        return rc;
    }
    if (e->dev == NULL) {
        e->dev = calloc(1, sizeof(*e->dev));
        if (e->dev == NULL) {
            rp_error("%s: out of memory", what);
            return RP_ERR_NO_MEMORY;
        }
        e->dev->ops = ops;
    }
    return RP_OK;
}

/* The plan and the staging for the pending checkpoint's stripe: made again
 * only when the stripe or the region table changed (the staging only
 * grows). */
static rp_status_t rp_ds_prepare(rp__ckpt_engine_t *e)
{
    rp__ckpt_devstage_t *d = e->dev;
    const rp__ckpt_pending_t *p = &e->pend;
    uint64_t bytes;
    rp_status_t rc;

    if (d->planned && d->plan_off == p->stripe_off &&
        d->plan_len == p->stripe_len && d->plan_gen == e->layout_gen) {
        return RP_OK;
    }
    d->planned = false; /* until the staging for the new plan exists */
    free(d->copies);
    d->copies = calloc(e->nregs > 0 ? e->nregs : 1, sizeof(*d->copies));
    if (d->copies == NULL) {
        rp_error("checkpoint: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    rp__ckpt_devstage_plan(e->regs, e->nregs, p->stripe_off, p->stripe_len,
                           d->copies, &d->ncopies, &bytes);
    if (d->stream == NULL) {
        rc = d->ops->stream_create(&d->stream);
        if (rc != RP_OK) {
            return rc;
        }
    }
    if (d->pinned_len < bytes) {
        /* Grown: the figure counts the new buffer instead of the old. */
        e->stats.staging_bytes -= d->pinned_len;
        d->ops->host_free(d->pinned);
        d->pinned_len = 0;
        d->pinned = d->ops->host_alloc((size_t)bytes);
        if (d->pinned == NULL) {
            rp_error("checkpoint: cannot pin %llu bytes of host memory for "
                     "the device regions", (unsigned long long)bytes);
            return RP_ERR_NO_MEMORY;
        }
        d->pinned_len = bytes;
        e->stats.staging_bytes += bytes;
    }
    d->planned = true;
    d->plan_off = p->stripe_off;
    d->plan_len = p->stripe_len;
    d->plan_gen = e->layout_gen;
    return RP_OK;
}

rp_status_t rp__ckpt_devstage_out(rp__ckpt_engine_t *e)
{
    rp__ckpt_devstage_t *d = e->dev;
    rp_status_t rc = rp_ds_prepare(e);

    /* The copies see what the application's stream computed up to this
     * safe point, without stopping the application's other streams. */
    if (rc == RP_OK) {
        rc = d->ops->stream_order(d->stream, e->ctx->gpu->stream);
    }
    for (uint32_t k = 0; rc == RP_OK && k < d->ncopies; k++) {
        const rp__ckpt_devcopy_t *c = &d->copies[k];

        rc = d->ops->copy_async(d->pinned + c->dst_off,
                                (const unsigned char *)e->regs[c->reg].addr +
                                    c->src_off,
                                (size_t)c->len, d->stream);
    }
    /* Bounded: NCCL work stuck on a dead peer ahead of the copies is
     * aborted past the timeout rather than hanging the stop. */
    if (rc == RP_OK) {
        rc = rp__gpu_drain(e->ctx, d->stream);
    }
    return rc;
}

void rp__ckpt_devstage_in(rp__ckpt_engine_t *e, void *dst, const void *src,
                          size_t n)
{
    rp__ckpt_devstage_t *d = e->dev;
    rp_status_t rc = RP_OK;

    if (d->failed != RP_OK) {
        return;
    }
    if (d->stream == NULL) {
        rc = d->ops->stream_create(&d->stream);
    }
    if (rc == RP_OK) {
        rc = d->ops->copy_async(dst, src, n, d->stream);
    }
    if (rc == RP_OK) {
        rc = rp__gpu_drain(e->ctx, d->stream);
    }
    d->failed = rc;
}

void rp__ckpt_devstage_free(rp__ckpt_engine_t *e)
{
    rp__ckpt_devstage_t *d = e->dev;

    if (d == NULL) {
        return;
    }
    d->ops->host_free(d->pinned);
    d->ops->stream_destroy(d->stream);
    free(d->copies);
    free(d);
    e->dev = NULL;
}
