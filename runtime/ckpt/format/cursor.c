/*
 * The payload cursor of a shard write: the registered memory segments
 * copied into a bounce or staging buffer and checksummed chunk by chunk in
 * the same pass (cursor.h).
 */
#include "config.h"

#include "ckpt/format/cursor.h"

#include <string.h>

#include "ckpt/format/crc32c.h"

/* Unit of the cursor's copy + CRC (one fused pass, so no longer sized to
 * keep a second pass in L2; big enough that the few bytes each call does
 * outside the three-stream loop do not count). */
#define RP_SIO_BLOCK (1u << 20)

uint32_t rp__ckpt_nchunks(uint64_t len, uint64_t chunk_size)
{
    return (uint32_t)(len / chunk_size + (len % chunk_size != 0));
}

void rp__ckpt_cursor_init(rp__ckpt_cursor_t *cur, const rp__ckpt_seg_t *segs,
                          size_t nsegs, uint64_t chunk_size, uint32_t *crcs)
{
    size_t i;

    memset(cur, 0, sizeof(*cur));
    cur->segs = segs;
    cur->nsegs = nsegs;
    cur->chunk_size = chunk_size;
    cur->crcs = crcs;
    for (i = 0; i < nsegs; i++) {
        cur->total += segs[i].len;
    }
    cur->nchunks = rp__ckpt_nchunks(cur->total, chunk_size);
}

size_t rp__ckpt_cursor_fill(rp__ckpt_cursor_t *cur, void *dst, size_t n)
{
    unsigned char *out = dst;
    size_t done = 0;

    while (done < n && cur->pos < cur->total) {
        const rp__ckpt_seg_t *s;
        uint64_t in_chunk = cur->chunk_size - cur->pos % cur->chunk_size;
        uint64_t blk;

        /* Skip empty segments. */
        while (cur->si < cur->nsegs && cur->soff == cur->segs[cur->si].len) {
            cur->si++;
            cur->soff = 0;
        }
        s = &cur->segs[cur->si];
        blk = s->len - cur->soff;
        if (blk > n - done) {
            blk = n - done;
        }
        if (blk > in_chunk) {
            blk = in_chunk;
        }
        if (blk > RP_SIO_BLOCK) {
            blk = RP_SIO_BLOCK;
        }
        if (s->base != NULL) {
            /* One pass: copied and checksummed from the same loads. */
            cur->crc = rp__crc32c_copy(cur->crc, out + done,
                                       (const unsigned char *)s->base +
                                           cur->soff,
                                       (size_t)blk);
        } else {
            memset(out + done, 0, (size_t)blk);
            cur->crc = rp__crc32c(cur->crc, out + done, (size_t)blk);
        }
        cur->soff += blk;
        cur->pos += blk;
        done += (size_t)blk;
        if (cur->pos % cur->chunk_size == 0 || cur->pos == cur->total) {
            uint64_t c = (cur->pos - 1) / cur->chunk_size;

            if (cur->crcs != NULL && c < cur->nchunks) {
                cur->crcs[c] = cur->crc;
            }
            cur->crc = 0;
        }
    }
    return done;
}
