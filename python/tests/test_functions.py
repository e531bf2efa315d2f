"""broadcast_parameters, broadcast_optimizer_state, broadcast_object,
allgather_object, the identity and build queries, and the NumPy API of
the ringpoint package."""
import os

import numpy as np
import pytest
import torch

import ringpoint
import ringpoint.torch as hvd
from _helpers import seeded
from ringpoint import _coll


def _model(seed):
    def make():
        return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6),
                                   torch.nn.ReLU(), torch.nn.Linear(6, 2))
    return seeded(make, seed)


def _train(model, opt, seed, steps):
    data = seeded(lambda: torch.randn(8, 4), 1000 + seed)
    for _ in range(steps):
        opt.zero_grad()
        model(data).square().mean().backward()
        opt.step()


def _states_equal(a, b):
    assert a.keys() == b.keys()
    for k in a:
        assert a[k].dtype == b[k].dtype and torch.equal(a[k], b[k]), k


def test_identity():
    assert hvd.is_initialized()
    assert 0 <= hvd.rank() < hvd.size()
    assert 0 <= hvd.local_rank() < hvd.local_size() <= hvd.size()
    assert 0 <= hvd.cross_rank() < hvd.cross_size()
    for var in ("OMPI_COMM_WORLD_SIZE", "SLURM_STEP_NUM_TASKS"):
        if var in os.environ:
            assert hvd.size() == int(os.environ[var])
    ranks = hvd.allgather_object((hvd.rank(), hvd.local_rank(), hvd.local_size(),
                                  hvd.cross_rank(), ringpoint.node_name()))
    assert [r for r, *_ in ranks] == list(range(hvd.size()))
    # Each node's ranks have local ranks 0 .. local_size-1 and one node index.
    nodes = {}
    for _, local, local_size, node, name in ranks:
        nodes.setdefault(name, []).append((local, local_size, node))
    assert len(nodes) == hvd.cross_size()
    for name, members in nodes.items():
        assert sorted(m[0] for m in members) == list(range(len(members))), name
        assert {m[1] for m in members} == {len(members)}, name
        assert len({m[2] for m in members}) == 1, name
    assert sorted(m[0][2] for m in nodes.values()) == list(range(hvd.cross_size()))
    assert hvd.is_homogeneous() == (hvd.size() == hvd.local_size() * hvd.cross_size())
    assert ringpoint.library_version()
    assert ringpoint.node_count() == hvd.cross_size() and ringpoint.node_id() == hvd.cross_rank()
    assert isinstance(ringpoint.job_id(), str) and ringpoint.ckpt_interval() >= 0
    assert len(set(hvd.allgather_object(ringpoint.job_id()))) == 1
    if "SLURM_JOB_ID" in os.environ:
        assert ringpoint.job_id() == os.environ["SLURM_JOB_ID"]


def test_build_queries():
    assert hvd.mpi_built() is False and hvd.gloo_built() is False
    assert hvd.rocm_built() is False and hvd.ccl_built() is False
    # As Horovod's: NCCL's version number (Horovod's tests compare it with
    # 2700), or 0 without the module.
    assert bool(hvd.nccl_built()) == hvd.cuda_built() or not hvd.nccl_built()
    assert isinstance(hvd.nccl_built(), int)
    assert hvd.nccl_built() == 0 or hvd.nccl_built() >= 20000
    hvd.start_timeline("/dev/null")
    hvd.stop_timeline()


@pytest.mark.parametrize("kind", ["state_dict", "named_parameters", "parameters"])
def test_broadcast_parameters(kind):
    for root in range(hvd.size()):
        model = _model(hvd.rank())
        # Distinct BatchNorm buffers too (running stats, an int64 counter).
        model.train()
        model(seeded(lambda: torch.randn(5, 4), hvd.rank()))
        if kind == "state_dict":
            hvd.broadcast_parameters(model.state_dict(), root_rank=root)
        elif kind == "named_parameters":
            hvd.broadcast_parameters(model.named_parameters(), root_rank=root)
        else:
            hvd.broadcast_parameters(list(model.parameters()), root_rank=root)
        want = _model(root)
        want(seeded(lambda: torch.randn(5, 4), root))
        if kind == "state_dict":
            _states_equal(model.state_dict(), want.state_dict())
        else:
            _states_equal(dict(model.named_parameters()), dict(want.named_parameters()))


@pytest.mark.parametrize("root_stepped_only", [False, True], ids=["all-stepped", "fresh-non-roots"])
def test_broadcast_optimizer_state(root_stepped_only):
    root = hvd.size() - 1

    def make(r):
        model = _model(r)
        opt = torch.optim.Adam(model.parameters(), lr=0.01 * (r + 1), betas=(0.8, 0.9))
        return model, opt
    model, opt = make(hvd.rank())
    if hvd.rank() == root or not root_stepped_only:
        _train(model, opt, hvd.rank(), 3)
    hvd.broadcast_parameters(model.state_dict(), root_rank=root)
    hvd.broadcast_optimizer_state(opt, root_rank=root)
    ref_model, ref_opt = make(root)
    _train(ref_model, ref_opt, root, 3)
    got, want = opt.state_dict(), ref_opt.state_dict()
    assert got["param_groups"] == want["param_groups"]
    assert got["state"].keys() == want["state"].keys()
    for k in want["state"]:
        for name, v in want["state"][k].items():
            g = got["state"][k][name]
            assert torch.is_tensor(g) and g.dtype == v.dtype and torch.equal(g, v), (k, name)
    # Training on from there gives the same on every rank.
    _train(model, opt, 0, 2)
    _train(ref_model, ref_opt, 0, 2)
    _states_equal(model.state_dict(), ref_model.state_dict())


def test_broadcast_optimizer_state_sgd_without_state():
    model = _model(hvd.rank())
    opt = torch.optim.SGD(model.parameters(), lr=0.1 * (hvd.rank() + 1))
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1)



@pytest.mark.parametrize("distributed", [False, True], ids=["plain", "distributed"])
def test_broadcast_optimizer_state_before_the_first_step(distributed):
    # As Horovod: with a new optimizer, every parameter that requires a
    # gradient has one afterwards (zeros where it had none), a parameter
    # that requires none (an int index) is left alone. Unlike Horovod's, no
    # step is taken: the parameters stay as they were (despite the weight
    # decay), and the optimizer still has no state.
    idx = torch.nn.Parameter(torch.tensor([1, 3], dtype=torch.int32), requires_grad=False)
    w = torch.nn.Parameter(torch.arange(4.0) + hvd.rank())
    v = torch.nn.Parameter(torch.ones(2))
    v.grad = torch.full((2,), 5.0)
    opt = torch.optim.SGD([idx, w, v], lr=0.1, momentum=0.9, nesterov=True,
                          weight_decay=1e-2)
    if distributed:
        opt = hvd.DistributedOptimizer(opt, named_parameters=[("idx", idx), ("w", w),
                                                              ("v", v)])
    hvd.broadcast_parameters([w, v], root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    assert idx.grad is None
    assert torch.equal(w.grad, torch.zeros(4))
    assert torch.equal(v.grad, torch.full((2,), 5.0))       # kept
    assert torch.equal(w.detach(), torch.arange(4.0))
    assert torch.equal(v.detach(), torch.ones(2))
    assert opt.state_dict()["state"] == {}
    assert torch.equal(hvd.broadcast(w.grad, root_rank=0), w.grad)
    if distributed:
        # Training goes on as usual from there.
        opt.zero_grad()
        (w * (hvd.rank() + 1)).sum().backward()
        opt.step()
        assert torch.allclose(w.grad, torch.full((4,), (hvd.size() + 1) / 2))
    gathered = hvd.allgather_object(w.detach().tolist())
    assert all(x == gathered[0] for x in gathered)

def test_broadcast_object():
    for root in range(hvd.size()):
        def obj(r):
            return {"epoch": 7 + r, "rank": r, "t": torch.arange(r + 2),
                    "a": np.full(r + 1, r), "s": "x" * (100 * r)}
        got = hvd.broadcast_object(obj(hvd.rank()), root_rank=root)
        want = obj(root)
        assert got["epoch"] == want["epoch"] and got["s"] == want["s"]
        assert torch.equal(got["t"], want["t"]) and np.array_equal(got["a"], want["a"])
    assert hvd.broadcast_object(None if hvd.rank() else 42) == 42
    big = bytes(range(256)) * 4096          # 1 MiB
    assert hvd.broadcast_object(big if hvd.rank() == 0 else None, 0) == big


def test_allgather_object():
    got = hvd.allgather_object({"rank": hvd.rank(), "pad": [0] * (50 * hvd.rank())})
    assert got == [{"rank": r, "pad": [0] * (50 * r)} for r in range(hvd.size())]
    assert hvd.allgather_object(None) == [None] * hvd.size()
    assert hvd.allgather_object(b"") == [b""] * hvd.size()


# ---------------------------------------------------------------- NumPy API

NP_DTYPES = [np.uint8, np.int32, np.int64, np.float16, np.float32, np.float64]
NP_OPS = {"AVG": ringpoint.AVG, "SUM": ringpoint.SUM, "MIN": ringpoint.MIN,
          "MAX": ringpoint.MAX, "PROD": ringpoint.PROD}
_TORCH_OP = {ringpoint.AVG: hvd.Average, ringpoint.SUM: hvd.Sum, ringpoint.MIN: hvd.Min,
             ringpoint.MAX: hvd.Max, ringpoint.PROD: hvd.Product}


@pytest.mark.parametrize("dtype", NP_DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("opname", list(NP_OPS))
def test_numpy_allreduce(dtype, opname):
    from _helpers import all_inputs, assert_equal, rank_input, reduce_ref
    op = NP_OPS[opname]
    tdtype = torch.from_numpy(np.zeros(1, dtype)).dtype
    a = rank_input(hvd.rank(), (4, 3), tdtype, _TORCH_OP[op]).numpy()
    a.flags.writeable = False               # out of place reads only
    want = reduce_ref(all_inputs((4, 3), tdtype, _TORCH_OP[op]), _TORCH_OP[op])
    b = ringpoint.allreduce(a, op=op)
    assert b.dtype == a.dtype and b.shape == a.shape
    assert_equal(torch.from_numpy(b), want)
    c = a.copy()
    assert ringpoint.allreduce_(c, op=op) is c
    assert_equal(torch.from_numpy(c), want)


def test_numpy_broadcast_and_allgather():
    for root in range(hvd.size()):
        a = np.arange(10, dtype=np.float64) * (hvd.rank() + 1)
        assert ringpoint.broadcast_(a, root) is a
        assert np.array_equal(a, np.arange(10, dtype=np.float64) * (root + 1))
    a = np.full((2, 3), hvd.rank(), dtype=np.int16)      # any dtype is gathered
    g = ringpoint.allgather(a)
    assert g.shape == (2 * hvd.size(), 3)
    assert np.array_equal(g, np.repeat(np.arange(hvd.size(), dtype=np.int16), 2)[:, None]
                          * np.ones((1, 3), np.int16))
    assert np.array_equal(ringpoint.allgather(np.array(hvd.rank())), np.arange(hvd.size()))
    assert ringpoint.allgather(np.zeros((0, 2))).shape == (0, 2)
    ringpoint.barrier()


def test_numpy_errors():
    with pytest.raises(ringpoint.InvalidArgumentError):
        ringpoint.allreduce_(np.zeros((4, 4))[:, 1])           # not contiguous
    with pytest.raises(ringpoint.InvalidArgumentError):
        ringpoint.allreduce([1.0, 2.0])                         # not an array
    ro = np.zeros(3)
    ro.flags.writeable = False
    with pytest.raises(ringpoint.InvalidArgumentError):
        ringpoint.allreduce_(ro)
    with pytest.raises(ringpoint.NotSupportedError):
        ringpoint.allreduce(np.zeros(3, np.int16))
    with pytest.raises(ringpoint.InvalidArgumentError):
        ringpoint.allreduce(np.zeros(3), op=17)
    for root in (-1, hvd.size()):
        with pytest.raises(ringpoint.InvalidArgumentError):
            ringpoint.broadcast_(np.zeros(3), root)
    if hvd.size() > 1 and _coll.CHECK:
        with pytest.raises(ringpoint.MismatchError):
            ringpoint.allreduce(np.zeros(2 + hvd.rank()))
        with pytest.raises(ringpoint.MismatchError):
            ringpoint.broadcast_(np.zeros(3), hvd.rank())
        with pytest.raises(ringpoint.MismatchError):
            ringpoint.allgather(np.zeros((1, 1 + hvd.rank())))
    assert ringpoint.allreduce(np.ones(3), op=ringpoint.SUM)[0] == hvd.size()


def test_shutdown_completes_handles_and_init_starts_again():
    r, n = hvd.rank(), hvd.size()
    # Under a launcher too (tests/slurm/test_python.sh runs this file under
    # srun and mpirun): a second rp_init in the same process used to fail
    # now and then there (issue 15, the PMIx client closed and opened again
    # racing with the other ranks' fence).
    x = torch.full((5,), float(r))
    h = hvd.allreduce_async_(x, op=hvd.Sum)
    hvd.shutdown()
    assert not hvd.is_initialized()
    # The handle was completed before the context went.
    assert hvd.synchronize(h).tolist() == [float(sum(range(n)))] * 5
    with pytest.raises(hvd.StateError):
        hvd.allreduce(torch.ones(1))
    hvd.init()
    hvd.init()                                    # idempotent
    assert (hvd.rank(), hvd.size()) == (r, n)
    assert hvd.allreduce(torch.ones(2), op=hvd.Sum).tolist() == [float(n)] * 2


def test_build_queries_are_truthful():
    try:
        from ringpoint import _config
        module = _config.GPU_MODULE
    except ImportError:                           # (a source tree)
        # the library's own default: $libdir/ringpoint beside it
        lib = os.environ.get("RINGPOINT_LIBRARY")
        module = lib and os.path.join(os.path.dirname(os.path.realpath(lib)),
                                      "ringpoint", "ringpoint-nccl.so")
    module = os.environ.get("RINGPOINT_GPU_MODULE") or module
    assert bool(hvd.nccl_built()) <= bool(module and os.path.exists(module))
    assert hvd.cuda_built() == bool(module and os.path.exists(module))
