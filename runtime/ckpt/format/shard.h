/*
 * The shard file header: a fixed, little-endian, self-checksummed block at
 * the start of every shard-NNNNNN.rp. It ties the file to one checkpoint
 * (random checkpoint id), one rank and one step, so a shard copied or left
 * over from another checkpoint is detected without reading the payload.
 *
 * Layout (offsets in bytes, all integers little-endian):
 *
 *     0   8  magic "RPSHARD\0"
 *     8   4  format version (1)
 *    12   4  header size (4096): the payload starts at this file offset
 *    16  16  checkpoint id (same bytes as the manifest's checkpoint_id)
 *    32   8  step
 *    40   4  rank
 *    44   4  world size
 *    48   8  payload length in bytes
 *    56   4  reserved, 0
 *    60   4  CRC32C of bytes 0..59
 *    64 4032 zero padding (checked), so the payload is 4 KiB aligned
 *
 * The file is exactly header size + payload length bytes long.
 */
#ifndef RP_CKPT_SHARD_H
#define RP_CKPT_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

#define RP_CKPT_SHARD_MAGIC       "RPSHARD"   /* 7 chars + NUL = 8 bytes */
#define RP_CKPT_SHARD_VERSION     1u
#define RP_CKPT_SHARD_HEADER_SIZE 4096u
#define RP_CKPT_ID_SIZE           16u

typedef struct rp__ckpt_shard_header {
    uint32_t version;
    uint8_t ckpt_id[RP_CKPT_ID_SIZE];
    uint64_t step;
    uint32_t rank;
    uint32_t world_size;
    uint64_t payload_length;
} rp__ckpt_shard_header_t;

/* Serialise @hdr (version forced to RP_CKPT_SHARD_VERSION) into the
 * RP_CKPT_SHARD_HEADER_SIZE bytes at @out, CRC included. */
void rp__ckpt_shard_header_encode(const rp__ckpt_shard_header_t *hdr,
                                  uint8_t out[RP_CKPT_SHARD_HEADER_SIZE]);

/*
 * Decode and check the header in the @len bytes at @buf (@len must be at
 * least RP_CKPT_SHARD_HEADER_SIZE). Checks magic, CRC, version, header size,
 * reserved field and padding, and that rank < world size.
 * Returns RP_OK; RP_ERR_CORRUPT with a reason in @err (may be NULL);
 * RP_ERR_NOT_SUPPORTED for an intact header of another format version.
 * Does not log: a bad header is a finding, and the caller knows which file
 * it came from.
 */
rp_status_t rp__ckpt_shard_header_decode(const void *buf, size_t len,
                                         rp__ckpt_shard_header_t *hdr,
                                         char *err, size_t errlen);

/*
 * Check that a decoded header belongs where it was found: same checkpoint
 * id, step, world size and @rank, and the payload length @payload_length
 * that the manifest records. Returns RP_OK or RP_ERR_CORRUPT (reason in
 * @err, naming the first mismatching field).
 */
rp_status_t rp__ckpt_shard_header_check(const rp__ckpt_shard_header_t *hdr,
                                        const uint8_t ckpt_id[RP_CKPT_ID_SIZE],
                                        uint64_t step, uint32_t world_size,
                                        uint32_t rank, uint64_t payload_length,
                                        char *err, size_t errlen);

#endif /* RP_CKPT_SHARD_H */
