/*
 * The checkpoint manifest parser (rp__ckpt_manifest_parse): the one file
 * that says what a checkpoint is, read from a directory others may write.
 * The input is a manifest text. Its final "crc32c X" line is set to the
 * checksum of what precedes it before parsing, so the fuzzer gets past
 * the checksum to the grammar; the input as given must be refused when
 * that changed it.
 *
 * Properties:
 *  - a parsed manifest encodes back to exactly the input bytes (the
 *    encoding is canonical, doc/checkpoint-format.md section 4);
 *  - every accepted value is within the format's limits, and the
 *    recorded shard geometry is what rp__ckpt_manifest_plan derives from
 *    the scalars and regions (the writer's validator accepts it);
 *  - a refusal is CORRUPT or NOT_SUPPORTED with a reason, and leaves the
 *    manifest zeroed.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/manifest.h"
#include "ckpt/format/manifest_encode.h"
#include "ckpt/format/manifest_parse.h"

#define CRC_LINE_LEN 16 /* "crc32c XXXXXXXX\n" */

static bool all_zero(const void *p, size_t n)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < n; i++) {
        if (b[i] != 0) {
            return false;
        }
    }
    return true;
}

/* The writer's view: the same scalars and regions, planned afresh. */
static void check_plan(const rp__ckpt_manifest_t *m)
{
    rp__ckpt_manifest_t p;
    char err[512] = "";
    uint64_t total = 0, payload = 0;

    FUZZ_CHECK(rp__ckpt_manifest_init(&p, m->world_size, m->nregions) == RP_OK,
               "init refuses world %u, %u regions", m->world_size,
               m->nregions);
    p.step = m->step;
    p.job_id = m->job_id;
    p.restart_count = m->restart_count;
    p.created_ns = m->created_ns;
    memcpy(p.ckpt_id, m->ckpt_id, sizeof(p.ckpt_id));
    p.chunk_size = m->chunk_size;
    p.stripe_unit = m->stripe_unit;
    p.stream_length = m->stream_length;
    p.per_rank_length = m->per_rank_length;
    if (m->nregions > 0) {
        memcpy(p.regions, m->regions, m->nregions * sizeof(*m->regions));
    }
    FUZZ_CHECK(rp__ckpt_manifest_plan(&p, err, sizeof(err)) == RP_OK,
               "the parser accepts what plan refuses: %s", err);
    for (uint32_t r = 0; r < m->world_size; r++) {
        const rp__ckpt_shard_info_t *a = &m->shards[r], *b = &p.shards[r];

        FUZZ_CHECK(a->stripe_offset == b->stripe_offset &&
                       a->stripe_length == b->stripe_length &&
                       a->length == b->length && a->nchunks == b->nchunks,
                   "shard %u as recorded differs from the plan", r);
        total += a->nchunks;
        payload += a->length;
    }
    FUZZ_CHECK(total == m->total_chunks, "%llu chunks, total_chunks %llu",
               (unsigned long long)total,
               (unsigned long long)m->total_chunks);
    FUZZ_CHECK(payload == rp__ckpt_manifest_payload_bytes(m),
               "payload bytes");
    rp__ckpt_manifest_free(&p);
}

static void check_limits(const rp__ckpt_manifest_t *m)
{
    FUZZ_CHECK(m->version == RP_CKPT_MANIFEST_VERSION, "version %u",
               m->version);
    FUZZ_CHECK(m->world_size >= 1 && m->world_size <= RP_CKPT_MAX_WORLD,
               "world %u", m->world_size);
    FUZZ_CHECK(m->nregions <= RP_CKPT_MAX_REGIONS, "%u regions", m->nregions);
    FUZZ_CHECK(m->chunk_size >= RP_CKPT_MIN_CHUNK_SIZE &&
                   m->chunk_size <= RP_CKPT_MAX_CHUNK_SIZE &&
                   m->chunk_size % 4096 == 0,
               "chunk size %llu", (unsigned long long)m->chunk_size);
    FUZZ_CHECK(m->stream_length <= RP_CKPT_MAX_LENGTH &&
                   m->per_rank_length <= RP_CKPT_MAX_LENGTH,
               "lengths");
    FUZZ_CHECK(m->total_chunks <= RP_CKPT_MAX_TOTAL_CHUNKS, "%llu chunks",
               (unsigned long long)m->total_chunks);
    for (uint32_t i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *r = &m->regions[i];
        uint64_t limit = r->kind == RP_CKPT_REGION_REPLICATED
                             ? m->stream_length
                             : m->per_rank_length;
        size_t n = strnlen(r->name, sizeof(r->name));

        FUZZ_CHECK(n >= 1 && n <= RP_CKPT_REGION_NAME_MAX, "region name");
        FUZZ_CHECK(r->offset <= limit && r->size <= limit - r->offset,
                   "region '%s' at %llu+%llu outside %llu", r->name,
                   (unsigned long long)r->offset,
                   (unsigned long long)r->size, (unsigned long long)limit);
        FUZZ_CHECK(rp__ckpt_manifest_find_region(m, r->name) == (long)i,
                   "region '%s' is not unique", r->name);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char crc_key[] = "crc32c ";
    rp__ckpt_manifest_t m;
    char err[512] = "", *text = NULL;
    uint8_t *buf;
    size_t len;
    rp_status_t st;
    bool fixed = false;

    buf = malloc(size > 0 ? size : 1);
    memcpy(buf, data, size);
    if (size >= CRC_LINE_LEN &&
        memcmp(buf + size - CRC_LINE_LEN, crc_key, 7) == 0 &&
        buf[size - 1] == '\n') {
        char hex[9];

        snprintf(hex, sizeof(hex), "%08x",
                 rp__crc32c(0, buf, size - CRC_LINE_LEN));
        fixed = memcmp(buf + size - 9, hex, 8) != 0;
        memcpy(buf + size - 9, hex, 8);
    }
    if (fixed) {
        FUZZ_CHECK(rp__ckpt_manifest_parse(data, size, &m, NULL, 0) != RP_OK,
                   "a manifest with a wrong crc32c line accepted");
    }
    st = rp__ckpt_manifest_parse(buf, size, &m, err, sizeof(err));
    if (st != RP_OK) {
        FUZZ_CHECK(st == RP_ERR_CORRUPT || st == RP_ERR_NOT_SUPPORTED ||
                       st == RP_ERR_NO_MEMORY,
                   "status %d", (int)st);
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
        FUZZ_CHECK(all_zero(&m, sizeof(m)), "a refusal left data behind");
        free(buf);
        return 0;
    }
    check_limits(&m);
    check_plan(&m);
    FUZZ_CHECK(rp__ckpt_manifest_encode(&m, &text, &len, err, sizeof(err)) ==
                   RP_OK,
               "a parsed manifest does not encode: %s", err);
    FUZZ_CHECK(len == size && memcmp(text, buf, size) == 0,
               "a parsed manifest of %zu bytes encodes to %zu other bytes",
               size, len);
    free(text);
    rp__ckpt_manifest_free(&m);
    free(buf);
    return 0;
}
