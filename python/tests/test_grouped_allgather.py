"""grouped_allgather and grouped_allgather_async: every tensor of the list
gathered as allgather() gathers it (dtypes that cannot be reduced, first
dimensions that differ between ranks and between tensors, scalars, empty
and non-contiguous tensors), in one data collective for the whole group;
the gradient as allgather()'s; a call whose arguments differ between
ranks raises on every rank."""
import pytest
import torch

import ringpoint.torch as hvd
from ringpoint import _coll
from ringpoint.torch import mpi_ops

DTYPES = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
          torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.bool]


def _group(r):
    """Rank @r's list: one tensor per dtype, the first dimension a function
    of the rank and the tensor (0 rows for some), then a scalar and a
    non-contiguous tensor."""
    out = []
    for i, dt in enumerate(DTYPES):
        rows = (r + i) % 4
        v = torch.arange(rows * 6, dtype=torch.int64).reshape(rows, 2, 3) + 10 * r + i
        out.append((v % 2).to(dt) if dt == torch.bool else v.to(dt))
    out.append(torch.tensor(float(r) + 0.5))
    out.append((torch.arange(12, dtype=torch.float32).reshape(3, 4) + r).t())
    return out


def _want(i):
    """What gathering tensor @i of the group gives."""
    parts = [_group(r)[i] for r in range(hvd.size())]
    return torch.cat([p.reshape(1) if p.dim() == 0 else p for p in parts])


def _check(got):
    assert isinstance(got, list) and len(got) == len(_group(0))
    for i, g in enumerate(got):
        want = _want(i)
        assert g.dtype == want.dtype and g.shape == want.shape, i
        assert torch.equal(g, want), "tensor %d (%s)" % (i, want.dtype)


def test_grouped_allgather_matches_allgather():
    mine = _group(hvd.rank())
    before = [t.clone() for t in mine]
    _check(hvd.grouped_allgather(mine))
    for t, b in zip(mine, before):
        assert torch.equal(t, b), "grouped_allgather modified its input"
    for i, t in enumerate(mine):
        assert torch.equal(hvd.allgather(t), _want(i))


def test_grouped_allgather_async():
    h = hvd.grouped_allgather_async(_group(hvd.rank()))
    assert hvd.poll(h) in (True, False)
    _check(hvd.synchronize(h))
    with pytest.raises(hvd.InvalidArgumentError):
        hvd.synchronize(h)


@pytest.mark.parametrize("rows", ["even", "uneven"])
def test_grouped_allgather_one_tensor(rows):
    n = 3 if rows == "even" else hvd.rank() + 1
    x = torch.full((n, 5), float(hvd.rank()))
    (y,) = hvd.grouped_allgather([x])
    want = torch.cat([torch.full((3 if rows == "even" else r + 1, 5), float(r))
                      for r in range(hvd.size())])
    assert torch.equal(y, want)
    assert hvd.grouped_allgather([]) == []
    assert hvd.synchronize(hvd.grouped_allgather_async([])) == []


def test_grouped_allgather_is_one_collective(monkeypatch):
    """A group of many tensors moves its data in one allgather, after one
    check and one exchange of the first dimensions (not one of each per
    tensor)."""
    calls = {"data": 0, "sizes": 0, "check": 0}

    def count(key, fn):
        def wrapped(*a, **k):
            calls[key] += 1
            return fn(*a, **k)
        return wrapped
    monkeypatch.setattr(_coll, "allgather", count("data", _coll.allgather))
    monkeypatch.setattr(_coll, "allgather_int64s", count("sizes", _coll.allgather_int64s))
    monkeypatch.setattr(_coll, "verify", count("check", _coll.verify))
    _check(hvd.grouped_allgather(_group(hvd.rank())))
    assert calls == {"data": 1, "sizes": 1, "check": 1}


def test_grouped_allgather_gradient():
    """As allgather()'s and Horovod's: each output's gradient averaged over
    the ranks, this rank's rows of it. An integer tensor in the group and
    a tensor that needs no gradient are gathered alike."""
    n = hvd.size()

    def rows(r, i):
        return 1 + (r + i) % 3

    def weights(r, i, total):
        return torch.arange(total * 2, dtype=torch.float64).reshape(total, 2) * (r + 1) + i

    xs = [torch.full((rows(hvd.rank(), i), 2), float(hvd.rank()), dtype=torch.float64,
                     requires_grad=(i != 1)) for i in range(3)]
    ints = torch.arange(rows(hvd.rank(), 3), dtype=torch.int32)
    outs = hvd.grouped_allgather(xs + [ints])
    assert torch.equal(outs[3], torch.cat([torch.arange(rows(r, 3), dtype=torch.int32)
                                           for r in range(n)]))
    totals = [sum(rows(r, i) for r in range(n)) for i in range(3)]
    loss = sum((o * weights(hvd.rank(), i, totals[i])).sum()
               for i, o in enumerate(outs[:3]))
    loss.backward()
    for i in (0, 2):
        avg = sum(weights(r, i, totals[i]) for r in range(n)) / n
        off = sum(rows(r, i) for r in range(hvd.rank()))
        torch.testing.assert_close(xs[i].grad, avg[off:off + rows(hvd.rank(), i)])
    assert xs[1].grad is None
    # A scalar comes back as the scalar's gradient.
    s = torch.tensor(float(hvd.rank()), requires_grad=True)
    (g,) = hvd.grouped_allgather([s])
    (g * torch.arange(float(n))).sum().backward()
    torch.testing.assert_close(s.grad, torch.tensor(float(hvd.rank())))


@pytest.mark.skipif("hvd.size() == 1")
def test_grouped_allgather_mismatch():
    # Another trailing shape on one rank.
    x = torch.zeros(2, 3 if hvd.rank() else 4)
    with pytest.raises(hvd.MismatchError, match="grouped_allgather"):
        hvd.grouped_allgather([torch.zeros(2), x])
    # Another number of tensors on one rank.
    group = [torch.zeros(2)] * (2 if hvd.rank() else 3)
    with pytest.raises(hvd.MismatchError, match="grouped_allgather_async"):
        hvd.grouped_allgather_async(group)
    # Not a list on rank 0: it raises its own error, the others a mismatch.
    bad = torch.zeros(2) if hvd.rank() == 0 else [torch.zeros(2)]
    err = hvd.InvalidArgumentError if hvd.rank() == 0 else hvd.MismatchError
    with pytest.raises(err, match="grouped_allgather"):
        hvd.grouped_allgather(bad)
    # Nothing left pending: the next call pairs.
    _check(hvd.grouped_allgather(_group(hvd.rank())))


def test_grouped_allgather_arguments():
    with pytest.raises(hvd.InvalidArgumentError, match="list of tensors"):
        hvd.grouped_allgather(torch.zeros(2))
    with pytest.raises(hvd.InvalidArgumentError, match="ProcessSet"):
        hvd.grouped_allgather([torch.zeros(2)], process_set=object())
    assert mpi_ops.grouped_allgather is hvd.grouped_allgather
