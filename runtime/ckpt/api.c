/*
 * The public checkpoint functions: argument checks, then the engine.
 */
#include "config.h"

#include "ringpoint/ckpt.h"
#include "ckpt/engine.h"
#include "core/context.h"
#include "util/log.h"

static rp__ckpt_engine_t *rp_api_engine(rp_context_h ctx, const char *what,
                                        rp_status_t *rc_p)
{
    rp__ckpt_engine_t *e;

    if (ctx == NULL) {
        rp_error("%s: ctx is NULL", what);
        *rc_p = RP_ERR_INVALID_ARG;
        return NULL;
    }
    e = rp__ckpt_engine_get(ctx);
    *rc_p = e != NULL ? RP_OK : RP_ERR_NO_MEMORY;
    return e;
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

rp_status_t rp_restore(rp_context_h ctx, const char *const names[],
                       size_t nnames, rp_restore_info_t *info)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_restore", &rc);

    if (e == NULL) {
        return rc;
    }
    if (names == NULL && nnames > 0) {
        rp_error("rp_restore: names is NULL with nnames %zu", nnames);
        return RP_ERR_INVALID_ARG;
    }
    if (e->pend.active) {
        rp_error("rp_restore: a checkpoint is being written");
        return RP_ERR_BUSY;
    }
    return rp__ckpt_restore(e, names, nnames, info);
}

rp_status_t rp_step(rp_context_h ctx, uint64_t step, rp_step_result_t *result)
{
    rp_status_t rc;
    rp__ckpt_engine_t *e = rp_api_engine(ctx, "rp_step", &rc);

    if (e == NULL) {
        return rc;
    }
    return rp__ckpt_step(e, step, result);
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
