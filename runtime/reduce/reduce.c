/*
 * Public face of the reduction kernels: argument checks and dispatch to the
 * kernel table of the instruction-set variant chosen for this CPU.
 *
 * The variant is chosen once, on first use, from CPUID (AVX2+F16C if present,
 * else generic) unless rp_init was told otherwise (RINGPOINT_REDUCE_ISA,
 * read by the settings table and set here with rp__reduce_set_isa); an
 * unavailable variant leaves the automatic choice. Since all variants give
 * identical bits, the choice only affects speed.
 */
#include "reduce/reduce.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "reduce/kernels.h"

#ifdef RP_REDUCE_HAVE_X86_AVX2
#include <cpuid.h>
#endif

/* NULL until first use. An atomic pointer rather than a pthread_once so the
 * hot path is a single load and tests can switch variants at run time. */
static _Atomic(const struct rp__reduce_kernels *) rp_active;

static const struct rp__reduce_kernels *rp_pick(rp__reduce_isa_t isa);

#ifdef RP_REDUCE_HAVE_X86_AVX2
static bool rp_cpu_has_avx2(void)
{
    unsigned eax, ebx, ecx, edx;

    /* The compiler runtime reports AVX2 only when the OS also saves the YMM
     * state. F16C is read from CPUID directly because clang's
     * __builtin_cpu_supports does not know "f16c"; its vector state is the
     * same YMM state already checked. */
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2"))
        return false;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx))
        return false;
    return (ecx & (1u << 29)) != 0; /* CPUID.1:ECX.F16C */
}
#endif

static const struct rp__reduce_kernels *rp_pick_auto(void)
{
    const struct rp__reduce_kernels *k = rp_pick(RP__REDUCE_ISA_AVX2);

    if (k == NULL)
        k = &rp__reduce_kernels_generic;
    return k;
}

static const struct rp__reduce_kernels *rp_pick(rp__reduce_isa_t isa)
{
    switch (isa) {
    case RP__REDUCE_ISA_AUTO:
        return rp_pick_auto();
    case RP__REDUCE_ISA_GENERIC:
        return &rp__reduce_kernels_generic;
    case RP__REDUCE_ISA_AVX2:
#ifdef RP_REDUCE_HAVE_X86_AVX2
        if (rp_cpu_has_avx2())
            return &rp__reduce_kernels_avx2;
#endif
        return NULL;
    }
    return NULL;
}

static const struct rp__reduce_kernels *rp_kernels(void)
{
    const struct rp__reduce_kernels *k =
        atomic_load_explicit(&rp_active, memory_order_acquire);

    if (k == NULL) {
        const struct rp__reduce_kernels *expected = NULL;

        k = rp_pick(RP__REDUCE_ISA_AUTO);
        /* Another thread may have chosen first (or called set_isa); keep
         * its choice so every thread agrees. */
        if (!atomic_compare_exchange_strong_explicit(&rp_active, &expected, k,
                                                     memory_order_acq_rel,
                                                     memory_order_acquire))
            k = expected;
    }
    return k;
}

bool rp__reduce_set_isa(rp__reduce_isa_t isa)
{
    const struct rp__reduce_kernels *k = rp_pick(isa);

    if (k == NULL)
        return false;
    atomic_store_explicit(&rp_active, k, memory_order_release);
    return true;
}

const char *rp__reduce_isa_name(void)
{
    return rp_kernels()->name;
}

bool rp__reduce_supported(rp_dtype_t dtype, rp_op_t op)
{
    /* Compare as unsigned so negative enum values are rejected as well. */
    return (unsigned)dtype < (unsigned)RP_DTYPE_COUNT &&
           (unsigned)op < (unsigned)RP_OP_COUNT;
}

void rp__reduce_inplace(rp_dtype_t dtype, rp_op_t op, void *dst, const void *src,
                        size_t count)
{
    if (count == 0 || !rp__reduce_supported(dtype, op))
        return;
    rp_kernels()->binop[dtype][op](dst, dst, src, count);
}

void rp__reduce(rp_dtype_t dtype, rp_op_t op, void *dst, const void *a,
                const void *b, size_t count)
{
    if (count == 0 || !rp__reduce_supported(dtype, op))
        return;
    rp_kernels()->binop[dtype][op](dst, a, b, count);
}

void rp__reduce_scale(rp_dtype_t dtype, void *buf, size_t count, int nranks)
{
    /* Dividing by 1 is the identity; skipping it also keeps signalling NaN
     * bits intact in a single-rank job. */
    if (count == 0 || nranks <= 1 || (unsigned)dtype >= (unsigned)RP_DTYPE_COUNT)
        return;
    rp_kernels()->scale[dtype](buf, count, nranks);
}

void rp__reduce_acc_f32(rp_op_t op, float *acc, const void *src,
                        rp_dtype_t src_dtype, size_t count)
{
    int row;

    if (count == 0 || (unsigned)op >= (unsigned)RP_OP_COUNT)
        return;
    switch (src_dtype) {
    case RP_DTYPE_FLOAT16:
        row = RP__ACC_F16;
        break;
    case RP_DTYPE_BFLOAT16:
        row = RP__ACC_BF16;
        break;
    case RP_DTYPE_FLOAT32:
        row = RP__ACC_F32;
        break;
    default:
        return;
    }
    rp_kernels()->acc[row][op](acc, src, count);
}

void rp__f32_to_f16(uint16_t *dst, const float *src, size_t count)
{
    if (count != 0)
        rp_kernels()->f32_to_f16(dst, src, count);
}

void rp__f16_to_f32(float *dst, const uint16_t *src, size_t count)
{
    if (count != 0)
        rp_kernels()->f16_to_f32(dst, src, count);
}

void rp__f32_to_bf16(uint16_t *dst, const float *src, size_t count)
{
    if (count != 0)
        rp_kernels()->f32_to_bf16(dst, src, count);
}

void rp__bf16_to_f32(float *dst, const uint16_t *src, size_t count)
{
    if (count != 0)
        rp_kernels()->bf16_to_f32(dst, src, count);
}

void rp__half_widen(rp_dtype_t dtype, float *dst, const void *src, size_t n)
{
    if (dtype == RP_DTYPE_FLOAT16) {
        rp__f16_to_f32(dst, src, n);
    } else {
        rp__bf16_to_f32(dst, src, n);
    }
}

void rp__half_narrow(rp_dtype_t dtype, void *dst, const float *src, size_t n)
{
    if (dtype == RP_DTYPE_FLOAT16) {
        rp__f32_to_f16(dst, src, n);
    } else {
        rp__f32_to_bf16(dst, src, n);
    }
}
