"""CUDA tensors through ringpoint.torch: the collectives on device memory
(NCCL, through libringpoint's GPU module), DistributedOptimizer on a model
on the GPU, and a Checkpoint of a GPU model and optimizer restored bit for
bit. The CUDA cases are skipped where torch sees no GPU (CI has none; the
checkpoint case runs on the CPU there too); on a GPU machine:

    /usr/bin/python3 -m pytest python/tests/test_cuda.py

One process per GPU: NCCL refuses two ranks on one device, and ringpoint
says so at init of the GPU path (see doc/benchmarks.md, GPU).
"""
import os

import pytest
import torch

import ringpoint.torch as hvd

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(),
                                reason="torch sees no CUDA device")

DTYPES = [torch.uint8, torch.int32, torch.int64, torch.float16,
          torch.bfloat16, torch.float32, torch.float64]
OPS = [hvd.Sum, hvd.Min, hvd.Max, hvd.Product, hvd.Average]


def _values(dtype, n=4099):
    # Small integers: exact in every dtype, so device and host agree.
    r = hvd.rank()
    return ((torch.arange(n) + r) % 3 + 1).to(dtype)


@needs_cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_cuda_matches_host(dtype):
    for op in OPS:
        if op is hvd.Average and not dtype.is_floating_point:
            continue
        host = hvd.allreduce(_values(dtype), op=op)
        dev = hvd.allreduce(_values(dtype).cuda(), op=op)
        assert dev.is_cuda
        torch.cuda.synchronize()
        if dtype.is_floating_point and op is hvd.Average and hvd.size() > 1:
            torch.testing.assert_close(dev.cpu(), host)
        else:
            assert torch.equal(dev.cpu(), host), (dtype, op)


@needs_cuda
def test_inplace_async_broadcast_allgather_cuda():
    x = _values(torch.float32).cuda()
    ref = hvd.allreduce(_values(torch.float32), op=hvd.Sum)
    h = hvd.allreduce_async_(x, op=hvd.Sum)
    out = hvd.synchronize(h)
    assert out.data_ptr() == x.data_ptr()
    torch.cuda.synchronize()
    assert torch.equal(x.cpu(), ref)

    b = torch.full((1000,), float(hvd.rank()), device="cuda")
    hvd.broadcast_(b, root_rank=hvd.size() - 1)
    torch.cuda.synchronize()
    assert torch.equal(b.cpu(), torch.full((1000,), float(hvd.size() - 1)))

    g = hvd.allgather(torch.full((2, 3), hvd.rank(), dtype=torch.int64, device="cuda"))
    assert g.is_cuda and g.shape == (2 * hvd.size(), 3)
    want = torch.arange(hvd.size()).repeat_interleave(2)[:, None].expand(-1, 3)
    assert torch.equal(g.cpu(), want)


def _model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                               torch.nn.Linear(64, 4))


def _train(model, opt, steps=3):
    dev = next(model.parameters()).device
    g = torch.Generator().manual_seed(11 + hvd.rank())
    for _ in range(steps):
        x = torch.randn(16, 32, generator=g).to(dev)
        y = torch.randn(16, 4, generator=g).to(dev)
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        opt.step()


@needs_cuda
def test_distributed_optimizer_cuda_matches_cpu():
    cpu, gpu = _model(), _model().cuda()
    opt_c = hvd.DistributedOptimizer(torch.optim.Adam(cpu.parameters(), lr=0.01),
                                     named_parameters=cpu.named_parameters())
    opt_g = hvd.DistributedOptimizer(torch.optim.Adam(gpu.parameters(), lr=0.01),
                                     named_parameters=gpu.named_parameters())
    _train(cpu, opt_c)
    _train(gpu, opt_g)
    for p, q in zip(cpu.parameters(), gpu.parameters()):
        torch.testing.assert_close(q.detach().cpu(), p.detach(), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_checkpoint_model_and_optimizer_restored_in_place(tmp_path, device):
    """Save, train on, then a new process (shutdown + init, as after a
    requeue) with a fresh model whose Adam state already exists: restore
    puts every tensor back bit for bit, on the device it lives on."""
    if hvd.size() > 1:
        pytest.skip("the checkpoint directory of this test is per process")
    os.environ["RINGPOINT_CKPT_DIR"] = str(tmp_path)
    hvd.shutdown()
    hvd.init()
    try:
        model = _model().to(device)
        opt = torch.optim.Adam(model.parameters(), lr=0.01)
        _train(model, opt)
        ck = hvd.Checkpoint(model, opt)
        ck.save(3)
        want = [t.detach().clone() for t in model.parameters()]
        want += [v.clone() for s in opt.state.values() for v in s.values()
                 if torch.is_tensor(v)]
        _train(model, opt, steps=2)            # moves everything on
        del ck
        hvd.shutdown()
        hvd.init()

        model2 = _model().to(device)
        opt2 = torch.optim.Adam(model2.parameters(), lr=0.01)
        _train(model2, opt2, steps=1)          # Adam state exists, differs
        ck2 = hvd.Checkpoint(model2, opt2)
        assert ck2.restore() == 3
        got = [t.detach() for t in model2.parameters()]
        got += [v for s in opt2.state.values() for v in s.values()
                if torch.is_tensor(v)]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            assert a.device == b.device and torch.equal(a, b)
    finally:
        del os.environ["RINGPOINT_CKPT_DIR"]
        hvd.shutdown()
        hvd.init()
