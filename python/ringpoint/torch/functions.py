"""Broadcasting a model, an optimizer's state and plain Python objects."""
import ctypes
import pickle

import torch

from ringpoint import _coll
from ringpoint._errors import InvalidArgumentError
from ringpoint.torch import _pset
from ringpoint.torch._pset import context_handle, rank, size
from ringpoint.torch import mpi_ops
from ringpoint.torch.mpi_ops import _check_root, check, lib, _lib, D


def _named_tensors(params, what):
    if isinstance(params, dict):
        items = sorted(params.items(), key=lambda kv: str(kv[0]))
    else:
        items = list(params)
        if items and not isinstance(items[0], tuple):
            items = [(str(i), p) for i, p in enumerate(items)]
    for name, p in items:
        if not isinstance(p, torch.Tensor):
            raise InvalidArgumentError("%s: %r is a %s, not a tensor"
                                       % (what, name, type(p).__name__))
    return items


def broadcast_tensors_(tensors, root_rank, what, names=None):
    """Broadcast many tensors in place: one check, all started, then waited."""
    with _coll.checking(what):
        root_rank = _check_root(root_rank, what)
        for i, t in enumerate(tensors):
            if not t.is_contiguous():
                raise InvalidArgumentError("%s: %s is not contiguous"
                                           % (what, names[i] if names else
                                              "tensor %d" % i))
    ctx = context_handle(what)
    _coll.verify(ctx, what, (what, root_rank, tuple(
        (str(t.dtype), tuple(t.shape)) for t in tensors), tuple(names or ())))
    reqs = []
    try:
        for t in tensors:
            req = _lib.req_t()
            check(lib.rp_ibroadcast(ctx, t.data_ptr(), t.numel() * t.element_size(),
                                    D.UINT8, _pset.root_of(root_rank),
                                    ctypes.byref(req)), what)
            reqs.append(req)
    finally:
        status = 0
        for req in reqs:
            s = lib.rp_wait(ctypes.byref(req))
            status = status or s
    check(status, what)


def broadcast_parameters(params, root_rank):
    """Overwrite the parameters of every rank with rank @root_rank's.

    @params: a model's ``state_dict()``, ``named_parameters()``, or a list
    of tensors. Every rank must pass the same names, shapes and dtypes.
    """
    what = "broadcast_parameters"
    with _coll.checking(what):
        items = _named_tensors(params, what)
    with torch.no_grad():
        broadcast_tensors_([p.data for _, p in items], root_rank, what,
                           [str(n) for n, _ in items])


def _split_tensors(obj, tensors):
    """@obj with each tensor replaced by a placeholder; the tensors appended
    to @tensors."""
    if isinstance(obj, torch.Tensor):
        tensors.append(obj)
        return _TensorSlot(len(tensors) - 1, str(obj.dtype), tuple(obj.shape))
    if isinstance(obj, dict):
        return {k: _split_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        seq = [_split_tensors(v, tensors) for v in obj]
        return seq if isinstance(obj, list) else tuple(seq)
    return obj


class _TensorSlot:
    def __init__(self, index, dtype, shape):
        self.index, self.dtype, self.shape = index, dtype, shape


def _join_tensors(obj, tensors):
    if isinstance(obj, _TensorSlot):
        return tensors[obj.index]
    if isinstance(obj, dict):
        return {k: _join_tensors(v, tensors) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        seq = [_join_tensors(v, tensors) for v in obj]
        return seq if isinstance(obj, list) else tuple(seq)
    return obj


def _slots(obj, out):
    if isinstance(obj, _TensorSlot):
        out.append(obj)
    elif isinstance(obj, dict):
        for v in obj.values():
            _slots(v, out)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _slots(v, out)
    return out


def _zero_missing_grads(optimizer):
    """Give each parameter of a new @optimizer (no state yet) that
    requires a gradient and has none a zero one, as Horovod's
    broadcast_optimizer_state leaves them: code written for it reads
    them. Horovod then takes a step with those zeros to create the state
    it broadcasts tensor by tensor; here the root's state dict travels
    whole, so no step is needed, and none is taken: it would count in
    Adam's bias correction and put the weight decay into SGD's momentum,
    and training would no longer match training in one process."""
    if optimizer.state:
        return
    for group in optimizer.param_groups:
        for p in group["params"]:
            if isinstance(p, torch.Tensor) and p.requires_grad and p.grad is None:
                p.grad = torch.zeros_like(p)


def broadcast_optimizer_state(optimizer, root_rank, model=None):
    """Give every rank's @optimizer rank @root_rank's state and
    hyper-parameters (param_groups), tensors by broadcast in place.
    @model is Horovod's, and not needed: Horovod takes it to find sparse
    embeddings, whose zero gradients its initial step must make sparse;
    no step is taken here.

    A rank whose optimizer has no state yet (never stepped) gets the
    root's, or none if the root has none. Its parameters that require a
    gradient and have none get a zero gradient, as with Horovod (which
    takes a step with them; this takes none, see _zero_missing_grads)."""
    what = "broadcast_optimizer_state"
    tensors = []
    with _coll.checking("broadcast_object"):    # its first collective
        root_rank = _check_root(root_rank, what)
        _zero_missing_grads(optimizer)
        skeleton = _split_tensors(optimizer.state_dict(), tensors)
    skeleton = broadcast_object(skeleton if rank() == root_rank else None,
                                root_rank, name=what)
    if rank() == root_rank:
        bufs = [t.detach().contiguous() for t in tensors]
    else:
        bufs = [torch.empty(s.shape, dtype=getattr(torch, s.dtype.split(".")[-1]))
                for s in sorted(_slots(skeleton, []), key=lambda s: s.index)]
    broadcast_tensors_(bufs, root_rank, what)
    if rank() != root_rank:
        optimizer.load_state_dict(_join_tensors(skeleton, bufs))


def broadcast_object(obj, root_rank=0, name=None, process_set=None):
    """Rank @root_rank's @obj (pickled; any picklable object) on every rank."""
    what = "broadcast_object"
    with _coll.checking(what):
        mpi_ops._process_set(process_set, what)
        root_rank = _check_root(root_rank, what)
    ctx = context_handle(what)
    root = _pset.root_of(root_rank)
    if rank() == root:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
        n = ctypes.c_int64(len(data))
    else:
        data, n = None, ctypes.c_int64(0)
    _coll.verify(ctx, what, (what, root_rank))
    _coll.broadcast(ctx, ctypes.addressof(n), 8, root, what)
    buf = ctypes.create_string_buffer(data, n.value) if data is not None \
        else ctypes.create_string_buffer(n.value)
    _coll.broadcast(ctx, ctypes.addressof(buf), n.value, root, what)
    if rank() == root:
        return obj
    return pickle.loads(buf.raw)


def allgather_object(obj, name=None, process_set=None):
    """Every rank's @obj (pickled), as a list in rank order."""
    what = "allgather_object"
    with _coll.checking(what, gather=True):
        mpi_ops._process_set(process_set, what)
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    ctx = context_handle(what)
    lengths = _coll.check_gather(ctx, what, (what,), len(data))
    longest = max(lengths)
    src = ctypes.create_string_buffer(data, max(longest, 1))
    dst = ctypes.create_string_buffer(max(longest, 1) * size())
    _coll.allgather(ctx, ctypes.addressof(src), ctypes.addressof(dst),
                    max(longest, 1), what)
    step = max(longest, 1)
    raw = dst.raw
    return [pickle.loads(raw[r * step:r * step + lengths[r]])
            for r in range(size())]


__all__ = ["broadcast_parameters", "broadcast_optimizer_state",
           "broadcast_object", "allgather_object"]


# Every call that takes process_set= runs in that set's scope (_pset).
_pset.wrap_all(globals(), ["broadcast_object", "allgather_object"])
