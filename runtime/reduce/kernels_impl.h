/*
 * Internal template: the body of every reduction kernel, compiled once per
 * instruction-set variant. The including file sets the target ISA (if any),
 * defines RP_VBYTES, includes simd.h, and defines
 *
 *   RP_KTABLE            name of the struct rp__reduce_kernels to define
 *   RP_KNAME             its human-readable name
 *   rp_k_f16_to_f32()    rp_vh -> rp_vf binary16 widening
 *   rp_k_f32_to_f16()    rp_vf -> rp_vh binary16 narrowing (nearest-even)
 *   rp_k_bf16_to_f32(), rp_k_f32_to_bf16()   the same for bfloat16
 *
 * (the conversions may simply be #defined to the portable ones in simd.h),
 * and optionally RP_BF16_NV (see below).
 *
 * How the loops are shaped, and why:
 *  - Work is done in fixed-size blocks of whole vectors. Each block loads all
 *    its inputs before storing, so dst may equal a or b.
 *  - The remainder (fewer elements than a block) is copied into a zeroed
 *    block-sized buffer, run through the same block code, and copied back.
 *    There is no scalar tail at all, so an element gets the same bits no
 *    matter where it sits in the buffer or how the buffer is split. (The
 *    zeroing only keeps the unused lanes defined, for valgrind/MSan and to
 *    avoid slow paths on stack garbage; their results are discarded.)
 *  - Every memory access is a memcpy of a vector, i.e. an unaligned move;
 *    callers may pass pointers with any alignment.
 *  - Each element sees a single IEEE operation (no a*b+c), so FMA
 *    contraction cannot apply and -ffp-contract does not matter.
 *  - Float SUM/PROD/AVG results that are NaN become the canonical NaN (see
 *    simd.h). NaNs are rare, so a block first checks whether it has any and
 *    only then pays for the fix-up.
 */
#ifndef RP_REDUCE_KERNELS_IMPL_H
#define RP_REDUCE_KERNELS_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "reduce/kernels.h"

/* Bytes of 32-bit data per block: 4 AVX2 or 8 SSE vectors (per operand),
 * enough independent work to hide latency without spilling registers. */
#define RP_BLK 128
#define RP_NV (RP_BLK / RP_VBYTES)
/* Elements per block for 32-bit data; 16-bit data uses the same count, so
 * that one half vector widens into exactly one float vector. */
#define RP_NE32 (RP_BLK / 4)

/* Float vectors per block for the bfloat16 binary kernels; a variant may
 * pick more (see reduce_x86.c). */
#ifndef RP_BF16_NV
#define RP_BF16_NV RP_NV
#endif

/* The per-block loops must be fully unrolled so that the x[]/y[]/r[] arrays
 * become registers; -O2 alone leaves them in memory and halves throughput. */
#define RP_UNROLL _Pragma("GCC unroll 16")

/* ---- drivers ------------------------------------------------------------ */

/* d[i] = BLOCK(a[i], b[i]) over whole blocks, then a zero-padded tail.
 * d and a have element size DESZ, b has BESZ. */
#define RP_DRIVE2(BLOCK, DESZ, BESZ, NELEM, dst, a, b, count)                 \
    do {                                                                      \
        enum { DB_ = (DESZ) * (NELEM), BB_ = (BESZ) * (NELEM) };              \
        unsigned char *d_ = (unsigned char *)(dst);                           \
        const unsigned char *a_ = (const unsigned char *)(a);                 \
        const unsigned char *b_ = (const unsigned char *)(b);                 \
        size_t full_ = (count) / (NELEM), left_ = (count) % (NELEM);          \
        for (size_t k_ = 0; k_ < full_; k_++) {                               \
            BLOCK(d_, a_, b_);                                                \
            d_ += DB_;                                                        \
            a_ += DB_;                                                        \
            b_ += BB_;                                                        \
        }                                                                     \
        if (left_ != 0) {                                                     \
            unsigned char ta_[DB_] = {0}, tb_[BB_] = {0};                     \
            memcpy(ta_, a_, left_ * (DESZ));                                  \
            memcpy(tb_, b_, left_ * (BESZ));                                  \
            BLOCK(ta_, ta_, tb_);                                             \
            memcpy(d_, ta_, left_ * (DESZ));                                  \
        }                                                                     \
    } while (0)

/* d[i] = BLOCK(s[i], arg), same scheme; d and s may be equal. */
#define RP_DRIVE1(BLOCK, DESZ, SESZ, NELEM, dst, src, count, arg)             \
    do {                                                                      \
        enum { DB_ = (DESZ) * (NELEM), SB_ = (SESZ) * (NELEM) };              \
        unsigned char *d_ = (unsigned char *)(dst);                           \
        const unsigned char *s_ = (const unsigned char *)(src);               \
        size_t full_ = (count) / (NELEM), left_ = (count) % (NELEM);          \
        for (size_t k_ = 0; k_ < full_; k_++) {                               \
            BLOCK(d_, s_, arg);                                               \
            d_ += DB_;                                                        \
            s_ += SB_;                                                        \
        }                                                                     \
        if (left_ != 0) {                                                     \
            unsigned char td_[DB_], ts_[SB_] = {0};                           \
            memcpy(ts_, s_, left_ * (SESZ));                                  \
            BLOCK(td_, ts_, arg);                                             \
            memcpy(d_, td_, left_ * (DESZ));                                  \
        }                                                                     \
    } while (0)

/* ---- NaN fix-up for a block of results ---------------------------------- */

/* Does any lane of r[0..nv) hold a NaN? A variant may supply faster ones
 * (reduce_x86.c) by defining RP_K_HAVE_ANY_NAN. */
#ifndef RP_K_HAVE_ANY_NAN
static inline int rp_k_any_nan_f32(const rp_vf *r, size_t nv)
{
    rp_vi nan = (r[0] != r[0]);

    RP_UNROLL for (size_t v = 1; v < nv; v++)
        nan |= (r[v] != r[v]);
    return rp_v_any((rp_vu)nan);
}

static inline int rp_k_any_nan_f64(const rp_vd *r, size_t nv)
{
    rp_vl nan = (r[0] != r[0]);

    RP_UNROLL for (size_t v = 1; v < nv; v++)
        nan |= (r[v] != r[v]);
    return rp_v_any((rp_vu)nan);
}
#endif

static inline void rp_k_fix_f32(rp_vf *r, size_t nv)
{
    if (__builtin_expect(rp_k_any_nan_f32(r, nv), 0)) {
        RP_UNROLL for (size_t v = 0; v < nv; v++)
            r[v] = rp_v_canon_f32(r[v]);
    }
}

static inline void rp_k_fix_f64(rp_vd *r, size_t nv)
{
    if (__builtin_expect(rp_k_any_nan_f64(r, nv), 0)) {
        RP_UNROLL for (size_t v = 0; v < nv; v++)
            r[v] = rp_v_canon_f64(r[v]);
    }
}

/* For ops whose result needs no fix-up: integers, and float MIN/MAX, which
 * produce the canonical NaN themselves (a NaN operand need not give a NaN
 * from the raw compare-and-select, so they cannot be fixed afterwards). */
#define RP_K_NOFIX(r, nv) ((void)(r), (void)(nv))

/* ---- same-type binary kernels ------------------------------------------- */

/* d = VOP(a, b) for NV vectors of type VT, then FIX(results). */
#define RP_DEF_BINOP(NAME, VT, ESZ, VOP, FIX)                                 \
    static inline void NAME##_blk(unsigned char *d, const unsigned char *a,   \
                                  const unsigned char *b)                     \
    {                                                                         \
        VT r[RP_NV];                                                          \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            r[v] = VOP(rp_ld_##VT(a + v * sizeof(VT)),                        \
                       rp_ld_##VT(b + v * sizeof(VT)));                       \
        FIX(r, RP_NV);                                                        \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            rp_st_##VT(d + v * sizeof(VT), r[v]);                             \
    }                                                                         \
    static void NAME(void *dst, const void *a, const void *b, size_t count)   \
    {                                                                         \
        RP_DRIVE2(NAME##_blk, ESZ, ESZ, RP_BLK / (ESZ), dst, a, b, count);    \
    }

#define RP_DEF_INT_BINOPS(PFX, VT, ESZ, SFX)                                  \
    RP_DEF_BINOP(PFX##_sum, VT, ESZ, rp_v_sum_##SFX, RP_K_NOFIX)              \
    RP_DEF_BINOP(PFX##_prod, VT, ESZ, rp_v_prod_##SFX, RP_K_NOFIX)            \
    RP_DEF_BINOP(PFX##_min, VT, ESZ, rp_v_min_##SFX, RP_K_NOFIX)              \
    RP_DEF_BINOP(PFX##_max, VT, ESZ, rp_v_max_##SFX, RP_K_NOFIX)

#define RP_DEF_FLT_BINOPS(PFX, VT, ESZ, SFX)                                  \
    RP_DEF_BINOP(PFX##_sum, VT, ESZ, rp_v_sum_##SFX, rp_k_fix_##SFX)          \
    RP_DEF_BINOP(PFX##_prod, VT, ESZ, rp_v_prod_##SFX, rp_k_fix_##SFX)        \
    RP_DEF_BINOP(PFX##_min, VT, ESZ, rp_v_min_##SFX, RP_K_NOFIX)              \
    RP_DEF_BINOP(PFX##_max, VT, ESZ, rp_v_max_##SFX, RP_K_NOFIX)

RP_DEF_INT_BINOPS(rp_k_u8, rp_vb, 1, u8)
RP_DEF_INT_BINOPS(rp_k_i32, rp_vu, 4, i32)
RP_DEF_INT_BINOPS(rp_k_i64, rp_vul, 8, i64)
RP_DEF_FLT_BINOPS(rp_k_f32, rp_vf, 4, f32)
RP_DEF_FLT_BINOPS(rp_k_f64, rp_vd, 8, f64)

/* 16-bit floats: widen both operands to float32, combine, narrow once.
 * NV float vectors (NV * RP_VL32 elements) per block. */
#define RP_DEF_HBINOP(NAME, NV, TOF, FROMF, VOP, FIX)                         \
    static inline void NAME##_blk(unsigned char *d, const unsigned char *a,   \
                                  const unsigned char *b)                     \
    {                                                                         \
        rp_vf r[NV];                                                          \
        RP_UNROLL for (size_t v = 0; v < (NV); v++)                           \
            r[v] = VOP(TOF(rp_ld_rp_vh(a + v * sizeof(rp_vh))),               \
                       TOF(rp_ld_rp_vh(b + v * sizeof(rp_vh))));              \
        FIX(r, (NV));                                                         \
        RP_UNROLL for (size_t v = 0; v < (NV); v++)                           \
            rp_st_rp_vh(d + v * sizeof(rp_vh), FROMF(r[v]));                  \
    }                                                                         \
    static void NAME(void *dst, const void *a, const void *b, size_t count)   \
    {                                                                         \
        RP_DRIVE2(NAME##_blk, 2, 2, (NV) * RP_VL32, dst, a, b, count);        \
    }

#define RP_DEF_HALF_BINOPS(PFX, NV, TOF, FROMF)                               \
    RP_DEF_HBINOP(PFX##_sum, NV, TOF, FROMF, rp_v_sum_f32, rp_k_fix_f32)      \
    RP_DEF_HBINOP(PFX##_prod, NV, TOF, FROMF, rp_v_prod_f32, rp_k_fix_f32)    \
    RP_DEF_HBINOP(PFX##_min, NV, TOF, FROMF, rp_v_min_f32, RP_K_NOFIX)        \
    RP_DEF_HBINOP(PFX##_max, NV, TOF, FROMF, rp_v_max_f32, RP_K_NOFIX)

RP_DEF_HALF_BINOPS(rp_k_f16, RP_NV, rp_k_f16_to_f32, rp_k_f32_to_f16)
RP_DEF_HALF_BINOPS(rp_k_bf16, RP_BF16_NV, rp_k_bf16_to_f32, rp_k_f32_to_bf16)

/* ---- mixed precision: acc (float32) OP= widen(src) ---------------------- */

static inline rp_vf rp_k_id_f32(rp_vf x) { return x; }

#define RP_DEF_ACC(NAME, SVT, TOF, VOP, FIX)                                  \
    static inline void NAME##_blk(unsigned char *d, const unsigned char *a,   \
                                  const unsigned char *b)                     \
    {                                                                         \
        rp_vf r[RP_NV];                                                       \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            r[v] = VOP(rp_ld_rp_vf(a + v * sizeof(rp_vf)),                    \
                       TOF(rp_ld_##SVT(b + v * sizeof(SVT))));                \
        FIX(r, RP_NV);                                                        \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            rp_st_rp_vf(d + v * sizeof(rp_vf), r[v]);                         \
    }                                                                         \
    static void NAME(float *acc, const void *src, size_t count)               \
    {                                                                         \
        RP_DRIVE2(NAME##_blk, 4, sizeof(SVT) / RP_VL32, RP_NE32,              \
                  acc, acc, src, count);                                      \
    }

#define RP_DEF_ACCS(PFX, SVT, TOF)                                            \
    RP_DEF_ACC(PFX##_sum, SVT, TOF, rp_v_sum_f32, rp_k_fix_f32)               \
    RP_DEF_ACC(PFX##_prod, SVT, TOF, rp_v_prod_f32, rp_k_fix_f32)             \
    RP_DEF_ACC(PFX##_min, SVT, TOF, rp_v_min_f32, RP_K_NOFIX)                 \
    RP_DEF_ACC(PFX##_max, SVT, TOF, rp_v_max_f32, RP_K_NOFIX)

RP_DEF_ACCS(rp_k_acc_f16, rp_vh, rp_k_f16_to_f32)
RP_DEF_ACCS(rp_k_acc_bf16, rp_vh, rp_k_bf16_to_f32)
RP_DEF_ACCS(rp_k_acc_f32, rp_vf, rp_k_id_f32)

/* ---- conversions -------------------------------------------------------- */

#define RP_DEF_CVT(NAME, DVT, SVT, FN)                                        \
    static inline void NAME##_blk(unsigned char *d, const unsigned char *s,   \
                                  int unused)                                 \
    {                                                                         \
        DVT r[RP_NV];                                                         \
        (void)unused;                                                         \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            r[v] = FN(rp_ld_##SVT(s + v * sizeof(SVT)));                      \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            rp_st_##DVT(d + v * sizeof(DVT), r[v]);                           \
    }                                                                         \
    static void NAME(void *dst, const void *src, size_t count)                \
    {                                                                         \
        RP_DRIVE1(NAME##_blk, sizeof(DVT) / RP_VL32, sizeof(SVT) / RP_VL32,   \
                  RP_NE32, dst, src, count, 0);                               \
    }

RP_DEF_CVT(rp_k_cvt_f32_to_f16, rp_vh, rp_vf, rp_k_f32_to_f16)
RP_DEF_CVT(rp_k_cvt_f16_to_f32, rp_vf, rp_vh, rp_k_f16_to_f32)
RP_DEF_CVT(rp_k_cvt_f32_to_bf16, rp_vh, rp_vf, rp_k_f32_to_bf16)
RP_DEF_CVT(rp_k_cvt_bf16_to_f32, rp_vf, rp_vh, rp_k_bf16_to_f32)

/* ---- AVG finish: divide by the rank count ------------------------------- */

/* Floats: a true IEEE division (not a multiply by 1/n, which can be off by
 * one ulp), NaN results canonical. fp16/bf16 are divided in float and
 * rounded once. */
#define RP_DEF_FSCALE(NAME, VT, ESZ, KT, FIX)                                 \
    static inline void NAME##_blk(unsigned char *d, const unsigned char *s,   \
                                  KT k)                                       \
    {                                                                         \
        VT r[RP_NV];                                                          \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            r[v] = rp_ld_##VT(s + v * sizeof(VT)) / k;                        \
        FIX(r, RP_NV);                                                        \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            rp_st_##VT(d + v * sizeof(VT), r[v]);                             \
    }                                                                         \
    static void NAME(void *buf, size_t count, int nranks)                     \
    {                                                                         \
        RP_DRIVE1(NAME##_blk, ESZ, ESZ, RP_BLK / (ESZ), buf, buf, count,      \
                  (KT)nranks);                                                \
    }

RP_DEF_FSCALE(rp_k_scale_f32, rp_vf, 4, float, rp_k_fix_f32)
RP_DEF_FSCALE(rp_k_scale_f64, rp_vd, 8, double, rp_k_fix_f64)

#define RP_DEF_HSCALE(NAME, TOF, FROMF)                                       \
    static inline void NAME##_blk(unsigned char *d, const unsigned char *s,   \
                                  float k)                                    \
    {                                                                         \
        rp_vf r[RP_NV];                                                       \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            r[v] = TOF(rp_ld_rp_vh(s + v * sizeof(rp_vh))) / k;               \
        rp_k_fix_f32(r, RP_NV);                                               \
        RP_UNROLL for (size_t v = 0; v < RP_NV; v++)                          \
            rp_st_rp_vh(d + v * sizeof(rp_vh), FROMF(r[v]));                  \
    }                                                                         \
    static void NAME(void *buf, size_t count, int nranks)                     \
    {                                                                         \
        RP_DRIVE1(NAME##_blk, 2, 2, RP_NE32, buf, buf, count, (float)nranks); \
    }

RP_DEF_HSCALE(rp_k_scale_f16, rp_k_f16_to_f32, rp_k_f32_to_f16)
RP_DEF_HSCALE(rp_k_scale_bf16, rp_k_bf16_to_f32, rp_k_f32_to_bf16)

/* int32: divide in double and truncate. This equals C's x / n for every
 * int32 x and n >= 1: x/n is either an integer (exact in double) or at least
 * 1/n away from the next integer, while the division's rounding error is at
 * most 2^31/n * 2^-53 < 1/n. Unlike integer division, this vectorises. */
static inline void rp_k_scale_i32_blk(unsigned char *d, const unsigned char *s,
                                      double k)
{
    enum { NV2 = 2 * RP_NV };
    rp_vi_d r[NV2];

    RP_UNROLL for (size_t v = 0; v < NV2; v++) {
        rp_vd x = __builtin_convertvector(rp_ld_rp_vi_d(s + v * sizeof(rp_vi_d)),
                                          rp_vd);
        r[v] = __builtin_convertvector(x / k, rp_vi_d);
    }
    RP_UNROLL for (size_t v = 0; v < NV2; v++)
        rp_st_rp_vi_d(d + v * sizeof(rp_vi_d), r[v]);
}

static void rp_k_scale_i32(void *buf, size_t count, int nranks)
{
    RP_DRIVE1(rp_k_scale_i32_blk, 4, 4, RP_NE32, buf, buf, count,
              (double)nranks);
}

/* uint8 and int64 AVG are rare; plain division per element is fine. */
static void rp_k_scale_u8(void *buf, size_t count, int nranks)
{
    unsigned char *p = buf;
    unsigned k = (unsigned)nranks;

    for (size_t i = 0; i < count; i++)
        p[i] = (unsigned char)(p[i] / k);
}

static void rp_k_scale_i64(void *buf, size_t count, int nranks)
{
    unsigned char *p = buf;

    for (size_t i = 0; i < count; i++) {
        int64_t x;

        memcpy(&x, p + i * 8, 8);
        x /= nranks; /* nranks >= 2, so no INT64_MIN / -1 overflow */
        memcpy(p + i * 8, &x, 8);
    }
}

/* ---- the table -----------------------------------------------------------
 * AVG reduces exactly like SUM; the division happens once in scale. */

#define RP_ROW(PFX)                                                           \
    {                                                                         \
        [RP_OP_SUM] = PFX##_sum, [RP_OP_PROD] = PFX##_prod,                   \
        [RP_OP_MIN] = PFX##_min, [RP_OP_MAX] = PFX##_max,                     \
        [RP_OP_AVG] = PFX##_sum                                               \
    }

const struct rp__reduce_kernels RP_KTABLE = {
    .name = RP_KNAME,
    .binop = {
        [RP_DTYPE_UINT8] = RP_ROW(rp_k_u8),
        [RP_DTYPE_INT32] = RP_ROW(rp_k_i32),
        [RP_DTYPE_INT64] = RP_ROW(rp_k_i64),
        [RP_DTYPE_FLOAT16] = RP_ROW(rp_k_f16),
        [RP_DTYPE_BFLOAT16] = RP_ROW(rp_k_bf16),
        [RP_DTYPE_FLOAT32] = RP_ROW(rp_k_f32),
        [RP_DTYPE_FLOAT64] = RP_ROW(rp_k_f64),
    },
    .scale = {
        [RP_DTYPE_UINT8] = rp_k_scale_u8,
        [RP_DTYPE_INT32] = rp_k_scale_i32,
        [RP_DTYPE_INT64] = rp_k_scale_i64,
        [RP_DTYPE_FLOAT16] = rp_k_scale_f16,
        [RP_DTYPE_BFLOAT16] = rp_k_scale_bf16,
        [RP_DTYPE_FLOAT32] = rp_k_scale_f32,
        [RP_DTYPE_FLOAT64] = rp_k_scale_f64,
    },
    .acc = {
        [RP__ACC_F16] = RP_ROW(rp_k_acc_f16),
        [RP__ACC_BF16] = RP_ROW(rp_k_acc_bf16),
        [RP__ACC_F32] = RP_ROW(rp_k_acc_f32),
    },
    .f32_to_f16 = rp_k_cvt_f32_to_f16,
    .f16_to_f32 = rp_k_cvt_f16_to_f32,
    .f32_to_bf16 = rp_k_cvt_f32_to_bf16,
    .bf16_to_f32 = rp_k_cvt_bf16_to_f32,
};

#endif /* RP_REDUCE_KERNELS_IMPL_H */
