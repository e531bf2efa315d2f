/*
 * One restore candidate on this rank: the manifest checked against the
 * registered regions (names, kinds and sizes must match before anything
 * from it sizes an allocation), the plan of the restore stream, and this
 * rank's stripe of it and its per-rank regions read into buffers, not yet
 * into the application's memory.
 */
#include "config.h"

#include "ckpt/read/reader_plan.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/catalog/validate.h"
#include "ckpt/catalog/validate_shard.h"
#include "ckpt/engine/root.h"
#include "ckpt/format/fileio.h"
#include "ckpt/read/reader_int.h"
#include "ckpt/read/reader_shard.h"
#include "util/log.h"

/*
 * The buffer for this rank's stripe of the restore stream, 4 KiB aligned
 * for O_DIRECT. It is the engine's staging buffer, which async mode keeps
 * for its snapshots anyway: borrowed when big enough; otherwise made
 * (sized for the snapshots too) and, in async mode, handed to the engine
 * as its staging. Sync mode frees it with the candidate (its memory
 * budget is a bounce buffer, not a stripe).
 *
 * A new one is not faulted in here: mapping a fresh stripe page by page
 * costs a sizeable fraction of reading it. The
 * reads map it instead, the restore's thread faulting in each run's pages
 * while the run before it is read (rp__rd_whole), so the faults overlap
 * the device; what the stripe does not cover (the snapshots' extra) is
 * faulted in here, as rp__ckpt_io_alloc would.
 */
static unsigned char *rp__rd_stripe_buf(rp__rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint64_t off, len, want = r->vlen;
    unsigned char *b;

    if (e->staging != NULL && e->staging_len >= want) {
        return e->staging;
    }
    if (!e->async) {
        return rp__ckpt_io_alloc_lazy((size_t)want);
    }
    if (rp__ckpt_stripe(e->stream_len, e->size, e->rank, &off, &len) ==
            RP_OK && len + e->per_rank_len > want) {
        want = len + e->per_rank_len;
    }
    b = rp__ckpt_io_alloc_lazy((size_t)want);
    if (b != NULL) {
        for (uint64_t i = r->vlen; i < want; i += RP_RD_ALIGN) {
            ((volatile unsigned char *)b)[i] = 0;
        }
        rp__ckpt_io_free(e->staging);
        e->staging = b;
        e->staging_len = (size_t)want;
        if (want > e->stats.staging_bytes) {
            e->stats.staging_bytes = want;
        }
    }
    return b;
}

/* Check the manifest against what is asked for; build the read plan. */
static int rp__rd_plan(rp__rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint32_t i;

    r->reps = calloc(e->nregs + 1, sizeof(*r->reps));
    r->pers = calloc(e->nregs + 1, sizeof(*r->pers));
    if (r->reps == NULL || r->pers == NULL) {
        rp_error("restore: out of memory");
        return RP_RD_FATAL;
    }
    for (i = 0; i < e->nregs; i++) {
        const rp__ckpt_reg_t *g = &e->regs[i];
        long k;

        if (!r->want[i]) {
            continue;
        }
        k = rp__ckpt_manifest_find_region(&r->m, g->name);
        if (k < 0) {
            rp_error("restore: region '%s' is not in %s", g->name, r->label);
            return RP_RD_FATAL;
        }
        if (r->m.regions[k].kind != g->kind) {
            rp_error("restore: region '%s' is %s in %s but registered as %s",
                     g->name, r->m.regions[k].kind == RP_CKPT_REGION_PER_RANK
                                  ? "per-rank" : "replicated",
                     r->label, g->kind == RP_CKPT_REGION_PER_RANK
                                   ? "per-rank" : "replicated");
            return RP_RD_FATAL;
        }
        if (r->m.regions[k].size != g->size) {
            rp_error("restore: region '%s' has %llu bytes in %s but %llu "
                     "registered", g->name,
                     (unsigned long long)r->m.regions[k].size, r->label,
                     (unsigned long long)g->size);
            return RP_RD_FATAL;
        }
        if (g->kind == RP_CKPT_REGION_PER_RANK) {
            if (r->m.world_size != e->size) {
                rp_error("restore: per-rank region '%s' cannot be restored: "
                         "%s was written by %u ranks and this job has %u "
                         "(restore only the replicated regions by name to "
                         "resume on another size)", g->name, r->label,
                         r->m.world_size, e->size);
                return RP_RD_FATAL;
            }
            r->pers[r->npers].off = r->m.regions[k].offset;
            r->pers[r->npers].size = g->size;
            r->pers[r->npers].addr = g->addr;
            r->pers[r->npers].device = g->device;
            r->npers++;
        } else {
            r->reps[r->nreps].old_off = r->m.regions[k].offset;
            r->reps[r->nreps].size = g->size;
            r->reps[r->nreps].addr = g->addr;
            r->reps[r->nreps].device = g->device;
            r->nreps++;
        }
    }
    /* The restore stream in the checkpoint's order, so consecutive
     * regions read consecutive bytes of the old shards. */
    for (i = 1; i < r->nreps; i++) {
        rp__rd_rep_t x = r->reps[i];
        uint32_t k = i;

        while (k > 0 && r->reps[k - 1].old_off > x.old_off) {
            r->reps[k] = r->reps[k - 1];
            k--;
        }
        r->reps[k] = x;
    }
    r->rlen = 0;
    for (i = 0; i < r->nreps; i++) {
        r->reps[i].voff = r->rlen;
        r->rlen += r->reps[i].size;
    }
    return RP_RD_OK;
}

/*
 * This rank's share of the candidate's shard checks (presence, length,
 * header: the catalog's quick check): shards @rank, @rank + @size, ...
 * of the writers' world. Rank 0 lists candidates by their manifests
 * alone, so together the ranks check every shard and none opens all n of
 * them; the verdict reduction makes one bad shard everyone's.
 */
static int rp__rd_check_shards(rp__rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    rp__ckpt_state_t state;
    char msg[512];
    uint32_t j;

    for (j = e->rank; j < r->m.world_size; j += e->size) {
        rp_status_t rc = rp__ckpt_verify_shard(r->cfd, r->name, &r->m, j,
                                               false, &state, msg,
                                               sizeof(msg));

        if (rc == RP_ERR_NO_MEMORY) {
            return RP_RD_FATAL;
        }
        if (rc != RP_OK) {
            rp_warn("restore: skipping %s (%s): %s", r->label,
                    rp__ckpt_state_name(state), msg);
            return RP_RD_SKIP;
        }
    }
    return RP_RD_OK;
}

/* Read this rank's part of candidate @r->name. Returns a verdict. */
int rp__rd_read(rp__rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    rp__ckpt_state_t state;
    char msg[512];
    uint32_t i;
    int v;

    snprintf(r->label, sizeof(r->label), "%s/%s", e->dir, r->name);
    if (rp__ckpt_open_root(e, false) != RP_OK) {
        rp_warn("restore: cannot open %s on this node (it must be shared by "
                "all nodes)", e->dir);
        return RP_RD_BAD;
    }
    r->cfd = openat(e->rootfd, r->name, RP_RD_DIR_FLAGS);
    if (r->cfd < 0) {
        rp_warn("restore: open %s: %s", r->label, strerror(errno));
        return RP_RD_BAD;
    }
    if (rp__ckpt_load_manifest_at(r->cfd, r->name, &r->m, &state, msg,
                                  sizeof(msg)) != RP_OK) {
        rp_warn("restore: %s/%s", e->dir, msg);
        return RP_RD_BAD;
    }
    v = rp__rd_check_shards(r);
    if (v != RP_RD_OK) {
        return v;
    }
    v = rp__rd_plan(r);
    if (v != RP_RD_OK) {
        return v;
    }
    if (rp__ckpt_stripe(r->rlen, e->size, e->rank, &r->voff, &r->vlen) !=
        RP_OK) {
        return RP_RD_FATAL;
    }
    for (i = 0; i < e->size; i++) {
        uint64_t o, l;

        (void)rp__ckpt_stripe(r->rlen, e->size, i, &o, &l);
        r->maxlen = l > r->maxlen ? l : r->maxlen;
    }
    r->round = RP_RD_ROUND_BYTES / e->size / RP_RD_ALIGN * RP_RD_ALIGN;
    r->round = r->round > RP_RD_ROUND_MAX   ? RP_RD_ROUND_MAX
               : r->round < RP_RD_ROUND_MIN ? RP_RD_ROUND_MIN
                                            : r->round;
    r->round = r->maxlen < r->round ? r->maxlen : r->round;
    r->tmp = malloc(RP_RD_BUF);
    /* Aligned for O_DIRECT (huge pages where the kernel has them). */
    r->vbuf = rp__rd_stripe_buf(r);
    /* The gather buffers too, before the agreement: running out of memory
     * is then a verdict, not a rank missing from a collective. */
    if (e->size > 1 && r->round > 0) {
        r->send = malloc((size_t)r->round);
        r->recv = malloc((size_t)r->round * e->size * 2);
    }
    if (r->tmp == NULL || r->vbuf == NULL ||
        (e->size > 1 && r->round > 0 && (r->send == NULL || r->recv == NULL))) {
        rp_error("restore: out of memory for %llu bytes",
                 (unsigned long long)r->vlen);
        return RP_RD_FATAL;
    }
    /* My stripe of the restore stream, region by region. */
    for (i = 0; i < r->nreps; i++) {
        const rp__rd_rep_t *p = &r->reps[i];
        uint64_t s, t;

        if (!rp__rd_clip(p, r->voff, r->vlen, &s, &t)) {
            continue;
        }
        v = rp__rd_stream(r, p->old_off + (s - p->voff), t - s,
                         r->vbuf + (s - r->voff));
        if (v != RP_RD_OK) {
            return v;
        }
    }
    for (i = 0; i < r->npers; i++) {
        rp__rd_perrank_t *p = &r->pers[i];

        p->tmp = malloc(p->size > 0 ? (size_t)p->size : 1);
        if (p->tmp == NULL) {
            rp_error("restore: out of memory");
            return RP_RD_FATAL;
        }
        v = rp__rd_payload(r, e->rank,
                          r->m.shards[e->rank].stripe_length + p->off,
                          p->size, p->tmp);
        if (v != RP_RD_OK) {
            return v;
        }
    }
    return RP_RD_OK;
}
