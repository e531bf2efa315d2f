/*
 * Manifest encoding: a planned manifest, checked whole first, to its one
 * canonical text (the grammar is in doc/checkpoint-format.md).
 */
#include "ckpt/manifest_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/crc32c.h"
#include "util/str.h"

typedef struct rp__mf_out {
    char *p;
    size_t len;
    size_t cap;
    rp_status_t st;
} rp__mf_out_t;

static void rp__mf_put(rp__mf_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rp__mf_put(rp__mf_out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->st != RP_OK) {
        return;
    }
    for (;;) {
        size_t room = o->cap - o->len;
        va_start(ap, fmt);
        n = vsnprintf(o->p + o->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->st = RP_ERR_INVALID_ARG;
            return;
        }
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        if (o->cap >= RP_CKPT_MANIFEST_MAX) {
            o->st = RP_ERR_INVALID_ARG;
            return;
        }
        {
            size_t ncap = o->cap * 2;
            char *np = realloc(o->p, ncap);
            if (np == NULL) {
                o->st = RP_ERR_NO_MEMORY;
                return;
            }
            o->p = np;
            o->cap = ncap;
        }
    }
}

rp_status_t rp__ckpt_manifest_encode(const rp__ckpt_manifest_t *m,
                                     char **text_p, size_t *len_p,
                                     char *err, size_t errlen)
{
    rp__mf_out_t o = {NULL, 0, 4096, RP_OK};
    char idhex[2 * RP_CKPT_ID_SIZE + 1];
    uint32_t i, r, c;
    rp_status_t st;

    if (m == NULL || text_p == NULL || len_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    st = rp__mf_check_fields(m, err, errlen);
    if (st == RP_OK) {
        st = rp__mf_check_regions(m, err, errlen);
    }
    if (st == RP_OK) {
        st = rp__mf_check_shards(m, err, errlen);
    }
    if (st != RP_OK) {
        return st;
    }
    o.p = malloc(o.cap);
    if (o.p == NULL) {
        rp__errbuf(err, errlen, "out of memory");
        return RP_ERR_NO_MEMORY;
    }
    rp__ckpt_id_format(m->ckpt_id, idhex, sizeof(idhex));
    rp__mf_put(&o, "%s %u\n", RP_CKPT_MANIFEST_MAGIC, m->version);
    rp__mf_put(&o, "step %llu\n", (unsigned long long)m->step);
    rp__mf_put(&o, "world_size %u\n", m->world_size);
    rp__mf_put(&o, "slurm_job_id %u\n", m->job_id);
    rp__mf_put(&o, "slurm_restart_count %u\n", m->restart_count);
    rp__mf_put(&o, "created_ns %llu\n", (unsigned long long)m->created_ns);
    rp__mf_put(&o, "checkpoint_id %s\n", idhex);
    rp__mf_put(&o, "chunk_size %llu\n", (unsigned long long)m->chunk_size);
    rp__mf_put(&o, "stripe_unit %llu\n", (unsigned long long)m->stripe_unit);
    rp__mf_put(&o, "stream_length %llu\n",
              (unsigned long long)m->stream_length);
    rp__mf_put(&o, "per_rank_length %llu\n",
              (unsigned long long)m->per_rank_length);
    rp__mf_put(&o, "regions %u\n", m->nregions);
    for (i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *rg = &m->regions[i];
        rp__mf_put(&o, "region %s %s %llu %llu %08x\n", rg->name,
                  rp__mf_kind_names[rg->kind], (unsigned long long)rg->offset,
                  (unsigned long long)rg->size, rg->flags);
    }
    rp__mf_put(&o, "shards %u\n", m->world_size);
    for (r = 0; r < m->world_size; r++) {
        const rp__ckpt_shard_info_t *sh = &m->shards[r];
        rp__mf_put(&o, "shard %u %llu %llu %llu %u\n", r,
                  (unsigned long long)sh->stripe_offset,
                  (unsigned long long)sh->stripe_length,
                  (unsigned long long)sh->length, sh->nchunks);
        for (c = 0; c < sh->nchunks; c++) {
            if (c % RP_CKPT_CRCS_PER_LINE == 0) {
                rp__mf_put(&o, "crc %u %u", r, c);
            }
            rp__mf_put(&o, " %08x", sh->chunk_crc[c]);
            if (c % RP_CKPT_CRCS_PER_LINE == RP_CKPT_CRCS_PER_LINE - 1 ||
                c + 1 == sh->nchunks) {
                rp__mf_put(&o, "\n");
            }
        }
    }
    rp__mf_put(&o, "crc32c %08x\n", rp__crc32c(0, o.p, o.len));
    if (o.st != RP_OK || o.len > RP_CKPT_MANIFEST_MAX) {
        rp__errbuf(err, errlen, o.st == RP_ERR_NO_MEMORY
                                   ? "out of memory"
                                   : "manifest larger than the limit");
        free(o.p);
        return o.st != RP_OK ? o.st : RP_ERR_INVALID_ARG;
    }
    *text_p = o.p;
    *len_p = o.len;
    return RP_OK;
}
