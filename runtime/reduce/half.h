/*
 * Internal: scalar conversions between float32 and the two 16-bit float
 * formats, for code that handles a single value (logging, checks, tools).
 * Bulk data should go through rp__f32_to_f16() and friends in reduce.h,
 * which are vectorised.
 *
 * These give exactly the same bits as the vector kernels and as x86 F16C:
 * round to nearest-even, overflow to infinity, subnormals kept, NaN stays NaN
 * with the quiet bit set and the top payload bits kept. Only integer
 * arithmetic is used for rounding, so the FP environment does not matter.
 */
#ifndef RP_REDUCE_HALF_H
#define RP_REDUCE_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t rp__f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float rp__f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* binary16 -> float32 (exact for every non-NaN input). */
static inline float rp__f16_to_f32_1(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7FFFu;
    uint32_t r;

    if (em >= 0x7C00u) /* Inf or NaN; a NaN becomes quiet like vcvtph2ps */
        r = (em << 13) | 0x7F800000u | (em > 0x7C00u ? 0x00400000u : 0u);
    else if (em >= 0x0400u) /* normal: rebias the exponent */
        r = (em << 13) + ((127u - 15u) << 23);
    else /* zero or subnormal: em * 2^-24, exact in float */
        r = rp__f32_bits((float)em * 0x1p-24f);
    return rp__f32_from_bits(r | sign);
}

/* float32 -> binary16, nearest-even (see rp_v_f32_to_f16 in simd.h). */
static inline uint16_t rp__f32_to_f16_1(float f)
{
    uint32_t u = rp__f32_bits(f);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7FFFFFFFu;
    uint32_t r;

    if (a >= 0x47800000u) { /* >= 65536, Inf or NaN */
        r = 0x7C00u;
        if (a > 0x7F800000u)
            r |= 0x0200u | ((a >> 13) & 0x03FFu);
    } else if (a >= (113u << 23)) { /* normal result (or rounds to Inf) */
        r = (a - ((127u - 15u) << 23) + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
    } else { /* subnormal or zero result */
        uint32_t e = a >> 23;
        uint32_t s = e < 95u ? 31u : 126u - e;
        uint32_t m = (a & 0x007FFFFFu) | 0x00800000u;
        r = (m + (1u << (s - 1u)) - 1u + ((m >> s) & 1u)) >> s;
    }
    return (uint16_t)(r | sign);
}

/* bfloat16 -> float32 (exact, NaN payload kept as is). */
static inline float rp__bf16_to_f32_1(uint16_t h)
{
    return rp__f32_from_bits((uint32_t)h << 16);
}

/* float32 -> bfloat16, nearest-even; NaN keeps its top bits and is quieted. */
static inline uint16_t rp__f32_to_bf16_1(float f)
{
    uint32_t u = rp__f32_bits(f);

    if ((u & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((u >> 16) | 0x0040u);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

#endif /* RP_REDUCE_HALF_H */
