/*
 * Shard bytes for a restore (reader_shard.c): whole chunks, CRC-checked,
 * O_DIRECT where the file system takes it.
 */
#ifndef RP_CKPT_READER_SHARD_H
#define RP_CKPT_READER_SHARD_H

#include <stdint.h>

#include "ckpt/read/reader_int.h"

/* Payload bytes [@poff, @poff+@n) of shard @j into @dst, every chunk that
 * covers part of the range read whole and its CRC checked. A verdict. */
int rp__rd_payload(rp__rd_t *r, uint32_t j, uint64_t poff, uint64_t n,
                   unsigned char *dst);
/* Bytes [@off, @off+@n) of the checkpoint's stream, from the old shards
 * whose stripes hold them. A verdict. */
int rp__rd_stream(rp__rd_t *r, uint64_t off, uint64_t n, unsigned char *dst);

#endif /* RP_CKPT_READER_SHARD_H */
