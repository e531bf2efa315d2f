"""Collectives on NumPy arrays, in place or into new arrays (no copies of
the input: the library reads the array's own memory)."""
from ringpoint import _coll
from ringpoint._dtypes import AVG, OP_NAMES
from ringpoint._errors import InvalidArgumentError, NotSupportedError

_np = None


def _numpy():
    global _np
    if _np is None:
        import numpy
        _np = numpy
    return _np


def _rp_dtype(a, what):
    from ringpoint import _dtypes as d
    np = _numpy()
    table = {np.dtype(np.uint8): d.UINT8, np.dtype(np.int32): d.INT32,
             np.dtype(np.int64): d.INT64, np.dtype(np.float16): d.FLOAT16,
             np.dtype(np.float32): d.FLOAT32, np.dtype(np.float64): d.FLOAT64}
    try:
        return table[a.dtype]
    except KeyError:
        raise NotSupportedError(
            "%s: dtype %s cannot be reduced (uint8, int32, int64, float16, "
            "float32, float64 can)" % (what, a.dtype)) from None


def _array(a, what, writable):
    np = _numpy()
    if not isinstance(a, np.ndarray):
        raise InvalidArgumentError("%s: expected a numpy.ndarray, got %s"
                                   % (what, type(a).__name__))
    if not a.flags.c_contiguous:
        raise InvalidArgumentError("%s: the array is not C-contiguous "
                                   "(use numpy.ascontiguousarray)" % what)
    if writable and not a.flags.writeable:
        raise InvalidArgumentError("%s: the array is read-only" % what)
    return a


def allreduce_(a, op=AVG):
    """Reduce @a across ranks in place with @op (ringpoint.SUM, AVG, ...)."""
    return _allreduce(a, True, op, "allreduce_")


def allreduce(a, op=AVG):
    """Reduce @a across ranks into a new array (@a is only read: it may be
    read-only)."""
    return _allreduce(a, False, op, "allreduce")


def _allreduce(a, inplace, op, what):
    with _coll.checking(what):
        _array(a, what, inplace)
        dt = _rp_dtype(a, what)
        if isinstance(op, bool) or not isinstance(op, int) or \
                not 0 <= op < len(OP_NAMES):
            raise InvalidArgumentError("%s: op %r is not one of ringpoint.SUM, "
                                       "PROD, MIN, MAX, AVG" % (what, op))
    out = a if inplace else _numpy().empty_like(a)
    ctx = _coll.ctx_for(what)
    _coll.verify(ctx, what, ("allreduce", str(a.dtype), a.shape, OP_NAMES[op]))
    _coll.allreduce(ctx, a.ctypes.data, out.ctypes.data, a.size, dt, op, what)
    return out


def broadcast_(a, root=0):
    """Overwrite @a with rank @root's @a, in place."""
    what = "broadcast_"
    with _coll.checking(what):
        _array(a, what, True)
        root = int(root)
    ctx = _coll.ctx_for(what)
    _coll.verify(ctx, what, ("broadcast", str(a.dtype), a.shape, root))
    _coll.broadcast(ctx, a.ctypes.data, a.nbytes, root, what)
    return a


def allgather(a):
    """Concatenate every rank's @a along axis 0 (equal shapes)."""
    np = _numpy()
    what = "allgather"
    with _coll.checking(what):
        _array(a, what, False)
    ctx = _coll.ctx_for(what)
    _coll.verify(ctx, what, ("allgather", str(a.dtype), a.shape))
    from ringpoint._runtime import size
    out = np.empty((size() * (a.shape[0] if a.ndim else 1),) + a.shape[1:],
                   a.dtype)
    _coll.allgather(ctx, a.ctypes.data, out.ctypes.data, a.nbytes, what)
    return out
