/*
 * Single-process bootstrap: rank 0 of 1, for programs started without a
 * process manager (a laptop run, a debugger, a unit test). The key-value
 * store is a short list, since only this process ever reads it.
 */
#include "config.h"

#include "bootstrap/bootstrap.h"
#include "bootstrap/host.h"
#include "util/log.h"
#include "util/str.h"

#include <stdlib.h>
#include <string.h>

typedef struct rp_single_kv {
    struct rp_single_kv *next;
    char *key;
    size_t len;
    unsigned char data[];
} rp_single_kv_t;

static rp_single_kv_t **rp_single_head(rp_bootstrap_t *bs)
{
    return (rp_single_kv_t **)&bs->impl;
}

static rp_status_t rp_single_put(rp_bootstrap_t *bs, const char *key,
                                 const void *data, size_t len)
{
    rp_single_kv_t **pp = rp_single_head(bs), *kv;

    /* Replace an earlier value, as PMIx_Put does. */
    for (; *pp != NULL; pp = &(*pp)->next) {
        if (strcmp((*pp)->key, key) == 0) {
            kv = *pp;
            *pp = kv->next;
            free(kv->key);
            free(kv);
            break;
        }
    }
    kv = malloc(sizeof(*kv) + len);
    if (kv == NULL) {
        goto err_nomem;
    }
    kv->key = strdup(key);
    if (kv->key == NULL) {
        goto err_free_kv;
    }
    kv->len = len;
    if (len > 0) {
        memcpy(kv->data, data, len);
    }
    kv->next = *rp_single_head(bs);
    *rp_single_head(bs) = kv;
    return RP_OK;

err_free_kv:
    free(kv);
err_nomem:
    rp_error("bootstrap: out of memory storing key '%s'", key);
    return RP_ERR_NO_MEMORY;
}

static rp_status_t rp_single_fence(rp_bootstrap_t *bs)
{
    (void)bs;
    return RP_OK;
}

static rp_status_t rp_single_get(rp_bootstrap_t *bs, int rank,
                                 const char *key, void **data_p,
                                 size_t *len_p)
{
    rp_single_kv_t *kv;
    void *copy;

    if (rank != 0) {
        rp_error("bootstrap: rank %d does not exist in a single-process job",
                 rank);
        return RP_ERR_INVALID_ARG;
    }
    for (kv = *rp_single_head(bs); kv != NULL; kv = kv->next) {
        if (strcmp(kv->key, key) == 0) {
            copy = malloc(kv->len > 0 ? kv->len : 1);
            if (copy == NULL) {
                rp_error("bootstrap: out of memory reading key '%s'", key);
                return RP_ERR_NO_MEMORY;
            }
            memcpy(copy, kv->data, kv->len);
            *data_p = copy;
            *len_p = kv->len;
            return RP_OK;
        }
    }
    return RP_ERR_NOT_FOUND;
}

static void rp_single_finalize(rp_bootstrap_t *bs)
{
    rp_single_kv_t *kv = *rp_single_head(bs), *next;

    for (; kv != NULL; kv = next) {
        next = kv->next;
        free(kv->key);
        free(kv);
    }
    bs->impl = NULL;
}

static const rp_bootstrap_ops_t rp_single_ops = {
    .name     = "single",
    .put      = rp_single_put,
    .fence    = rp_single_fence,
    .get      = rp_single_get,
    .finalize = rp_single_finalize,
};

rp_status_t rp__bootstrap_single_init(rp_bootstrap_t *bs)
{
    const char *job = getenv("SLURM_JOB_ID");

    bs->ops        = &rp_single_ops;
    bs->rank       = 0;
    bs->size       = 1;
    bs->local_rank = 0;
    bs->local_size = 1;
    bs->node_id    = 0;
    bs->node_count = 1;
    bs->impl       = NULL;
    bs->host_share = RP_HOST_SHARE_NO;
    rp__strlcpy(bs->host_share_why, "alone in the job",
                sizeof(bs->host_share_why));
    rp__bootstrap_default_node_name(bs->node_name, sizeof(bs->node_name));
    rp__strlcpy(bs->job_id, job != NULL ? job : "local", sizeof(bs->job_id));
    return RP_OK;
}
