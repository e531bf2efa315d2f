/*
 * CRC32C implementations: a portable slice-by-8 table engine and an SSE4.2
 * engine that runs three independent CRC streams side by side.
 *
 * Why three streams: the crc32 instruction has a latency of 3 cycles but a
 * throughput of one per cycle, so a single dependent chain uses a third of
 * the unit. Splitting a block into three equal parts, checksumming them
 * independently and then merging the three partial CRCs keeps it busy. The
 * merge needs "advance this CRC register over B zero bytes", which is a
 * multiplication by x^(8B) modulo the polynomial; for the two fixed block
 * sizes used here it is precomputed into four 256-entry tables (the map is
 * linear, so each byte of the register contributes independently).
 *
 * All internal "raw" functions work on the un-inverted register; the public
 * entry points apply the pre- and post-inversion.
 */
#include "ckpt/format/crc32c.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <nmmintrin.h>
#define RP_CRC_HAVE_X86 1
#else
#define RP_CRC_HAVE_X86 0
#endif

/* Castagnoli polynomial, bit-reversed. */
#define RP_CRC_POLY 0x82F63B78u

/* Per-stream block sizes of the interleaved engine. Long blocks amortise
 * the merge; short blocks let buffers of a few KiB use all three streams
 * too. Both are multiples of 8 so the streams stay 8-byte aligned. */
#define RP_CRC_LONG  8192u
#define RP_CRC_SHORT 256u

static pthread_once_t rp_crc_once = PTHREAD_ONCE_INIT;
static uint32_t rp_crc_table[8][256];       /* slice-by-8 */
static uint32_t rp_crc_shift_long[4][256];  /* advance over RP_CRC_LONG zeros */
static uint32_t rp_crc_shift_short[4][256]; /* advance over RP_CRC_SHORT zeros */
static bool rp_crc_use_hw;
static bool rp_crc_use_copy; /* SSE4.2 + AVX2: the fused copy kernel */

/*
 * Multiply two polynomials modulo the CRC polynomial, in the reflected
 * representation where bit 31 is the coefficient of x^0.
 */
static uint32_t rp_crc_mulmod(uint32_t a, uint32_t b)
{
    uint32_t product = 0;
    int i;

    for (i = 0; i < 32; i++) {
        if (a & (0x80000000u >> i)) {
            product ^= b;
        }
        /* b *= x */
        b = (b & 1u) ? (b >> 1) ^ RP_CRC_POLY : b >> 1;
    }
    return product;
}

/* x^(8 * nbytes) modulo the polynomial: the operator "append nbytes zero
 * bytes" applied to a raw register. Square-and-multiply on x^8, so even
 * 64-bit byte counts cannot overflow the exponent. */
static uint32_t rp_crc_xpow8n(uint64_t nbytes)
{
    uint32_t result = 0x80000000u; /* x^0 */
    uint32_t base = 0x80000000u >> 8; /* x^8 */

    while (nbytes != 0) {
        if (nbytes & 1u) {
            result = rp_crc_mulmod(result, base);
        }
        base = rp_crc_mulmod(base, base);
        nbytes >>= 1;
    }
    return result;
}

static void rp_crc_fill_shift(uint32_t table[4][256], uint64_t nbytes)
{
    uint32_t op = rp_crc_xpow8n(nbytes);
    unsigned k, i;

    for (k = 0; k < 4; k++) {
        for (i = 0; i < 256; i++) {
            table[k][i] = rp_crc_mulmod(op, (uint32_t)i << (8 * k));
        }
    }
}

static void rp_crc_init(void)
{
    unsigned i, k;

    for (i = 0; i < 256; i++) {
        uint32_t c = i;
        for (k = 0; k < 8; k++) {
            c = (c & 1u) ? (c >> 1) ^ RP_CRC_POLY : c >> 1;
        }
        rp_crc_table[0][i] = c;
    }
    /* table[k][i]: byte i followed by k zero bytes. */
    for (k = 1; k < 8; k++) {
        for (i = 0; i < 256; i++) {
            uint32_t c = rp_crc_table[k - 1][i];
            rp_crc_table[k][i] = (c >> 8) ^ rp_crc_table[0][c & 0xffu];
        }
    }
    rp_crc_fill_shift(rp_crc_shift_long, RP_CRC_LONG);
    rp_crc_fill_shift(rp_crc_shift_short, RP_CRC_SHORT);
#if RP_CRC_HAVE_X86
    __builtin_cpu_init();
    rp_crc_use_hw = __builtin_cpu_supports("sse4.2") != 0;
    rp_crc_use_copy = rp_crc_use_hw && __builtin_cpu_supports("avx2") != 0;
#else
    rp_crc_use_hw = false;
    rp_crc_use_copy = false;
#endif
}

static inline void rp_crc_ensure_init(void)
{
    /* pthread_once cannot fail with a valid control and a non-cancelling
     * routine; its result carries no information here. */
    (void)pthread_once(&rp_crc_once, rp_crc_init);
}

static inline uint32_t rp_crc_rd32le(const unsigned char *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

static uint32_t rp_crc_sw_raw(uint32_t c, const unsigned char *p, size_t len)
{
    /* Align so the 8-byte loads below are naturally aligned. */
    while (len > 0 && ((uintptr_t)p & 7u) != 0) {
        c = rp_crc_table[0][(c ^ *p++) & 0xffu] ^ (c >> 8);
        len--;
    }
    while (len >= 8) {
        uint32_t lo = c ^ rp_crc_rd32le(p);
        uint32_t hi = rp_crc_rd32le(p + 4);

        c = rp_crc_table[7][lo & 0xffu] ^ rp_crc_table[6][(lo >> 8) & 0xffu] ^
            rp_crc_table[5][(lo >> 16) & 0xffu] ^ rp_crc_table[4][lo >> 24] ^
            rp_crc_table[3][hi & 0xffu] ^ rp_crc_table[2][(hi >> 8) & 0xffu] ^
            rp_crc_table[1][(hi >> 16) & 0xffu] ^ rp_crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len > 0) {
        c = rp_crc_table[0][(c ^ *p++) & 0xffu] ^ (c >> 8);
        len--;
    }
    return c;
}

uint32_t rp__crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
    rp_crc_ensure_init();
    if (len == 0) {
        return crc;
    }
    return ~rp_crc_sw_raw(~crc, (const unsigned char *)buf, len);
}

#if RP_CRC_HAVE_X86

static inline uint32_t rp_crc_shift(const uint32_t table[4][256], uint32_t c)
{
    return table[0][c & 0xffu] ^ table[1][(c >> 8) & 0xffu] ^
           table[2][(c >> 16) & 0xffu] ^ table[3][c >> 24];
}

static inline uint64_t rp_crc_ld64(const unsigned char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof(v));
    return v;
}

/* One pass of the three-stream loop over 3 * block bytes at *pp. */
__attribute__((target("sse4.2")))
static inline uint32_t rp_crc_hw_3way(uint32_t c, const unsigned char **pp,
                                      size_t block,
                                      const uint32_t shift[4][256])
{
    const unsigned char *p = *pp;
    const unsigned char *end = p + block;
    uint64_t c0 = c, c1 = 0, c2 = 0;

    do {
        c0 = _mm_crc32_u64(c0, rp_crc_ld64(p));
        c1 = _mm_crc32_u64(c1, rp_crc_ld64(p + block));
        c2 = _mm_crc32_u64(c2, rp_crc_ld64(p + 2 * block));
        p += 8;
    } while (p < end);
    /* raw(c, A||B||C) = shift(shift(raw(c,A)) ^ raw(0,B)) ^ raw(0,C) */
    c = rp_crc_shift(shift, (uint32_t)c0) ^ (uint32_t)c1;
    c = rp_crc_shift(shift, c) ^ (uint32_t)c2;
    *pp = p + 2 * block;
    return c;
}

__attribute__((target("sse4.2")))
static uint32_t rp_crc_hw_raw(uint32_t c, const unsigned char *p, size_t len)
{
    uint64_t c64;

    while (len > 0 && ((uintptr_t)p & 7u) != 0) {
        c = _mm_crc32_u8(c, *p++);
        len--;
    }
    while (len >= 3 * RP_CRC_LONG) {
        c = rp_crc_hw_3way(c, &p, RP_CRC_LONG, rp_crc_shift_long);
        len -= 3 * RP_CRC_LONG;
    }
    while (len >= 3 * RP_CRC_SHORT) {
        c = rp_crc_hw_3way(c, &p, RP_CRC_SHORT, rp_crc_shift_short);
        len -= 3 * RP_CRC_SHORT;
    }
    c64 = c;
    while (len >= 8) {
        c64 = _mm_crc32_u64(c64, rp_crc_ld64(p));
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len > 0) {
        c = _mm_crc32_u8(c, *p++);
        len--;
    }
    return c;
}

/*
 * The fused copy: the three streams of rp_crc_hw_3way, each 32-byte piece
 * loaded once into a vector register, stored with a non-temporal store
 * (the destination is a staging or bounce buffer that the device reads by
 * DMA, not the CPU: no read-for-ownership of its lines, and the caller's
 * working set stays in cache) and fed 8 bytes at a time to the crc32
 * instruction. @d must be 32-byte aligned; the block sizes are multiples
 * of 32 so every stream stays aligned.
 */
/* The CRC of the 32 bytes in @v, after @c. */
__attribute__((target("sse4.2,avx2")))
static inline uint64_t rp_crc_lanes(uint64_t c, __m256i v)
{
    c = _mm_crc32_u64(c, (uint64_t)_mm256_extract_epi64(v, 0));
    c = _mm_crc32_u64(c, (uint64_t)_mm256_extract_epi64(v, 1));
    c = _mm_crc32_u64(c, (uint64_t)_mm256_extract_epi64(v, 2));
    return _mm_crc32_u64(c, (uint64_t)_mm256_extract_epi64(v, 3));
}

__attribute__((target("sse4.2,avx2")))
static inline uint32_t rp_crc_copy_3way(uint32_t c, unsigned char **dp,
                                        const unsigned char **sp,
                                        size_t block,
                                        const uint32_t shift[4][256])
{
    const unsigned char *s = *sp;
    unsigned char *d = *dp;
    uint64_t c0 = c, c1 = 0, c2 = 0;
    size_t i;

    for (i = 0; i < block; i += 32) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i b = _mm256_loadu_si256((const __m256i *)(s + block + i));
        __m256i x = _mm256_loadu_si256((const __m256i *)(s + 2 * block + i));

        _mm256_stream_si256((__m256i *)(d + i), a);
        _mm256_stream_si256((__m256i *)(d + block + i), b);
        _mm256_stream_si256((__m256i *)(d + 2 * block + i), x);
        /* Three independent chains: the CPU overlaps them. */
        c0 = rp_crc_lanes(c0, a);
        c1 = rp_crc_lanes(c1, b);
        c2 = rp_crc_lanes(c2, x);
    }
    c = rp_crc_shift(shift, (uint32_t)c0) ^ (uint32_t)c1;
    c = rp_crc_shift(shift, c) ^ (uint32_t)c2;
    *sp = s + 3 * block;
    *dp = d + 3 * block;
    return c;
}

__attribute__((target("sse4.2,avx2")))
static uint32_t rp_crc_copy_raw(uint32_t c, unsigned char *d,
                                const unsigned char *s, size_t len)
{
    /* Up to the destination's alignment byte by byte (at most 31). */
    while (len > 0 && ((uintptr_t)d & 31u) != 0) {
        *d = *s;
        c = _mm_crc32_u8(c, *s);
        d++;
        s++;
        len--;
    }
    while (len >= 3 * RP_CRC_LONG) {
        c = rp_crc_copy_3way(c, &d, &s, RP_CRC_LONG, rp_crc_shift_long);
        len -= 3 * RP_CRC_LONG;
    }
    while (len >= 3 * RP_CRC_SHORT) {
        c = rp_crc_copy_3way(c, &d, &s, RP_CRC_SHORT, rp_crc_shift_short);
        len -= 3 * RP_CRC_SHORT;
    }
    /* The streamed stores are ordered before anything that follows (the
     * write of the buffer, another thread reading it). */
    _mm_sfence();
    if (len > 0) {
        memcpy(d, s, len);
        c = rp_crc_hw_raw(c, s, len);
    }
    return c;
}

#endif /* RP_CRC_HAVE_X86 */

uint32_t rp__crc32c_copy(uint32_t crc, void *dst, const void *src,
                         size_t len)
{
    rp_crc_ensure_init();
    if (len == 0) {
        return crc;
    }
#if RP_CRC_HAVE_X86
    if (rp_crc_use_copy) {
        return ~rp_crc_copy_raw(~crc, (unsigned char *)dst,
                                (const unsigned char *)src, len);
    }
#endif
    /* Two passes, the second over bytes the first just left in cache. */
    memcpy(dst, src, len);
    return rp__crc32c(crc, dst, len);
}

bool rp__crc32c_hw_available(void)
{
    rp_crc_ensure_init();
    return rp_crc_use_hw;
}

uint32_t rp__crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
    rp_crc_ensure_init();
    if (len == 0) {
        return crc;
    }
#if RP_CRC_HAVE_X86
    if (rp_crc_use_hw) {
        return ~rp_crc_hw_raw(~crc, (const unsigned char *)buf, len);
    }
#endif
    return ~rp_crc_sw_raw(~crc, (const unsigned char *)buf, len);
}

uint32_t rp__crc32c(uint32_t crc, const void *buf, size_t len)
{
    return rp__crc32c_hw(crc, buf, len);
}

uint32_t rp__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b)
{
    /* The pre/post inversions cancel out in this identity, so it holds for
     * finished CRCs as well as for raw registers. */
    return rp_crc_mulmod(rp_crc_xpow8n(len_b), crc_a) ^ crc_b;
}

const char *rp__crc32c_impl_name(void)
{
    return rp__crc32c_hw_available() ? "sse4.2-3way" : "slice-by-8";
}
