/*
 * x86 kernel variant with 256-bit AVX2 vectors and F16C half conversions.
 * The ISA is enabled by the pragma below rather than by -mavx2 on the
 * command line, so the build needs no per-file flags and the rest of the
 * library stays runnable on any x86-64; reduce.c only selects this table
 * after the CPU (and OS) have been checked for AVX2 and F16C.
 *
 * FMA is deliberately not enabled: no kernel has a multiply-add pattern
 * today, and leaving it off guarantees none can be contracted later.
 */
#if defined(__x86_64__) || defined(__i386__)

#if defined(__clang__)
/* Clang ignores "#pragma GCC target"; this is its equivalent. */
#pragma clang attribute push(__attribute__((target("avx2,f16c"))), apply_to = function)
#else
#pragma GCC target("avx2,f16c")
#endif

#include <immintrin.h>

#define RP_VBYTES 32
#include "reduce/simd.h"

/* bf16 binary kernels work on 128 elements (16 float vectors) per block:
 * with the default 32, bf16 SUM on buffers larger than the cache ran at
 * less than half the speed (in cache the two tie; doc/benchmarks.md,
 * "Reduction kernels"). fp16 is fastest with the default, so it keeps it.
 * Found by measurement, not by theory. */
#define RP_BF16_NV 16

#define RP_KTABLE rp__reduce_kernels_avx2
#define RP_KNAME "avx2-f16c"

/* vcvtph2ps/vcvtps2ph: exact widening, and narrowing with the rounding mode
 * given in the instruction (nearest-even), independent of MXCSR. simd.h's
 * portable versions produce the same bits; the unit tests check it. */
static inline rp_vf rp_k_f16_to_f32(rp_vh h)
{
    return (rp_vf)_mm256_cvtph_ps((__m128i)h);
}

static inline rp_vh rp_k_f32_to_f16(rp_vf f)
{
    return (rp_vh)_mm256_cvtps_ph((__m256)f, _MM_FROUND_TO_NEAREST_INT);
}

/* bfloat16 has no conversion instruction before AVX512-BF16 (whose
 * vcvtneps2bf16 treats subnormal inputs as zero, so it would not match the
 * other variants anyway). These are
 * simd.h's integer algorithms in intrinsics: GCC widens and narrows 16-bit
 * vector-extension lanes with clumsy shuffle sequences, which these
 * intrinsics avoid. Same bits, checked by the unit tests. */
static inline rp_vf rp_k_bf16_to_f32(rp_vh h)
{
    return (rp_vf)_mm256_slli_epi32(_mm256_cvtepu16_epi32((__m128i)h), 16);
}

static inline rp_vh rp_k_f32_to_bf16(rp_vf x)
{
    __m256i f = (__m256i)x;
    __m256i hi = _mm256_srli_epi32(f, 16);
    __m256i lsb = _mm256_and_si256(hi, _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(_mm256_add_epi32(f, _mm256_set1_epi32(0x7FFF)), lsb);
    __m256i qnan = _mm256_or_si256(hi, _mm256_set1_epi32(0x0040));
    /* Both sides are non-negative, so the signed compare is safe. */
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(f, _mm256_set1_epi32(0x7FFFFFFF)),
                                     _mm256_set1_epi32(0x7F800000));

    r = _mm256_blendv_epi8(_mm256_srli_epi32(r, 16), qnan, nan);
    /* Every lane is <= 0xFFFF, so the saturating pack is a plain narrowing. */
    return (rp_vh)_mm_packus_epi32(_mm256_castsi256_si128(r),
                                   _mm256_extracti128_si256(r, 1));
}

/* NaN check for the canonicalisation fix-up: one unordered compare covers
 * two vectors, and vtestps reads the mask without leaving the vector unit.
 * It runs once per block on every float SUM/PROD, so in cache the portable
 * check is a large part of fp16 SUM's time (doc/benchmarks.md). */
#define RP_K_HAVE_ANY_NAN 1

static inline int rp_k_any_nan_f32(const rp_vf *r, size_t nv)
{
    __m256 m = _mm256_cmp_ps((__m256)r[0], (__m256)r[nv - 1], _CMP_UNORD_Q);

    for (size_t v = 1; v + 1 < nv; v += 2)
        m = _mm256_or_ps(m, _mm256_cmp_ps((__m256)r[v], (__m256)r[v + 1],
                                          _CMP_UNORD_Q));
    return !_mm256_testz_ps(m, m);
}

static inline int rp_k_any_nan_f64(const rp_vd *r, size_t nv)
{
    __m256d m = _mm256_cmp_pd((__m256d)r[0], (__m256d)r[nv - 1], _CMP_UNORD_Q);

    for (size_t v = 1; v + 1 < nv; v += 2)
        m = _mm256_or_pd(m, _mm256_cmp_pd((__m256d)r[v], (__m256d)r[v + 1],
                                          _CMP_UNORD_Q));
    return !_mm256_testz_pd(m, m);
}

#include "reduce/kernels_impl.h"

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

/* Not x86: nothing to build here, but a translation unit must not be empty. */
typedef int rp__reduce_x86_unused;

#endif
