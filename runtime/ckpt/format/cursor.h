/*
 * The payload cursor (cursor.c): a payload read out of its memory
 * segments in order and checksummed chunk by chunk on the way.
 */
#ifndef RP_CKPT_CURSOR_H
#define RP_CKPT_CURSOR_H

#include <stddef.h>
#include <stdint.h>

/* A piece of a payload in memory; base NULL means @len zero bytes (the
 * padding between regions). */
typedef struct rp__ckpt_seg {
    const void *base;
    uint64_t len;
} rp__ckpt_seg_t;

/*
 * Reads a payload out of its segments in order and checksums it chunk by
 * chunk while copying, so the data is touched once and the CRCs describe
 * exactly the bytes that were copied.
 */
typedef struct rp__ckpt_cursor {
    const rp__ckpt_seg_t *segs;
    size_t nsegs;
    size_t si;           /* current segment */
    uint64_t soff;       /* offset inside it */
    uint64_t pos;        /* payload bytes produced so far */
    uint64_t total;      /* payload length: sum of the segment lengths */
    uint64_t chunk_size;
    uint32_t crc;        /* of the current, unfinished chunk */
    uint32_t *crcs;      /* one slot per chunk, filled as chunks finish */
    uint32_t nchunks;    /* slots in @crcs: ceil(total / chunk_size) */
} rp__ckpt_cursor_t;

/* Start a cursor over @segs; @crcs must hold ceil(total/chunk_size). */
void rp__ckpt_cursor_init(rp__ckpt_cursor_t *cur, const rp__ckpt_seg_t *segs,
                          size_t nsegs, uint64_t chunk_size, uint32_t *crcs);

/* Copy the next min(@n, bytes left) payload bytes into @dst, updating the
 * chunk CRCs (the last, short chunk's when the payload ends). Returns the
 * bytes copied. */
size_t rp__ckpt_cursor_fill(rp__ckpt_cursor_t *cur, void *dst, size_t n);

/* ceil(@len / @chunk_size), as the manifest counts chunks. */
uint32_t rp__ckpt_nchunks(uint64_t len, uint64_t chunk_size);

#endif /* RP_CKPT_CURSOR_H */
