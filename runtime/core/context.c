/*
 * What every layer may ask of a context: the version, and the identity
 * and settings rp_context_query reports.
 */
#include "config.h"

#include "core/context.h"
#include "util/log.h"
#include "util/str.h"

#include <string.h>

const char *rp_version(void)
{
    return PACKAGE_VERSION;
}

static void rp_copy_name(char *dst, const char *src)
{
    rp__strlcpy(dst, src, RP_NAME_MAX);
}

rp_status_t rp_context_query(rp_context_h ctx, rp_context_attr_t *attr)
{
    const rp_bootstrap_t *bs;
    uint64_t m;

    if (ctx == NULL || attr == NULL) {
        rp_error("rp_context_query: NULL %s", ctx == NULL ? "ctx" : "attr");
        return RP_ERR_INVALID_ARG;
    }
    bs = ctx->bootstrap;
    m = attr->field_mask;
    if (m & RP_CONTEXT_ATTR_FIELD_RANK)       attr->rank = bs->rank;
    if (m & RP_CONTEXT_ATTR_FIELD_SIZE)       attr->size = bs->size;
    if (m & RP_CONTEXT_ATTR_FIELD_LOCAL_RANK) attr->local_rank = bs->local_rank;
    if (m & RP_CONTEXT_ATTR_FIELD_LOCAL_SIZE) attr->local_size = bs->local_size;
    if (m & RP_CONTEXT_ATTR_FIELD_NODE_ID)    attr->node_id = bs->node_id;
    if (m & RP_CONTEXT_ATTR_FIELD_NODE_COUNT) attr->node_count = bs->node_count;
    if (m & RP_CONTEXT_ATTR_FIELD_NODE_NAME)  rp_copy_name(attr->node_name, bs->node_name);
    if (m & RP_CONTEXT_ATTR_FIELD_BOOTSTRAP)  attr->bootstrap = bs->ops->name;
    if (m & RP_CONTEXT_ATTR_FIELD_JOB_ID)     rp_copy_name(attr->job_id, bs->job_id);
    if (m & RP_CONTEXT_ATTR_FIELD_CKPT_INTERVAL) {
        attr->ckpt_interval_s = ctx->settings.ckpt_interval_s;
    }
    if (m & RP_CONTEXT_ATTR_FIELD_RING) {
        attr->left_rank = (int)ctx->left.rank;
        attr->right_rank = (int)ctx->right.rank;
        rp_copy_name(attr->left_node, ctx->left.node_name);
        rp_copy_name(attr->right_node, ctx->right.node_name);
    }
    if (ctx->sub != NULL) {
        /* A sub-communicator's own place; the rest is the job's. */
        if (m & RP_CONTEXT_ATTR_FIELD_RANK) attr->rank = ctx->sub->rank;
        if (m & RP_CONTEXT_ATTR_FIELD_SIZE) attr->size = ctx->sub->size;
    }
    if (m & RP_CONTEXT_ATTR_FIELD_PARENT) {
        attr->parent_rank = ctx->sub != NULL ? ctx->sub->parent_rank : -1;
        attr->job_rank = bs->rank;
    }
    return RP_OK;
}

rp_status_t rp__context_job_only(rp_context_h ctx, const char *what)
{
    if (ctx != NULL && ctx->sub != NULL) {
        rp_error("%s: ctx is %s; checkpoints belong to the whole job: pass "
                 "the context rp_init returned", what, ctx->sub->name);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}
