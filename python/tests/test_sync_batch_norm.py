"""SyncBatchNorm against torch.nn.BatchNorm over the ranks' batches put
together: the output, the running statistics, and the gradients of the
input (this rank's rows of the reference's) and of the affine parameters
(their sum over the ranks is the reference's), over several steps, with
batches of different sizes on different ranks (one rank's empty too).
Single-process, the module is a plain BatchNorm and the same comparisons
hold with one rank.

Tolerances: float64 inputs agree within 1e-9 (relative and absolute);
float32 within 2e-5 (the ranks' statistics are combined in float64, the
reference sums in float32 over the whole batch: a few float32 roundings
apart); the model of convolutions within 1e-4.
"""
import pytest
import torch

import ringpoint.torch as hvd
from _helpers import seeded

TOL = {torch.float64: 1e-9, torch.float32: 2e-5}

BN = {2: torch.nn.BatchNorm1d, 3: torch.nn.BatchNorm1d, 4: torch.nn.BatchNorm2d, 5: torch.nn.BatchNorm3d}


def _batch_sizes(kind):
    n = hvd.size()
    if kind == "even":
        return [4] * n
    if kind == "uneven":
        return [3 + (2 * r) % 5 for r in range(n)]
    if kind == "empty":
        # The last rank has no sample at all: it still takes part.
        return [4] * (n - 1) + [0] if n > 1 else [4]
    # A last short batch: the last rank has one sample only (alone, it
    # could not be normalized).
    return [5] * (n - 1) + [1] if n > 1 else [5]


def _inputs(sizes, shape, dtype, step, offset=0.0):
    """Every rank's input and its loss weights (the same on every rank, a
    function of the rank and step only)."""
    xs, ws = [], []
    for r, b in enumerate(sizes):
        x = seeded(lambda: torch.randn((b,) + shape, dtype=torch.float64), 100 * step + r)
        xs.append((x * 3 + offset).to(dtype))
        ws.append(seeded(lambda: torch.randn((b,) + shape, dtype=torch.float64),
                         5000 + 100 * step + r).to(dtype))
    return xs, ws


def _mine(xs):
    r = hvd.rank()
    off = sum(x.shape[0] for x in xs[:r])
    return off, xs[r].shape[0]


def _compare(got, want, dtype, what):
    tol = TOL[dtype]
    torch.testing.assert_close(got, want, rtol=tol, atol=tol, msg=what)


def _sum_over_ranks(t):
    return hvd.allreduce(t.detach(), op=hvd.Sum)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32],
                         ids=["float64", "float32"])
@pytest.mark.parametrize("kind", ["even", "uneven", "last-short", "empty"])
@pytest.mark.parametrize("shape", [(5,), (3, 4, 2), (2, 3, 2, 2)],
                         ids=["1d", "2d", "3d"])
@pytest.mark.parametrize("momentum", [0.1, None], ids=["m0.1", "cumulative"])
def test_sync_batch_norm_matches_batch_norm(dtype, kind, shape, momentum):
    channels = shape[0]
    sizes = _batch_sizes(kind)
    sync = hvd.SyncBatchNorm(channels, momentum=momentum).to(dtype)
    ref = BN[len(shape) + 1](channels, momentum=momentum).to(dtype)
    with torch.no_grad():
        w = torch.linspace(0.5, 2.0, channels, dtype=dtype)
        b = torch.linspace(-1.0, 1.0, channels, dtype=dtype)
        for m in (sync, ref):
            m.weight.copy_(w)
            m.bias.copy_(b)
    for step in range(3):
        # A large mean against the spread: the variance must not cancel.
        xs, ws = _inputs(sizes, shape, dtype, step, offset=50.0 * step)
        off, n = _mine(xs)
        x = xs[hvd.rank()].clone().requires_grad_()
        xref = torch.cat(xs).requires_grad_()
        for m in (sync, ref):
            m.zero_grad()
        y = sync(x)
        yref = ref(xref)
        (y * ws[hvd.rank()]).sum().backward()
        (yref * torch.cat(ws)).sum().backward()
        what = "step %d" % step
        _compare(y, yref[off:off + n].detach(), dtype, what + ": output")
        _compare(x.grad, xref.grad[off:off + n], dtype, what + ": input gradient")
        _compare(sync.running_mean, ref.running_mean, dtype, what + ": running_mean")
        _compare(sync.running_var, ref.running_var, dtype, what + ": running_var")
        assert int(sync.num_batches_tracked) == int(ref.num_batches_tracked) == step + 1
        _compare(_sum_over_ranks(sync.weight.grad), ref.weight.grad, dtype,
                 what + ": weight gradient summed over the ranks")
        _compare(_sum_over_ranks(sync.bias.grad), ref.bias.grad, dtype,
                 what + ": bias gradient summed over the ranks")
    # Evaluation: the running statistics, this rank's input only.
    sync.eval()
    ref.eval()
    x = xs[hvd.rank()]
    _compare(sync(x), ref(x), dtype, "eval output")


@pytest.mark.parametrize("affine,track", [(False, True), (True, False), (False, False)])
def test_sync_batch_norm_options(affine, track):
    """No affine parameters, no running statistics: then evaluation uses
    the batch statistics of every rank, as training does (Horovod's)."""
    dtype = torch.float64
    shape = (3, 4)
    sizes = _batch_sizes("uneven")
    sync = hvd.SyncBatchNorm(3, affine=affine, track_running_stats=track).to(dtype)
    ref = torch.nn.BatchNorm1d(3, affine=affine, track_running_stats=track).to(dtype)
    assert (sync.weight is None) == (not affine)
    assert (sync.running_mean is None) == (not track)
    for mode in ("train", "eval"):
        getattr(sync, mode)()
        getattr(ref, mode)()
        xs, ws = _inputs(sizes, shape, dtype, 7)
        off, n = _mine(xs)
        x = xs[hvd.rank()].clone().requires_grad_()
        xref = torch.cat(xs).requires_grad_()
        y = sync(x)
        if mode == "eval" and track:
            # Plain BatchNorm on this rank's input.
            _compare(y, ref(x.detach()), dtype, "eval output")
            continue
        yref = ref(xref)
        (y * ws[hvd.rank()]).sum().backward()
        (yref * torch.cat(ws)).sum().backward()
        _compare(y, yref[off:off + n].detach(), dtype, mode + ": output")
        _compare(x.grad, xref.grad[off:off + n], dtype, mode + ": input gradient")
        if track:
            _compare(sync.running_var, ref.running_var, dtype, "running_var")


def test_sync_batch_norm_no_input_grad():
    """Only the parameters need a gradient: each rank's own sums."""
    dtype = torch.float64
    sizes = _batch_sizes("uneven")
    sync = hvd.SyncBatchNorm(4).to(dtype)
    ref = torch.nn.BatchNorm1d(4).to(dtype)
    xs, ws = _inputs(sizes, (4,), dtype, 3)
    (sync(xs[hvd.rank()]) * ws[hvd.rank()]).sum().backward()
    (ref(torch.cat(xs)) * torch.cat(ws)).sum().backward()
    _compare(_sum_over_ranks(sync.weight.grad), ref.weight.grad, dtype, "weight gradient")
    _compare(_sum_over_ranks(sync.bias.grad), ref.bias.grad, dtype, "bias gradient")


class _Net(torch.nn.Module):
    """A small residual network that takes its normalization as
    torchvision's ResNet does (norm_layer, called with the channels)."""

    def __init__(self, norm_layer):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = norm_layer(8)
        self.conv2 = torch.nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = norm_layer(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.bn1(self.conv1(x)))
        h = torch.relu(h + self.bn2(self.conv2(h)))
        return self.fc(h.mean((2, 3)))


def test_sync_batch_norm_as_norm_layer():
    sizes = _batch_sizes("uneven")
    net = seeded(lambda: _Net(hvd.SyncBatchNorm), 11)
    ref = seeded(lambda: _Net(torch.nn.BatchNorm2d), 11)
    assert isinstance(net.bn1, torch.nn.modules.batchnorm._BatchNorm)
    xs = [seeded(lambda: torch.randn(b, 3, 6, 6), 40 + r) for r, b in enumerate(sizes)]
    off, n = _mine(xs)
    out = net(xs[hvd.rank()])
    out_ref = ref(torch.cat(xs))
    torch.testing.assert_close(out, out_ref[off:off + n], rtol=1e-4, atol=1e-4)
    out.square().sum().backward()
    out_ref.square().sum().backward()
    for (name, p), q in zip(net.named_parameters(), ref.parameters()):
        torch.testing.assert_close(_sum_over_ranks(p.grad), q.grad, rtol=1e-4,
                                   atol=1e-4, msg=name)
    torch.testing.assert_close(net.bn2.running_var, ref.bn2.running_var,
                               rtol=1e-4, atol=1e-4)


def test_sync_batch_norm_errors():
    bn = hvd.SyncBatchNorm(3)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        bn(torch.zeros(3))
    # One value per channel over all ranks cannot be normalized in training
    # (every rank raises alike: the count is the ranks' total).
    if hvd.size() == 1:
        with pytest.raises(ValueError):
            bn(torch.zeros(1, 3))
    else:
        x = torch.zeros(1 if hvd.rank() == 0 else 0, 3)
        with pytest.raises(ValueError, match="more than 1 value per channel"):
            bn(x)
