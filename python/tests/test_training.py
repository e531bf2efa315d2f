"""Data-parallel training through ringpoint equals single-process training
on the full batch: DistributedOptimizer (plain, gradient accumulation,
compressed, predivided, synchronize/skip_synchronize) and DDP with
ringpoint's comm hook against DDP over gloo.

Each rank trains on its shard of one deterministic batch with a mean loss;
the average of the shards' gradients is the full batch's gradient, so the
reference trains on the full batch in this process.
"""
import socket

import pytest
import torch

import ringpoint.torch as hvd
from _helpers import seeded

BATCH = 120          # divisible by 1..5 ranks, and each shard by 2
STEPS = 5


def _model():
    def make():
        return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                   torch.nn.Linear(16, 16), torch.nn.Tanh(),
                                   torch.nn.Linear(16, 1))
    return seeded(make, 0)


def _batch(step):
    x = seeded(lambda: torch.randn(BATCH, 8), 100 + step)
    y = x[:, :1] * 0.5 - x[:, 1:2] + 0.1
    return x, y


def _shard(t):
    n = BATCH // hvd.size()
    return t[hvd.rank() * n:(hvd.rank() + 1) * n]


def _loss(model, x, y):
    return torch.nn.functional.mse_loss(model(x), y)


def _train_shards(model, opt, steps=STEPS):
    for s in range(steps):
        x, y = _batch(s)
        opt.zero_grad()
        _loss(model, _shard(x), _shard(y)).backward()
        opt.step()


def _reference(make_opt, steps=STEPS):
    model = _model()
    opt = make_opt(model)
    for s in range(steps):
        opt.zero_grad()
        _loss(model, *_batch(s)).backward()
        opt.step()
    return model


def _assert_params_close(model, ref, atol, rtol=0.0):
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=atol, rtol=rtol, msg=name)
    # ... and every rank holds the same parameters.
    mine = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    assert torch.equal(hvd.broadcast(mine, 0), mine), "ranks diverged"


def _sgd(model):
    return torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)


def _adam(model):
    return torch.optim.Adam(model.parameters(), lr=0.01)


@pytest.mark.parametrize("make_opt", [_sgd, _adam], ids=["sgd", "adam"])
def test_distributed_optimizer_matches_full_batch(make_opt):
    model = _model()
    opt = hvd.DistributedOptimizer(make_opt(model), named_parameters=model.named_parameters())
    assert isinstance(opt, type(make_opt(_model())))
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    _train_shards(model, opt)
    _assert_params_close(model, _reference(make_opt), atol=1e-5)


def test_distributed_optimizer_backward_passes_per_step_2():
    model = _model()
    opt = hvd.DistributedOptimizer(_sgd(model), named_parameters=model.named_parameters(),
                                   backward_passes_per_step=2)
    for s in range(STEPS):
        x, y = _batch(s)
        x, y = _shard(x), _shard(y)
        half = x.shape[0] // 2
        opt.zero_grad()
        # Two micro-batches, each half of the shard's mean loss: the
        # accumulated gradient is the shard's.
        for sl in (slice(0, half), slice(half, None)):
            (_loss(model, x[sl], y[sl]) / 2).backward()
        opt.step()
    _assert_params_close(model, _reference(_sgd), atol=1e-5)


def test_distributed_optimizer_too_many_backward_passes():
    model = _model()
    opt = hvd.DistributedOptimizer(_sgd(model), backward_passes_per_step=1)
    x, y = _batch(0)
    _loss(model, _shard(x), _shard(y)).backward()
    with pytest.raises(AssertionError):
        _loss(model, _shard(x), _shard(y)).backward()
    opt.synchronize()      # (collective: leave every rank in step)


@pytest.mark.parametrize("compression", ["fp16", "bf16"])
def test_distributed_optimizer_compression(compression):
    comp = getattr(hvd.Compression, compression)
    model = _model()
    opt = hvd.DistributedOptimizer(_sgd(model), named_parameters=model.named_parameters(),
                                   compression=comp)
    _train_shards(model, opt)
    # Gradients are O(1); fp16 keeps 11 bits, bf16 8, per value and per
    # partial sum (ringpoint/coll.h), and 5 steps of lr 0.1 with momentum
    # add up a few of those errors.
    atol = {"fp16": 2e-3, "bf16": 2e-2}[compression]
    _assert_params_close(model, _reference(_sgd), atol=atol, rtol=atol)


def test_distributed_optimizer_predivide_and_sum():
    model = _model()
    opt = hvd.DistributedOptimizer(_sgd(model), gradient_predivide_factor=2.0)
    model_sum = _model()
    # op=Sum with the learning rate divided by the ranks is the average.
    opt_sum = hvd.DistributedOptimizer(
        torch.optim.SGD(model_sum.parameters(), lr=0.1 / hvd.size(), momentum=0.9),
        op=hvd.Sum)
    for s in range(STEPS):
        x, y = _batch(s)
        for m, o in ((model, opt), (model_sum, opt_sum)):
            o.zero_grad()
            _loss(m, _shard(x), _shard(y)).backward()
            o.step()
    ref = _reference(_sgd)
    _assert_params_close(model, ref, atol=1e-5)
    _assert_params_close(model_sum, ref, atol=1e-5)


def test_distributed_optimizer_synchronize_then_clip():
    model = _model()
    opt = hvd.DistributedOptimizer(_sgd(model), named_parameters=model.named_parameters())
    ref = _model()
    ref_opt = _sgd(ref)
    for s in range(STEPS):
        x, y = _batch(s)
        opt.zero_grad()
        _loss(model, _shard(x), _shard(y)).backward()
        opt.synchronize()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        with opt.skip_synchronize():
            opt.step()
        ref_opt.zero_grad()
        _loss(ref, x, y).backward()
        torch.nn.utils.clip_grad_norm_(ref.parameters(), 0.5)
        ref_opt.step()
    _assert_params_close(model, ref, atol=1e-5)


def test_distributed_optimizer_unused_parameter():
    # A parameter without a gradient is reduced as zeros (it may have one
    # on another rank); the others train as usual.
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = _model()
            self.unused = torch.nn.Linear(3, 3)

        def forward(self, x):
            return self.body(x)
    net = seeded(Net, 0)
    opt = hvd.DistributedOptimizer(_sgd(net), named_parameters=net.named_parameters())
    x, y = _batch(0)
    opt.zero_grad()
    _loss(net, _shard(x), _shard(y)).backward()
    opt.step()
    _assert_params_close(net.body, _reference(_sgd, steps=1), atol=1e-5)
    assert torch.equal(net.unused.weight.grad, torch.zeros(3, 3))


def test_distributed_optimizer_zero_grad_between_backward_and_step():
    model = _model()
    opt = hvd.DistributedOptimizer(_sgd(model))
    x, y = _batch(0)
    _loss(model, _shard(x), _shard(y)).backward()
    with pytest.raises(AssertionError):
        opt.zero_grad()
    opt.step()
    _assert_params_close(model, _reference(_sgd, steps=1), atol=1e-5)


# ---------------------------------------------------------------- DDP

@pytest.fixture(scope="module")
def gloo():
    import os
    import torch.distributed as dist
    if not dist.is_available():
        pytest.skip("torch.distributed is not available")
    if not dist.is_initialized():
        port = None
        if hvd.rank() == 0:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        port = hvd.broadcast_object(port, 0)
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=hvd.rank(), world_size=hvd.size())
    return dist


def _train_ddp(hook, steps=STEPS):
    from torch.nn.parallel import DistributedDataParallel as DDP
    model = DDP(_model())
    if hook is not None:
        model.register_comm_hook(None, hook)
    _train_shards(model, _sgd(model), steps)
    return model.module


def test_ddp_comm_hook_matches_gloo(gloo):
    over_gloo = _train_ddp(None)
    calls = []

    def hook(state, bucket):
        calls.append(bucket.buffer().numel())
        return hvd.ddp_comm_hook(state, bucket)
    over_ringpoint = _train_ddp(hook)
    assert len(calls) >= STEPS and sum(calls) >= 433 * STEPS, calls
    for (name, p), q in zip(over_ringpoint.named_parameters(), over_gloo.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=0, msg=name)
    _assert_params_close(over_ringpoint, _reference(_sgd), atol=1e-5)


def test_ddp_comm_hook_fp16(gloo):
    model = _train_ddp(hvd.make_ddp_comm_hook(hvd.Compression.fp16))
    _assert_params_close(model, _reference(_sgd), atol=2e-3, rtol=2e-3)


def test_distributed_optimizer_many_buckets_mixed_dtypes_and_groups(monkeypatch):
    # 256-byte buckets: one or two parameters each, started from the hooks
    # in bucket order while backward() goes on; a float64 layer in its own
    # buckets; two parameter groups with their own learning rates.
    monkeypatch.setenv("RINGPOINT_FUSION_BYTES", "256")

    def make():
        m = _model()
        m[2].double()
        return m

    def forward(m, x):
        h = m[1](m[0](x)).double()
        return m[4](m[3](m[2](h)).float())

    def opt_of(m):
        return torch.optim.SGD([{"params": list(m[0].parameters()) + list(m[4].parameters())},
                                {"params": m[2].parameters(), "lr": 0.05}],
                               lr=0.1, momentum=0.9)
    model, ref = make(), make()
    opt = hvd.DistributedOptimizer(opt_of(model), named_parameters=model.named_parameters())
    assert len(opt._rp_buckets) >= 4
    ref_opt = opt_of(ref)
    for s in range(STEPS):
        x, y = _batch(s)
        opt.zero_grad()
        torch.nn.functional.mse_loss(forward(model, _shard(x)), _shard(y)).backward()
        opt.step()
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(forward(ref, x), y).backward()
        ref_opt.step()
    _assert_params_close(model, ref, atol=1e-5)


def test_ddp_comm_hook_several_buckets(gloo):
    # A model over DDP's first bucket (1 MiB) and small buckets after the
    # first step: several buckets in flight at once, completed by the
    # hook's waiter thread while backward() starts the next ones.
    from torch.nn.parallel import DistributedDataParallel as DDP

    def make():
        return seeded(lambda: torch.nn.Sequential(
            torch.nn.Linear(8, 600), torch.nn.Tanh(), torch.nn.Linear(600, 600),
            torch.nn.Tanh(), torch.nn.Linear(600, 1)), 0)

    def train(model):
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        for s in range(3):
            x, y = _batch(s)
            opt.zero_grad()
            _loss(model, _shard(x), _shard(y)).backward()
            opt.step()
        return model
    calls = []

    def hook(state, bucket):
        calls.append(bucket.index())
        return hvd.ddp_comm_hook(state, bucket)
    ddp = DDP(make(), bucket_cap_mb=0.3)
    ddp.register_comm_hook(None, hook)
    got = train(ddp).module
    assert len(set(calls)) > 1, calls
    want = train(DDP(make(), bucket_cap_mb=0.3)).module
    for (name, p), q in zip(got.named_parameters(), want.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), atol=1e-5, rtol=1e-5, msg=name)
