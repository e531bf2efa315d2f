/*
 * Internal: the table of kernels that one instruction-set variant provides.
 * kernels_impl.h generates a table per variant (reduce_generic.c for any CPU,
 * reduce_x86.c for AVX2+F16C); reduce.c picks one at first use and routes the
 * rp__reduce_* calls through it. All variants produce identical bits.
 */
#ifndef RP_REDUCE_KERNELS_H
#define RP_REDUCE_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/types.h"

/* dst = a OP b over count elements; dst may equal a or b. */
typedef void (*rp__binop_fn)(void *dst, const void *a, const void *b, size_t count);
/* buf = buf / nranks, nranks >= 2. */
typedef void (*rp__scale_fn)(void *buf, size_t count, int nranks);
/* acc = acc OP (float)src. */
typedef void (*rp__acc_fn)(float *acc, const void *src, size_t count);
/* Element-wise format conversion. */
typedef void (*rp__cvt_fn)(void *dst, const void *src, size_t count);

/* Row index into rp__reduce_kernels.acc by source type. */
enum {
    RP__ACC_F16 = 0,
    RP__ACC_BF16 = 1,
    RP__ACC_F32 = 2,
    RP__ACC_COUNT = 3
};

struct rp__reduce_kernels {
    const char *name;
    rp__binop_fn binop[RP_DTYPE_COUNT][RP_OP_COUNT];
    rp__scale_fn scale[RP_DTYPE_COUNT];
    rp__acc_fn acc[RP__ACC_COUNT][RP_OP_COUNT];
    rp__cvt_fn f32_to_f16;
    rp__cvt_fn f16_to_f32;
    rp__cvt_fn f32_to_bf16;
    rp__cvt_fn bf16_to_f32;
};

/* Baseline variant: plain C vector extensions at the compiler's default ISA
 * (SSE2 on x86-64, NEON on aarch64). Always present. */
extern const struct rp__reduce_kernels rp__reduce_kernels_generic;

#if defined(__x86_64__) || defined(__i386__)
#define RP_REDUCE_HAVE_X86_AVX2 1
/* 256-bit variant for CPUs with AVX2 and F16C; select only after checking
 * __builtin_cpu_supports for both. */
extern const struct rp__reduce_kernels rp__reduce_kernels_avx2;
#endif

#endif /* RP_REDUCE_KERNELS_H */
