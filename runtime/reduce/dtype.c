/*
 * Sizes and names of the element types and reduction operations declared in
 * ringpoint/types.h. Tables are indexed by the ABI-fixed enum values.
 */
#include "ringpoint/types.h"

static const size_t rp_dtype_sizes[RP_DTYPE_COUNT] = {
    [RP_DTYPE_UINT8] = 1,
    [RP_DTYPE_INT32] = 4,
    [RP_DTYPE_INT64] = 8,
    [RP_DTYPE_FLOAT16] = 2,
    [RP_DTYPE_BFLOAT16] = 2,
    [RP_DTYPE_FLOAT32] = 4,
    [RP_DTYPE_FLOAT64] = 8,
};

static const char *const rp_dtype_names[RP_DTYPE_COUNT] = {
    [RP_DTYPE_UINT8] = "uint8",
    [RP_DTYPE_INT32] = "int32",
    [RP_DTYPE_INT64] = "int64",
    [RP_DTYPE_FLOAT16] = "float16",
    [RP_DTYPE_BFLOAT16] = "bfloat16",
    [RP_DTYPE_FLOAT32] = "float32",
    [RP_DTYPE_FLOAT64] = "float64",
};

static const char *const rp_op_names[RP_OP_COUNT] = {
    [RP_OP_SUM] = "sum",
    [RP_OP_PROD] = "prod",
    [RP_OP_MIN] = "min",
    [RP_OP_MAX] = "max",
    [RP_OP_AVG] = "avg",
};

/* Enum values outside the tables (including negative ones, which become huge
 * when compared as unsigned) are reported as invalid rather than indexed. */

size_t rp_dtype_size(rp_dtype_t dtype)
{
    if ((unsigned)dtype >= (unsigned)RP_DTYPE_COUNT)
        return 0;
    return rp_dtype_sizes[dtype];
}

const char *rp_dtype_name(rp_dtype_t dtype)
{
    if ((unsigned)dtype >= (unsigned)RP_DTYPE_COUNT)
        return "invalid";
    return rp_dtype_names[dtype];
}

const char *rp_op_name(rp_op_t op)
{
    if ((unsigned)op >= (unsigned)RP_OP_COUNT)
        return "invalid";
    return rp_op_names[op];
}
