"""Collectives on torch tensors with Horovod's names and semantics.

Tensors are passed by address (``data_ptr()``): in-place calls write into
the tensor's own storage, out-of-place calls into one new tensor. Every call
is checked across ranks first (see ringpoint._coll): a mismatch in shape,
dtype, op or root raises MismatchError on every rank. The out-of-place
calls are differentiable: the gradient of an allreduce is an allreduce of
the gradient, of an allgather this rank's slice of the gradient averaged
over the ranks, of a broadcast the averaged gradient on the root (zero
elsewhere). Averaged, not summed, as Horovod does: each rank's loss is
taken as its share of a mean loss, as DistributedOptimizer averages.
"""
import ctypes
import itertools
import numbers
import threading

import torch

from ringpoint import _coll, _dtypes as D, _lib, _runtime
from ringpoint._errors import (Error, InvalidArgumentError, MismatchError,
                               NotSupportedError, check)
from ringpoint.torch import _pset
from ringpoint.torch._pset import context_handle, rank, size
from ringpoint.torch.compression import Compression

lib = _lib.lib

# Horovod's op constants (values are ringpoint's rp_op_t).
Sum = D.SUM
Product = D.PROD
Min = D.MIN
Max = D.MAX
Average = D.AVG


class _Adasum:
    def __repr__(self):
        return "Adasum"


#: Horovod's Adasum is not implemented: passing it raises NotSupportedError.
Adasum = _Adasum()

_OPS = {Sum: "Sum", Product: "Product", Min: "Min", Max: "Max",
        Average: "Average"}

_REDUCIBLE = {
    torch.uint8: D.UINT8, torch.int32: D.INT32, torch.int64: D.INT64,
    torch.float16: D.FLOAT16, torch.bfloat16: D.BFLOAT16,
    torch.float32: D.FLOAT32, torch.float64: D.FLOAT64,
}


def _op_of(op, average, what):
    if average is not None:
        if op is not None:
            raise InvalidArgumentError("%s: give op or average, not both" % what)
        return Average if average else Sum
    if op is None:
        return Average
    if op is Adasum:
        raise NotSupportedError("%s: Adasum is not implemented by ringpoint "
                                "(use Average or Sum)" % what)
    if op not in _OPS:
        raise InvalidArgumentError(
            "%s: op %r is not one of Average, Sum, Min, Max, Product" % (what, op))
    return op


def _process_set(process_set, what):
    """The registered set @process_set stands for (None: the job); raises
    unless this rank may call collectives on it."""
    return _pset.resolve(process_set, what)


ProcessSet = _pset.ProcessSet
global_process_set = _pset.global_process_set


def _device_check(t, what):
    if t.device.type == "cpu":
        return
    if t.device.type != "cuda":
        raise NotSupportedError("%s: tensors on %s are not supported (cpu or "
                                "cuda)" % (what, t.device))
    dev = ctypes.c_int()
    status = lib.rp_cuda_device(context_handle(what), ctypes.byref(dev))
    if status != 0:
        check(status, "%s: a CUDA tensor needs ringpoint's GPU module "
              "(ringpoint-nccl.so) and a GPU" % what)


def _tensor(t, what, inplace):
    if not isinstance(t, torch.Tensor):
        raise InvalidArgumentError("%s: expected a torch.Tensor, got %s"
                                   % (what, type(t).__name__))
    if t.is_sparse:
        raise NotSupportedError("%s: sparse tensors are not supported" % what)
    if inplace and not t.is_contiguous():
        raise InvalidArgumentError(
            "%s: the tensor is not contiguous; in-place collectives write into "
            "its storage (call .contiguous() first, or use the out-of-place "
            "form)" % what)
    _device_check(t, what)
    return t


def _dtype(t, what):
    try:
        return _REDUCIBLE[t.dtype]
    except KeyError:
        raise NotSupportedError(
            "%s: %s cannot be reduced (uint8, int32, int64, float16, bfloat16, "
            "float32, float64 can)" % (what, t.dtype)) from None


def _desc(kind, t, *extra):
    return (kind, str(t.dtype), tuple(t.shape)) + extra


def _scale(t, factor):
    """Multiply @t by @factor in place, in the precision Horovod uses, so
    that a prescaled or postscaled result is bit for bit Horovod's:
    integers in float64 (truncated back), float16 and bfloat16 on the CPU
    in float32 (rounded back: each rank's scaled input is rounded before
    the sum), other floating types in their own precision."""
    if factor == 1.0:
        return
    if not t.is_floating_point():
        t.copy_((t.to(torch.float64) * factor).to(t.dtype))
    elif t.dtype in (torch.float16, torch.bfloat16) and t.device.type == "cpu":
        t.copy_(t.to(torch.float32) * torch.tensor(factor, dtype=torch.float32))
    else:
        t.mul_(factor)


# ---------------------------------------------------------------- handles

class _Pending:
    __slots__ = ("req", "output", "keep", "finish", "status", "what", "more",
                 "desc")

    def __init__(self, output, keep, finish, what):
        self.req = _lib.req_t()
        self.output = output
        self.keep = keep          # tensors the C side reads or writes
        self.finish = finish      # post-processing once complete
        self.status = None
        self.what = what
        self.more = ()            # a group's requests for its other dtypes
        self.desc = None          # the call, for a MismatchError's message


_handles = {}
_next_handle = itertools.count(1)
_handles_lock = threading.Lock()


def _register(p):
    with _handles_lock:
        h = next(_next_handle)
        _handles[h] = p
    return h


def _test(p):
    if p.status is None:
        done = ctypes.c_int()
        status = lib.rp_test(ctypes.byref(p.req), ctypes.byref(done))
        if done.value:
            p.status = status
    return p.status is not None


def _complete(p):
    """Wait for every request of @p (all of them, even after an error, so
    that none is left in flight on buffers Python may free), raise the
    first error, then post-process."""
    for q in (p,) + tuple(p.more):
        if q.status is None:
            q.status = lib.rp_wait(ctypes.byref(q.req))
        q.keep = None
    for q in (p,) + tuple(p.more):
        if q.status == MismatchError.status and q.desc is not None:
            raise _coll.mismatch(None, q.what, q.desc, False)
        check(q.status, q.what)
    if p.finish is not None:
        finish, p.finish = p.finish, None
        finish()


def poll(handle):
    """True once the operation of @handle is complete (never blocks); then
    synchronize() returns at once and the output may be read."""
    p = _handles.get(handle)
    if p is None:
        raise InvalidArgumentError("poll: unknown handle %r" % (handle,))
    # A grouped allreduce of several dtypes is complete when every one is.
    return all(_test(q) for q in (p,) + tuple(p.more))


def synchronize(handle):
    """Wait for the operation of @handle and return its output tensor. The
    GIL is released while waiting."""
    with _handles_lock:
        p = _handles.pop(handle, None)
    if p is None:
        raise InvalidArgumentError("synchronize: unknown handle %r (already "
                                   "synchronized?)" % (handle,))
    _complete(p)
    return p.output


def _wait_all_handles():
    """Complete every outstanding handle (before shutdown)."""
    with _handles_lock:
        pending = list(_handles.values())
    for p in pending:
        for q in (p,) + tuple(p.more):
            if q.status is None:
                q.status = lib.rp_wait(ctypes.byref(q.req))


# ---------------------------------------------------------------- allreduce

def _allreduce_args(what, tensor, op, average, process_set, inplace,
                    prescale, postscale):
    """The local checks of an allreduce: (op, prescale, postscale)."""
    with _coll.checking(what, describe=not what.startswith("allreduce_async")):
        op = _op_of(op, average, what)
        _process_set(process_set, what)
        _tensor(tensor, what, inplace)
        _dtype(tensor, what)
        return op, float(prescale), float(postscale)


# One buffer through the grouped entry point, which alone takes options: the
# cross-rank check then travels with the collective (rp_allreduce_opts_t's
# signature), and a single uncompressed buffer is reduced exactly as
# rp_allreduce would. The ctypes objects are reused: the library copies the
# arrays before it returns, and one thread at a time calls collectives.
_one_send = ctypes.c_void_p()
_one_recv = ctypes.c_void_p()
_one_count = ctypes.c_size_t()
_one_opts = _lib.AllreduceOpts(D.COMPRESSION_NONE, 0)
_one_args = (ctypes.byref(_one_send), ctypes.byref(_one_recv),
             ctypes.byref(_one_count), 1)


def _signed(ctx, what, desc, prescale, output, tensor, describe):
    """The signature to send with the collective. With a prescale the
    check runs first, on its own: scaling writes into the output before
    the collective, and a refused call must leave it untouched."""
    if prescale != 1.0 and output is tensor:
        _coll.verify(ctx, what, desc, describe)
        return 0
    return _coll.c_signature(desc)


def _start_allreduce(tensor, output, op, name, prescale, postscale, what):
    dt = _dtype(tensor, what)
    ctx = context_handle(what)
    desc = _desc("allreduce", tensor, _OPS[op], prescale, postscale)
    sig = _signed(ctx, what, desc, prescale, output, tensor, False)
    src = tensor
    if prescale != 1.0:
        if output is tensor:
            _scale(output, prescale)
        else:
            output.copy_(tensor)
            _scale(output, prescale)
            src = output
    finish = (lambda: _scale(output, postscale)) if postscale != 1.0 else None
    p = _Pending(output, (src, output), finish, what)
    p.desc = desc
    _one_send.value, _one_recv.value = src.data_ptr(), output.data_ptr()
    _one_count.value = tensor.numel()
    _one_opts.signature = sig
    check(lib.rp_iallreduce_group(ctx, *_one_args, dt, op, ctypes.byref(_one_opts),
                                  ctypes.byref(p.req)), what)
    return _register(p)


def allreduce_async_(tensor, average=None, name=None, op=None,
                     prescale_factor=1.0, postscale_factor=1.0,
                     process_set=None):
    """Start an in-place allreduce of @tensor; returns a handle for poll()
    and synchronize()."""
    what = "allreduce_async_"
    op, pre, post = _allreduce_args(what, tensor, op, average, process_set,
                                    True, prescale_factor, postscale_factor)
    return _start_allreduce(tensor, tensor, op, name, pre, post, what)


def allreduce_async(tensor, average=None, name=None, op=None,
                    prescale_factor=1.0, postscale_factor=1.0,
                    process_set=None):
    """Start an allreduce of @tensor into a new tensor; returns a handle."""
    what = "allreduce_async"
    op, pre, post = _allreduce_args(what, tensor, op, average, process_set,
                                    False, prescale_factor, postscale_factor)
    tensor = tensor.contiguous()
    return _start_allreduce(tensor, torch.empty_like(tensor), op, name, pre,
                            post, what)


def _allreduce_blocking(tensor, output, op, prescale, postscale, what):
    dt = _dtype(tensor, what)
    ctx = context_handle(what)
    desc = _desc("allreduce", tensor, _OPS[op], prescale, postscale)
    sig = _signed(ctx, what, desc, prescale, output, tensor, True)
    src = tensor
    if prescale != 1.0:
        if output is not tensor:
            output.copy_(tensor)
            src = output
        _scale(output, prescale)
    _one_send.value, _one_recv.value = src.data_ptr(), output.data_ptr()
    _one_count.value = tensor.numel()
    _one_opts.signature = sig
    status = lib.rp_allreduce_group_opts(ctx, *_one_args, dt, op,
                                         ctypes.byref(_one_opts))
    if status == MismatchError.status:
        raise _coll.mismatch(ctx, what, desc, True)
    check(status, what)
    if postscale != 1.0:
        _scale(output, postscale)
    return output


# The common call (a contiguous CPU tensor of a reducible dtype, no scaling)
# skips the general path's checks, which it passes by construction: at a
# few bytes the binding's own Python is most of the time (doc/benchmarks.md).
# Its signature is cached by (dtype, shape, op), and it calls the library
# through a function object without argtypes, on ctypes objects built once
# (ctypes' per-argument conversion costs as much as the rest of the call).
_fast_sigs = {}
_fast_fn = ctypes.CDLL(_lib.path)["rp_allreduce_group_opts"]
_fast_fn.restype = ctypes.c_int
_fast_refs = (ctypes.byref(_one_send), ctypes.byref(_one_recv),
              ctypes.byref(_one_count), ctypes.c_size_t(1))
_fast_opts = ctypes.byref(_one_opts)
_fast_ctx = [None, ctypes.c_void_p()]      # the context, as passed


def _fast_allreduce(t, op):
    key = (t.dtype, t.shape, op)
    sig = _fast_sigs.get(key)
    if sig is None:
        sig = _coll.c_signature(_desc("allreduce", t, _OPS[op], 1.0, 1.0))
        if len(_fast_sigs) >= 4096:
            _fast_sigs.clear()
        _fast_sigs[key] = sig
    ctx = _runtime._ctx
    if _fast_ctx[0] != ctx:
        _fast_ctx[0], _fast_ctx[1] = ctx, ctypes.c_void_p(ctx)
    _one_send.value = _one_recv.value = t.data_ptr()
    _one_count.value = t.numel()
    _one_opts.signature = sig
    return _fast_fn(_fast_ctx[1], *_fast_refs, _REDUCIBLE[t.dtype], op,
                    _fast_opts)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0,
               postscale_factor=1.0, process_set=None):
    """Allreduce @tensor in place (default op: Average); returns it."""
    if op is None and average is None:
        op = Average
    if (_runtime._ctx is not None and op in _OPS and average is None and
            process_set is None and _pset.current() is None and
            prescale_factor == 1.0 and
            postscale_factor == 1.0 and isinstance(tensor, torch.Tensor) and
            tensor.dtype in _REDUCIBLE and tensor.is_cpu and
            tensor.layout is torch.strided and tensor.is_contiguous()):
        status = _fast_allreduce(tensor, op)
        if status == MismatchError.status:
            raise _coll.mismatch(_runtime._ctx, "allreduce_", _desc(
                "allreduce", tensor, _OPS[op], 1.0, 1.0), True)
        check(status, "allreduce_")
        return tensor
    what = "allreduce_"
    op, pre, post = _allreduce_args(what, tensor, op, average, process_set,
                                    True, prescale_factor, postscale_factor)
    return _allreduce_blocking(tensor, tensor, op, pre, post, what)


@_pset.keeps_scope
class _AllreduceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, op, prescale, postscale):
        ctx.op, ctx.pre, ctx.post = op, prescale, postscale
        t = tensor.contiguous()
        return _allreduce_blocking(t, torch.empty_like(t), op, prescale,
                                   postscale, "allreduce")

    @staticmethod
    def backward(ctx, grad):
        if ctx.op not in (Sum, Average):
            raise NotSupportedError("allreduce: no gradient for op %s (only "
                                    "Sum and Average)" % _OPS[ctx.op])
        return allreduce(grad, op=ctx.op, prescale_factor=ctx.pre,
                         postscale_factor=ctx.post), None, None, None


def allreduce(tensor, average=None, name=None, compression=Compression.none,
              op=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=None):
    """Allreduce @tensor into a new tensor (default op: Average); @tensor is
    not modified. Differentiable."""
    what = "allreduce"
    op, pre, post = _allreduce_args(what, tensor, op, average, process_set,
                                    False, prescale_factor, postscale_factor)
    compressed, cctx = compression.compress(tensor)
    if compressed.requires_grad and torch.is_grad_enabled():
        out = _AllreduceFn.apply(compressed, op, pre, post)
    else:
        t = compressed.contiguous()
        out = _allreduce_blocking(t, torch.empty_like(t), op, pre, post, what)
    return compression.decompress(out, cctx)


# ---------------------------------------------------------------- grouped

def _group_by_dtype(tensors):
    groups = {}
    for i, t in enumerate(tensors):
        groups.setdefault(t.dtype, []).append(i)
    return list(groups.values())


def _start_grouped(tensors, outputs, op, compression, what):
    """Queue one rp_iallreduce_group per dtype; returns the _Pending list."""
    ctx = context_handle(what)
    desc = ("grouped_allreduce", _OPS[op], str(compression),
            tuple((str(t.dtype), tuple(t.shape)) for t in tensors))
    groups = _group_by_dtype(tensors)
    if len(groups) == 1:
        # One collective: the check travels with it.
        sig = _coll.c_signature(desc)
    else:
        # One per dtype: a rank with other dtypes would start another
        # number of them, so the check comes first, on its own.
        _coll.verify(ctx, what, desc, False)
        sig = 0
    pendings = []
    for idx in groups:
        n = len(idx)
        dt = _dtype(tensors[idx[0]], what)
        sends = (ctypes.c_void_p * n)(*[tensors[i].data_ptr() for i in idx])
        recvs = (ctypes.c_void_p * n)(*[outputs[i].data_ptr() for i in idx])
        counts = (ctypes.c_size_t * n)(*[tensors[i].numel() for i in idx])
        opts = _lib.AllreduceOpts(compression.wire_format(dt), sig)
        p = _Pending(None, ([tensors[i] for i in idx], [outputs[i] for i in idx]),
                     None, what)
        p.desc = desc
        check(lib.rp_iallreduce_group(ctx, sends, recvs, counts, n, dt, op,
                                      ctypes.byref(opts), ctypes.byref(p.req)),
              what)
        pendings.append(p)
    return pendings


def _grouped_async(tensors, outputs, op, compression, prescale, postscale, what):
    if prescale != 1.0:
        for t, o in zip(tensors, outputs):
            if o is not t:
                o.copy_(t)
            _scale(o, prescale)
        tensors = outputs
    pendings = _start_grouped(tensors, outputs, op, compression, what)

    def finish():
        if postscale != 1.0:
            for o in outputs:
                _scale(o, postscale)
    if not pendings:
        p = _Pending(outputs, None, finish, what)
        p.status = 0
        return _register(p)
    first = pendings[0]
    first.output = outputs
    first.finish = finish
    first.more = pendings[1:]
    return _register(first)


def _grouped_args(what, tensors, op, average, process_set, inplace,
                  prescale, postscale):
    """The local checks of a grouped allreduce: (tensors as a list, op,
    prescale, postscale). Grouped calls all complete through a handle, so
    a mismatch names this rank's arguments only (see _coll.mismatch)."""
    with _coll.checking(what, describe=False):
        op = _op_of(op, average, what)
        _process_set(process_set, what)
        if not isinstance(tensors, (list, tuple)):
            raise InvalidArgumentError("%s: expected a list of tensors" % what)
        for t in tensors:
            _tensor(t, what, inplace)
            _dtype(t, what)
        return list(tensors), op, float(prescale), float(postscale)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None,
                             prescale_factor=1.0, postscale_factor=1.0,
                             process_set=None, compression=Compression.none):
    """Start an in-place fused allreduce of a list of tensors; one handle."""
    what = "grouped_allreduce_async_"
    tensors, op, pre, post = _grouped_args(what, tensors, op, average,
                                           process_set, True, prescale_factor,
                                           postscale_factor)
    return _grouped_async(tensors, tensors, op, compression, pre, post, what)


def grouped_allreduce_async(tensors, average=None, name=None, op=None,
                            prescale_factor=1.0, postscale_factor=1.0,
                            process_set=None, compression=Compression.none):
    """Start a fused allreduce of a list of tensors into new tensors."""
    what = "grouped_allreduce_async"
    tensors, op, pre, post = _grouped_args(what, tensors, op, average,
                                           process_set, False, prescale_factor,
                                           postscale_factor)
    tensors = [t.contiguous() for t in tensors]
    outputs = [torch.empty_like(t) for t in tensors]
    return _grouped_async(tensors, outputs, op, compression, pre, post, what)


def grouped_allreduce_(tensors, average=None, name=None, op=None,
                       prescale_factor=1.0, postscale_factor=1.0,
                       process_set=None, compression=Compression.none):
    """Fused in-place allreduce of a list of tensors; returns the list."""
    return synchronize(grouped_allreduce_async_(
        tensors, average, name, op, prescale_factor, postscale_factor,
        process_set, compression))


def grouped_allreduce(tensors, average=None, name=None, compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0,
                      process_set=None):
    """Fused allreduce of a list of tensors into new tensors (the inputs are
    not modified); one collective per dtype instead of one per tensor.
    Differentiable, as allreduce()."""
    what = "grouped_allreduce"
    tensors, op, pre, post = _grouped_args(what, tensors, op, average,
                                           process_set, False, prescale_factor,
                                           postscale_factor)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return list(_GroupedAllreduceFn.apply(op, pre, post, compression,
                                              *tensors))
    return _grouped_blocking(tensors, op, pre, post, compression, what)


def _grouped_blocking(tensors, op, pre, post, compression, what):
    tensors = [t.detach().contiguous() for t in tensors]
    outputs = [torch.empty_like(t) for t in tensors]
    return synchronize(_grouped_async(tensors, outputs, op, compression, pre,
                                      post, what))


@_pset.keeps_scope
class _GroupedAllreduceFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, op, prescale, postscale, compression, *tensors):
        ctx.op, ctx.pre, ctx.post = op, prescale, postscale
        ctx.compression = compression
        outs = _grouped_blocking(tensors, op, prescale, postscale,
                                 compression, "grouped_allreduce")
        ctx.mark_non_differentiable(*[o for o in outs
                                      if not o.is_floating_point()])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        if ctx.op not in (Sum, Average):
            raise NotSupportedError("grouped_allreduce: no gradient for op %s "
                                    "(only Sum and Average)" % _OPS[ctx.op])
        # The gradients of the floating-point outputs (the same list on
        # every rank), reduced as the forward pass reduced the inputs.
        idx = [i for i, g in enumerate(grads) if g.is_floating_point()]
        reduced = _grouped_blocking([grads[i] for i in idx], ctx.op, ctx.pre,
                                    ctx.post, ctx.compression,
                                    "grouped_allreduce (gradient)")
        out = [None] * len(grads)
        for i, g in zip(idx, reduced):
            out[i] = g
        return (None, None, None, None) + tuple(out)


# ---------------------------------------------------------------- broadcast

def _bytes_of(t):
    return t.numel() * t.element_size()


def _check_root(root_rank, what):
    """@root_rank as an int (a NumPy integer will do), a rank of the job
    (for a process set, one of its members, as Horovod numbers them);
    InvalidArgumentError otherwise."""
    if isinstance(root_rank, bool) or not isinstance(root_rank, numbers.Integral):
        raise InvalidArgumentError("%s: root_rank %r is not a rank"
                                   % (what, root_rank))
    return _pset.check_root(int(root_rank), what)


def _broadcast_args(what, tensor, root_rank, process_set, inplace):
    """The local checks of a broadcast: the root as an int."""
    with _coll.checking(what):
        _process_set(process_set, what)
        _tensor(tensor, what, inplace)
        return _check_root(root_rank, what)


def broadcast_async_(tensor, root_rank, name=None, process_set=None):
    """Start an in-place broadcast of @tensor from @root_rank; a handle."""
    what = "broadcast_async_"
    root_rank = _broadcast_args(what, tensor, root_rank, process_set, True)
    ctx = context_handle(what)
    _coll.verify(ctx, what, _desc("broadcast", tensor, root_rank))
    p = _Pending(tensor, tensor, None, what)
    check(lib.rp_ibroadcast(ctx, tensor.data_ptr(), _bytes_of(tensor), D.UINT8,
                            _pset.root_of(root_rank), ctypes.byref(p.req)),
          what)
    return _register(p)


def broadcast_async(tensor, root_rank, name=None, process_set=None):
    """Start a broadcast from @root_rank into a new tensor; a handle."""
    root_rank = _broadcast_args("broadcast_async", tensor, root_rank,
                                process_set, False)
    return broadcast_async_(tensor.detach().clone(memory_format=torch.contiguous_format),
                            root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=None):
    """Overwrite @tensor with rank @root_rank's, in place; returns it."""
    what = "broadcast_"
    root_rank = _broadcast_args(what, tensor, root_rank, process_set, True)
    ctx = context_handle(what)
    _coll.verify(ctx, what, _desc("broadcast", tensor, root_rank))
    _coll.broadcast(ctx, tensor.data_ptr(), _bytes_of(tensor),
                    _pset.root_of(root_rank), what)
    return tensor


@_pset.keeps_scope
class _BroadcastFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, root_rank):
        ctx.root = root_rank
        return broadcast_(tensor.detach().clone(memory_format=torch.contiguous_format),
                          root_rank)

    @staticmethod
    def backward(ctx, grad):
        g = allreduce(grad, op=Average)
        if _pset.job_rank() != ctx.root:
            g.zero_()
        return g, None


def broadcast(tensor, root_rank, name=None, process_set=None):
    """Rank @root_rank's @tensor, as a new tensor on every rank; @tensor is
    not modified. Differentiable."""
    what = "broadcast"
    root_rank = _broadcast_args(what, tensor, root_rank, process_set, False)
    if tensor.requires_grad and torch.is_grad_enabled():
        return _BroadcastFn.apply(tensor, root_rank)
    return broadcast_(tensor.detach().clone(memory_format=torch.contiguous_format),
                      root_rank)


# ---------------------------------------------------------------- allgather

def _allgather_plan(tensor, what):
    """The buffers of an allgather of @tensor along dimension 0: (output,
    every rank's first dimension, send and receive addresses, bytes per
    rank, the tensors they belong to, the packing to do once the data is
    in or None). The first dimensions are exchanged here, blocking: the
    output's size depends on them."""
    t = tensor.contiguous()
    if t.dim() == 0:
        t = t.reshape(1)
    ctx = context_handle(what)
    rest = tuple(t.shape[1:])
    first = int(t.shape[0])
    # One exchange gives every rank the others' first dimensions and checks
    # the rest of the shape and the dtype.
    firsts = _coll.check_gather(ctx, what, ("allgather", str(t.dtype), rest),
                                first, ("allgather", str(t.dtype), tuple(t.shape)))
    n = size()
    out = torch.empty((sum(firsts),) + rest, dtype=t.dtype, device=t.device)
    row_bytes = t.element_size() * (t[0].numel() if first else
                                    int(torch.Size(rest).numel()))
    if all(f == first for f in firsts):
        return (out, firsts, t.data_ptr(), out.data_ptr(), first * row_bytes,
                (t, out), None)
    # Uneven first dimensions: gather padded to the longest, then pack.
    longest = max(firsts)
    padded = torch.empty((n * longest,) + rest, dtype=t.dtype, device=t.device)
    mine = torch.empty((longest,) + rest, dtype=t.dtype, device=t.device)
    mine[:first].copy_(t)

    def pack():
        off = 0
        for r, f in enumerate(firsts):
            out[off:off + f].copy_(padded[r * longest:r * longest + f])
            off += f
    return (out, firsts, mine.data_ptr(), padded.data_ptr(), longest * row_bytes,
            (mine, padded), pack)


def _allgather_blocking(tensor, what):
    out, firsts, send, recv, nbytes, _, pack = _allgather_plan(tensor, what)
    _coll.allgather(context_handle(what), send, recv, nbytes, what)
    if pack is not None:
        pack()
    return out, firsts


@_pset.keeps_scope
class _AllgatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, tensor):
        out, firsts = _allgather_blocking(tensor, "allgather")
        ctx.firsts = firsts
        ctx.shape = tensor.shape
        return out

    @staticmethod
    def backward(ctx, grad):
        g = allreduce(grad, op=Average)
        r = rank()
        off = sum(ctx.firsts[:r])
        return g.narrow(0, off, ctx.firsts[r]).reshape(ctx.shape)


def allgather(tensor, name=None, process_set=None):
    """Concatenate every rank's @tensor along dimension 0 (the first
    dimensions may differ between ranks, the rest of the shape may not).
    Differentiable."""
    what = "allgather"
    with _coll.checking(what, gather=True):
        _process_set(process_set, what)
        _tensor(tensor, what, False)
    if tensor.requires_grad and torch.is_grad_enabled():
        return _AllgatherFn.apply(tensor)
    return _allgather_blocking(tensor.detach(), what)[0]


def allgather_async(tensor, name=None, process_set=None):
    """Start allgather() (not differentiable); returns a handle for poll()
    and synchronize(). The first dimensions are exchanged before it
    returns (every rank must call it, as any collective); the data moves
    in the background."""
    what = "allgather_async"
    with _coll.checking(what, gather=True):
        _process_set(process_set, what)
        _tensor(tensor, what, False)
    out, _, send, recv, nbytes, keep, pack = _allgather_plan(tensor.detach(), what)
    p = _Pending(out, keep, pack, what)
    check(lib.rp_iallgather(context_handle(what), send, recv, nbytes, D.UINT8,
                            ctypes.byref(p.req)), what)
    return _register(p)


def _grouped_allgather_args(tensors, process_set, what):
    """The local checks of a grouped allgather: a list of tensors, all on
    one device. (Checked as a call of fixed arguments, see
    _grouped_allgather_plan: the number of first dimensions to exchange
    is only known to agree once the check has passed.)"""
    with _coll.checking(what):
        _process_set(process_set, what)
        if not isinstance(tensors, (list, tuple)):
            raise InvalidArgumentError("%s: expected a list of tensors" % what)
        for t in tensors:
            _tensor(t, what, False)
        if len({t.device for t in tensors}) > 1:
            raise InvalidArgumentError(
                "%s: the tensors are on different devices (%s); move them to "
                "one, or call allgather() on each" % (what, ", ".join(
                    sorted({str(t.device) for t in tensors}))))


def _gather_rows(tensors):
    """@tensors as contiguous tensors of at least one dimension (a scalar
    is gathered as one row, as allgather() does)."""
    return [t.detach().contiguous().reshape((1,) if t.dim() == 0 else t.shape)
            for t in tensors]


def _grouped_allgather_plan(tensors, what):
    """The buffers of one allgather that carries every tensor of the group:
    (outputs, every rank's first dimensions per tensor, send and receive
    buffers, bytes per rank, the unpacking to do once the data is in or
    None). Each rank's block holds each tensor at a fixed offset, room for
    the longest first dimension any rank has for it, so the block is the
    same size on every rank. Two small exchanges come first, whatever the
    number of tensors: the check (the dtypes and all but the first
    dimensions), then every rank's first dimensions."""
    ctx = context_handle(what)
    _coll.verify(ctx, what, ("grouped_allgather", tuple(
        (str(t.dtype), tuple(t.shape[1:])) for t in tensors)))
    firsts = _coll.allgather_int64s(ctx, [int(t.shape[0]) for t in tensors]
                                    or [0], what)       # firsts[rank][tensor]
    n = size()
    dev = tensors[0].device if tensors else torch.device("cpu")
    outs, offsets, block = [], [], 0
    for i, t in enumerate(tensors):
        rest = tuple(t.shape[1:])
        outs.append(torch.empty((sum(f[i] for f in firsts),) + rest,
                                dtype=t.dtype, device=dev))
        longest = max(f[i] for f in firsts)
        offsets.append(block)
        block += longest * int(torch.Size(rest).numel()) * t.element_size()
    if len(tensors) == 1 and block and all(f[0] == firsts[0][0] for f in firsts):
        # One tensor, even first dimensions: straight into the output.
        t = tensors[0]
        return outs, firsts, t, outs[0], block, None
    send = torch.empty(max(block, 1), dtype=torch.uint8, device=dev)
    recv = torch.empty(max(block, 1) * n, dtype=torch.uint8, device=dev)
    for t, off in zip(tensors, offsets):
        b = t.numel() * t.element_size()
        send[off:off + b].copy_(t.reshape(-1).view(torch.uint8))

    def unpack():
        for i, (t, o, off) in enumerate(zip(tensors, outs, offsets)):
            row = int(torch.Size(t.shape[1:]).numel()) * t.element_size()
            flat = o.reshape(-1).view(torch.uint8)
            at = 0
            for r in range(n):
                b = firsts[r][i] * row
                base = r * max(block, 1) + off
                flat[at:at + b].copy_(recv[base:base + b])
                at += b
    return outs, firsts, send, recv, max(block, 1), unpack


def _grouped_allgather_blocking(tensors, what):
    outs, firsts, send, recv, nbytes, unpack = _grouped_allgather_plan(tensors, what)
    _coll.allgather(context_handle(what), send.data_ptr(), recv.data_ptr(),
                    nbytes, what)
    if unpack is not None:
        unpack()
    return outs, firsts


@_pset.keeps_scope
class _GroupedAllgatherFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, *tensors):
        outs, firsts = _grouped_allgather_blocking(_gather_rows(tensors),
                                                   "grouped_allgather")
        ctx.firsts = firsts
        ctx.shapes = [t.shape for t in tensors]
        ctx.mark_non_differentiable(*[o for o in outs
                                      if not o.is_floating_point()])
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        # As allgather's: the gradients averaged over the ranks (one fused
        # call), then this rank's rows of each.
        idx = [i for i, g in enumerate(grads) if g.is_floating_point()]
        reduced = grouped_allreduce([grads[i] for i in idx], op=Average)
        r = rank()
        out = [None] * len(grads)
        for i, g in zip(idx, reduced):
            off = sum(ctx.firsts[q][i] for q in range(r))
            out[i] = g.narrow(0, off, ctx.firsts[r][i]).reshape(ctx.shapes[i])
        return tuple(out)


def grouped_allgather(tensors, name=None, process_set=None):
    """allgather() of each tensor of a list, as one collective: a list of
    new tensors, each every rank's tensor concatenated along dimension 0
    (the first dimensions may differ between ranks and between tensors).
    Differentiable, as allgather()."""
    what = "grouped_allgather"
    _grouped_allgather_args(tensors, process_set, what)
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return list(_GroupedAllgatherFn.apply(*tensors))
    return _grouped_allgather_blocking(_gather_rows(tensors), what)[0]


def grouped_allgather_async(tensors, name=None, process_set=None):
    """Start grouped_allgather() (not differentiable); returns a handle for
    poll() and synchronize(), which gives the list. As allgather_async(),
    the first dimensions are exchanged before it returns; the data moves
    in the background."""
    what = "grouped_allgather_async"
    _grouped_allgather_args(tensors, process_set, what)
    flat = _gather_rows(tensors)
    outs, _, send, recv, nbytes, unpack = _grouped_allgather_plan(flat, what)
    p = _Pending(outs, (flat, send, recv), unpack, what)
    check(lib.rp_iallgather(context_handle(what), send.data_ptr(),
                            recv.data_ptr(), nbytes, D.UINT8,
                            ctypes.byref(p.req)), what)
    return _register(p)


def sparse_allreduce_async(tensor, name, op, process_set=None):
    """Start the allreduce of a sparse (COO) @tensor, as Horovod's
    DistributedOptimizer does for sparse gradients: every rank's indices
    and values gathered (one grouped allgather), the values divided by the
    number of ranks for Average. Returns a function (Horovod's, not a
    handle) that waits and gives the result, a sparse tensor of @tensor's
    size whose repeated indices sum (call .coalesce() to merge them)."""
    what = "sparse_allreduce_async"
    with _coll.checking(what):
        op = _op_of(op, None, what)
        if op not in (Average, Sum):
            raise InvalidArgumentError("%s: op must be Average or Sum (a sparse "
                                       "allreduce concatenates)" % what)
        if not isinstance(tensor, torch.Tensor) or not tensor.is_sparse:
            raise InvalidArgumentError("%s: expected a sparse torch.Tensor; "
                                       "call allreduce_async() for a dense one"
                                       % what)
    # Indices are (sparse dims, nnz): gathered along nnz, so transposed.
    handle = grouped_allgather_async([tensor._indices().t(), tensor._values()],
                                     name, process_set)

    def wait():
        indices, values = synchronize(handle)
        if op == Average:
            values = values / size()
        return torch.sparse_coo_tensor(indices.t(), values, tensor.size(),
                                       dtype=tensor.dtype, device=tensor.device)
    return wait


# ---------------------------------------------------------------- barrier, join

def barrier(process_set=None):
    """Return once every rank has called barrier()."""
    _process_set(process_set, "barrier")
    ctx = context_handle("barrier")
    _coll.verify(ctx, "barrier", ("barrier",))
    check(lib.rp_barrier(ctx), "barrier")


def join(device=-1):
    """This rank has run out of data (Horovod's join): until every rank has
    called join(), it takes part in the other ranks' allreduces with zeros
    (an Average still divides by size()), and other collectives they call
    (broadcast, allgather, reducescatter, alltoall, barrier) raise
    StateError on them. Returns, on every rank, the rank that joined last.
    Blocks until every rank has joined; outstanding handles are completed
    first. The job's ranks only (not a process set); @device is Horovod's
    and unused."""
    what = "join"
    if _pset.current() is not None:
        raise InvalidArgumentError("join: joins the job, not a process set")
    last = ctypes.c_int(-1)
    check(lib.rp_join(context_handle(what), ctypes.byref(last)), what)
    return last.value


def _shutdown_hook():
    try:
        _wait_all_handles()
    except Error:
        pass


# Every call that takes process_set= runs in that set's scope (_pset).
_pset.wrap_all(globals(), [
    "allreduce_async_", "allreduce_async", "allreduce_", "allreduce",
    "grouped_allreduce_async_", "grouped_allreduce_async",
    "grouped_allreduce_", "grouped_allreduce", "broadcast_async_",
    "broadcast_async", "broadcast_", "broadcast", "allgather",
    "allgather_async", "grouped_allgather", "grouped_allgather_async",
    "sparse_allreduce_async", "barrier"])
