/*
 * Shard header encoding. Byte-by-byte little-endian so the format does not
 * depend on the host's endianness or struct padding.
 */
#include "ckpt/format/shard.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ckpt/format/crc32c.h"
#include "util/str.h"

#define RP_SHARD_OFF_VERSION  8
#define RP_SHARD_OFF_HDRSIZE  12
#define RP_SHARD_OFF_ID       16
#define RP_SHARD_OFF_STEP     32
#define RP_SHARD_OFF_RANK     40
#define RP_SHARD_OFF_WORLD    44
#define RP_SHARD_OFF_LENGTH   48
#define RP_SHARD_OFF_RESERVED 56
#define RP_SHARD_OFF_CRC      60
#define RP_SHARD_FIXED        64

static void rp_put32(uint8_t *p, uint32_t v)
{
    unsigned i;

    for (i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void rp_put64(uint8_t *p, uint64_t v)
{
    unsigned i;

    for (i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t rp_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static uint64_t rp_get64(const uint8_t *p)
{
    return (uint64_t)rp_get32(p) | ((uint64_t)rp_get32(p + 4) << 32);
}

void rp__ckpt_shard_header_encode(const rp__ckpt_shard_header_t *hdr,
                                  uint8_t out[RP_CKPT_SHARD_HEADER_SIZE])
{
    memset(out, 0, RP_CKPT_SHARD_HEADER_SIZE);
    memcpy(out, RP_CKPT_SHARD_MAGIC, sizeof(RP_CKPT_SHARD_MAGIC));
    rp_put32(out + RP_SHARD_OFF_VERSION, RP_CKPT_SHARD_VERSION);
    rp_put32(out + RP_SHARD_OFF_HDRSIZE, RP_CKPT_SHARD_HEADER_SIZE);
    memcpy(out + RP_SHARD_OFF_ID, hdr->ckpt_id, RP_CKPT_ID_SIZE);
    rp_put64(out + RP_SHARD_OFF_STEP, hdr->step);
    rp_put32(out + RP_SHARD_OFF_RANK, hdr->rank);
    rp_put32(out + RP_SHARD_OFF_WORLD, hdr->world_size);
    rp_put64(out + RP_SHARD_OFF_LENGTH, hdr->payload_length);
    rp_put32(out + RP_SHARD_OFF_RESERVED, 0);
    rp_put32(out + RP_SHARD_OFF_CRC, rp__crc32c(0, out, RP_SHARD_OFF_CRC));
}

rp_status_t rp__ckpt_shard_header_decode(const void *buf, size_t len,
                                         rp__ckpt_shard_header_t *hdr,
                                         char *err, size_t errlen)
{
    const uint8_t *p = buf;
    uint32_t stored, actual, version, hdrsize;
    size_t i;

    if (buf == NULL || hdr == NULL || len < RP_CKPT_SHARD_HEADER_SIZE) {
        rp__errbuf(err, errlen, "shard header shorter than %u bytes",
                      RP_CKPT_SHARD_HEADER_SIZE);
        return RP_ERR_CORRUPT;
    }
    if (memcmp(p, RP_CKPT_SHARD_MAGIC, sizeof(RP_CKPT_SHARD_MAGIC)) != 0) {
        rp__errbuf(err, errlen, "not a ringpoint shard (bad magic)");
        return RP_ERR_CORRUPT;
    }
    stored = rp_get32(p + RP_SHARD_OFF_CRC);
    actual = rp__crc32c(0, p, RP_SHARD_OFF_CRC);
    if (stored != actual) {
        rp__errbuf(err, errlen,
                      "shard header crc32c 0x%08x != computed 0x%08x", stored,
                      actual);
        return RP_ERR_CORRUPT;
    }
    version = rp_get32(p + RP_SHARD_OFF_VERSION);
    if (version != RP_CKPT_SHARD_VERSION) {
        rp__errbuf(err, errlen, "unsupported shard format version %u",
                      version);
        return RP_ERR_NOT_SUPPORTED;
    }
    hdrsize = rp_get32(p + RP_SHARD_OFF_HDRSIZE);
    if (hdrsize != RP_CKPT_SHARD_HEADER_SIZE) {
        rp__errbuf(err, errlen, "shard header size %u, expected %u",
                      hdrsize, RP_CKPT_SHARD_HEADER_SIZE);
        return RP_ERR_CORRUPT;
    }
    if (rp_get32(p + RP_SHARD_OFF_RESERVED) != 0) {
        rp__errbuf(err, errlen, "shard header reserved field not zero");
        return RP_ERR_CORRUPT;
    }
    /* The padding is not covered by the CRC (so the CRC stays cheap to
     * compute for the writer), but it is fixed, so check it is zero. */
    for (i = RP_SHARD_FIXED; i < RP_CKPT_SHARD_HEADER_SIZE; i++) {
        if (p[i] != 0) {
            rp__errbuf(err, errlen,
                          "shard header padding byte %zu not zero", i);
            return RP_ERR_CORRUPT;
        }
    }
    memset(hdr, 0, sizeof(*hdr));
    hdr->version = version;
    memcpy(hdr->ckpt_id, p + RP_SHARD_OFF_ID, RP_CKPT_ID_SIZE);
    hdr->step = rp_get64(p + RP_SHARD_OFF_STEP);
    hdr->rank = rp_get32(p + RP_SHARD_OFF_RANK);
    hdr->world_size = rp_get32(p + RP_SHARD_OFF_WORLD);
    hdr->payload_length = rp_get64(p + RP_SHARD_OFF_LENGTH);
    if (hdr->world_size == 0 || hdr->rank >= hdr->world_size) {
        rp__errbuf(err, errlen, "shard header rank %u not below world size %u",
                      hdr->rank, hdr->world_size);
        return RP_ERR_CORRUPT;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_shard_header_check(const rp__ckpt_shard_header_t *hdr,
                                        const uint8_t ckpt_id[RP_CKPT_ID_SIZE],
                                        uint64_t step, uint32_t world_size,
                                        uint32_t rank, uint64_t payload_length,
                                        char *err, size_t errlen)
{
    if (memcmp(hdr->ckpt_id, ckpt_id, RP_CKPT_ID_SIZE) != 0) {
        rp__errbuf(err, errlen,
                      "checkpoint id differs from the manifest's (shard from "
                      "another checkpoint)");
        return RP_ERR_CORRUPT;
    }
    if (hdr->step != step) {
        rp__errbuf(err, errlen, "header step %llu != manifest step %llu",
                      (unsigned long long)hdr->step, (unsigned long long)step);
        return RP_ERR_CORRUPT;
    }
    if (hdr->world_size != world_size) {
        rp__errbuf(err, errlen, "header world size %u != manifest %u",
                      hdr->world_size, world_size);
        return RP_ERR_CORRUPT;
    }
    if (hdr->rank != rank) {
        rp__errbuf(err, errlen, "header rank %u != expected %u", hdr->rank,
                      rank);
        return RP_ERR_CORRUPT;
    }
    if (hdr->payload_length != payload_length) {
        rp__errbuf(err, errlen,
                      "header payload length %llu != manifest %llu",
                      (unsigned long long)hdr->payload_length,
                      (unsigned long long)payload_length);
        return RP_ERR_CORRUPT;
    }
    return RP_OK;
}
