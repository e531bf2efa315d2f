"""Reduce-scatter and all-to-all on torch tensors, with Horovod's names and
semantics.

reducescatter() reduces every rank's tensor and gives rank r rows
[start_r, start_r + rows_r) of the result along dimension 0, the first
(dim0 % size) ranks one row more than the others, as Horovod splits. Each
element has the bits the allreduce of the same tensors gives it (the
library evaluates one expression per element whatever the blocks), so a
sharded optimizer that reduce-scatters its gradients computes exactly
what a replicated one computes from allreduced ones.

alltoall() sends rank q the rows splits[q] of the tensor (equal shares when
no splits are given) and returns what every rank sent this one, in rank
order, with the number of rows from each when splits were given.

Both are checked across ranks before any data moves (ringpoint._coll): a
different dtype, shape (reduce-scatter) or trailing shape (all-to-all)
raises MismatchError, a RuntimeError, on every rank.
"""
import ctypes

import torch

from ringpoint import _coll, _dtypes as D, _lib
from ringpoint._errors import InvalidArgumentError, NotSupportedError, check
from ringpoint.torch import _pset, mpi_ops as M
from ringpoint.torch._pset import context_handle, rank, size

lib = _lib.lib
_sizes_t = ctypes.c_size_t


def _rows(first, n):
    """Rows of each rank when @first rows are shared out: the first
    (first % n) ranks one more, as Horovod does."""
    base, extra = divmod(first, n)
    return [base + (1 if q < extra else 0) for q in range(n)]


def _rs_check(what, tensor, op, average, process_set):
    """The local checks of a reduce-scatter of @tensor; returns the op."""
    M._process_set(process_set, what)
    M._tensor(tensor, what, False)
    if tensor.dim() == 0:
        raise InvalidArgumentError(
            "%s: a scalar cannot be scattered: the tensor needs a first "
            "dimension to split among the ranks (reshape it to (1,) or more)"
            % what)
    if tensor.device.type != "cpu":
        raise NotSupportedError("%s: only CPU tensors yet (copy it with "
                                ".cpu() first)" % what)
    M._dtype(tensor, what)
    return M._op_of(op, average, what)


def _rs_start(tensors, op, prescale, postscale, what, blocking):
    """Reduce-scatter @tensors (one dtype) in one library call; returns
    (outputs, the pending call or None when done)."""
    n, r = size(), rank()
    dt = M._dtype(tensors[0], what)
    plans = []
    for t in tensors:
        t = t.detach().contiguous()
        rows = _rows(int(t.shape[0]), n)
        row = int(t[0].numel()) if t.shape[0] else int(torch.Size(t.shape[1:]).numel())
        plans.append((t, rows, row))
    # Rank q's block: every tensor's rows for q, one tensor after another.
    pieces = [[] for _ in range(n)]
    for t, rows, row in plans:
        for q, part in enumerate(t.reshape(-1).split([x * row for x in rows])):
            pieces[q].append(part)
    counts = [sum(int(p.numel()) for p in pieces[q]) for q in range(n)]
    if len(tensors) == 1 and prescale == 1.0:
        send = plans[0][0].reshape(-1)
    else:
        send = torch.cat([p for q in range(n) for p in pieces[q]])
        M._scale(send, prescale)
    recv = torch.empty(counts[r], dtype=send.dtype)
    outs = []
    for t, rows, row in plans:
        outs.append(torch.empty((rows[r],) + tuple(t.shape[1:]), dtype=t.dtype))

    def finish():
        at = 0
        for o in outs:
            k = o.numel()
            o.view(-1).copy_(recv[at:at + k])
            at += k
            M._scale(o, postscale)
    carr = (_sizes_t * n)(*counts)
    ctx = context_handle(what)
    if blocking:
        check(lib.rp_reduce_scatterv(ctx, send.data_ptr(), recv.data_ptr(),
                                     carr, dt, op), what)
        finish()
        return outs, None
    p = M._Pending(outs, (send, recv, carr), finish, what)
    check(lib.rp_ireduce_scatterv(ctx, send.data_ptr(), recv.data_ptr(), carr,
                                  dt, op, ctypes.byref(p.req)), what)
    return outs, p


def _rs_verify(what, tensors, op, prescale, postscale):
    desc = ("reducescatter", M._OPS[op], float(prescale), float(postscale)) + \
        tuple((str(t.dtype), tuple(t.shape)) for t in tensors)
    _coll.verify(context_handle(what), what, desc)


def _grouped(what, tensors, op, prescale, postscale, blocking):
    """Every tensor's output, one library call per dtype; the pending
    calls chained on the first (M._Pending.more)."""
    by_dtype = {}
    for i, t in enumerate(tensors):
        by_dtype.setdefault(t.dtype, []).append(i)
    outs = [None] * len(tensors)
    pend = []
    for idx in by_dtype.values():
        o, p = _rs_start([tensors[i] for i in idx], op, prescale, postscale,
                         what, blocking)
        for i, x in zip(idx, o):
            outs[i] = x
        if p is not None:
            pend.append(p)
    return outs, pend


@_pset.keeps_scope
class _ReducescatterFn(torch.autograd.Function):
    """The gradient of a reduce-scatter is the allgather of the output's
    gradient, summed over the ranks for Sum (each rank's input reached
    every rank's output through the sum) and averaged for Average, as
    Horovod defines it."""

    @staticmethod
    def forward(ctx, op, prescale, postscale, *tensors):
        ctx.op = op
        ctx.scale = prescale * postscale
        return tuple(_grouped("reducescatter", tensors, op, prescale,
                              postscale, True)[0])

    @staticmethod
    def backward(ctx, *grads):
        factor = ctx.scale * (size() if ctx.op == M.Sum else 1.0)
        out = []
        for g in grads:
            full = M.allgather(g.contiguous())
            out.append(full * factor if factor != 1.0 else full)
        return (None, None, None) + tuple(out)


def _rs_check_all(what, tensors, op, average, process_set):
    """The local checks of a reduce-scatter of @tensors; returns the op.
    Inside _coll.checking()."""
    if not isinstance(tensors, (list, tuple)) or not tensors:
        raise InvalidArgumentError("%s: expected a non-empty list of tensors"
                                   % what)
    for t in tensors:
        checked = _rs_check(what, t, op, average, process_set)
    return checked


def _reducescatter(what, tensors, op, average, process_set, prescale,
                   postscale):
    with _coll.checking(what):
        op = _rs_check_all(what, tensors, op, average, process_set)
        if op not in (M.Sum, M.Average) and any(
                t.requires_grad for t in tensors) and torch.is_grad_enabled():
            raise NotSupportedError("%s: only Sum and Average have a gradient "
                                    "(the op is %s)" % (what, M._OPS[op]))
    _rs_verify(what, tensors, op, prescale, postscale)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return list(_ReducescatterFn.apply(op, prescale, postscale, *tensors))
    return _grouped(what, tensors, op, prescale, postscale, True)[0]


def reducescatter(tensor, name=None, compression=None, op=None,
                  process_set=None, prescale_factor=1.0, postscale_factor=1.0):
    """Reduce @tensor over all ranks with @op (Average by default) and
    return this rank's share of the result along dimension 0: ranks below
    (dim0 % size) get dim0 // size + 1 rows, the others dim0 // size.
    Every rank passes a tensor of the same shape and dtype.
    Differentiable (Sum, Average)."""
    return _reducescatter("reducescatter", [tensor], op, None, process_set,
                          prescale_factor, postscale_factor)[0]


def grouped_reducescatter(tensors, name=None, compression=None, op=None,
                          process_set=None, prescale_factor=1.0,
                          postscale_factor=1.0):
    """reducescatter() of every tensor in @tensors, in one exchange per
    dtype; returns the list of this rank's shares."""
    return _reducescatter("grouped_reducescatter", list(tensors), op, None,
                          process_set, prescale_factor, postscale_factor)


def _rs_async(what, tensors, op, process_set, prescale, postscale):
    with _coll.checking(what):
        op = _rs_check_all(what, tensors, op, None, process_set)
    _rs_verify(what, tensors, op, prescale, postscale)
    outs, pend = _grouped(what, [t.detach() for t in tensors], op, prescale,
                          postscale, False)
    first = pend[0]
    first.more = tuple(pend[1:])
    finishers = [p.finish for p in pend]
    for p in pend:
        p.finish = None

    def finish_all():
        for f in finishers:
            f()
    first.finish = finish_all
    return outs, first


def reducescatter_async(tensor, name=None, op=None, process_set=None,
                        prescale_factor=1.0, postscale_factor=1.0):
    """Start reducescatter() (not differentiable); returns a handle for
    poll() and synchronize(), which returns the share."""
    outs, p = _rs_async("reducescatter_async", [tensor], op, process_set,
                        prescale_factor, postscale_factor)
    p.output = outs[0]
    return M._register(p)


def grouped_reducescatter_async(tensors, name=None, op=None, process_set=None,
                                prescale_factor=1.0, postscale_factor=1.0):
    """Start grouped_reducescatter(); synchronize() returns the list."""
    outs, p = _rs_async("grouped_reducescatter_async", list(tensors), op,
                        process_set, prescale_factor, postscale_factor)
    p.output = outs
    return M._register(p)


# ---------------------------------------------------------------- alltoall

def _a2a_splits(what, tensor, splits):
    """This rank's rows for each rank, checked (Horovod's rules)."""
    n = size()
    first = int(tensor.shape[0]) if tensor.dim() > 0 else 0
    if splits is None:
        if first % n != 0:
            raise InvalidArgumentError(
                "%s: the first dimension (%d) is not a multiple of the number "
                "of ranks (%d): pass splits= to share it unevenly"
                % (what, first, n))
        return [first // n] * n
    if isinstance(splits, torch.Tensor):
        if splits.dtype != torch.int32:
            raise InvalidArgumentError(
                "%s: splits must hold 32-bit integers (torch.int32), not %s"
                % (what, splits.dtype))
        splits = splits.tolist()
    else:
        splits = list(splits)
        if not all(isinstance(s, int) for s in splits):
            raise InvalidArgumentError("%s: splits must be integers" % what)
    if len(splits) != n or any(s < 0 for s in splits):
        raise InvalidArgumentError(
            "%s: splits needs %d non-negative entries, one per rank, not %r"
            % (what, n, splits))
    if sum(splits) > first:
        raise InvalidArgumentError(
            "%s: the splits add up to %d rows, more than the tensor's first "
            "dimension (%d)" % (what, sum(splits), first))
    return splits


def _a2a_local(what, tensor, splits):
    """The local checks of an all-to-all; returns this rank's splits."""
    M._tensor(tensor, what, False)
    if tensor.device.type != "cpu":
        raise NotSupportedError("%s: only CPU tensors yet (copy it with "
                                ".cpu() first)" % what)
    if tensor.dim() == 0:
        raise InvalidArgumentError("%s: a scalar cannot be split (reshape "
                                   "it to (1,) or more)" % what)
    return _a2a_splits(what, tensor, splits)


def _a2a_exchange(what, mine):
    """One all-to-all of the row counts: how many rows each rank sends
    this one."""
    n = size()
    sbuf = (ctypes.c_int64 * n)(*mine)
    rbuf = (ctypes.c_int64 * n)()
    check(lib.rp_alltoall(context_handle(what), sbuf, rbuf, 1, D.INT64), what)
    return [int(rbuf[q]) for q in range(n)]


def _a2a_plan(what, tensor, splits):
    """Check the call across ranks, exchange the splits and lay out the
    buffers: (output, received splits, input, send and receive byte
    counts)."""
    n = size()
    with _coll.checking(what):
        mine = _a2a_local(what, tensor, splits)
    t = tensor.detach().contiguous()
    rest = tuple(t.shape[1:])
    _coll.verify(context_handle(what), what, ("alltoall", str(t.dtype), rest))
    got = _a2a_exchange(what, mine)
    row = t.element_size() * int(torch.Size(rest).numel())
    out = torch.empty((sum(got),) + rest, dtype=t.dtype)
    return (out, got, t, (_sizes_t * n)(*[s * row for s in mine]),
            (_sizes_t * n)(*[g * row for g in got]))


def _a2a_blocking(what, tensor, splits):
    out, got, t, sc, rc = _a2a_plan(what, tensor, splits)
    check(lib.rp_alltoallv(context_handle(what), t.data_ptr(), sc,
                           out.data_ptr(), rc, D.UINT8), what)
    return out, got


@_pset.keeps_scope
class _AlltoallFn(torch.autograd.Function):
    """The gradient of an all-to-all is the all-to-all back: the rows
    each rank received return to their sender."""

    @staticmethod
    def forward(ctx, tensor, splits):
        out, got = _a2a_blocking("alltoall", tensor, splits)
        ctx.got = got
        ctx.shape = tensor.shape
        got = torch.tensor(got, dtype=torch.int32)
        ctx.mark_non_differentiable(got)
        return out, got

    @staticmethod
    def backward(ctx, grad, _grad_splits):
        back, _ = _a2a_blocking("alltoall", grad.contiguous(), ctx.got)
        if back.shape[0] < ctx.shape[0]:
            # Rows past the splits' sum were not sent: no gradient.
            pad = torch.zeros((ctx.shape[0] - back.shape[0],) +
                              tuple(ctx.shape[1:]), dtype=back.dtype)
            back = torch.cat([back, pad])
        return back.reshape(ctx.shape), None


def alltoall(tensor, splits=None, name=None, process_set=None):
    """Send rank q the next splits[q] rows of @tensor (dimension 0; equal
    shares when @splits is None) and return the rows every rank sent this
    one, in rank order; with @splits given, also the number of rows from
    each rank (an int32 tensor). The trailing dimensions and the dtype must
    agree between ranks. Differentiable."""
    M._process_set(process_set, "alltoall")
    if tensor.requires_grad and torch.is_grad_enabled():
        out, got = _AlltoallFn.apply(tensor, splits)
    else:
        out, got = _a2a_blocking("alltoall", tensor, splits)
        got = torch.tensor(got, dtype=torch.int32)
    return out if splits is None else (out, got)


def alltoall_async(tensor, splits=None, name=None, process_set=None):
    """Start alltoall() (not differentiable); returns a handle for poll()
    and synchronize(), which returns (output, received splits). The splits
    are exchanged before it returns; the data moves in the background."""
    what = "alltoall_async"
    M._process_set(process_set, what)
    out, got, t, sc, rc = _a2a_plan(what, tensor, splits)
    p = M._Pending((out, torch.tensor(got, dtype=torch.int32)),
                   (t, out, sc, rc), None, what)
    check(lib.rp_ialltoallv(context_handle(what), t.data_ptr(), sc,
                            out.data_ptr(), rc, D.UINT8, ctypes.byref(p.req)),
          what)
    return M._register(p)


# Every call that takes process_set= runs in that set's scope (_pset).
_pset.wrap_all(globals(), [
    "reducescatter", "grouped_reducescatter", "reducescatter_async",
    "grouped_reducescatter_async", "alltoall", "alltoall_async"])
