"""Deterministic per-rank inputs and single-process references.

Each rank's input is a function of its rank only, so every rank can build
every other rank's input and compute the expected result locally. Values
are small and, for floats, multiples of 1/4, so that sums, averages and
products are exact (or within one rounding) in every dtype, float16 and
bfloat16 included, on up to 5 ranks.
"""
import torch

import ringpoint.torch as hvd

DTYPES = [torch.uint8, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
OPS = {"Average": hvd.Average, "Sum": hvd.Sum, "Min": hvd.Min,
       "Max": hvd.Max, "Product": hvd.Product}


def dtype_id(dtype):
    return str(dtype).replace("torch.", "")


def rank_input(r, shape, dtype, op, salt=0):
    """Rank @r's input for a reduction with @op."""
    n = 1
    for s in shape:
        n *= s
    i = torch.arange(n, dtype=torch.int64) + 7 * salt
    if op == hvd.Product:
        # Products of at most 5 factors in {1, 2} (and -1 where signed):
        # no integer wraps, floats stay exact.
        v = ((i + r) % 3 == 0).to(torch.int64) + 1
        if dtype != torch.uint8:
            v = torch.where((i + 2 * r) % 5 == 0, -v, v)
    else:
        v = (i * 3 + r * 5) % 11                     # 0 .. 10
        if dtype != torch.uint8:
            v = v - 5                                 # negative too: averages truncate toward zero
    v = v.to(torch.float64)
    if dtype.is_floating_point and op != hvd.Product:
        v = v / 4
    return v.to(dtype).reshape(shape)


def reduce_ref(inputs, op, prescale=1.0, postscale=1.0):
    """What the ranks' allreduce of @inputs (one tensor per rank) gives."""
    dtype = inputs[0].dtype
    n = len(inputs)
    if dtype.is_floating_point:
        x = torch.stack([t.to(torch.float64) * prescale for t in inputs])
    else:
        x = torch.stack([_int_scale(t, prescale) for t in inputs]).to(torch.int64)
    if op == hvd.Sum:
        y = x.sum(0)
    elif op == hvd.Average:
        y = x.sum(0)
        y = y / n if dtype.is_floating_point else torch.div(y, n, rounding_mode="trunc")
    elif op == hvd.Min:
        y = x.min(0).values
    elif op == hvd.Max:
        y = x.max(0).values
    else:
        y = x.prod(0)
    if dtype.is_floating_point:
        return (y * postscale).to(dtype)
    return _int_scale(y.to(dtype), postscale)


def _int_scale(t, factor):
    # ringpoint (as Horovod) scales integer tensors in float64 and
    # truncates back to the integer type.
    return t if factor == 1.0 else (t.to(torch.float64) * factor).to(t.dtype)


def assert_equal(got, want, what=""):
    """Exact for integers; within the dtype's rounding for floats (the
    library's reduction order may differ from the reference's)."""
    assert got.dtype == want.dtype, "%s: dtype %s, expected %s" % (what, got.dtype, want.dtype)
    assert got.shape == want.shape, "%s: shape %s, expected %s" % (what, tuple(got.shape), tuple(want.shape))
    if want.dtype.is_floating_point:
        tol = {torch.float16: 1e-3, torch.bfloat16: 8e-3,
               torch.float32: 1e-6, torch.float64: 1e-12}[want.dtype]
        torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=what or None)
    else:
        assert torch.equal(got, want), "%s:\n%s\nexpected\n%s" % (what, got, want)


def all_inputs(shape, dtype, op, salt=0):
    return [rank_input(r, shape, dtype, op, salt) for r in range(hvd.size())]


def seeded(fn, seed):
    """@fn() under torch.manual_seed(@seed), leaving the global RNG as it was."""
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        return fn()
