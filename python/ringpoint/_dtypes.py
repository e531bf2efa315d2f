"""rp_dtype_t and rp_op_t values (ABI: never renumbered)."""

UINT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(7)
SUM, PROD, MIN, MAX, AVG = range(5)

DTYPE_NAMES = ("uint8", "int32", "int64", "float16", "bfloat16", "float32",
               "float64")
OP_NAMES = ("sum", "prod", "min", "max", "avg")
DTYPE_SIZES = (1, 4, 8, 2, 2, 4, 8)

# Compression (rp_compression_t).
COMPRESSION_DEFAULT, COMPRESSION_NONE, COMPRESSION_FP16, COMPRESSION_BF16 = range(4)
