/*
 * The manifest as a model: allocation, the plan of every shard's stripe,
 * length and chunk count, the queries, and the structure rules that the
 * encoder, the planner and the parser all apply (manifest_int.h).
 */
#include "ckpt/format/manifest.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/format/layout.h"
#include "ckpt/format/manifest_grammar.h"
#include "ckpt/format/manifest_int.h"
#include "util/str.h"

void rp__ckpt_id_format(const uint8_t id[RP_CKPT_ID_SIZE], char *buf,
                        size_t len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned i;

    if (len < 2 * RP_CKPT_ID_SIZE + 1) {
        if (len > 0) {
            buf[0] = '\0';
        }
        return;
    }
    for (i = 0; i < RP_CKPT_ID_SIZE; i++) {
        buf[2 * i] = hex[id[i] >> 4];
        buf[2 * i + 1] = hex[id[i] & 0xf];
    }
    buf[2 * RP_CKPT_ID_SIZE] = '\0';
}

/* ---- structure checks, shared by encode, plan and parse ---------------- */

static bool rp__mf_name_ok(const char *name)
{
    size_t n = strnlen(name, RP_CKPT_REGION_NAME_MAX + 1);
    size_t i;

    if (n == 0 || n > RP_CKPT_REGION_NAME_MAX) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (name[i] <= ' ' || name[i] > '~') {
            return false;
        }
    }
    return true;
}

rp_status_t rp__mf_check_fields(const rp__ckpt_manifest_t *m, char *err,
                                size_t errlen)
{
    if (m->version != RP_CKPT_MANIFEST_VERSION) {
        rp__errbuf(err, errlen, "unsupported manifest version %u", m->version);
        return RP_ERR_INVALID_ARG;
    }
    if (m->world_size == 0 || m->world_size > RP_CKPT_MAX_WORLD) {
        rp__errbuf(err, errlen, "world_size %u out of range [1, %u]",
                  m->world_size, RP_CKPT_MAX_WORLD);
        return RP_ERR_INVALID_ARG;
    }
    if (m->chunk_size < RP_CKPT_MIN_CHUNK_SIZE ||
        m->chunk_size > RP_CKPT_MAX_CHUNK_SIZE ||
        m->chunk_size % RP_CKPT_MIN_CHUNK_SIZE != 0) {
        rp__errbuf(err, errlen,
                  "chunk_size %llu is not a multiple of 4096 in [4096, %llu]",
                  (unsigned long long)m->chunk_size,
                  (unsigned long long)RP_CKPT_MAX_CHUNK_SIZE);
        return RP_ERR_INVALID_ARG;
    }
    if (m->stripe_unit != RP_CKPT_STRIPE_UNIT) {
        rp__errbuf(err, errlen, "stripe_unit %llu, expected %u",
                  (unsigned long long)m->stripe_unit, RP_CKPT_STRIPE_UNIT);
        return RP_ERR_INVALID_ARG;
    }
    if (m->stream_length > RP_CKPT_MAX_LENGTH ||
        m->per_rank_length > RP_CKPT_MAX_LENGTH) {
        rp__errbuf(err, errlen, "stream or per-rank length above %llu",
                  (unsigned long long)RP_CKPT_MAX_LENGTH);
        return RP_ERR_INVALID_ARG;
    }
    if (m->nregions > RP_CKPT_MAX_REGIONS) {
        rp__errbuf(err, errlen, "%u regions, at most %u allowed", m->nregions,
                  RP_CKPT_MAX_REGIONS);
        return RP_ERR_INVALID_ARG;
    }
    if ((m->nregions > 0 && m->regions == NULL) || m->shards == NULL) {
        rp__errbuf(err, errlen, "manifest not initialised");
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

static int rp__mf_cmp_names(const void *a, const void *b)
{
    const rp__ckpt_region_t *const *ra = a;
    const rp__ckpt_region_t *const *rb = b;

    return strcmp((*ra)->name, (*rb)->name);
}

rp_status_t rp__mf_check_regions(const rp__ckpt_manifest_t *m, char *err,
                                 size_t errlen)
{
    uint64_t end[2] = {0, 0};
    const uint64_t total[2] = {m->stream_length, m->per_rank_length};
    const rp__ckpt_region_t **sorted;
    uint32_t i;

    for (i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *rg = &m->regions[i];
        unsigned k;

        if (!rp__mf_name_ok(rg->name)) {
            rp__errbuf(err, errlen,
                      "region %u: name must be 1-%u printable characters "
                      "without spaces", i, RP_CKPT_REGION_NAME_MAX);
            return RP_ERR_INVALID_ARG;
        }
        if (rg->kind != RP_CKPT_REGION_REPLICATED &&
            rg->kind != RP_CKPT_REGION_PER_RANK) {
            rp__errbuf(err, errlen, "region '%s': invalid kind %d", rg->name,
                      (int)rg->kind);
            return RP_ERR_INVALID_ARG;
        }
        k = (unsigned)rg->kind;
        /* offset >= end[k] and the totals are <= 2^56, so these additions
         * and subtractions cannot wrap. */
        if (rg->offset < end[k] || rg->offset > total[k] ||
            rg->size > total[k] - rg->offset) {
            rp__errbuf(err, errlen,
                      "region '%s': [%llu, +%llu) overlaps the previous %s "
                      "region or ends past its %s length %llu", rg->name,
                      (unsigned long long)rg->offset,
                      (unsigned long long)rg->size, rp__mf_kind_names[k],
                      k == 0 ? "stream" : "per-rank",
                      (unsigned long long)total[k]);
            return RP_ERR_INVALID_ARG;
        }
        end[k] = rg->offset + rg->size;
    }
    if (m->nregions < 2) {
        return RP_OK;
    }
    sorted = malloc(m->nregions * sizeof(*sorted));
    if (sorted == NULL) {
        rp__errbuf(err, errlen, "out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (i = 0; i < m->nregions; i++) {
        sorted[i] = &m->regions[i];
    }
    qsort(sorted, m->nregions, sizeof(*sorted), rp__mf_cmp_names);
    for (i = 1; i < m->nregions; i++) {
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
            rp__errbuf(err, errlen, "region name '%s' used twice",
                      sorted[i]->name);
            free(sorted);
            return RP_ERR_INVALID_ARG;
        }
    }
    free(sorted);
    return RP_OK;
}

void rp__mf_shard_geometry(const rp__ckpt_manifest_t *m, uint32_t rank,
                           rp__ckpt_shard_info_t *out)
{
    /* world_size was checked, so this cannot fail. */
    (void)rp__ckpt_stripe(m->stream_length, m->world_size, rank,
                          &out->stripe_offset, &out->stripe_length);
    out->length = out->stripe_length + m->per_rank_length;
}

uint64_t rp__mf_nchunks(uint64_t length, uint64_t chunk_size)
{
    return length / chunk_size + (length % chunk_size != 0);
}

rp_status_t rp__mf_plan(rp__ckpt_manifest_t *m, uint64_t max_chunks,
                        char *err, size_t errlen)
{
    uint64_t total = 0, next = 0;
    uint32_t r;
    rp_status_t st;

    st = rp__mf_check_fields(m, err, errlen);
    if (st != RP_OK) {
        return st;
    }
    st = rp__mf_check_regions(m, err, errlen);
    if (st != RP_OK) {
        return st;
    }
    for (r = 0; r < m->world_size; r++) {
        rp__ckpt_shard_info_t *sh = &m->shards[r];
        uint64_t n;

        rp__mf_shard_geometry(m, r, sh);
        n = rp__mf_nchunks(sh->length, m->chunk_size);
        if (n > max_chunks - total) {
            rp__errbuf(err, errlen,
                      "more than %llu chunks in total; use a larger "
                      "chunk_size", (unsigned long long)max_chunks);
            return RP_ERR_INVALID_ARG;
        }
        total += n;
        sh->nchunks = (uint32_t)n;
        sh->chunk_crc = NULL;
    }
    /* What the encoder will refuse, refused here: before any data is
     * written, and before the CRC table is allocated. */
    st = rp__mf_check_size(m, NULL, err, errlen);
    if (st != RP_OK) {
        return st;
    }
    free(m->crc_pool);
    m->crc_pool = calloc(total > 0 ? total : 1, sizeof(uint32_t));
    m->total_chunks = 0;
    if (m->crc_pool == NULL) {
        rp__errbuf(err, errlen, "out of memory for %llu chunk CRCs",
                  (unsigned long long)total);
        return RP_ERR_NO_MEMORY;
    }
    m->total_chunks = total;
    for (r = 0; r < m->world_size; r++) {
        m->shards[r].chunk_crc = m->crc_pool + next;
        next += m->shards[r].nchunks;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_manifest_init(rp__ckpt_manifest_t *m, uint32_t world_size,
                                   uint32_t nregions)
{
    if (m == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    memset(m, 0, sizeof(*m));
    if (world_size == 0 || world_size > RP_CKPT_MAX_WORLD ||
        nregions > RP_CKPT_MAX_REGIONS) {
        return RP_ERR_INVALID_ARG;
    }
    m->shards = calloc(world_size, sizeof(*m->shards));
    if (m->shards == NULL) {
        goto err_shards;
    }
    if (nregions > 0) {
        m->regions = calloc(nregions, sizeof(*m->regions));
        if (m->regions == NULL) {
            goto err_regions;
        }
    }
    m->version = RP_CKPT_MANIFEST_VERSION;
    m->world_size = world_size;
    m->nregions = nregions;
    m->chunk_size = RP_CKPT_DEFAULT_CHUNK_SIZE;
    m->stripe_unit = RP_CKPT_STRIPE_UNIT;
    return RP_OK;

err_regions:
    free(m->shards);
    m->shards = NULL;
err_shards:
    return RP_ERR_NO_MEMORY;
}

rp_status_t rp__ckpt_manifest_plan(rp__ckpt_manifest_t *m, char *err,
                                   size_t errlen)
{
    if (m == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    return rp__mf_plan(m, RP_CKPT_MAX_TOTAL_CHUNKS, err, errlen);
}

void rp__ckpt_manifest_free(rp__ckpt_manifest_t *m)
{
    if (m == NULL) {
        return;
    }
    free(m->regions);
    free(m->shards);
    free(m->crc_pool);
    memset(m, 0, sizeof(*m));
}

long rp__ckpt_manifest_find_region(const rp__ckpt_manifest_t *m,
                                   const char *name)
{
    uint32_t i;

    if (m == NULL || name == NULL) {
        return -1;
    }
    for (i = 0; i < m->nregions; i++) {
        if (strcmp(m->regions[i].name, name) == 0) {
            return (long)i;
        }
    }
    return -1;
}

uint64_t rp__ckpt_manifest_payload_bytes(const rp__ckpt_manifest_t *m)
{
    uint64_t sum = 0;
    uint32_t r;

    if (m == NULL || m->shards == NULL) {
        return 0;
    }
    for (r = 0; r < m->world_size; r++) {
        sum += m->shards[r].length;
    }
    return sum;
}

void rp__ckpt_manifest_shard_header(const rp__ckpt_manifest_t *m,
                                    uint32_t rank,
                                    rp__ckpt_shard_header_t *hdr)
{
    memset(hdr, 0, sizeof(*hdr));
    memcpy(hdr->ckpt_id, m->ckpt_id, RP_CKPT_ID_SIZE);
    hdr->step = m->step;
    hdr->rank = rank;
    hdr->world_size = m->world_size;
    hdr->payload_length = m->shards[rank].length;
}

rp_status_t rp__mf_check_shards(const rp__ckpt_manifest_t *m, char *err,
                                size_t errlen)
{
    uint32_t r;

    for (r = 0; r < m->world_size; r++) {
        rp__ckpt_shard_info_t want;
        const rp__ckpt_shard_info_t *sh = &m->shards[r];

        rp__mf_shard_geometry(m, r, &want);
        if (sh->stripe_offset != want.stripe_offset ||
            sh->stripe_length != want.stripe_length ||
            sh->length != want.length ||
            sh->nchunks != rp__mf_nchunks(want.length, m->chunk_size) ||
            (sh->nchunks > 0 && sh->chunk_crc == NULL)) {
            rp__errbuf(err, errlen,
                      "shard %u does not match the layout (call "
                      "rp__ckpt_manifest_plan after changing it)", r);
            return RP_ERR_INVALID_ARG;
        }
    }
    return RP_OK;
}
