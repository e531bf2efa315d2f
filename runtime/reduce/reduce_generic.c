/*
 * Baseline kernel variant, compiled for the compiler's default instruction
 * set (SSE2 on x86-64, NEON on aarch64) with 16-byte vectors. It needs no
 * special flags and is what runs when no faster variant fits the CPU.
 */
#define RP_VBYTES 16
#include "reduce/simd.h"

#define RP_KTABLE rp__reduce_kernels_generic
#define RP_KNAME "generic"
#define rp_k_f16_to_f32 rp_v_f16_to_f32
#define rp_k_f32_to_f16 rp_v_f32_to_f16
#define rp_k_bf16_to_f32 rp_v_bf16_to_f32
#define rp_k_f32_to_bf16 rp_v_f32_to_bf16

#include "reduce/kernels_impl.h"
