/**
 * @file ringpoint/types.h
 * @brief Element types and reduction operations understood by the collectives.
 */
#ifndef RINGPOINT_TYPES_H
#define RINGPOINT_TYPES_H

#include <stddef.h>
#include <ringpoint/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Element type of a buffer. Values are ABI and never renumbered.
 *
 * float16 is IEEE 754 binary16; bfloat16 is the upper half of a binary32.
 * Both are reduced in float32 and rounded to nearest-even once per step.
 */
typedef enum rp_dtype {
    RP_DTYPE_UINT8    = 0, /**< 8-bit unsigned integer. */
    RP_DTYPE_INT32    = 1, /**< 32-bit signed integer. */
    RP_DTYPE_INT64    = 2, /**< 64-bit signed integer. */
    RP_DTYPE_FLOAT16  = 3, /**< IEEE 754 binary16. */
    RP_DTYPE_BFLOAT16 = 4, /**< bfloat16 (8-bit exponent, 7-bit mantissa). */
    RP_DTYPE_FLOAT32  = 5, /**< IEEE 754 binary32. */
    RP_DTYPE_FLOAT64  = 6, /**< IEEE 754 binary64. */
    RP_DTYPE_COUNT    = 7  /**< Number of types; not a type. */
} rp_dtype_t;

/**
 * @brief Reduction operation. Values are ABI and never renumbered.
 *
 * RP_OP_AVG is a sum divided by the number of ranks; on integers the
 * division truncates toward zero.
 */
typedef enum rp_op {
    RP_OP_SUM   = 0, /**< Element-wise sum. */
    RP_OP_PROD  = 1, /**< Element-wise product. */
    RP_OP_MIN   = 2, /**< Element-wise minimum. */
    RP_OP_MAX   = 3, /**< Element-wise maximum. */
    RP_OP_AVG   = 4, /**< Element-wise mean over the ranks. */
    RP_OP_COUNT = 5  /**< Number of operations; not an operation. */
} rp_op_t;

/**
 * @brief Size in bytes of one element of @p dtype.
 * @return 0 if @p dtype is not a valid type.
 */
RP_API size_t rp_dtype_size(rp_dtype_t dtype);

/**
 * @brief Short lower-case name of @p dtype ("float32", "bfloat16", ...).
 * @return A static string; "invalid" for an unknown value.
 */
RP_API const char *rp_dtype_name(rp_dtype_t dtype);

/**
 * @brief Short lower-case name of @p op ("sum", "avg", ...).
 * @return A static string; "invalid" for an unknown value.
 */
RP_API const char *rp_op_name(rp_op_t op);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_TYPES_H */
