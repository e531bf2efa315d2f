/*
 * rp_ckpt_find: rank 0 picks the checkpoint restore would choose (newest
 * complete, below a step) and every rank receives its region table.
 */
#include "config.h"

#include "ckpt/read/reader_find.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt/catalog/validate.h"
#include "ckpt/read/reader.h"
#include "ckpt/read/reader_int.h"
#include "ringpoint/coll.h"
#include "util/log.h"
#include "util/str.h"

/* What rank 0 tells everyone about the checkpoint rp_ckpt_find chose. */
typedef struct rp__rd_find_msg {
    int32_t status;
    uint32_t world_size;
    uint64_t step;
    uint64_t nregions;
    char name[RP_CKPT_NAME_MAX];
} rp__rd_find_msg_t;

/* Rank 0: the newest complete checkpoint below @before whose manifest
 * reads, as restore would choose it; its table into *@regs_p (malloc'd). */
static rp_status_t rp__rd_find_root(rp__ckpt_engine_t *e, uint64_t before,
                                    rp__rd_find_msg_t *msg,
                                    rp_ckpt_region_desc_t **regs_p)
{
    char (*cands)[RP_CKPT_NAME_MAX] = NULL;
    rp__ckpt_manifest_t m;
    rp__ckpt_state_t state;
    char errmsg[512];
    size_t ncands = 0, i;
    uint32_t k;
    rp_status_t rc;

    rc = rp__rd_candidates(e, &cands, &ncands);
    if (rc != RP_OK) {
        return rc;
    }
    rc = RP_ERR_NOT_FOUND;
    for (i = 0; i < ncands && rc == RP_ERR_NOT_FOUND; i++) {
        uint64_t step;
        int cfd;

        if (!rp__ckpt_parse_committed(cands[i], &step) ||
            (before != UINT64_MAX && step >= before)) {
            continue;
        }
        cfd = openat(e->rootfd, cands[i], RP_RD_DIR_FLAGS);
        if (cfd < 0) {
            rp_warn("rp_ckpt_find: open %s/%s: %s", e->dir, cands[i],
                    strerror(errno));
            continue;
        }
        if (rp__ckpt_load_manifest_at(cfd, cands[i], &m, &state, errmsg,
                                      sizeof(errmsg)) != RP_OK) {
            rp_warn("rp_ckpt_find: skipping %s/%s", e->dir, errmsg);
            (void)close(cfd);
            continue;
        }
        (void)close(cfd);
        *regs_p = calloc(m.nregions > 0 ? m.nregions : 1, sizeof(**regs_p));
        if (*regs_p == NULL) {
            rp_error("rp_ckpt_find: out of memory");
            rp__ckpt_manifest_free(&m);
            rc = RP_ERR_NO_MEMORY;
            break;
        }
        for (k = 0; k < m.nregions; k++) {
            rp_ckpt_region_desc_t *d = &(*regs_p)[k];

            (void)rp__strlcpy(d->name, m.regions[k].name, sizeof(d->name));
            d->kind = m.regions[k].kind == RP_CKPT_REGION_PER_RANK
                          ? RP_REGION_PER_RANK : RP_REGION_REPLICATED;
            d->size = m.regions[k].size;
        }
        msg->step = m.step;
        msg->world_size = m.world_size;
        msg->nregions = m.nregions;
        memcpy(msg->name, cands[i], RP_CKPT_NAME_MAX);
        rp__ckpt_manifest_free(&m);
        rc = RP_OK;
    }
    free(cands);
    return rc;
}

rp_status_t rp__ckpt_find(rp__ckpt_engine_t *e, uint64_t before_step,
                          rp_ckpt_desc_t *desc)
{
    rp_ckpt_region_desc_t *regs = NULL;
    rp__rd_find_msg_t msg;
    char label[RP_CKPT_LABEL_MAX];
    int32_t ok;
    rp_status_t rc;

    memset(&msg, 0, sizeof(msg));
    if (e->rank == 0) {
        msg.status = (int32_t)rp__rd_find_root(e, before_step, &msg, &regs);
    }
    rc = rp_broadcast(e->ctx, &msg, sizeof(msg), RP_DTYPE_UINT8, 0);
    if (rc != RP_OK) {
        goto err_free;
    }
    rc = (rp_status_t)msg.status;
    if (rc != RP_OK) {
        if (e->rank != 0 && rc != RP_ERR_NOT_FOUND) {
            rp_error("rp_ckpt_find: rank 0 could not list %s (%s)", e->dir,
                     rp_status_string(rc));
        }
        goto err_free;
    }
    if (e->rank != 0) {
        regs = calloc(msg.nregions > 0 ? (size_t)msg.nregions : 1,
                      sizeof(*regs));
        if (regs == NULL) {
            rp_error("rp_ckpt_find: out of memory for %llu regions",
                     (unsigned long long)msg.nregions);
        }
    }
    /* Every rank can receive the table, or none tries. */
    ok = regs != NULL;
    rc = rp_allreduce(e->ctx, &ok, &ok, 1, RP_DTYPE_INT32, RP_OP_MIN);
    if (rc != RP_OK) {
        goto err_free;
    }
    if (!ok) {
        rc = RP_ERR_NO_MEMORY;
        goto err_free;
    }
    if (msg.nregions > 0) {
        rc = rp_broadcast(e->ctx, regs,
                          (size_t)msg.nregions * sizeof(*regs),
                          RP_DTYPE_UINT8, 0);
        if (rc != RP_OK) {
            goto err_free;
        }
    }
    msg.name[RP_CKPT_NAME_MAX - 1] = '\0';
    snprintf(label, sizeof(label), "%s/%s", e->dir, msg.name);
    desc->step = msg.step;
    desc->world_size = msg.world_size;
    desc->nregions = (size_t)msg.nregions;
    desc->regions = regs;
    (void)rp__strlcpy(desc->path, label, sizeof(desc->path));
    return RP_OK;

err_free:
    free(regs);
    return rc;
}
