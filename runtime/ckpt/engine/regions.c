/*
 * Registered regions: validation, the layout of the replicated stream and
 * of the per-rank section, and the check that every rank registered the
 * same table (a mismatch would silently mix unrelated bytes on restore).
 * The table may change between safe points (state that moves or grows);
 * every change of the layout is laid out again at once and checked across
 * ranks at the next collective use; a checkpoint in flight keeps its own
 * copy of the layout (engine.h, rp__ckpt_pending_t).
 */
#include "config.h"

#include "ckpt/engine/regions.h"

#include <stdlib.h>
#include <string.h>

#include "ckpt/engine/devstage.h"
#include "ckpt/engine/engine.h"
#include "ckpt/format/cursor.h"
#include "core/context.h"
#include "gpu/gpu.h"
#include "ringpoint/coll.h"
#include "util/log.h"

static bool rp_reg_name_ok(const char *name)
{
    size_t n = 0;

    for (; name[n] != '\0'; n++) {
        unsigned char c = (unsigned char)name[n];

        /* The manifest's rule: printable ASCII, no space. */
        if (c < 0x21 || c > 0x7e || n >= RP_CKPT_REGION_NAME_MAX) {
            return false;
        }
    }
    return n > 0;
}

long rp__ckpt_regions_find(const rp__ckpt_engine_t *e, const char *name)
{
    uint32_t i;

    for (i = 0; i < e->nregs; i++) {
        if (strcmp(e->regs[i].name, name) == 0) {
            return (long)i;
        }
    }
    return -1;
}

/*
 * Lay out every region again from its size: regions of each kind in
 * registration order, each on a multiple of RP_CKPT_REGION_ALIGN. Nothing
 * changes when the state would exceed the format's limit
 * (RP_ERR_INVALID_ARG, logged for @what and @name).
 */
static rp_status_t rp_reg_layout(rp__ckpt_engine_t *e, const char *what,
                                 const char *name)
{
    uint64_t len[2] = {0, 0}, off;
    uint32_t i;
    int pass;

    for (pass = 0; pass < 2; pass++) {
        len[0] = len[1] = 0;
        for (i = 0; i < e->nregs; i++) {
            rp__ckpt_reg_t *r = &e->regs[i];
            uint64_t *l = &len[r->kind == RP_CKPT_REGION_PER_RANK];

            off = (*l + RP_CKPT_REGION_ALIGN - 1) / RP_CKPT_REGION_ALIGN *
                  RP_CKPT_REGION_ALIGN;
            if (r->size > RP_CKPT_MAX_LENGTH ||
                off > RP_CKPT_MAX_LENGTH - r->size) {
                rp_error("%s(%s): state larger than %llu bytes", what, name,
                         (unsigned long long)RP_CKPT_MAX_LENGTH);
                return RP_ERR_INVALID_ARG;
            }
            if (pass == 1) {
                r->offset = off;
            }
            *l = off + r->size;
        }
    }
    e->stream_len = len[0];
    e->per_rank_len = len[1];
    e->layout_gen++;
    return RP_OK;
}

rp_status_t rp__ckpt_regions_add(rp__ckpt_engine_t *e, const char *name,
                                 void *addr, size_t size,
                                 rp__ckpt_region_kind_t kind)
{
    uint64_t *len_p = kind == RP_CKPT_REGION_REPLICATED ? &e->stream_len
                                                        : &e->per_rank_len;
    uint64_t off;
    rp__ckpt_reg_t *r;
    bool device;

    if (!rp_reg_name_ok(name)) {
        rp_error("rp_region_register: bad name '%.140s' (1 to %u printable "
                 "characters, no spaces)", name, RP_CKPT_REGION_NAME_MAX);
        return RP_ERR_INVALID_ARG;
    }
    if (addr == NULL && size > 0) {
        rp_error("rp_region_register(%s): NULL address for %zu bytes", name,
                 size);
        return RP_ERR_INVALID_ARG;
    }
    if (rp__ckpt_regions_find(e, name) >= 0) {
        rp_error("rp_region_register(%s): registered twice", name);
        return RP_ERR_INVALID_ARG;
    }
    if (e->nregs >= RP_CKPT_MAX_REGIONS) {
        rp_error("rp_region_register(%s): more than %u regions", name,
                 RP_CKPT_MAX_REGIONS);
        return RP_ERR_INVALID_ARG;
    }
    /* Appended after the regions of its kind: nothing else moves, so no
     * full layout (registering n regions stays linear in layout work). */
    off = (*len_p + RP_CKPT_REGION_ALIGN - 1) / RP_CKPT_REGION_ALIGN *
          RP_CKPT_REGION_ALIGN;
    if ((uint64_t)size > RP_CKPT_MAX_LENGTH || off > RP_CKPT_MAX_LENGTH - size) {
        rp_error("rp_region_register(%s): state larger than %llu bytes", name,
                 (unsigned long long)RP_CKPT_MAX_LENGTH);
        return RP_ERR_INVALID_ARG;
    }
    /* GPU memory works only where the GPU path does: say so now rather
     * than fault at the first checkpoint. */
    device = size > 0 && rp__gpu_probe_is_device(addr);
    if (device && rp__ckpt_devstage_register(e, name) != RP_OK) {
        return RP_ERR_NOT_SUPPORTED;
    }
    if (e->nregs == e->cap) {
        uint32_t cap = e->cap != 0 ? e->cap * 2 : 16;
        rp__ckpt_reg_t *n = realloc(e->regs, cap * sizeof(*n));

        if (n == NULL) {
            rp_error("rp_region_register(%s): out of memory", name);
            return RP_ERR_NO_MEMORY;
        }
        e->regs = n;
        e->cap = cap;
    }
    r = &e->regs[e->nregs++];
    memset(r, 0, sizeof(*r));
    strcpy(r->name, name); /* length checked above */
    r->kind = kind;
    r->addr = addr;
    r->size = size;
    r->device = device;
    r->offset = off;
    *len_p = off + size;
    e->layout_gen++;
    e->checked = false;
    return RP_OK;
}

rp_status_t rp__ckpt_regions_update(rp__ckpt_engine_t *e, const char *name,
                                    void *addr, size_t size)
{
    long k = rp__ckpt_regions_find(e, name);
    rp__ckpt_reg_t *r;
    uint64_t old;
    bool device;
    rp_status_t rc;

    if (k < 0) {
        rp_error("rp_region_update(%.140s): not a registered region", name);
        return RP_ERR_NOT_FOUND;
    }
    if (addr == NULL && size > 0) {
        rp_error("rp_region_update(%s): NULL address for %zu bytes", name,
                 size);
        return RP_ERR_INVALID_ARG;
    }
    r = &e->regs[k];
    device = size > 0 && rp__gpu_probe_is_device(addr);
    if (r->size > 0 && size > 0 && device != r->device) {
        rp_error("rp_region_update(%s): moves from %s to %s memory; "
                 "unregister it and register it again", name,
                 r->device ? "GPU" : "host", device ? "GPU" : "host");
        return RP_ERR_INVALID_ARG;
    }
    if (device && !r->device && rp__ckpt_devstage_register(e, name) != RP_OK) {
        return RP_ERR_NOT_SUPPORTED;
    }
    if (size != r->size) {
        old = r->size;
        r->size = size;
        rc = rp_reg_layout(e, "rp_region_update", name);
        if (rc != RP_OK) {
            r->size = old;
            return rc;
        }
        e->checked = false;
    }
    /* An address alone changes no layout: the next checkpoint reads the
     * new memory (device copies read the address at copy time). */
    r->addr = addr;
    r->device = device;
    return RP_OK;
}

rp_status_t rp__ckpt_regions_remove(rp__ckpt_engine_t *e, const char *name)
{
    long k = rp__ckpt_regions_find(e, name);

    if (k < 0) {
        rp_error("rp_region_unregister(%.140s): not a registered region",
                 name);
        return RP_ERR_NOT_FOUND;
    }
    memmove(&e->regs[k], &e->regs[k + 1],
            (e->nregs - (uint32_t)k - 1) * sizeof(e->regs[0]));
    e->nregs--;
    /* Fewer bytes than before: cannot exceed the limit. */
    (void)rp_reg_layout(e, "rp_region_unregister", name);
    e->checked = false;
    return RP_OK;
}

/* FNV-1a: enough to tell two tables apart; not a security boundary. */
static uint64_t rp_reg_fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++) {
        h = (h ^ b[i]) * 1099511628211ull;
    }
    return h;
}

rp_status_t rp__ckpt_regions_check(rp__ckpt_engine_t *e)
{
    uint64_t h = 1469598103934665603ull, *all;
    uint32_t i, bad = 0;
    rp_status_t rc;

    h = rp_reg_fnv(h, &e->nregs, sizeof(e->nregs));
    for (i = 0; i < e->nregs; i++) {
        const rp__ckpt_reg_t *r = &e->regs[i];
        uint32_t kind = (uint32_t)r->kind;

        h = rp_reg_fnv(h, r->name, strlen(r->name) + 1);
        h = rp_reg_fnv(h, &kind, sizeof(kind));
        h = rp_reg_fnv(h, &r->size, sizeof(r->size));
    }
    all = calloc(e->size, sizeof(*all));
    if (all == NULL) {
        rp_error("checkpoint: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    /* An allgather rather than a reduction so the message can name the
     * ranks that differ. */
    rc = rp_allgather(e->ctx, &h, all, sizeof(h), RP_DTYPE_UINT8);
    if (rc != RP_OK) {
        free(all);
        return rc;
    }
    for (i = 0; i < e->size; i++) {
        if (all[i] != all[0]) {
            if (e->rank == 0 && bad < 8) {
                rp_error("checkpoint: rank %u registered other regions than "
                         "rank 0 (names, kinds, order or sizes differ): "
                         "every rank must register the same table", i);
            }
            bad++;
        }
    }
    free(all);
    if (bad > 0) {
        if (e->rank != 0) {
            rp_error("checkpoint: the region tables of the ranks differ "
                     "(%u ranks differ from rank 0)", bad);
        }
        return RP_ERR_INVALID_ARG;
    }
    e->checked = true;
    return RP_OK;
}

/* Append a segment, growing the array. */
static rp_status_t rp_reg_push(rp__ckpt_seg_t **segs, size_t *n, size_t *cap,
                               const void *base, uint64_t len)
{
    if (len == 0) {
        return RP_OK;
    }
    if (*n == *cap) {
        size_t c = *cap != 0 ? *cap * 2 : 16;
        rp__ckpt_seg_t *s = realloc(*segs, c * sizeof(*s));

        if (s == NULL) {
            rp_error("checkpoint: out of memory");
            return RP_ERR_NO_MEMORY;
        }
        *segs = s;
        *cap = c;
    }
    (*segs)[*n].base = base;
    (*segs)[*n].len = len;
    (*n)++;
    return RP_OK;
}

/* Segments covering [@lo, @hi) of the layout of @kind. */
static rp_status_t rp_reg_range(const rp__ckpt_engine_t *e,
                                rp__ckpt_region_kind_t kind, uint64_t lo,
                                uint64_t hi, rp__ckpt_seg_t **segs, size_t *n,
                                size_t *cap)
{
    uint64_t pos = lo;
    uint32_t i;
    rp_status_t rc = RP_OK;

    for (i = 0; i < e->nregs && pos < hi && rc == RP_OK; i++) {
        const rp__ckpt_reg_t *r = &e->regs[i];
        uint64_t s, t;

        if (r->kind != kind || r->offset + r->size <= pos || r->size == 0) {
            continue;
        }
        if (r->offset >= hi) {
            break;
        }
        s = r->offset > pos ? r->offset : pos;
        t = r->offset + r->size < hi ? r->offset + r->size : hi;
        if (s > pos) {
            rc = rp_reg_push(segs, n, cap, NULL, s - pos); /* padding */
        }
        if (rc == RP_OK) {
            /* Device bytes are read from their snapshot in staging. */
            rc = rp_reg_push(segs, n, cap,
                             r->device ? rp__ckpt_devstage_at(e->dev, i,
                                                              s - r->offset)
                                       : (const unsigned char *)r->addr +
                                             (s - r->offset),
                             t - s);
        }
        pos = t;
    }
    if (rc == RP_OK && pos < hi) {
        rc = rp_reg_push(segs, n, cap, NULL, hi - pos);
    }
    return rc;
}

rp_status_t rp__ckpt_regions_segments(const rp__ckpt_engine_t *e,
                                      uint64_t off, uint64_t len,
                                      rp__ckpt_seg_t **segs_p,
                                      size_t *nsegs_p)
{
    rp__ckpt_seg_t *segs = NULL;
    size_t n = 0, cap = 0;
    rp_status_t rc;

    rc = rp_reg_range(e, RP_CKPT_REGION_REPLICATED, off, off + len, &segs, &n,
                      &cap);
    if (rc == RP_OK) {
        rc = rp_reg_range(e, RP_CKPT_REGION_PER_RANK, 0, e->per_rank_len,
                          &segs, &n, &cap);
    }
    if (rc != RP_OK) {
        free(segs);
        return rc;
    }
    *segs_p = segs;
    *nsegs_p = n;
    return RP_OK;
}
