"""Collectives of ringpoint.torch against single-process references: every
dtype and op, in and out of place, blocking, async and grouped; allgather
with uneven first dimensions; broadcast from every root; autograd."""
import pytest
import torch

import ringpoint.torch as hvd
from _helpers import (DTYPES, OPS, all_inputs, assert_equal, dtype_id,
                      rank_input, reduce_ref)

SHAPE = (3, 5)

dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=dtype_id)
ops = pytest.mark.parametrize("opname", list(OPS))


@dtypes
@ops
def test_allreduce(dtype, opname):
    op = OPS[opname]
    x = rank_input(hvd.rank(), SHAPE, dtype, op)
    before = x.clone()
    y = hvd.allreduce(x, op=op)
    assert y.data_ptr() != x.data_ptr()
    assert torch.equal(x, before), "allreduce modified its input"
    assert_equal(y, reduce_ref(all_inputs(SHAPE, dtype, op), op))


@dtypes
@ops
def test_allreduce_inplace(dtype, opname):
    op = OPS[opname]
    x = rank_input(hvd.rank(), SHAPE, dtype, op)
    ptr = x.data_ptr()
    y = hvd.allreduce_(x, op=op)
    assert y is x and x.data_ptr() == ptr
    assert_equal(x, reduce_ref(all_inputs(SHAPE, dtype, op), op))


@dtypes
@ops
def test_allreduce_async_inplace(dtype, opname):
    op = OPS[opname]
    x = rank_input(hvd.rank(), SHAPE, dtype, op)
    h = hvd.allreduce_async_(x, op=op)
    y = hvd.synchronize(h)
    assert y is x
    h0 = hvd.allreduce_async_(torch.zeros(0, dtype=dtype), op=op)
    assert hvd.poll(h0) in (True, False)
    assert hvd.synchronize(h0).shape == (0,)
    assert_equal(x, reduce_ref(all_inputs(SHAPE, dtype, op), op))


@dtypes
@ops
def test_grouped_allreduce(dtype, opname):
    op = OPS[opname]
    shapes = [(0,), (4,), (2, 3), (1,)]
    xs = [rank_input(hvd.rank(), s, dtype, op, salt=k) for k, s in enumerate(shapes)]
    before = [x.clone() for x in xs]
    ys = hvd.grouped_allreduce(xs, op=op)
    assert len(ys) == len(xs)
    for k, s in enumerate(shapes):
        assert torch.equal(xs[k], before[k]), "grouped_allreduce modified an input"
        assert_equal(ys[k], reduce_ref(all_inputs(s, dtype, op, salt=k), op), "tensor %d" % k)
    zs = hvd.grouped_allreduce_(xs, op=op)
    for k, s in enumerate(shapes):
        assert zs[k] is xs[k]
        assert_equal(xs[k], reduce_ref(all_inputs(s, dtype, op, salt=k), op), "in place %d" % k)


def test_allreduce_default_op_is_average_and_average_flag():
    x = rank_input(hvd.rank(), SHAPE, torch.float32, hvd.Sum)
    avg = reduce_ref(all_inputs(SHAPE, torch.float32, hvd.Sum), hvd.Average)
    total = reduce_ref(all_inputs(SHAPE, torch.float32, hvd.Sum), hvd.Sum)
    assert_equal(hvd.allreduce(x), avg)
    assert_equal(hvd.allreduce(x, average=True), avg)
    assert_equal(hvd.allreduce(x, average=False), total)
    assert_equal(hvd.allreduce(x, name="named", op=hvd.Sum), total)


def test_allreduce_large_and_noncontiguous():
    # Large enough for the pipelined ring; a transposed (non-contiguous)
    # input is fine out of place.
    n = 1 << 18
    x = (torch.arange(n, dtype=torch.float32) % 17 + hvd.rank()).reshape(512, 512).t()
    assert not x.is_contiguous()
    y = hvd.allreduce(x, op=hvd.Sum)
    want = sum((torch.arange(n, dtype=torch.float32) % 17 + r).reshape(512, 512).t()
               for r in range(hvd.size()))
    assert_equal(y, want)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32,
                                   torch.float64, torch.int32], ids=dtype_id)
@pytest.mark.parametrize("opname", ["Average", "Sum", "Max"])
def test_prescale_postscale(dtype, opname):
    op = OPS[opname]
    pre, post = (0.5, 3.0) if dtype.is_floating_point else (2.0, 3.0)
    inputs = all_inputs(SHAPE, dtype, op)
    want = reduce_ref(inputs, op, pre, post)
    x = inputs[hvd.rank()].clone()
    assert_equal(hvd.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post), want,
                 "allreduce")
    assert torch.equal(x, inputs[hvd.rank()]), "prescale modified the input"
    y = x.clone()
    hvd.allreduce_(y, op=op, prescale_factor=pre, postscale_factor=post)
    assert_equal(y, want, "allreduce_")
    y = x.clone()
    assert_equal(hvd.synchronize(hvd.allreduce_async_(
        y, op=op, prescale_factor=pre, postscale_factor=post)), want, "allreduce_async_")
    assert_equal(hvd.synchronize(hvd.allreduce_async(
        x, op=op, prescale_factor=pre, postscale_factor=post)), want, "allreduce_async")
    assert torch.equal(x, inputs[hvd.rank()]), "allreduce_async modified the input"
    outs = hvd.grouped_allreduce([x, x[:1]], op=op, prescale_factor=pre, postscale_factor=post)
    assert_equal(outs[0], want, "grouped_allreduce")
    assert_equal(outs[1], want[:1], "grouped_allreduce (second)")
    assert torch.equal(x, inputs[hvd.rank()]), "grouped_allreduce modified the input"


def test_async_polled_and_synchronized_out_of_order():
    specs = [(torch.float32, hvd.Sum, (1000,)), (torch.int64, hvd.Max, (7, 3)),
             (torch.float16, hvd.Average, (5,)), (torch.uint8, hvd.Min, (64,)),
             (torch.float64, hvd.Product, (2, 2))]
    xs = [rank_input(hvd.rank(), s, d, op, salt=k) for k, (d, op, s) in enumerate(specs)]
    handles = [hvd.allreduce_async_(x, op=op) for x, (_, op, _) in zip(xs, specs)]
    # Fresh inputs: the in-flight ones may not be read until synchronized.
    extra = [rank_input(hvd.rank(), (9,), torch.float32, hvd.Sum, salt=20),
             rank_input(hvd.rank(), (2, 2), torch.int64, hvd.Sum, salt=21)]
    out_of_place = hvd.allreduce_async(extra[0], op=hvd.Sum)
    group = hvd.grouped_allreduce_async(extra, op=hvd.Sum)
    # Poll the last one until it completes: every earlier one is done too
    # (the library runs them in call order), but they are collected later.
    while not hvd.poll(handles[-1]):
        pass
    assert hvd.poll(handles[-1])
    order = [3, 1, 4, 0, 2]
    for k in order:
        d, op, s = specs[k]
        out = hvd.synchronize(handles[k])
        assert out is xs[k]
        assert_equal(out, reduce_ref(all_inputs(s, d, op, salt=k), op), "handle %d" % k)
    g = hvd.synchronize(group)
    want = [reduce_ref(all_inputs((9,), torch.float32, hvd.Sum, salt=20), hvd.Sum),
            reduce_ref(all_inputs((2, 2), torch.int64, hvd.Sum, salt=21), hvd.Sum)]
    assert_equal(g[0], want[0], "group 0")
    assert_equal(g[1], want[1], "group 1")
    assert_equal(hvd.synchronize(out_of_place), want[0], "out of place")
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.synchronize(handles[0])          # already synchronized
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.poll(handles[0])


def test_grouped_async_mixed_dtypes():
    specs = [(torch.float32, (10,)), (torch.int32, (3, 3)), (torch.float32, (0,)),
             (torch.bfloat16, (4,)), (torch.float64, (2,)), (torch.int32, (1,))]
    xs = [rank_input(hvd.rank(), s, d, hvd.Sum, salt=k) for k, (d, s) in enumerate(specs)]
    h = hvd.grouped_allreduce_async_(xs, op=hvd.Sum)
    # (Fresh inputs: those of h are in flight.)
    h2 = hvd.grouped_allreduce_async(
        [rank_input(hvd.rank(), s, d, hvd.Sum, salt=k) for k, (d, s) in enumerate(specs)],
        op=hvd.Max)
    outs2 = hvd.synchronize(h2)
    outs = hvd.synchronize(h)
    for k, (d, s) in enumerate(specs):
        assert outs[k] is xs[k]
        inputs = all_inputs(s, d, hvd.Sum, salt=k)
        assert_equal(outs[k], reduce_ref(inputs, hvd.Sum), "Sum %d" % k)
        assert_equal(outs2[k], reduce_ref(inputs, hvd.Max), "Max %d" % k)
    # Polling a group handle until done: every dtype's part is complete.
    ys = [rank_input(hvd.rank(), s, d, hvd.Sum, salt=k) for k, (d, s) in enumerate(specs)]
    h = hvd.grouped_allreduce_async_(ys, op=hvd.Sum)
    while not hvd.poll(h):
        pass
    for k, (d, s) in enumerate(specs):
        assert_equal(ys[k], reduce_ref(all_inputs(s, d, hvd.Sum, salt=k), hvd.Sum), "polled %d" % k)
    hvd.synchronize(h)
    assert hvd.grouped_allreduce([]) == []


# ---------------------------------------------------------------- allgather

def _rows(r):
    return (0, 3, 1, 2, 5)[r % 5]          # uneven, and empty on rank 0


@dtypes
def test_allgather_uneven(dtype):
    def mine(r):
        return rank_input(r, (_rows(r), 2, 3), dtype, hvd.Max, salt=r)
    y = hvd.allgather(mine(hvd.rank()))
    want = torch.cat([mine(r) for r in range(hvd.size())])
    assert_equal(y, want)
    even = rank_input(hvd.rank(), (2, 3), dtype, hvd.Max)
    assert_equal(hvd.allgather(even), torch.cat(all_inputs((2, 3), dtype, hvd.Max)))


def test_allgather_scalar_empty_and_async():
    y = hvd.allgather(torch.tensor(float(hvd.rank())))
    assert_equal(y, torch.arange(hvd.size(), dtype=torch.float32))
    y = hvd.allgather(torch.zeros(0, 4, dtype=torch.int64))
    assert y.shape == (0, 4)
    y = hvd.allgather(torch.zeros(0))
    assert y.shape == (0,)
    x = torch.full((hvd.rank() + 1, 2), hvd.rank(), dtype=torch.int32)
    h = hvd.allgather_async(x)
    want = torch.cat([torch.full((r + 1, 2), r, dtype=torch.int32) for r in range(hvd.size())])
    assert hvd.poll(h) in (True, False)
    assert_equal(hvd.synchronize(h), want)
    # Non-contiguous input, and dtypes that cannot be reduced can be gathered.
    x = torch.arange(6, dtype=torch.int16).reshape(2, 3).t() + hvd.rank()
    want = torch.cat([torch.arange(6, dtype=torch.int16).reshape(2, 3).t() + r
                      for r in range(hvd.size())])
    assert torch.equal(hvd.allgather(x), want)


def test_allgather_async_runs_in_the_background():
    # As Horovod's: the handle is returned once the data is on its way, not
    # moved. Of several gathers of 8 MiB per rank (even and uneven), one at
    # least is still moving when polled at once.
    def mine(r, k):
        return torch.full(((1 << 19) + k * r, 4), float(r + k))
    started = []
    for k in range(4):
        h = hvd.allgather_async(mine(hvd.rank(), k))
        started.append((k, h, hvd.poll(h)))
    if hvd.size() > 1:
        assert not all(done for _, _, done in started)
    for k, h, _ in started:
        assert_equal(hvd.synchronize(h), torch.cat([mine(r, k) for r in range(hvd.size())]))
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.synchronize(started[0][1])


# ---------------------------------------------------------------- broadcast

@dtypes
def test_broadcast_every_root(dtype):
    for root in range(hvd.size()):
        x = rank_input(hvd.rank(), SHAPE, dtype, hvd.Max, salt=root)
        before = x.clone()
        want = rank_input(root, SHAPE, dtype, hvd.Max, salt=root)
        y = hvd.broadcast(x, root)
        assert torch.equal(x, before), "broadcast modified its input"
        assert_equal(y, want, "broadcast from %d" % root)
        z = hvd.broadcast_(x, root_rank=root)
        assert z is x
        assert_equal(x, want, "broadcast_ from %d" % root)
        x = rank_input(hvd.rank(), SHAPE, dtype, hvd.Max, salt=root)
        assert_equal(hvd.synchronize(hvd.broadcast_async(x, root)), want, "broadcast_async")
        assert torch.equal(x, before)
        assert hvd.synchronize(hvd.broadcast_async_(x, root)) is x
        assert_equal(x, want, "broadcast_async_")


def test_broadcast_scalar_empty_noncontiguous():
    assert hvd.broadcast(torch.tensor(hvd.rank() + 1.5), 0).item() == 1.5
    assert hvd.broadcast(torch.zeros(0, 3), 0).shape == (0, 3)
    x = (torch.arange(12.0).reshape(3, 4) + hvd.rank()).t()
    assert torch.equal(hvd.broadcast(x, hvd.size() - 1),
                       (torch.arange(12.0).reshape(3, 4) + hvd.size() - 1).t())
    # Any dtype can be broadcast (bytes), reducible or not.
    x = torch.tensor([hvd.rank() == 0, True, False])
    assert torch.equal(hvd.broadcast(x, 0), torch.tensor([True, True, False]))



@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.int32, torch.int64],
                         ids=str)
def test_scale_factors_in_horovods_precision(dtype):
    # As Horovod on the CPU: float16 and bfloat16 are scaled in float32 and
    # rounded back, each rank's input before the reduction; integers are
    # scaled in float64 and truncated. Max keeps the reduction itself exact.
    factor = 0.19151945020806947
    big = 1 << 30 if dtype != torch.int32 else 1 << 28     # beyond float32's 24 bits

    def x(r):
        g = torch.Generator().manual_seed(1234 + r)
        hi = 100 if dtype.is_floating_point else big
        return torch.randint(-hi, hi, (17, 17, 17), generator=g).to(dtype)

    def scaled(t):
        if dtype.is_floating_point:
            return (t.float() * torch.tensor(factor, dtype=torch.float32)).to(dtype)
        return (t.double() * factor).to(dtype)
    got = hvd.allreduce(x(hvd.rank()), op=hvd.Max, prescale_factor=factor)
    want = torch.stack([scaled(x(r)) for r in range(hvd.size())]).max(0).values
    assert torch.equal(got, want)
    got = hvd.allreduce(x(hvd.rank()), op=hvd.Max, postscale_factor=factor)
    want = scaled(torch.stack([x(r) for r in range(hvd.size())]).max(0).values)
    assert torch.equal(got, want)

# ---------------------------------------------------------------- autograd

def _weights(r, shape):
    return (torch.arange(torch.Size(shape).numel(), dtype=torch.float64).reshape(shape) + 2 * r) / 8


@pytest.mark.parametrize("opname", ["Average", "Sum"])
def test_allreduce_gradient(opname):
    # Rank r's loss is sum(w_r * allreduce(x)); the total loss over ranks
    # has gradient op(w_r over ranks) (times the scale factors) at every x.
    op = OPS[opname]
    for pre, post in ((1.0, 1.0), (0.5, 3.0)):
        x = rank_input(hvd.rank(), SHAPE, torch.float64, op).requires_grad_()
        y = hvd.allreduce(x, op=op, prescale_factor=pre, postscale_factor=post)
        assert y.requires_grad
        (y * _weights(hvd.rank(), SHAPE)).sum().backward()
        w = torch.stack([_weights(r, SHAPE) for r in range(hvd.size())])
        want = (w.sum(0) if op == hvd.Sum else w.mean(0)) * pre * post
        torch.testing.assert_close(x.grad, want)
        xr = rank_input(hvd.rank(), SHAPE, torch.float64, op)
        torch.testing.assert_close(y.detach(), reduce_ref(all_inputs(SHAPE, torch.float64, op),
                                                          op, pre, post))
        assert torch.equal(x.detach(), xr)


def test_allreduce_gradient_with_compression():
    x = torch.full(SHAPE, 0.5 + hvd.rank(), requires_grad=True)
    y = hvd.allreduce(x, op=hvd.Sum, compression=hvd.Compression.fp16)
    assert y.dtype == torch.float32
    (y * 2).sum().backward()
    torch.testing.assert_close(x.grad, torch.full(SHAPE, 2.0 * hvd.size()))


def test_allgather_gradient():
    def mine(r):
        return torch.arange(_rows(r) * 3, dtype=torch.float64).reshape(_rows(r), 3) + r
    x = mine(hvd.rank()).requires_grad_()
    y = hvd.allgather(x)
    total = sum(_rows(r) for r in range(hvd.size()))
    (y * _weights(hvd.rank(), (total, 3))).sum().backward()
    # As Horovod: the gradient averaged over the ranks, not summed.
    w = sum(_weights(r, (total, 3)) for r in range(hvd.size())) / hvd.size()
    off = sum(_rows(r) for r in range(hvd.rank()))
    torch.testing.assert_close(x.grad, w[off:off + _rows(hvd.rank())].double())
    s = torch.tensor(float(hvd.rank()), requires_grad=True)
    (hvd.allgather(s) * torch.arange(float(hvd.size()))).sum().backward()
    torch.testing.assert_close(s.grad, torch.tensor(float(hvd.rank())))


def test_broadcast_gradient():
    for root in range(hvd.size()):
        x = (torch.arange(15.0).reshape(SHAPE) * (hvd.rank() + 1)).requires_grad_()
        y = hvd.broadcast(x, root)
        torch.testing.assert_close(y.detach(), torch.arange(15.0).reshape(SHAPE) * (root + 1))
        (y * _weights(hvd.rank(), SHAPE)).sum().backward()
        if hvd.rank() == root:
            # As Horovod: the gradient averaged over the ranks, on the root.
            want = sum(_weights(r, SHAPE) for r in range(hvd.size())) / hvd.size()
        else:
            want = torch.zeros(SHAPE)
        torch.testing.assert_close(x.grad, want.to(torch.float32))


def test_gradient_of_min_max_is_not_supported():
    x = torch.ones(3, requires_grad=True)
    y = hvd.allreduce(x, op=hvd.Max)
    with pytest.raises(hvd.NotSupportedError):
        y.sum().backward()


# ---------------------------------------------------------------- barrier, join

def test_barrier_and_join():
    hvd.barrier()
    last = hvd.join()
    assert 0 <= last < hvd.size()
    assert hvd.allgather_object(last) == [last] * hvd.size()


@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_compression(compression):
    # float32 travels at half width (grouped: the library's wire format;
    # allreduce: Horovod's cast), within the bound of ringpoint/coll.h;
    # other dtypes travel as they are, exactly.
    comp = getattr(hvd.Compression, compression)
    u = {"fp16": 2.0 ** -11, "bf16": 2.0 ** -8}[compression]
    n = hvd.size()

    def mine(r):
        return torch.linspace(-3, 3, 1000, dtype=torch.float64) * (1 + r / 7) + 1 / 3
    inputs = [mine(r) for r in range(n)]
    exact = sum(inputs) / n
    bound = (n + 1) * u * sum(t.abs() for t in inputs) / n + n * 2.0 ** -24 + 1e-6
    f32 = mine(hvd.rank()).float()
    ints = rank_input(hvd.rank(), SHAPE, torch.int32, hvd.Sum)
    out = hvd.grouped_allreduce([f32, ints], compression=comp)
    assert out[0].dtype == torch.float32
    assert ((out[0].double() - exact).abs() <= bound).all()
    assert_equal(out[1], reduce_ref(all_inputs(SHAPE, torch.int32, hvd.Sum), hvd.Average))
    one = hvd.allreduce(f32, compression=comp)
    assert one.dtype == torch.float32
    assert ((one.double() - exact).abs() <= bound + u * exact.abs()).all()
    if n > 1:     # (it did travel compressed)
        assert not torch.equal(out[0], hvd.grouped_allreduce([f32])[0])


@pytest.mark.parametrize("opname", ["Average", "Sum"])
def test_grouped_allreduce_gradient(opname):
    op = OPS[opname]
    w = [_weights(hvd.rank(), SHAPE), _weights(hvd.rank(), (4,)).float()]
    xs = [rank_input(hvd.rank(), SHAPE, torch.float64, op).requires_grad_(),
          rank_input(hvd.rank(), (4,), torch.float32, op, salt=1).requires_grad_(),
          rank_input(hvd.rank(), (2,), torch.int32, op)]
    ys = hvd.grouped_allreduce(xs, op=op, postscale_factor=2.0)
    assert ys[0].requires_grad and ys[1].requires_grad and not ys[2].requires_grad
    assert_equal(ys[2], reduce_ref(all_inputs((2,), torch.int32, op), op, 1.0, 2.0))
    ((ys[0] * w[0]).sum() + (ys[1] * w[1]).sum()).backward()
    for k, (x, shape) in enumerate(((xs[0], SHAPE), (xs[1], (4,)))):
        ws = torch.stack([_weights(r, shape) for r in range(hvd.size())])
        want = (ws.sum(0) if op == hvd.Sum else ws.mean(0)) * 2.0
        torch.testing.assert_close(x.grad, want.to(x.dtype), msg="tensor %d" % k)


@pytest.mark.skipif("hvd.size() < 2", reason="needs a peer to wait for")
def test_gil_released_while_waiting():
    # Rank 0 waits in a blocking collective for ranks that come 0.3 s
    # late, and in synchronize() for a 64 MiB allreduce: a Python thread
    # must run meanwhile.
    import threading
    import time
    count, stop = [0], threading.Event()

    def spin():
        while not stop.is_set():
            count[0] += 1
            time.sleep(0)
    t = threading.Thread(target=spin)
    if hvd.rank() == 0:
        t.start()
    try:
        if hvd.rank() != 0:
            time.sleep(0.3)
        before = count[0]
        hvd.allreduce(torch.ones(4), op=hvd.Sum)
        waiting = count[0] - before
        h = hvd.allreduce_async_(torch.ones(16 << 20))
        before, start = count[0], time.perf_counter()
        hvd.synchronize(h)
        syncing, took = count[0] - before, time.perf_counter() - start
    finally:
        stop.set()
        if t.is_alive():
            t.join()
    if hvd.rank() == 0:
        assert waiting > 100, "the thread ran %d times in 0.3 s of allreduce" % waiting
        if took > 0.02:     # (too quick to tell otherwise)
            assert syncing > 10, "the thread ran %d times in %.3f s of synchronize()" % (
                syncing, took)
