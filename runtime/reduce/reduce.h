/*
 * Internal: element-wise reduction kernels used by the ring collectives, and
 * the float32 <-> float16/bfloat16 conversions they rely on.
 *
 * Contract shared by every function here:
 *  - Deterministic: each output element depends only on the input elements
 *    at the same index, never on the buffer's length, alignment, how it is
 *    split into calls, or which CPU variant runs (generic or AVX2+F16C).
 *  - Buffers may have any alignment. count may be 0, in which case pointers
 *    are not dereferenced (NULL is fine).
 *  - Integer SUM/PROD wrap modulo 2^n (two's complement), with no undefined
 *    behaviour.
 *  - float16/bfloat16 are widened to float32, combined, and rounded to
 *    nearest-even once.
 *  - Float SUM/PROD (and AVG's division) are single IEEE operations in the
 *    current rounding mode (normally nearest-even); never fused.
 *  - NaN: every NaN produced by a reduction (rp__reduce*, rp__reduce_scale,
 *    rp__reduce_acc_f32) is the canonical quiet NaN: 0x7FC00000 (float32),
 *    0x7FF8000000000000 (float64), 0x7E00 (float16), 0x7FC0 (bfloat16),
 *    whatever the NaN inputs' payloads and signs were. Hardware NaN
 *    propagation differs by instruction operand order and by CPU, so this
 *    is what makes NaN results reproducible.
 *  - Float MIN/MAX: NaN if either operand is NaN (NaN propagates); -0
 *    counts as smaller than +0, so MIN(-0, +0) = -0 and MAX(-0, +0) = +0.
 *    With the NaN rule, every op is commutative bit for bit.
 *  - Invalid dtype/op values make these functions do nothing; check with
 *    rp__reduce_supported() first.
 */
#ifndef RP_REDUCE_REDUCE_H
#define RP_REDUCE_REDUCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/types.h"

/* dst[i] = dst[i] OP src[i] for i < count. AVG behaves as SUM here (the
 * caller divides once at the end with rp__reduce_scale). dst and src must
 * not overlap unless equal. */
void rp__reduce_inplace(rp_dtype_t dtype, rp_op_t op, void *dst, const void *src,
                        size_t count);

/* dst[i] = a[i] OP b[i]; dst may equal a or b (or both), but must not
 * partially overlap either. */
void rp__reduce(rp_dtype_t dtype, rp_op_t op, void *dst, const void *a,
                const void *b, size_t count);

/* Finish AVG: buf[i] = buf[i] / nranks. Integers truncate toward zero;
 * float types use a correctly rounded division (fp16/bf16 in float32, then
 * rounded once). nranks <= 1 leaves the buffer untouched. */
void rp__reduce_scale(rp_dtype_t dtype, void *buf, size_t count, int nranks);

/* Mixed precision, so a ring can carry fp16/bf16 partial sums in float32:
 * acc[i] = acc[i] OP (float)src[i], src_dtype FLOAT16, BFLOAT16 or FLOAT32.
 * AVG behaves as SUM. Round the final acc with rp__f32_to_f16/bf16. */
void rp__reduce_acc_f32(rp_op_t op, float *acc, const void *src,
                        rp_dtype_t src_dtype, size_t count);

/* Conversions: round to nearest-even (independent of the FP environment),
 * overflow to infinity, subnormals kept (no flush to zero), NaN stays NaN:
 * narrowing keeps the sign and top payload bits and sets the quiet bit,
 * float16 widening sets the quiet bit, bfloat16 widening is a plain shift.
 * float16 results are bit-identical to x86 F16C (checked over all 2^32
 * inputs). Widening is exact. dst and src must not overlap; pointers need
 * only the alignment their types demand in C. */
void rp__f32_to_f16(uint16_t *dst, const float *src, size_t count);
void rp__f16_to_f32(float *dst, const uint16_t *src, size_t count);
void rp__f32_to_bf16(uint16_t *dst, const float *src, size_t count);
void rp__bf16_to_f32(float *dst, const uint16_t *src, size_t count);

/* float16 and bfloat16: the types the collectives carry and accumulate
 * as float32 unless the wire is compressed. */
static inline bool rp__dtype_is_half(rp_dtype_t dtype)
{
    return dtype == RP_DTYPE_FLOAT16 || dtype == RP_DTYPE_BFLOAT16;
}

/* The conversions above chosen by @dtype (FLOAT16, else BFLOAT16), for
 * code that holds a half type's elements as float32: widen @n elements of
 * @src to float32, or narrow them back. */
void rp__half_widen(rp_dtype_t dtype, float *dst, const void *src, size_t n);
void rp__half_narrow(rp_dtype_t dtype, void *dst, const float *src, size_t n);

/* True if (dtype, op) is a valid pair; every op works with every type, so
 * this only rejects out-of-range enum values. */
bool rp__reduce_supported(rp_dtype_t dtype, rp_op_t op);

/* Kernel variants. They all give identical bits; only speed differs. */
typedef enum rp__reduce_isa {
    RP__REDUCE_ISA_AUTO = 0,    /* best one this CPU supports */
    RP__REDUCE_ISA_GENERIC = 1, /* compiler-default vectors (SSE2/NEON) */
    RP__REDUCE_ISA_AVX2 = 2     /* x86 AVX2 + F16C */
} rp__reduce_isa_t;

/* Force a variant (tests, benchmarks, rp_init for RINGPOINT_REDUCE_ISA).
 * Returns false, changing nothing, if this build or CPU cannot run it.
 * Safe to call from any thread, but calls already in flight finish with
 * the old variant. */
bool rp__reduce_set_isa(rp__reduce_isa_t isa);

/* Name of the variant in use ("generic", "avx2-f16c"); selects one if
 * none has been chosen yet. */
const char *rp__reduce_isa_name(void);

#endif /* RP_REDUCE_REDUCE_H */
