"""Collectives on raw addresses, and the cross-rank argument check.

Both bindings (NumPy here, PyTorch in ringpoint.torch) reduce a call to an
address, an element count and an rp_dtype_t, and come through here.

The check: before a collective moves any data, every rank contributes a
64-bit signature of its arguments (kind, dtype, op, root, shape) to the
library's check (rp_check, or rp_allreduce_opts_t.signature folded into
the call): one small MAX allreduce in which the largest and the smallest
signature meet. When they differ the ranks disagree, and every rank knows
it at the same moment, so they all raise MismatchError together instead
of one hanging in a collective the others never join. The message names
each rank's arguments (an allgather of the descriptions, on this error
path only). The same check lets a rank that has joined (join()) follow
the others' allreduces. RINGPOINT_CHECK=0 skips the check (a mismatch
then fails in the transport, or hangs until RINGPOINT_COLL_TIMEOUT, and
join() cannot see the other ranks' calls).

A call whose arguments fail the local checks on some ranks only (a bad
root, an unsupported dtype, a non-contiguous tensor there) is a mismatch
too: see checking().
"""
import contextlib
import ctypes
import hashlib
import os

from ringpoint import _lib, _runtime
from ringpoint._dtypes import INT64, UINT8
from ringpoint._errors import Error, MismatchError, check
from ringpoint._runtime import context_handle

lib = _lib.lib
CHECK = os.environ.get("RINGPOINT_CHECK", "1") not in ("0", "no", "off")

_DESC_LEN = 512


def verify(ctx, what, desc, describe=True):
    """Raise MismatchError on every rank unless all ranks passed an equal
    @desc (a tuple of ints and strings; its repr names it in messages).
    The check is the library's own (rp_check, the one
    rp_allreduce_opts_t.signature runs): the two pair with each other.
    While a rank has joined (join()) it raises StateError: the call it
    guards is not one a joined rank takes part in. @describe: see
    mismatch()."""
    if not CHECK:
        return
    status = lib.rp_check(ctx, signature(desc) << 1)
    if status == MismatchError.status:
        raise mismatch(ctx, what, desc, describe)
    check(status, what)


def c_signature(desc):
    """The signature of @desc for rp_allreduce_opts_t.signature (the
    library compares its upper 63 bits, which are signature(desc)), or 0
    when checks are off. The library checks it in order with the collective
    itself, so a non-blocking call still returns at once, and a blocking
    one costs no separate call."""
    return signature(desc) << 1 if CHECK else 0


def mismatch(ctx, what, desc, gather):
    """The MismatchError of a refused call. @gather (blocking calls, where
    every rank learns of it at the same moment, and every rank of such a
    call gathers alike): name every rank's arguments, with one more
    collective; otherwise (non-blocking calls, learnt at synchronize())
    this rank's."""
    if gather:
        return MismatchError("%s: the ranks called it with different "
                             "arguments: %s"
                             % (what, describe_all(ctx, what, desc)))
    return MismatchError("%s: the ranks called it with different arguments "
                         "(rank %d: %r)" % (what, _runtime.rank(), desc))


_sig_cache = {}


def signature(desc):
    """A 63-bit signature of @desc, the same in every process (Python's own
    hash() of a string differs between processes)."""
    h = _sig_cache.get(desc)
    if h is None:
        digest = hashlib.blake2b(repr(desc).encode(), digest_size=8).digest()
        h = int.from_bytes(digest, "little") >> 1
        if len(_sig_cache) >= 4096:
            _sig_cache.clear()
        _sig_cache[desc] = h
    return h


def describe_all(ctx, what, desc):
    """Each rank's description of its call, gathered (error path)."""
    mine = repr(desc).encode()[:_DESC_LEN - 1].ljust(_DESC_LEN, b"\0")
    attr = _lib.ContextAttr()
    attr.field_mask = 2
    lib.rp_context_query(ctx, ctypes.byref(attr))
    size = attr.size
    out = ctypes.create_string_buffer(_DESC_LEN * size)
    src = ctypes.create_string_buffer(mine, _DESC_LEN)
    check(lib.rp_allgather(ctx, src, out, _DESC_LEN, UINT8), what)
    parts = []
    for r in range(size):
        d = out.raw[r * _DESC_LEN:(r + 1) * _DESC_LEN].rstrip(b"\0").decode(
            errors="replace")
        parts.append("rank %d: %s" % (r, d))
    return "; ".join(parts)


# The context the calls in progress act on: the job's, or the process
# set's that ringpoint.torch scopes them to (ringpoint.torch._pset sets it).
scope_context = context_handle


@contextlib.contextmanager
def checking(what, gather=False, describe=True):
    """Wrap the local checks of a collective's arguments (nothing
    collective inside). When one fails on this rank, the rank still takes
    part in the cross-rank check, with a signature no valid call has, and
    then raises its own error: the ranks whose arguments were fine raise
    MismatchError at once, instead of waiting in a collective this rank
    never joins until RINGPOINT_COLL_TIMEOUT ends the context for good.
    Ranks that all fail alike pass the check and all raise their own
    error. @gather: the call is checked by check_gather(), not verify().
    @describe: False for non-blocking calls (see mismatch())."""
    try:
        yield
    except Exception as exc:
        if _runtime.is_initialized() and (gather or CHECK):
            desc = ("invalid call", what, type(exc).__name__)
            try:
                if gather:
                    check_gather(scope_context(what), what, desc, 0)
                else:
                    verify(scope_context(what), what, desc, describe)
            except Error:
                pass    # the others called it validly: they raise MismatchError
        raise


def check_gather(ctx, what, desc, value, full_desc=None):
    """The check of a gather, folded into the exchange it needs anyway:
    one allgather of (signature of @desc, @value) from every rank. Returns
    every rank's @value; raises MismatchError on every rank unless all
    passed an equal @desc (@full_desc, if given, names the call in the
    message)."""
    sig = signature(desc)
    # The check first, as every collective has it: a rank that has joined
    # takes part in it, not in the allgather.
    if CHECK:
        status = lib.rp_check(ctx, sig << 1)
        if status == MismatchError.status:
            raise mismatch(ctx, what, full_desc or desc, True)
        check(status, what)
    rows = allgather_int64s(ctx, [sig, value], what)
    if any(r[0] != sig for r in rows):
        raise MismatchError("%s: the ranks called it with different arguments: %s"
                            % (what, describe_all(ctx, what, full_desc or desc)))
    return [r[1] for r in rows]


def allreduce(ctx, send, recv, count, dtype, op, what):
    check(lib.rp_allreduce(ctx, send, recv, count, dtype, op), what)


def broadcast(ctx, addr, nbytes, root, what):
    check(lib.rp_broadcast(ctx, addr, nbytes, UINT8, root), what)


def allgather(ctx, send, recv, nbytes, what):
    check(lib.rp_allgather(ctx, send, recv, nbytes, UINT8), what)


def allgather_int64s(ctx, values, what):
    """Allgather a short list of ints from every rank: a list per rank."""
    n = len(values)
    attr = _lib.ContextAttr()
    attr.field_mask = 2
    check(lib.rp_context_query(ctx, ctypes.byref(attr)), what)
    src = (ctypes.c_int64 * n)(*values)
    dst = (ctypes.c_int64 * (n * attr.size))()
    check(lib.rp_allgather(ctx, src, dst, n, INT64), what)
    return [list(dst[r * n:(r + 1) * n]) for r in range(attr.size)]


def ctx_for(what):
    return context_handle(what)
