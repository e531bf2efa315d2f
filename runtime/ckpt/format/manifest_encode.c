/*
 * Manifest encoding: a planned manifest, checked whole first, to its one
 * canonical text (the grammar is in doc/checkpoint-format.md), and the
 * size of that text, computed once for both the planner and the encoder.
 */
#include "ckpt/format/manifest_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/format/crc32c.h"
#include "util/str.h"

typedef struct rp__mf_out {
    char *p;
    size_t len;
    size_t cap; /* the planned size + 1 (vsnprintf's NUL) */
    rp_status_t st;
} rp__mf_out_t;

/* Decimal digits of @v. */
static uint64_t rp__mf_digits(uint64_t v)
{
    uint64_t d = 1;

    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* "KEY VALUE\n" */
static uint64_t rp__mf_key_len(unsigned key, uint64_t value)
{
    return strlen(rp__mf_keys[key]) + 1 + rp__mf_digits(value) + 1;
}

/* The digits of the first chunk numbers of @nlines CRC lines (0, 8, 16,
 * ...): every number has one, and one more for each power of ten it
 * reaches; O(digits), not O(lines), so that planning 2^26 chunks is free. */
static uint64_t rp__mf_crc_line_digits(uint64_t nlines)
{
    uint64_t sum = nlines, p10 = 10;

    for (unsigned j = 1; j < 20; j++, p10 *= 10) {
        /* Lines whose first chunk number is at least 10^j. */
        uint64_t first = (p10 + RP_CKPT_CRCS_PER_LINE - 1) /
                         RP_CKPT_CRCS_PER_LINE;

        if (first >= nlines) {
            break;
        }
        sum += nlines - first;
    }
    return sum;
}

uint64_t rp__mf_encoded_size(const rp__ckpt_manifest_t *m)
{
    /* Every line the encoder writes, in its order; the fuzz target
     * manifest_build holds the two to the same byte. */
    uint64_t n = strlen(RP_CKPT_MANIFEST_MAGIC) + 1 +
                 rp__mf_digits(m->version) + 1;
    const uint64_t header[RP_MF_NKEYS] = {
        m->step, m->world_size, m->job_id, m->restart_count, m->created_ns,
        0, m->chunk_size, m->stripe_unit, m->stream_length,
        m->per_rank_length, m->nregions};
    uint32_t i, r;

    for (i = 0; i < RP_MF_NKEYS; i++) {
        n += i == RP_MF_ID ? strlen(rp__mf_keys[i]) + 1 +
                                 2 * RP_CKPT_ID_SIZE + 1
                           : rp__mf_key_len(i, header[i]);
    }
    for (i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *rg = &m->regions[i];

        /* "region NAME KIND OFFSET SIZE FLAGS\n", the flags 8 hex */
        n += strlen("region ") + strlen(rg->name) + 1 +
             strlen(rp__mf_kind_names[rg->kind]) + 1 +
             rp__mf_digits(rg->offset) + 1 + rp__mf_digits(rg->size) + 1 +
             8 + 1;
    }
    n += strlen("shards ") + rp__mf_digits(m->world_size) + 1;
    for (r = 0; r < m->world_size; r++) {
        const rp__ckpt_shard_info_t *sh = &m->shards[r];
        const uint64_t nlines = (sh->nchunks + RP_CKPT_CRCS_PER_LINE - 1) /
                                RP_CKPT_CRCS_PER_LINE;

        /* "shard R OFFSET LENGTH SIZE NCHUNKS\n" */
        n += strlen("shard ") + rp__mf_digits(r) + 1 +
             rp__mf_digits(sh->stripe_offset) + 1 +
             rp__mf_digits(sh->stripe_length) + 1 +
             rp__mf_digits(sh->length) + 1 + rp__mf_digits(sh->nchunks) + 1;
        /* "crc R FIRST" + " XXXXXXXX" per chunk + "\n", per line */
        n += nlines * (strlen("crc ") + rp__mf_digits(r) + 1 + 1) +
             rp__mf_crc_line_digits(nlines) +
             (uint64_t)sh->nchunks * RP_MF_MIN_CRC_BYTES;
    }
    return n + RP_MF_TRAILER_LEN;
}

rp_status_t rp__mf_check_size(const rp__ckpt_manifest_t *m, uint64_t *size_p,
                              char *err, size_t errlen)
{
    uint64_t n = rp__mf_encoded_size(m);

    if (n > RP_CKPT_MANIFEST_MAX) {
        rp__errbuf(err, errlen,
                  "the manifest would be %llu bytes, more than the limit of "
                  "%u; use a larger chunk_size", (unsigned long long)n,
                  RP_CKPT_MANIFEST_MAX);
        return RP_ERR_INVALID_ARG;
    }
    if (size_p != NULL) {
        *size_p = n;
    }
    return RP_OK;
}

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
