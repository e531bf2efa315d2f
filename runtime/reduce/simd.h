/*
 * Internal: portable SIMD building blocks for the reduction kernels, written
 * with GCC/Clang vector extensions so one source compiles to SSE2, AVX2 or
 * NEON. The including file defines RP_VBYTES (the vector width in bytes, 16
 * or 32) to match the instruction set it is compiled for; using the native
 * width keeps every vector in one register and avoids -Wpsabi trouble.
 *
 * Everything here is static inline and is only meant to be included by the
 * kernel variants (reduce_generic.c, reduce_x86.c) via kernels_impl.h.
 *
 * Bit-exactness rules that every helper follows, so that all variants and the
 * scalar helpers in half.h give identical bits:
 *  - every float reduction result that is NaN is replaced by the canonical
 *    quiet NaN (+, quiet bit only). Hardware NaN propagation depends on the
 *    operand order of the instruction, which the compiler may swap for a
 *    commutative op, and on the CPU (x86 makes a negative NaN for inf - inf,
 *    Arm a positive one); canonicalising removes both.
 *  - float MIN/MAX: NaN if either operand is NaN; -0 orders below +0, so
 *    MIN(-0,+0) = -0 and MAX(-0,+0) = +0 in either operand order. With the
 *    rule above, all float ops are commutative bit for bit.
 *  - conversions round to nearest-even using integer arithmetic only, so the
 *    result does not depend on the FP rounding mode or on FTZ/DAZ.
 */
#ifndef RP_REDUCE_SIMD_H
#define RP_REDUCE_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifndef RP_VBYTES
#error "define RP_VBYTES (16 or 32) before including simd.h"
#endif

#if RP_VBYTES != 16 && RP_VBYTES != 32
#error "RP_VBYTES must be 16 or 32"
#endif

/* Lanes of a 4-byte vector; half-precision vectors carry as many lanes as
 * a float vector so one converts into exactly one other. */
#define RP_VL32 (RP_VBYTES / 4)

typedef float    rp_vf   __attribute__((vector_size(RP_VBYTES)));
typedef double   rp_vd   __attribute__((vector_size(RP_VBYTES)));
typedef int32_t  rp_vi   __attribute__((vector_size(RP_VBYTES)));
typedef uint32_t rp_vu   __attribute__((vector_size(RP_VBYTES)));
typedef int64_t  rp_vl   __attribute__((vector_size(RP_VBYTES)));
typedef uint64_t rp_vul  __attribute__((vector_size(RP_VBYTES)));
typedef uint8_t  rp_vb   __attribute__((vector_size(RP_VBYTES)));
typedef uint16_t rp_vh   __attribute__((vector_size(RP_VBYTES / 2)));
/* int32 lanes matching one double vector, for the exact int32 AVG path. */
typedef int32_t  rp_vi_d __attribute__((vector_size(RP_VBYTES / 2)));

/* Unaligned loads and stores. memcpy of a constant size compiles to a single
 * unaligned vector move and is the only portable way to read a vector from
 * a pointer with arbitrary alignment without undefined behaviour. */
#define RP_DEF_LDST(T)                                                    \
    static inline T rp_ld_##T(const unsigned char *p)                     \
    {                                                                     \
        T v;                                                              \
        memcpy(&v, p, sizeof v);                                          \
        return v;                                                         \
    }                                                                     \
    static inline void rp_st_##T(unsigned char *p, T v)                   \
    {                                                                     \
        memcpy(p, &v, sizeof v);                                          \
    }

RP_DEF_LDST(rp_vf)
RP_DEF_LDST(rp_vd)
RP_DEF_LDST(rp_vu)
RP_DEF_LDST(rp_vi)
RP_DEF_LDST(rp_vl)
RP_DEF_LDST(rp_vul)
RP_DEF_LDST(rp_vb)
RP_DEF_LDST(rp_vh)
RP_DEF_LDST(rp_vi_d)

/* True if any lane of a comparison mask is set. Used to skip rare-case code
 * for whole vectors; both paths compute the same bits for the common lanes,
 * so taking the shortcut or not never changes a result. */
static inline int rp_v_any(rp_vu m)
{
#if defined(__SSE2__) && RP_VBYTES == 16
    /* One pmovmskb instead of two 64-bit extracts. */
    return _mm_movemask_epi8((__m128i)m) != 0;
#else
    uint64_t w[RP_VBYTES / 8], acc = 0;

    memcpy(w, &m, sizeof w);
    for (size_t i = 0; i < RP_VBYTES / 8; i++)
        acc |= w[i];
    return acc != 0;
#endif
}

/* ---- element operations on vectors --------------------------------------
 * Integer SUM/PROD run on unsigned lanes so overflow wraps modulo 2^n
 * instead of being undefined. Comparisons yield all-ones/zero lane masks,
 * and selection is done with bit operations because the ?: operator on
 * vectors is C++-only in GCC. */

/* Canonical quiet NaNs, used for every NaN a float reduction produces. */
#define RP_CANON_NAN_F32 0x7FC00000
#define RP_CANON_NAN_F64 0x7FF8000000000000LL

static inline rp_vf rp_v_canon_f32(rp_vf r)
{
    rp_vi nan = (r != r);
    return (rp_vf)((~nan & (rp_vi)r) | (nan & RP_CANON_NAN_F32));
}

static inline rp_vd rp_v_canon_f64(rp_vd r)
{
    rp_vl nan = (r != r);
    return (rp_vd)((~nan & (rp_vl)r) | (nan & RP_CANON_NAN_F64));
}

/* Raw SUM/PROD; the kernels canonicalise NaN results per block. */
static inline rp_vf rp_v_sum_f32(rp_vf x, rp_vf y) { return x + y; }
static inline rp_vf rp_v_prod_f32(rp_vf x, rp_vf y) { return x * y; }
static inline rp_vd rp_v_sum_f64(rp_vd x, rp_vd y) { return x + y; }
static inline rp_vd rp_v_prod_f64(rp_vd x, rp_vd y) { return x * y; }

/* MIN: x where x < y, else y (also y for any NaN, fixed below). On equality
 * OR the bits so that -0 wins over +0; for equal non-zero values both bit
 * patterns are the same and OR changes nothing. A NaN in either operand
 * gives the canonical NaN. */
static inline rp_vf rp_v_min_f32(rp_vf x, rp_vf y)
{
    rp_vi xi = (rp_vi)x, yi = (rp_vi)y;
    rp_vi sel = (x < y);
    rp_vi nan = (x != x) | (y != y);
    rp_vi r = (sel & xi) | (~sel & yi);
    r |= (x == y) & xi;
    return (rp_vf)((~nan & r) | (nan & RP_CANON_NAN_F32));
}

/* MAX: mirror of MIN; on equality AND the bits so that +0 wins over -0. */
static inline rp_vf rp_v_max_f32(rp_vf x, rp_vf y)
{
    rp_vi xi = (rp_vi)x, yi = (rp_vi)y;
    rp_vi sel = (x > y);
    rp_vi nan = (x != x) | (y != y);
    rp_vi r = (sel & xi) | (~sel & yi);
    r &= ~((x == y) & ~xi);
    return (rp_vf)((~nan & r) | (nan & RP_CANON_NAN_F32));
}

static inline rp_vd rp_v_min_f64(rp_vd x, rp_vd y)
{
    rp_vl xi = (rp_vl)x, yi = (rp_vl)y;
    rp_vl sel = (x < y);
    rp_vl nan = (x != x) | (y != y);
    rp_vl r = (sel & xi) | (~sel & yi);
    r |= (x == y) & xi;
    return (rp_vd)((~nan & r) | (nan & RP_CANON_NAN_F64));
}

static inline rp_vd rp_v_max_f64(rp_vd x, rp_vd y)
{
    rp_vl xi = (rp_vl)x, yi = (rp_vl)y;
    rp_vl sel = (x > y);
    rp_vl nan = (x != x) | (y != y);
    rp_vl r = (sel & xi) | (~sel & yi);
    r &= ~((x == y) & ~xi);
    return (rp_vd)((~nan & r) | (nan & RP_CANON_NAN_F64));
}

static inline rp_vu rp_v_sum_i32(rp_vu x, rp_vu y) { return x + y; }
static inline rp_vu rp_v_prod_i32(rp_vu x, rp_vu y) { return x * y; }
static inline rp_vu rp_v_min_i32(rp_vu x, rp_vu y)
{
    rp_vi m = (rp_vi)x < (rp_vi)y;
    return ((rp_vu)m & x) | (~(rp_vu)m & y);
}
static inline rp_vu rp_v_max_i32(rp_vu x, rp_vu y)
{
    rp_vi m = (rp_vi)x > (rp_vi)y;
    return ((rp_vu)m & x) | (~(rp_vu)m & y);
}

static inline rp_vul rp_v_sum_i64(rp_vul x, rp_vul y) { return x + y; }
static inline rp_vul rp_v_prod_i64(rp_vul x, rp_vul y) { return x * y; }
static inline rp_vul rp_v_min_i64(rp_vul x, rp_vul y)
{
    rp_vl m = (rp_vl)x < (rp_vl)y;
    return ((rp_vul)m & x) | (~(rp_vul)m & y);
}
static inline rp_vul rp_v_max_i64(rp_vul x, rp_vul y)
{
    rp_vl m = (rp_vl)x > (rp_vl)y;
    return ((rp_vul)m & x) | (~(rp_vul)m & y);
}

static inline rp_vb rp_v_sum_u8(rp_vb x, rp_vb y) { return x + y; }
static inline rp_vb rp_v_prod_u8(rp_vb x, rp_vb y) { return x * y; }
static inline rp_vb rp_v_min_u8(rp_vb x, rp_vb y)
{
    rp_vb m = (rp_vb)(x < y);
    return (m & x) | (~m & y);
}
static inline rp_vb rp_v_max_u8(rp_vb x, rp_vb y)
{
    rp_vb m = (rp_vb)(x > y);
    return (m & x) | (~m & y);
}

/* ---- half-precision conversions ------------------------------------------
 * Lane-wise twins of the scalar functions in half.h; the unit tests check
 * that both agree bit for bit with each other and with F16C hardware. */

/* bfloat16 -> float32 is exact: the bf16 bits are the top half of a float. */
static inline rp_vf rp_v_bf16_to_f32(rp_vh h)
{
    return (rp_vf)(__builtin_convertvector(h, rp_vu) << 16);
}

/* float32 -> bfloat16, nearest-even. Adding 0x7FFF plus the lowest kept bit
 * rounds up exactly when the dropped half is above 0x8000, or equal to it
 * with an odd kept part; a carry into the exponent gives the next binade or
 * infinity, which is the IEEE result. NaN would round into infinity, so it
 * keeps its top payload bits and gets the quiet bit forced on instead. */
static inline rp_vh rp_v_f32_to_bf16(rp_vf x)
{
    rp_vu f = (rp_vu)x;
    rp_vu nan = (rp_vu)((f & 0x7FFFFFFFu) > 0x7F800000u);
    rp_vu r = (f + 0x7FFFu + ((f >> 16) & 1u)) >> 16;
    r = (~nan & r) | (nan & ((f >> 16) | 0x0040u));
    return __builtin_convertvector(r, rp_vh);
}

/* binary16 -> float32. Normal numbers only need the exponent rebiased.
 * Subnormals are em * 2^-24, computed as an int->float conversion and a
 * multiply by a power of two: both exact, so FTZ, DAZ and the rounding mode
 * cannot change the result. Inf/NaN keep their payload, and a NaN gets the
 * quiet bit as F16C's vcvtph2ps does. */
static inline rp_vf rp_v_f16_to_f32(rp_vh h)
{
    rp_vu w = __builtin_convertvector(h, rp_vu);
    rp_vu sign = (w & 0x8000u) << 16;
    rp_vu em = w & 0x7FFFu;
    rp_vu norm = (em << 13) + ((127u - 15u) << 23);

    /* Fast path: no zero, subnormal, Inf or NaN lane. The unsigned wrap
     * makes em < 0x0400 compare as huge. */
    if (!rp_v_any((rp_vu)(em - 0x0400u >= 0x7C00u - 0x0400u)))
        return (rp_vf)(norm | sign);

    rp_vu special = (em << 13) | 0x7F800000u |
                    ((rp_vu)(em > 0x7C00u) & 0x00400000u);
    rp_vu sub = (rp_vu)(__builtin_convertvector((rp_vi)em, rp_vf) *
                        0x1p-24f);
    rp_vu is_special = (rp_vu)(em >= 0x7C00u);
    rp_vu is_sub = (rp_vu)(em < 0x0400u);
    rp_vu r = (is_special & special) | (~is_special & norm);
    r = (is_sub & sub) | (~is_sub & r);
    return (rp_vf)(r | sign);
}

/* float32 -> binary16, nearest-even, three cases chosen per lane:
 *  - |x| >= 65536 or Inf/NaN: Inf, or NaN with the top 10 payload bits and
 *    the quiet bit set (what vcvtps2ph produces). Values in [65520, 65536)
 *    take the normal path, whose rounding carries them into Inf.
 *  - |x| >= 2^-14: rebias the exponent and round the 13 dropped bits with the
 *    same add-and-carry trick as bfloat16.
 *  - smaller: the result is a subnormal (or zero), round(m / 2^s) for the
 *    24-bit significand m and s = 126 - exponent >= 14. A per-lane shift
 *    count would be natural, but SSE2 has none and GCC falls back to scalar
 *    code, so the shift is done as: drop the 13 low bits (remembering in bit
 *    0 whether any was set), multiply by 2^(18 - r) with r = s - 13 clamped
 *    to [1, 18], then round away a fixed 18 bits. The multiply is done in
 *    float, where it is exact (11-bit integer times a power of two), so it
 *    is immune to the rounding mode and FTZ/DAZ. Clamping r at 18 covers all
 *    inputs below 2^-32, which correctly round to zero; lanes that take
 *    another path are clamped too, so the float->int conversion never sees
 *    an out-of-range value. */
static inline rp_vh rp_v_f32_to_f16(rp_vf x)
{
    rp_vu f = (rp_vu)x;
    rp_vu sign = (f >> 16) & 0x8000u;
    rp_vu a = f & 0x7FFFFFFFu;

    rp_vu norm = (a - ((127u - 15u) << 23) + 0x0FFFu + ((a >> 13) & 1u)) >> 13;

    /* Fast path: every lane in [2^-14, 65536), i.e. a normal result. */
    if (!rp_v_any((rp_vu)(a - (113u << 23) >= 0x47800000u - (113u << 23))))
        return __builtin_convertvector(norm | sign, rp_vh);

    rp_vu special = 0x7C00u |
                    ((rp_vu)(a > 0x7F800000u) & (0x0200u | ((a >> 13) & 0x03FFu)));

    rp_vu e = a >> 23;
    rp_vu m = (a & 0x007FFFFFu) | 0x00800000u;
    rp_vu sticky = (rp_vu)((m & 0x1FFFu) != 0u) & 1u;
    rp_vu clamp = (rp_vu)(e < 95u) | (rp_vu)(e > 112u);
    rp_vu r = (clamp & 18u) | (~clamp & (113u - e));
    rp_vf scale = (rp_vf)((127u + 18u - r) << 23);
    rp_vf prod = __builtin_convertvector((rp_vi)(m >> 13), rp_vf) * scale;
    rp_vu p = (rp_vu)__builtin_convertvector(prod, rp_vi) | sticky;
    rp_vu sub = (p + 0x1FFFFu + ((p >> 18) & 1u)) >> 18;

    rp_vu is_special = (rp_vu)(a >= 0x47800000u);
    rp_vu is_sub = (rp_vu)(a < (113u << 23));
    rp_vu out = (is_special & special) | (~is_special & norm);
    out = (is_sub & sub) | (~is_sub & out);
    return __builtin_convertvector(out | sign, rp_vh);
}

#endif /* RP_REDUCE_SIMD_H */
