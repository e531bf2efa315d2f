/*
 * The public checkpoint functions: argument checks, then the engine.
 */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/engine/engine.h"
#include "ckpt/engine/regions.h"
#include "ckpt/read/reader.h"
#include "ckpt/read/reader_find.h"
#include "core/context.h"
#include "core/fork.h"
#include "ringpoint/ckpt.h"
#include "util/log.h"
#include "util/step_marker.h"

/* The public table descriptions are bound by layout (ctypes): keep them. */
_Static_assert(RP_REGION_NAME_MAX == RP_CKPT_REGION_NAME_MAX,
               "public and manifest region name limits differ");
_Static_assert(offsetof(rp_ckpt_region_desc_t, kind) == 132 &&
               offsetof(rp_ckpt_region_desc_t, size) == 136 &&
               sizeof(rp_ckpt_region_desc_t) == 144,
               "rp_ckpt_region_desc_t layout changed");
_Static_assert(offsetof(rp_ckpt_desc_t, world_size) == 8 &&
               offsetof(rp_ckpt_desc_t, nregions) == 16 &&
               offsetof(rp_ckpt_desc_t, regions) == 24 &&
               offsetof(rp_ckpt_desc_t, path) == 32,
               "rp_ckpt_desc_t layout changed");

static rp__ckpt_engine_t *rp_api_engine(rp_context_h ctx, const char *what,
                                        rp_status_t *rc_p)
{
    rp__ckpt_engine_t *e;

    if (ctx == NULL) {
        rp_error("%s: ctx is NULL", what);
        *rc_p = RP_ERR_INVALID_ARG;
        return NULL;
    }
    *rc_p = rp__fork_check(what);
    if (*rc_p == RP_OK) {
        *rc_p = rp__context_job_only(ctx, what);
    }
    if (*rc_p != RP_OK) {
        return NULL;
    }
    *rc_p = rp__ckpt_engine_get(ctx, &e);
    return *rc_p == RP_OK ? e : NULL;
}

rp_status_t rp_region_register(rp_context_h ctx, const char *name, void *addr,
                               size_t size, rp_region_kind_t kind)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_region_register", &rc);

    if (e == NULL) {
        return rc;
    }
    if (name == NULL) {
        rp_error("rp_region_register: name is NULL");
        return RP_ERR_INVALID_ARG;
    }
    if (kind != RP_REGION_REPLICATED && kind != RP_REGION_PER_RANK) {
        rp_error("rp_region_register(%s): invalid kind %d", name, (int)kind);
        return RP_ERR_INVALID_ARG;
    }
    return rp__ckpt_regions_add(e, name, addr, size,
                                kind == RP_REGION_REPLICATED
                                    ? RP_CKPT_REGION_REPLICATED
                                    : RP_CKPT_REGION_PER_RANK);
}

rp_status_t rp_region_update(rp_context_h ctx, const char *name, void *addr,
                             size_t size)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_region_update", &rc);

    if (e == NULL) {
        return rc;
    }
    if (name == NULL) {
        rp_error("rp_region_update: name is NULL");
        return RP_ERR_INVALID_ARG;
    }
    return rp__ckpt_regions_update(e, name, addr, size);
}

rp_status_t rp_region_unregister(rp_context_h ctx, const char *name)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_region_unregister", &rc);

    if (e == NULL) {
        return rc;
    }
    if (name == NULL) {
        rp_error("rp_region_unregister: name is NULL");
        return RP_ERR_INVALID_ARG;
    }
    return rp__ckpt_regions_remove(e, name);
}

/* What rp_restore and rp_restore_step share. */
static rp_status_t rp_api_restore(rp_context_h ctx, const char *what,
                                  const char *const names[], size_t nnames,
                                  bool exact, uint64_t step,
                                  rp_restore_info_t *info)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, what, &rc);

    if (e == NULL) {
        return rc;
    }
    if (names == NULL && nnames > 0) {
        rp_error("%s: names is NULL with nnames %zu", what, nnames);
        return RP_ERR_INVALID_ARG;
    }
    if (e->pend.active) {
        rp_error("%s: a checkpoint is being written", what);
        return RP_ERR_BUSY;
    }
    return rp__ckpt_restore(e, names, nnames, exact, step, info);
}

rp_status_t rp_restore(rp_context_h ctx, const char *const names[],
                       size_t nnames, rp_restore_info_t *info)
{
    return rp_api_restore(ctx, "rp_restore", names, nnames, false, 0, info);
}

rp_status_t rp_restore_step(rp_context_h ctx, uint64_t step,
                            const char *const names[], size_t nnames,
                            rp_restore_info_t *info)
{
    if (info != NULL) {
        memset(info, 0, sizeof(*info));
    }
    return rp_api_restore(ctx, "rp_restore_step", names, nnames, true, step,
                          info);
}

rp_status_t rp_ckpt_find(rp_context_h ctx, uint64_t before_step,
                         rp_ckpt_desc_t *desc)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e;

    if (desc == NULL) {
        rp_error("rp_ckpt_find: desc is NULL");
        return RP_ERR_INVALID_ARG;
    }
    memset(desc, 0, sizeof(*desc));
    e = rp_api_engine(ctx, "rp_ckpt_find", &rc);
    if (e == NULL) {
        return rc;
    }
    return rp__ckpt_find(e, before_step, desc);
}

void rp_ckpt_desc_free(rp_ckpt_desc_t *desc)
{
    if (desc == NULL) {
        return;
    }
    free(desc->regions);
    memset(desc, 0, sizeof(*desc));
}

rp_status_t rp_step(rp_context_h ctx, uint64_t step, rp_step_result_t *result)
{
    static int marked;
    rp_step_result_t mine, *r = result != NULL ? result : &mine;
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_step", &rc);

    if (e == NULL) {
        return rc;
    }
    rc = rp__ckpt_step(e, step, r);
    /* The plugin requeues a job that exits RP_EXIT_STOPPED only after a
     * stop that got this far (util/step_marker.h). */
    if (rc == RP_OK && r->stop && !marked) {
        marked = 1;
        rp__step_marker_stop();
    }
    return rc;
}

rp_status_t rp_checkpoint(rp_context_h ctx, uint64_t step)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_checkpoint", &rc);

    if (e == NULL) {
        return rc;
    }
    return rp__ckpt_checkpoint_now(e, step);
}
