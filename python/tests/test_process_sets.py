"""Process sets of ringpoint.torch (Horovod's API over the library's
sub-communicators): every collective restricted to a set, against
references computed from the members' inputs; gradients reduced among the
same set; the errors for unregistered sets, non-members and duplicates."""
import pytest
import torch

import ringpoint.torch as hvd
from _helpers import assert_equal, rank_input, reduce_ref


@pytest.fixture
def halves():
    """Even and odd ranks, registered on every rank; removed after."""
    n = hvd.size()
    even = hvd.add_process_set([r for r in range(n) if r % 2 == 0])
    odd = hvd.add_process_set([r for r in range(n) if r % 2 == 1]) if n > 1 else None
    yield even, odd
    for ps in (even, odd):
        if ps is not None:
            assert hvd.remove_process_set(ps)


def mine(halves):
    even, odd = halves
    return even if hvd.rank() % 2 == 0 else odd


def test_set_queries(halves):
    ps = mine(halves)
    assert ps.included() and ps.size() == len(ps.ranks)
    assert ps.rank() == ps.ranks.index(hvd.rank())
    other = halves[1] if ps is halves[0] else halves[0]
    if other is not None:
        assert not other.included() and other.rank() == -1
    assert hvd.global_process_set.size() == hvd.size()
    assert hvd.global_process_set.rank() == hvd.rank()
    ids = [p.process_set_id for p in hvd.process_sets()]
    assert ids == sorted(set(ids)) and ids[0] == 0


@pytest.mark.parametrize("dtype", [torch.int32, torch.float16, torch.float32,
                                   torch.float64])
def test_allreduce_in_a_set(halves, dtype):
    ps = mine(halves)
    x = rank_input(hvd.rank(), (4, 3), dtype, hvd.Sum)
    want = reduce_ref([rank_input(q, (4, 3), dtype, hvd.Sum) for q in ps.ranks],
                      hvd.Sum)
    assert_equal(hvd.allreduce(x, op=hvd.Sum, process_set=ps), want)
    assert_equal(hvd.grouped_allreduce([x, x], op=hvd.Sum, process_set=ps)[1], want)
    h = hvd.allreduce_async(x, op=hvd.Sum, process_set=ps)
    assert_equal(hvd.synchronize(h), want)
    # The default op averages over the set's size, not the job's.
    avg = hvd.allreduce(x.to(torch.float64), process_set=ps)
    assert_equal(avg, want.to(torch.float64) / ps.size())


def test_broadcast_allgather_reducescatter_alltoall_in_a_set(halves):
    ps = mine(halves)
    r, k = hvd.rank(), ps.size()
    # The root is named by its rank in the job, as Horovod does.
    root = ps.ranks[-1]
    b = hvd.broadcast(torch.full((3,), float(r)), root, process_set=ps)
    assert torch.equal(b, torch.full((3,), float(root)))
    g = hvd.allgather(torch.full((1, 2), float(r)), process_set=ps)
    assert torch.equal(g[:, 0], torch.tensor([float(q) for q in ps.ranks]))
    s = hvd.reducescatter(torch.ones(2 * k, 2), op=hvd.Sum, process_set=ps)
    assert torch.equal(s, torch.full((2, 2), float(k)))
    a = hvd.alltoall(torch.full((k,), float(r)), process_set=ps)
    assert torch.equal(a, torch.tensor([float(q) for q in ps.ranks]))
    assert hvd.broadcast_object({"r": r}, root_rank=ps.ranks[0],
                                process_set=ps) == {"r": ps.ranks[0]}
    assert hvd.allgather_object(r, process_set=ps) == ps.ranks
    hvd.barrier(process_set=ps)


def test_gradients_stay_in_the_set(halves):
    ps = mine(halves)
    x = torch.ones(3, dtype=torch.float64, requires_grad=True)
    y = hvd.allreduce(x, op=hvd.Sum, process_set=ps)
    y.sum().backward()
    # The gradient of a Sum is the Sum over the set of the gradients.
    assert torch.equal(x.grad, torch.full((3,), float(ps.size()), dtype=torch.float64))


def test_distributed_optimizer_in_a_set(halves):
    ps = mine(halves)
    torch.manual_seed(hvd.rank())
    model = torch.nn.Linear(4, 1, bias=False)
    with torch.no_grad():
        model.weight.fill_(1.0)
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                   named_parameters=model.named_parameters(),
                                   process_set=ps)
    x = torch.full((1, 4), float(hvd.rank() + 1))
    model(x).sum().backward()
    opt.step()
    # The gradient is x; averaged over the set: the mean of (q + 1).
    mean = sum(q + 1 for q in ps.ranks) / ps.size()
    assert torch.allclose(model.weight, torch.full((1, 4), 1.0 - mean))


def test_errors():
    n, r = hvd.size(), hvd.rank()
    with pytest.raises(hvd.InvalidArgumentError, match="not registered"):
        hvd.allreduce(torch.ones(1), process_set=hvd.ProcessSet([0]))
    with pytest.raises(ValueError):
        hvd.ProcessSet(["a"])
    with pytest.raises(ValueError):
        hvd.add_process_set([n])          # not a rank: refused on every rank
    ps = hvd.add_process_set([0])
    try:
        # The same ranks again: the same set (Horovod's tests rely on it).
        again = hvd.add_process_set([0])
        assert again.process_set_id == ps.process_set_id
        if r != 0:
            with pytest.raises(ValueError, match="not a member"):
                hvd.allreduce(torch.ones(1), process_set=ps)
        else:
            assert torch.equal(hvd.allreduce(torch.ones(2), process_set=ps),
                               torch.ones(2))
            with pytest.raises(ValueError, match="not a member"):
                hvd.broadcast(torch.ones(1), n - 1 if n > 1 else 1, process_set=ps)
    finally:
        assert hvd.remove_process_set(ps)
    assert not hvd.remove_process_set(ps)
    assert again.process_set_id is None       # removed with it
    assert not hvd.remove_process_set(hvd.global_process_set)
    # The job's collectives still work.
    assert torch.equal(hvd.allreduce(torch.ones(1), op=hvd.Sum), torch.full((1,), float(n)))
