"""Gradient compression, Horovod's interface: Compression.none, .fp16, .bf16.

compress()/decompress() cast a floating-point tensor to the wire type and
back (what allreduce() does with them, as in Horovod). The grouped
allreduces and DistributedOptimizer use the library's wire compression
instead (wire_format()): float32 buffers travel as float16 or bfloat16 and
are reduced in float32, with no cast copies; other dtypes are sent as they
are. Error bound: see ringpoint/coll.h.
"""
import torch

from ringpoint import _dtypes as D


class Compressor:
    """Base of the compressors (Horovod's interface)."""
    wire = D.COMPRESSION_NONE
    dtype = None

    @classmethod
    def compress(cls, tensor):
        """Returns (tensor to send, context for decompress)."""
        if cls.dtype is None or not tensor.is_floating_point() or \
                tensor.dtype == cls.dtype:
            return tensor, None
        return tensor.to(cls.dtype), tensor.dtype

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)

    @classmethod
    def wire_format(cls, rp_dtype):
        """The rp_compression_t for a grouped allreduce of @rp_dtype."""
        return cls.wire if rp_dtype == D.FLOAT32 else D.COMPRESSION_NONE


class NoneCompressor(Compressor):
    """Send tensors as they are."""


class FP16Compressor(Compressor):
    """float32 travels as float16 (11-bit significand, range +-65504)."""
    wire = D.COMPRESSION_FP16
    dtype = torch.float16


class BF16Compressor(Compressor):
    """float32 travels as bfloat16 (float32's range, 8-bit significand)."""
    wire = D.COMPRESSION_BF16
    dtype = torch.bfloat16


class Compression:
    """The compressors, by Horovod's names."""
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
