"""reducescatter and alltoall of ringpoint.torch against single-process
references: every dtype and op, even and uneven first dimensions, grouped,
async, prescale/postscale, autograd, the bits of the allreduce, and the
errors Horovod raises."""
import pytest
import torch

import ringpoint.torch as hvd
from _helpers import (DTYPES, OPS, all_inputs, assert_equal, dtype_id,
                      rank_input, reduce_ref)

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
ops = pytest.mark.parametrize("opname", list(OPS))


def share(t, q, n):
    """Rank q's rows of @t: the first (dim0 % n) ranks one more."""
    base, extra = divmod(t.shape[0], n)
    start = q * base + min(q, extra)
    return t[start:start + base + (1 if q < extra else 0)]


@dtypes
@ops
@pytest.mark.parametrize("first", [1, 4, 7, 12])
def test_reducescatter(dtype, opname, first):
    op = OPS[opname]
    n, r = hvd.size(), hvd.rank()
    shape = (first, 3)
    x = rank_input(r, shape, dtype, op)
    before = x.clone()
    y = hvd.reducescatter(x, op=op)
    assert torch.equal(x, before), "reducescatter modified its input"
    assert_equal(y, share(reduce_ref(all_inputs(shape, dtype, op), op), r, n))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64], ids=dtype_id)
def test_reducescatter_bits_are_the_allreduce_bits(dtype):
    # Inexact sums: the share must be bit for bit the allreduce's rows,
    # whatever the split, alone or grouped with other tensors.
    n, r = hvd.size(), hvd.rank()
    g = torch.Generator().manual_seed(1000 + r)
    xs = [torch.randn((k, 33), generator=g).to(dtype) for k in (5, 64, 1001)]
    full = [hvd.allreduce(x, op=hvd.Sum) for x in xs]
    alone = [hvd.reducescatter(x, op=hvd.Sum) for x in xs]
    grouped = hvd.grouped_reducescatter(xs, op=hvd.Sum)
    for k, x in enumerate(xs):
        want = share(full[k], r, n)
        assert torch.equal(bits(alone[k]), bits(want)), "tensor %d alone" % k
        assert torch.equal(bits(grouped[k]), bits(want)), "tensor %d grouped" % k


def bits(t):
    return t.view({2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def test_reducescatter_default_is_average_and_scaling():
    n, r = hvd.size(), hvd.rank()
    shape = (2 * n + 1, 2)
    x = rank_input(r, shape, torch.float64, hvd.Sum)
    inputs = all_inputs(shape, torch.float64, hvd.Sum)
    assert_equal(hvd.reducescatter(x),
                 share(reduce_ref(inputs, hvd.Average), r, n))
    y = hvd.reducescatter(x, op=hvd.Sum, prescale_factor=0.5,
                          postscale_factor=3.0)
    assert_equal(y, share(reduce_ref(inputs, hvd.Sum, 0.5, 3.0), r, n))
    xi = rank_input(r, shape, torch.int32, hvd.Sum)
    yi = hvd.reducescatter(xi, op=hvd.Sum, prescale_factor=2.5)
    assert_equal(yi, share(reduce_ref(all_inputs(shape, torch.int32, hvd.Sum),
                                      hvd.Sum, 2.5), r, n))


def test_reducescatter_async_and_grouped_async():
    n, r = hvd.size(), hvd.rank()
    xs = [rank_input(r, (n * 3, 2), torch.float32, hvd.Sum, salt=k)
          for k in range(3)]
    xs.append(rank_input(r, (5,), torch.int64, hvd.Sum, salt=9))
    hs = [hvd.reducescatter_async(x, op=hvd.Sum) for x in xs]
    hg = hvd.grouped_reducescatter_async(xs, op=hvd.Sum)
    outs = [hvd.synchronize(h) for h in hs]
    group = hvd.synchronize(hg)
    for k, x in enumerate(xs):
        want = share(reduce_ref([rank_input(q, tuple(x.shape), x.dtype,
                                            hvd.Sum, salt=(k if k < 3 else 9))
                                 for q in range(n)], hvd.Sum), r, n)
        assert_equal(outs[k], want, "async %d" % k)
        assert_equal(group[k], want, "grouped async %d" % k)


@pytest.mark.parametrize("opname", ["Sum", "Average"])
def test_reducescatter_grad(opname):
    op = OPS[opname]
    n = hvd.size()
    x = torch.ones((n * 4 + 1, 3), dtype=torch.float64, requires_grad=True)
    y = hvd.reducescatter(x, op=op)
    y.backward(torch.ones_like(y))
    want = float(n) if op == hvd.Sum else 1.0
    assert torch.equal(x.grad, torch.full_like(x, want))


def test_reducescatter_errors():
    n, r = hvd.size(), hvd.rank()
    with pytest.raises(ValueError):
        hvd.reducescatter(torch.tensor(1.0))
    if n > 1:
        with pytest.raises(RuntimeError):
            hvd.reducescatter(torch.ones(17 + r, 3))
        with pytest.raises(RuntimeError):
            hvd.reducescatter(torch.ones(6, dtype=torch.int32 if r % 2 else
                                         torch.float32))
    # The context still works after a refused call.
    assert_equal(hvd.reducescatter(torch.ones(n), op=hvd.Sum),
                 torch.full((1,), float(n)))


@pytest.mark.parametrize("dtype", DTYPES + [torch.int8, torch.int16],
                         ids=dtype_id)
def test_alltoall_splits(dtype):
    n, r = hvd.size(), hvd.rank()
    # Rank r sends rank q (r + q) % 3 rows, each row [r, q, i].
    splits = [(r + q) % 3 for q in range(n)]
    rows = []
    for q in range(n):
        rows += [[r, q, i] for i in range(splits[q])]
    x = torch.tensor(rows, dtype=torch.int64).reshape(-1, 3).to(dtype)
    y, got = hvd.alltoall(x, torch.tensor(splits, dtype=torch.int32))
    assert got.dtype == torch.int32
    assert got.tolist() == [(q + r) % 3 for q in range(n)]
    want = []
    for q in range(n):
        want += [[q, r, i] for i in range(got[q])]
    assert y.dtype == dtype
    assert torch.equal(y, torch.tensor(want, dtype=torch.int64).reshape(-1, 3).to(dtype))


def test_alltoall_equal_split_and_async():
    n, r = hvd.size(), hvd.rank()
    x = (torch.arange(2 * n, dtype=torch.float32) + 100 * r).reshape(2 * n, 1)
    y = hvd.alltoall(x)
    want = torch.cat([torch.arange(2 * r, 2 * r + 2, dtype=torch.float32) + 100 * q
                      for q in range(n)]).reshape(2 * n, 1)
    assert torch.equal(y, want)
    h = hvd.alltoall_async(x, splits=[2] * n)
    y2, got = hvd.synchronize(h)
    assert torch.equal(y2, want) and got.tolist() == [2] * n


def test_alltoall_grad():
    n, r = hvd.size(), hvd.rank()
    splits = [q + 1 for q in range(n)]
    x = torch.arange(sum(splits) * 2, dtype=torch.float64).reshape(-1, 2)
    x.requires_grad_()
    y, got = hvd.alltoall(x, splits)
    # Each received row's gradient is its sender's rank + 1.
    weights = torch.cat([torch.full((int(got[q]), 2), q + 1.0, dtype=torch.float64)
                         for q in range(n)])
    (y * weights).sum().backward()
    # Rank r's rows for q come back weighted by r + 1.
    assert torch.equal(x.grad, torch.full_like(x, r + 1.0))


def test_alltoall_errors():
    n, r = hvd.size(), hvd.rank()
    if n > 1:
        with pytest.raises(ValueError):
            hvd.alltoall(torch.ones(n + 1))
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(n), torch.ones(n, dtype=torch.float32))
    with pytest.raises(ValueError):
        hvd.alltoall(torch.ones(n - 1), torch.ones(n, dtype=torch.int32))
    if n > 1:
        with pytest.raises(RuntimeError):
            hvd.alltoall(torch.ones(2 * n, 3 + r))
        with pytest.raises(RuntimeError):
            hvd.alltoall(torch.ones(n, dtype=torch.int32 if r % 2 else torch.float32))
        # Only one rank's call is bad: the others raise MismatchError.
        with pytest.raises((RuntimeError, ValueError)):
            hvd.alltoall(torch.ones(n + (1 if r == 0 else 0)))
    y = hvd.alltoall(torch.full((n,), float(r)))
    assert torch.equal(y, torch.arange(n, dtype=torch.float32))
