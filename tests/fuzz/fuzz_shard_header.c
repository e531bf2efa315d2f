/*
 * The shard file header (runtime/ckpt/format/shard.c): 4096 bytes at the start of
 * every shard, read from a file anyone with write access to the checkpoint
 * directory may have changed. The input is the header (padded with zeros
 * to 4096 bytes); its CRC at bytes 60-63 is set to match first, so the
 * fuzzer reaches the checks behind the CRC, and the input as given must be
 * refused when that changed it.
 *
 * Properties:
 *  - the decoder never accepts fewer than 4096 bytes, a wrong CRC, or
 *    a rank outside the world;
 *  - a decoded header encodes back to exactly the same 4096 bytes (every
 *    byte is checked: magic, version, size, reserved field, padding);
 *  - the decoded header passes the check against its own fields, and
 *    fails it, naming the field, when any one of them differs.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/shard.h"

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void check_mismatch(const rp__ckpt_shard_header_t *h, int field)
{
    static const char *const names[] = {"checkpoint id", "step", "world",
                                        "rank", "payload"};
    uint8_t id[RP_CKPT_ID_SIZE];
    uint64_t step = h->step, payload = h->payload_length;
    uint32_t world = h->world_size, rank = h->rank;
    char err[512] = "";

    memcpy(id, h->ckpt_id, sizeof(id));
    switch (field) {
    case 0: id[5] ^= 1; break;
    case 1: step ^= 1; break;
    case 2: world = world == 1 ? 2 : world - 1; rank = 0; break;
    case 3: rank = rank == 0 ? 1 : rank - 1; world = h->world_size; break;
    default: payload ^= 4096; break;
    }
    if (field == 2 && h->rank == 0 && world == h->world_size) {
        return;
    }
    if (field == 3 && rank >= world) {
        return;
    }
    FUZZ_CHECK(rp__ckpt_shard_header_check(h, id, step, world, rank, payload,
                                           err, sizeof(err)) == RP_ERR_CORRUPT,
               "a header with another %s passes", names[field]);
    FUZZ_CHECK(err[0] != '\0', "a mismatch of the %s without a reason",
               names[field]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t buf[RP_CKPT_SHARD_HEADER_SIZE] = {0}, again[RP_CKPT_SHARD_HEADER_SIZE];
    rp__ckpt_shard_header_t h, h2;
    char err[512] = "";
    uint32_t crc;
    rp_status_t st;
    bool crc_was_right;

    memcpy(buf, data, size < sizeof(buf) ? size : sizeof(buf));
    /* As given: a short buffer is always refused. */
    if (size < sizeof(buf)) {
        FUZZ_CHECK(rp__ckpt_shard_header_decode(data, size, &h, NULL, 0) !=
                       RP_OK,
                   "a header of %zu bytes accepted", size);
    }
    crc = rp__crc32c(0, buf, 60);
    crc_was_right = le32(buf + 60) == crc;
    if (!crc_was_right) {
        FUZZ_CHECK(rp__ckpt_shard_header_decode(buf, sizeof(buf), &h, NULL,
                                                0) != RP_OK,
                   "a header with a wrong CRC accepted");
        put_le32(buf + 60, crc);
    }
    st = rp__ckpt_shard_header_decode(buf, sizeof(buf), &h, err, sizeof(err));
    if (st != RP_OK) {
        FUZZ_CHECK(st == RP_ERR_CORRUPT || st == RP_ERR_NOT_SUPPORTED,
                   "status %d", (int)st);
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
        return 0;
    }
    FUZZ_CHECK(h.rank < h.world_size, "rank %u of %u", h.rank, h.world_size);
    FUZZ_CHECK(rp__ckpt_shard_header_decode(buf, sizeof(buf) - 1, &h2, NULL,
                                            0) != RP_OK,
               "4095 bytes accepted");
    rp__ckpt_shard_header_encode(&h, again);
    FUZZ_CHECK(memcmp(buf, again, sizeof(buf)) == 0,
               "the decoded header encodes to other bytes");
    FUZZ_CHECK(rp__ckpt_shard_header_check(&h, h.ckpt_id, h.step,
                                           h.world_size, h.rank,
                                           h.payload_length, err,
                                           sizeof(err)) == RP_OK,
               "the header fails the check against itself: %s", err);
    for (int f = 0; f < 5; f++) {
        check_mismatch(&h, f);
    }
    return 0;
}
