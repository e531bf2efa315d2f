/*
 * CRC32C (Castagnoli) for checkpoint integrity: every shard chunk, every
 * shard header and the manifest itself carry one. The checkpoint writer
 * checksums every byte it writes, so this sits on the critical path of a
 * checkpoint and has a hardware path (SSE4.2, three interleaved streams) as
 * well as a portable table-driven one; both give identical results.
 *
 * Convention (the iSCSI / ext4 / Btrfs one): reflected polynomial
 * 0x82F63B78, register preset to all ones, result inverted. The inversions
 * happen inside, so callers chain plain values:
 *
 *     crc = rp__crc32c(0, a, alen);
 *     crc = rp__crc32c(crc, b, blen);   // == rp__crc32c(0, a||b, alen+blen)
 *
 * and rp__crc32c(0, "123456789", 9) == 0xE3069283.
 */
#ifndef RP_CKPT_CRC32C_H
#define RP_CKPT_CRC32C_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Extend @crc (0 to start) with @len bytes at @buf and return the new value.
 * Any alignment; @buf may be NULL when @len is 0. Thread-safe. Picks the
 * fastest implementation the CPU supports on first use.
 */
uint32_t rp__crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * Copy @len bytes from @src to @dst (not overlapping) and return
 * rp__crc32c(@crc, @src, @len), in one pass over the data: with SSE4.2 and
 * AVX2, three interleaved CRC streams fed from the registers that the copy
 * loads, and non-temporal stores (so @dst is NOT left in cache: meant for
 * buffers that a device reads next, staging and bounce buffers); elsewhere
 * a copy and then a CRC pass. Any alignment. Thread-safe.
 */
uint32_t rp__crc32c_copy(uint32_t crc, void *dst, const void *src,
                         size_t len);

/*
 * CRC of the concatenation A||B from crc_a = rp__crc32c(0, A), crc_b =
 * rp__crc32c(0, B) and len_b = |B|, without touching the data. O(log len_b).
 * Lets threads checksum pieces of one chunk independently.
 */
uint32_t rp__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/* The portable implementation (slice-by-8), always available. */
uint32_t rp__crc32c_sw(uint32_t crc, const void *buf, size_t len);

/* True if rp__crc32c_hw may be called on this CPU. */
bool rp__crc32c_hw_available(void);

/*
 * The SSE4.2 implementation. Only call it when rp__crc32c_hw_available();
 * on other CPUs or architectures it falls back to rp__crc32c_sw so that a
 * mistaken call is slow rather than an illegal instruction. Exposed so that
 * tests can compare the two paths.
 */
uint32_t rp__crc32c_hw(uint32_t crc, const void *buf, size_t len);

/* Name of the implementation rp__crc32c uses ("sse4.2-3way" or
 * "slice-by-8"), for logs and benchmarks. */
const char *rp__crc32c_impl_name(void);

#endif /* RP_CKPT_CRC32C_H */
