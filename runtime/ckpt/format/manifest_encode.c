/*
 * Manifest encoding: a planned manifest, checked whole first, to its one
 * canonical text (the grammar is in doc/checkpoint-format.md), into a
 * buffer of exactly the size manifest_grammar.c computes for the planner.
 */
#include "ckpt/format/manifest_encode.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/format/crc32c.h"
#include "ckpt/format/manifest_grammar.h"
#include "ckpt/format/manifest_int.h"
#include "util/str.h"

typedef struct rp__mf_out {
    char *p;
    size_t len;
    size_t cap; /* the planned size + 1 (vsnprintf's NUL) */
    rp_status_t st;
} rp__mf_out_t;

static void rp__mf_put(rp__mf_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Into the buffer sized by rp__mf_encoded_size: text that does not fit
 * means the two disagree, a bug the encoder reports rather than writes. */
static void rp__mf_put(rp__mf_out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->st != RP_OK) {
        return;
    }
    va_start(ap, fmt);
    n = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= o->cap - o->len) {
        o->st = RP_ERR_STATE;
        return;
    }
    o->len += (size_t)n;
}

rp_status_t rp__ckpt_manifest_encode(const rp__ckpt_manifest_t *m,
                                     char **text_p, size_t *len_p,
                                     char *err, size_t errlen)
{
    rp__mf_out_t o = {NULL, 0, 0, RP_OK};
    char idhex[2 * RP_CKPT_ID_SIZE + 1];
    uint64_t size = 0;
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
    if (st == RP_OK) {
        /* The planner's own verdict (rp__mf_plan), on the same numbers. */
        st = rp__mf_check_size(m, &size, err, errlen);
    }
    if (st != RP_OK) {
        return st;
    }
    o.cap = (size_t)size + 1;
    o.p = malloc(o.cap);
    if (o.p == NULL) {
        rp__errbuf(err, errlen, "out of memory for a manifest of %llu bytes",
                  (unsigned long long)size);
        return RP_ERR_NO_MEMORY;
    }
    rp__ckpt_id_format(m->ckpt_id, idhex, sizeof(idhex));
    rp__mf_put(&o, "%s %u\n", RP_CKPT_MANIFEST_MAGIC, m->version);
    rp__mf_put(&o, "%s %llu\n", rp__mf_keys[RP_MF_STEP],
              (unsigned long long)m->step);
    rp__mf_put(&o, "%s %u\n", rp__mf_keys[RP_MF_WORLD], m->world_size);
    rp__mf_put(&o, "%s %u\n", rp__mf_keys[RP_MF_JOB], m->job_id);
    rp__mf_put(&o, "%s %u\n", rp__mf_keys[RP_MF_RESTART], m->restart_count);
    rp__mf_put(&o, "%s %llu\n", rp__mf_keys[RP_MF_CREATED],
              (unsigned long long)m->created_ns);
    rp__mf_put(&o, "%s %s\n", rp__mf_keys[RP_MF_ID], idhex);
    rp__mf_put(&o, "%s %llu\n", rp__mf_keys[RP_MF_CHUNK],
              (unsigned long long)m->chunk_size);
    rp__mf_put(&o, "%s %llu\n", rp__mf_keys[RP_MF_UNIT],
              (unsigned long long)m->stripe_unit);
    rp__mf_put(&o, "%s %llu\n", rp__mf_keys[RP_MF_STREAM],
              (unsigned long long)m->stream_length);
    rp__mf_put(&o, "%s %llu\n", rp__mf_keys[RP_MF_PERRANK],
              (unsigned long long)m->per_rank_length);
    rp__mf_put(&o, "%s %u\n", rp__mf_keys[RP_MF_REGIONS], m->nregions);
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
    if (o.st != RP_OK || o.len != size) {
        rp__errbuf(err, errlen, "internal error: the manifest encodes to "
                  "other than the %llu bytes planned",
                  (unsigned long long)size);
        free(o.p);
        return RP_ERR_STATE;
    }
    *text_p = o.p;
    *len_p = o.len;
    return RP_OK;
}
