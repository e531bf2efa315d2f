"""Horovod 0.28.1's horovod.torch namespace, name by name, in
ringpoint.torch: each name is there, and either takes Horovod's arguments
(the same parameters in the same order; ringpoint may add optional ones
after them) or raises NotImplementedError with a message that says why
and what to use instead. The signatures below are Horovod's, written out
here from its documentation and source; `from horovod.torch import *`
gives these names (and the submodules)."""
import inspect
import warnings

import pytest
import torch

import ringpoint.torch as hvd

# name -> Horovod's parameters, in order ("*args" and "**kwargs" as such).
FUNCTIONS = {
    "init": ["comm", "process_sets"],
    "shutdown": [],
    "is_initialized": [],
    "start_timeline": ["file_path", "mark_cycles"],
    "stop_timeline": [],
    "size": [], "local_size": [], "cross_size": [],
    "rank": [], "local_rank": [], "cross_rank": [],
    "is_homogeneous": [],
    "mpi_threads_supported": [], "mpi_enabled": [], "mpi_built": [],
    "gloo_enabled": [], "gloo_built": [],
    "nccl_built": [], "ddl_built": [], "ccl_built": [], "cuda_built": [],
    "rocm_built": [],
    "allreduce": ["tensor", "average", "name", "compression", "op",
                  "prescale_factor", "postscale_factor", "process_set"],
    "allreduce_async": ["tensor", "average", "name", "op", "prescale_factor",
                        "postscale_factor", "process_set"],
    "allreduce_": ["tensor", "average", "name", "op", "prescale_factor",
                   "postscale_factor", "process_set"],
    "allreduce_async_": ["tensor", "average", "name", "op", "prescale_factor",
                         "postscale_factor", "process_set"],
    "grouped_allreduce": ["tensors", "average", "name", "compression", "op",
                          "prescale_factor", "postscale_factor", "process_set"],
    "grouped_allreduce_async": ["tensors", "average", "name", "op",
                                "prescale_factor", "postscale_factor",
                                "process_set"],
    "grouped_allreduce_": ["tensors", "average", "name", "op", "prescale_factor",
                           "postscale_factor", "process_set"],
    "grouped_allreduce_async_": ["tensors", "average", "name", "op",
                                 "prescale_factor", "postscale_factor",
                                 "process_set"],
    "sparse_allreduce_async": ["tensor", "name", "op", "process_set"],
    "allgather": ["tensor", "name", "process_set"],
    "allgather_async": ["tensor", "name", "process_set"],
    "grouped_allgather": ["tensors", "name", "process_set"],
    "grouped_allgather_async": ["tensors", "name", "process_set"],
    "broadcast": ["tensor", "root_rank", "name", "process_set"],
    "broadcast_async": ["tensor", "root_rank", "name", "process_set"],
    "broadcast_": ["tensor", "root_rank", "name", "process_set"],
    "broadcast_async_": ["tensor", "root_rank", "name", "process_set"],
    "join": ["device"],
    "barrier": ["process_set"],
    "poll": ["handle"],
    "synchronize": ["handle"],
    "broadcast_parameters": ["params", "root_rank"],
    "broadcast_optimizer_state": ["optimizer", "root_rank", "model"],
    "broadcast_object": ["obj", "root_rank", "name", "process_set"],
    "allgather_object": ["obj", "name"],
    "DistributedOptimizer": ["optimizer", "named_parameters", "compression",
                             "backward_passes_per_step", "op",
                             "gradient_predivide_factor", "num_groups",
                             "groups", "sparse_as_dense", "process_set"],
    "SyncBatchNorm": ["num_features", "eps", "momentum", "affine",
                      "track_running_stats"],
}

# Horovod's parameters without a default (the rest have one).
REQUIRED = {"start_timeline": 1, "allreduce": 1, "allreduce_async": 1,
            "allreduce_": 1, "allreduce_async_": 1, "grouped_allreduce": 1,
            "grouped_allreduce_async": 1, "grouped_allreduce_": 1,
            "grouped_allreduce_async_": 1, "sparse_allreduce_async": 3,
            "allgather": 1, "allgather_async": 1, "grouped_allgather": 1,
            "grouped_allgather_async": 1, "broadcast": 2, "broadcast_async": 2,
            "broadcast_": 2, "broadcast_async_": 2, "poll": 1, "synchronize": 1,
            "broadcast_parameters": 2, "broadcast_optimizer_state": 2,
            "broadcast_object": 1, "allgather_object": 1,
            "DistributedOptimizer": 1, "SyncBatchNorm": 1}

VALUES = ["Average", "Sum", "Adasum", "Min", "Max", "Product",
          "global_process_set", "Compression", "HorovodInternalError"]

SUBMODULES = ["elastic", "compression", "functions", "mpi_ops", "optimizer",
              "sync_batch_norm"]

# Added with the library's reduce-scatter, all-to-all and
# sub-communicators: Horovod's parameters, the first required.
LATER_NAMES = {
    "reducescatter": ["tensor", "name", "compression", "op", "process_set",
                      "prescale_factor", "postscale_factor"],
    "reducescatter_async": ["tensor", "name", "op", "process_set",
                            "prescale_factor", "postscale_factor"],
    "grouped_reducescatter": ["tensors", "name", "compression", "op",
                              "process_set", "prescale_factor",
                              "postscale_factor"],
    "grouped_reducescatter_async": ["tensors", "name", "op", "process_set",
                                    "prescale_factor", "postscale_factor"],
    "alltoall": ["tensor", "splits", "name", "process_set"],
    "alltoall_async": ["tensor", "splits", "name", "process_set"],
    "add_process_set": ["process_set"],
    "remove_process_set": ["process_set"],
    "ProcessSet": ["ranks_or_comm"],
}


def _check_signature(name, params, required):
    obj = getattr(hvd, name)
    assert callable(obj), name
    sig = inspect.signature(obj)
    got = [p for p in sig.parameters.values()
           if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    names = [p.name for p in got]
    assert names[:len(params)] == params, \
        "%s%s: Horovod's parameters are %s" % (name, sig, params)
    for i, p in enumerate(got):
        has_default = p.default is not inspect.Parameter.empty
        if i < len(params):
            assert has_default == (i >= required), \
                "%s%s: %s's default differs from Horovod's" % (name, sig, p.name)
        else:
            assert has_default, "%s%s: the added %s needs a default" % (name, sig, p.name)


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_horovod_function(name):
    _check_signature(name, FUNCTIONS[name], REQUIRED.get(name, 0))


@pytest.mark.parametrize("name", sorted(LATER_NAMES))
def test_horovod_later_name(name):
    # reducescatter, alltoall and process sets (added after the walk above).
    assert hasattr(hvd, name), name
    _check_signature(name, LATER_NAMES[name], 1)


def test_star_import_gives_horovods_names():
    ns = {}
    exec("from ringpoint.torch import *", ns)
    want = set(FUNCTIONS) | set(VALUES) | set(SUBMODULES)
    assert not want - set(ns), sorted(want - set(ns))
    for name in SUBMODULES:
        assert inspect.ismodule(getattr(hvd, name)), name


def test_values():
    ops = [hvd.Average, hvd.Sum, hvd.Min, hvd.Max, hvd.Product, hvd.Adasum]
    assert len({repr(o) for o in ops}) == len(ops)
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    for c in ("none", "fp16", "bf16"):
        comp = getattr(hvd.Compression, c)
        assert callable(comp.compress) and callable(comp.decompress)
    ps = hvd.global_process_set
    assert ps.size() == hvd.size() and ps.rank() == hvd.rank() and ps.included()


def test_queries():
    for name in ("size", "local_size", "cross_size", "rank", "local_rank",
                 "cross_rank"):
        assert isinstance(getattr(hvd, name)(), int), name
    for name in ("is_initialized", "is_homogeneous", "mpi_threads_supported",
                 "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
                 "ddl_built", "ccl_built", "cuda_built",
                 "rocm_built"):
        assert isinstance(getattr(hvd, name)(), bool), name
    assert isinstance(hvd.nccl_built(), int)    # a version, as Horovod's
    assert hvd.is_initialized()


def test_timeline_warns_once():
    hvd._timeline_warned = False
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hvd.start_timeline("/tmp/unused-timeline.json", mark_cycles=True)
        hvd.stop_timeline()
        hvd.start_timeline("/tmp/unused-timeline.json")
    lines = [str(w.message) for w in caught]
    if hvd.rank() == 0:
        assert len(lines) == 1 and "no timeline" in lines[0], lines
        assert "\n" not in lines[0]
    else:
        assert lines == []


def _raises_not_implemented(fn, *words):
    with pytest.raises(NotImplementedError) as info:
        fn()
    msg = str(info.value)
    for w in words:
        assert w in msg, "%r does not say %r" % (msg, w)


def test_elastic_is_not_implemented():
    assert hvd.elastic.init is hvd.init and hvd.elastic.shutdown is hvd.shutdown
    for what, fn in (("run", lambda: hvd.elastic.run(lambda state: None)),
                     ("TorchState", lambda: hvd.elastic.TorchState(model=None)),
                     ("ElasticSampler", lambda: hvd.elastic.ElasticSampler([]))):
        _raises_not_implemented(fn, "elastic." + what, "not implemented",
                                "ringpoint.torch.Checkpoint", "--requeue")


def test_adasum_is_not_implemented():
    # Refused before any data moves, on every rank alike.
    _raises_not_implemented(lambda: hvd.allreduce(torch.ones(2), op=hvd.Adasum),
                            "Adasum", "Average")
    _raises_not_implemented(lambda: hvd.DistributedOptimizer(
        torch.optim.SGD([torch.nn.Parameter(torch.ones(1))], lr=0.1),
        op=hvd.Adasum), "Adasum")


def test_sparse_allreduce_async():
    n = hvd.size()
    i = torch.tensor([[hvd.rank() % 3, 2]])
    v = torch.tensor([[1.0, 2.0], [3.0, 4.0]]) * (hvd.rank() + 1)
    x = torch.sparse_coo_tensor(i, v, (4, 2))
    for op in (hvd.Average, hvd.Sum):
        y = hvd.sparse_allreduce_async(x, "sparse", op)()
        assert y.is_sparse and y.shape == x.shape
        want = sum(torch.sparse_coo_tensor(torch.tensor([[r % 3, 2]]),
                                           torch.tensor([[1.0, 2.0], [3.0, 4.0]]) * (r + 1),
                                           (4, 2)).to_dense() for r in range(n))
        if op == hvd.Average:
            want = want / n
        torch.testing.assert_close(y.to_dense(), want)
    with pytest.raises(hvd.InvalidArgumentError, match="Average or Sum"):
        hvd.sparse_allreduce_async(x, "sparse", hvd.Max)
    with pytest.raises(hvd.InvalidArgumentError, match="sparse"):
        hvd.sparse_allreduce_async(torch.ones(2), "dense", hvd.Sum)


def test_broadcast_optimizer_state_takes_model():
    model = torch.nn.Linear(2, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    hvd.broadcast_optimizer_state(opt, root_rank=0, model=model)


def test_distributed_optimizer_sparse_gradient():
    """An Embedding(sparse=True)'s gradient is averaged as dense (Horovod's
    sparse_as_dense=True): the step is that of the averaged gradient."""
    def make():
        torch.manual_seed(5)
        return torch.nn.Embedding(6, 3, sparse=True)
    m = make()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=0.5),
                                   named_parameters=m.named_parameters(),
                                   sparse_as_dense=False)
    ref = make()
    ids = [torch.tensor([r % 6, (2 * r + 1) % 6]) for r in range(hvd.size())]
    m(ids[hvd.rank()]).sum().backward()
    opt.step()
    for i in ids:
        ref(i).sum().backward()
    with torch.no_grad():
        ref.weight -= 0.5 * ref.weight.grad.to_dense() / hvd.size()
    torch.testing.assert_close(m.weight, ref.weight)
