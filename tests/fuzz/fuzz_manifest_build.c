/*
 * The manifest from the writer's side: a manifest built from the input
 * (world sizes up to the format's 2^20 ranks, up to 65536 regions, any
 * chunk size, lengths and region layout) is planned, encoded and parsed
 * back.
 *
 * Properties:
 *  - the writer's validator (rp__ckpt_manifest_plan) and the encoder give
 *    one verdict: the encoder refuses what plan refuses, and writes what
 *    plan accepts (the manifest's size limit included: one computation);
 *  - what the encoder writes, the parser reads back to the same value,
 *    field by field, CRC by CRC, and that encodes to the same bytes again;
 *  - init refuses exactly the counts over the limits.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "ckpt/format/manifest.h"
#include "ckpt/format/manifest_encode.h"
#include "ckpt/format/manifest_parse.h"

static uint32_t pick_world(fuzz_in_t *in)
{
    /* The largest world takes seconds per input under the fuzzer's
     * instrumentation, which would stall a campaign on it: the committed
     * corpus (big-world, many-regions) runs the limits in every replay,
     * the fuzzer 2^13 ranks and 1024 regions (a campaign at 2^17 ranks
     * managed 4 inputs a second). */
#ifdef RP_FUZZ_LIBFUZZER
#define FUZZ_BIG_WORLD (1u << 13)
#define FUZZ_MID_WORLD 2048u
#define FUZZ_BIG_REGIONS 1024u
/* Millions of chunks (a few ranks with lengths of 2^36 and more) take the
 * instrumented round trip past libFuzzer's timeout: the campaign plans
 * them, and round-trips up to this many; the corpus (the size limit's own
 * input) and test_manifest_size_limit cover the rest. */
#define FUZZ_MAX_CHUNKS (1u << 20)
#else
#define FUZZ_MAX_CHUNKS RP_CKPT_MAX_TOTAL_CHUNKS
#define FUZZ_BIG_WORLD RP_CKPT_MAX_WORLD
#define FUZZ_MID_WORLD 65536u
#define FUZZ_BIG_REGIONS RP_CKPT_MAX_REGIONS
#endif
    static const uint32_t big[] = {256, 1024, FUZZ_MID_WORLD, RP_CKPT_MAX_WORLD + 1,
                                   0, FUZZ_BIG_WORLD};
    uint8_t s = fuzz_u8(in);

    return s < 250 ? 1u + s % 9u : big[s - 250];
}

static uint32_t pick_regions(fuzz_in_t *in)
{
    static const uint32_t big[] = {100, 300, 1000, RP_CKPT_MAX_REGIONS + 1,
                                   FUZZ_BIG_REGIONS};
    uint8_t s = fuzz_u8(in);

    return s < 251 ? s % 10 : big[s - 251];
}

static uint64_t pick_len(fuzz_in_t *in)
{
    uint8_t s = fuzz_u8(in);

    switch (s % 4) {
    case 0: return fuzz_u8(in);
    case 1: return fuzz_u32(in) % (1u << 22);
    case 2: return fuzz_u64(in);
    default: return (uint64_t)fuzz_u8(in) << (s / 4 % 57);
    }
}

static void check_same(const rp__ckpt_manifest_t *a,
                       const rp__ckpt_manifest_t *b)
{
    FUZZ_CHECK(a->version == b->version && a->step == b->step &&
                   a->world_size == b->world_size && a->job_id == b->job_id &&
                   a->restart_count == b->restart_count &&
                   a->created_ns == b->created_ns &&
                   memcmp(a->ckpt_id, b->ckpt_id, sizeof(a->ckpt_id)) == 0 &&
                   a->chunk_size == b->chunk_size &&
                   a->stripe_unit == b->stripe_unit &&
                   a->stream_length == b->stream_length &&
                   a->per_rank_length == b->per_rank_length &&
                   a->nregions == b->nregions &&
                   a->total_chunks == b->total_chunks,
               "a scalar field reads back differently");
    for (uint32_t i = 0; i < a->nregions; i++) {
        const rp__ckpt_region_t *x = &a->regions[i], *y = &b->regions[i];

        FUZZ_CHECK(strcmp(x->name, y->name) == 0 && x->kind == y->kind &&
                       x->offset == y->offset && x->size == y->size &&
                       x->flags == y->flags,
                   "region %u reads back differently", i);
    }
    for (uint32_t r = 0; r < a->world_size; r++) {
        const rp__ckpt_shard_info_t *x = &a->shards[r], *y = &b->shards[r];

        FUZZ_CHECK(x->stripe_offset == y->stripe_offset &&
                       x->stripe_length == y->stripe_length &&
                       x->length == y->length && x->nchunks == y->nchunks &&
                       (x->nchunks == 0 ||
                        memcmp(x->chunk_crc, y->chunk_crc,
                               x->nchunks * sizeof(uint32_t)) == 0),
                   "shard %u reads back differently", r);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint32_t world = pick_world(&in), nregions = pick_regions(&in);
    uint64_t end[2] = {0, 0}, seed;
    rp__ckpt_manifest_t m, back;
    char err[512] = "", *text = NULL, *text2 = NULL;
    size_t len, len2;
    rp_status_t st;
    uint8_t layout;

    /* One large dimension at a time keeps an input under a second. */
    if (world >= 1024 && nregions > 9 && nregions <= RP_CKPT_MAX_REGIONS) {
        nregions = 9;
    }
    st = rp__ckpt_manifest_init(&m, world, nregions);
    if (world == 0 || world > RP_CKPT_MAX_WORLD ||
        nregions > RP_CKPT_MAX_REGIONS) {
        FUZZ_CHECK(st == RP_ERR_INVALID_ARG, "init accepts world %u, %u "
                   "regions", world, nregions);
        return 0;
    }
    FUZZ_CHECK(st == RP_OK, "init refuses world %u, %u regions", world,
               nregions);
    m.step = fuzz_u64(&in);
    m.job_id = fuzz_u32(&in);
    m.restart_count = fuzz_u32(&in);
    m.created_ns = fuzz_u64(&in);
    for (unsigned i = 0; i < RP_CKPT_ID_SIZE; i++) {
        m.ckpt_id[i] = fuzz_u8(&in);
    }
    layout = fuzz_u8(&in);
    if (layout & 1) {
        m.chunk_size = (uint64_t)(1 + fuzz_u8(&in)) * 4096;
    }
    if (layout & 2) {
        m.chunk_size = fuzz_u64(&in); /* anything: plan must judge it */
    }
    for (uint32_t i = 0; i < nregions; i++) {
        rp__ckpt_region_t *r = &m.regions[i];
        uint8_t how = i < 4 ? fuzz_u8(&in) : (uint8_t)(i * 7);

        /* Region names from the input for the first ones (anything, the
         * validator judges), generated unique ones after. */
        if (i < 2 && (how & 0x80)) {
            char *name = fuzz_str(&in, RP_CKPT_REGION_NAME_MAX);

            snprintf(r->name, sizeof(r->name), "%s", name);
            free(name);
        } else {
            snprintf(r->name, sizeof(r->name), "r%u", i);
        }
        r->kind = (how & 1) ? RP_CKPT_REGION_PER_RANK
                            : RP_CKPT_REGION_REPLICATED;
        r->size = i < 4 ? pick_len(&in) : i % 5;
        r->offset = end[r->kind] + (i < 4 ? (uint64_t)(how >> 1 & 7) * 64 : 0);
        if (i < 4 && (how & 0x40)) {
            r->offset = pick_len(&in); /* perhaps overlapping */
        }
        r->flags = i < 4 ? fuzz_u32(&in) : i;
        if (r->offset + r->size >= r->offset) {
            end[r->kind] = r->offset + r->size;
        }
    }
    m.stream_length = end[0];
    m.per_rank_length = end[1];
    if (layout & 4) {
        m.stream_length = pick_len(&in);
    }
    if (layout & 8) {
        m.per_rank_length = pick_len(&in);
    }
    st = rp__ckpt_manifest_plan(&m, err, sizeof(err));
    if (st != RP_OK) {
        FUZZ_CHECK(st == RP_ERR_INVALID_ARG || st == RP_ERR_NO_MEMORY,
                   "plan status %d", (int)st);
        FUZZ_CHECK(err[0] != '\0' || st == RP_ERR_NO_MEMORY,
                   "a refusal without a reason");
        FUZZ_CHECK(rp__ckpt_manifest_encode(&m, &text, &len, NULL, 0) !=
                       RP_OK,
                   "the encoder writes what plan refused (%s)", err);
        rp__ckpt_manifest_free(&m);
        return 0;
    }
    if (m.total_chunks > FUZZ_MAX_CHUNKS) {
        rp__ckpt_manifest_free(&m);
        return 0;
    }
    seed = fuzz_u64(&in) | 1;
    for (uint64_t k = 0; k < m.total_chunks; k++) {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        m.crc_pool[k] = (uint32_t)seed;
    }
    st = rp__ckpt_manifest_encode(&m, &text, &len, err, sizeof(err));
    FUZZ_CHECK(st == RP_OK, "plan accepts, the encoder refuses: %s", err);
    st = rp__ckpt_manifest_parse(text, len, &back, err, sizeof(err));
    FUZZ_CHECK(st == RP_OK, "the parser refuses what the encoder wrote: %s",
               err);
    check_same(&m, &back);
    FUZZ_CHECK(rp__ckpt_manifest_encode(&back, &text2, &len2, err,
                                        sizeof(err)) == RP_OK &&
                   len2 == len && memcmp(text, text2, len) == 0,
               "the manifest read back encodes to other bytes");
    free(text2);
    free(text);
    rp__ckpt_manifest_free(&back);
    rp__ckpt_manifest_free(&m);
    return 0;
}
