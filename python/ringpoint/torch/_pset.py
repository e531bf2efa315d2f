"""Process sets: Horovod's name for collectives among a subset of the ranks.

A registered ProcessSet holds a sub-communicator of the library
(rp_comm_create_group, include/ringpoint/subcomm.h) on its members. The
collectives of ringpoint.torch find their context, rank and size through
this module: inside scope(ps) they are the process set's, outside the
job's. Every public call that takes process_set= runs its body in that
scope (in_process_set), and the gradients of the differentiable calls run
in the scope their forward pass ran in (current() is kept for them), so a
backward pass reduces among the same ranks as the forward pass did.
"""
import contextlib
import ctypes
import functools
import inspect
import threading

from ringpoint import _coll, _lib, _runtime
from ringpoint._errors import InvalidArgumentError, check

lib = _lib.lib
_local = threading.local()
_lock = threading.Lock()


class ProcessSet:
    """A set of ranks that run collectives together. Construct it from a
    list of ranks (sorted, as Horovod does) and register it with
    init(process_sets=[...]) or add_process_set(); then pass it as
    process_set= to any collective. An mpi4py communicator is not
    accepted: ringpoint does not use MPI."""

    process_set_id = None
    ranks = None
    mpi_comm = None

    def __init__(self, ranks_or_comm):
        try:
            ranks = sorted(ranks_or_comm)
        except TypeError:
            raise InvalidArgumentError(
                "ProcessSet: expected a list of ranks, got %s (ringpoint "
                "does not use MPI, so an mpi4py communicator cannot define "
                "one)" % type(ranks_or_comm).__name__) from None
        if any(not isinstance(r, int) or isinstance(r, bool) for r in ranks):
            raise InvalidArgumentError("ProcessSet: ranks must be integers, "
                                       "not %r" % (ranks,))
        self.ranks = ranks
        self._ctx = None

    def size(self):
        """Number of ranks in the set (None before it is registered)."""
        if self.process_set_id == 0:
            return _runtime.size()
        return len(self.ranks) if self.process_set_id is not None else None

    def rank(self):
        """This process's rank within the set, -1 when it is not a member
        (None before the set is registered)."""
        if self.process_set_id == 0:
            return _runtime.rank()
        if self.process_set_id is None:
            return None
        me = _runtime.rank()
        return self.ranks.index(me) if me in self.ranks else -1

    def included(self):
        """Is this process a member? (None before registration.)"""
        if self.process_set_id == 0:
            return True
        if self.process_set_id is None:
            return None
        return _runtime.rank() in self.ranks

    def invalidate(self):
        self.process_set_id = None
        self.ranks = None
        self._ctx = None

    def __str__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s, mpi_comm=None)" % (
            self.process_set_id, self.ranks)

    __repr__ = __str__


global_process_set = ProcessSet([])
global_process_set.process_set_id = 0
_registered = {0: global_process_set}
_same = {0: [global_process_set]}   # id -> every object registered for it
_next_id = 1


def add_process_set(process_set):
    """Register @process_set (a ProcessSet or a list of ranks) and return
    it. Collective: every rank calls it, in the same order, with the same
    ranks, members or not."""
    global _next_id
    what = "add_process_set"
    if not isinstance(process_set, ProcessSet):
        process_set = ProcessSet(process_set)
    if process_set.process_set_id is not None:
        raise InvalidArgumentError("%s: %s is registered already"
                                   % (what, process_set))
    n = _runtime.size()
    ranks = process_set.ranks
    if not ranks or len(set(ranks)) != len(ranks) or \
            not all(0 <= r < n for r in ranks):
        raise InvalidArgumentError(
            "%s: %r is not a set of ranks of this job (0..%d, each once, at "
            "least one)" % (what, ranks, n - 1))
    with _lock:
        for ps in _registered.values():
            if ps.process_set_id != 0 and ps.ranks == ranks:
                # As Horovod: the same ranks are the same set (its id; every
                # rank's table is the same, so all take this branch).
                process_set.process_set_id = ps.process_set_id
                process_set._ctx = ps._ctx
                _same[ps.process_set_id].append(process_set)
                return process_set
    arr = (ctypes.c_int * len(ranks))(*ranks)
    sub = _lib.ctx_t()
    check(lib.rp_comm_create_group(_runtime.context_handle(what), arr,
                                   len(ranks), ctypes.byref(sub)), what)
    with _lock:
        process_set.process_set_id = _next_id
        _next_id += 1
        process_set._ctx = sub.value
        _registered[process_set.process_set_id] = process_set
        _same[process_set.process_set_id] = [process_set]
    return process_set


def remove_process_set(process_set):
    """Unregister @process_set and free its communicator; returns whether it
    was removed (never the global set). Every rank calls it."""
    if not isinstance(process_set, ProcessSet) or \
            process_set.process_set_id in (None, 0):
        return False
    with _lock:
        ps = _registered.pop(process_set.process_set_id, None)
        same = _same.pop(process_set.process_set_id, [])
    if ps is None:
        return False
    if ps._ctx is not None:
        lib.rp_comm_free(ps._ctx)
    for other in same + [process_set]:
        other.invalidate()
    return True


def _forget_all():
    """At shutdown: the job's context frees its sub-communicators."""
    global _next_id
    with _lock:
        for pid in [p for p in _registered if p != 0]:
            _registered.pop(pid)
            for ps in _same.pop(pid, []):
                ps.invalidate()
        _next_id = 1


# The job's context frees its sub-communicators when it is finalized (at
# shutdown() or exit): the sets are forgotten just before.
_runtime._finalizers.append(_forget_all)


def process_sets():
    """The registered process sets, by id."""
    with _lock:
        return [_registered[k] for k in sorted(_registered)]


def resolve(process_set, what):
    """The registered set @process_set stands for (None: the job), checked:
    registered, and this rank a member."""
    if process_set is None or process_set is global_process_set or \
            getattr(process_set, "process_set_id", None) == 0:
        return None
    if not isinstance(process_set, ProcessSet):
        raise InvalidArgumentError("%s: process_set must be a ProcessSet, not "
                                   "%s" % (what, type(process_set).__name__))
    if process_set.process_set_id is None:
        raise InvalidArgumentError(
            "%s: %s is not registered: pass it to hvd.add_process_set() (or "
            "init(process_sets=...)) first" % (what, process_set))
    if process_set._ctx is None:
        raise InvalidArgumentError(
            "%s: rank %d is not a member of %s: only its members call "
            "collectives on it" % (what, _runtime.rank(), process_set))
    return process_set


def current():
    """The process set collectives act on now (None: the job)."""
    return getattr(_local, "ps", None)


@contextlib.contextmanager
def scope(ps):
    prev = getattr(_local, "ps", None)
    _local.ps = ps
    try:
        yield
    finally:
        _local.ps = prev


def context_handle(what):
    ps = getattr(_local, "ps", None)
    if ps is None:
        return _runtime.context_handle(what)
    if ps._ctx is None:
        raise InvalidArgumentError("%s: %s was removed" % (what, ps))
    return ps._ctx


# A refused call takes part in the check on the context its peers use.
_coll.scope_context = context_handle

def rank():
    ps = getattr(_local, "ps", None)
    return _runtime.rank() if ps is None else ps.rank()


def size():
    ps = getattr(_local, "ps", None)
    return _runtime.size() if ps is None else len(ps.ranks)


def job_rank():
    """This process's rank in the job, whatever the scope."""
    return _runtime.rank()


def check_root(root_rank, what):
    """@root_rank (a rank of the job, as Horovod gives it for a process set
    too) checked against the scope's members."""
    ps = getattr(_local, "ps", None)
    if ps is None:
        n = _runtime.size()
        if not 0 <= root_rank < n:
            raise InvalidArgumentError("%s: root_rank %r is not a rank (0 .. "
                                       "%d)" % (what, root_rank, n - 1))
    elif root_rank not in ps.ranks:
        raise InvalidArgumentError("%s: root_rank %r is not a member of %s"
                                   % (what, root_rank, ps))
    return root_rank


def root_of(root_rank):
    """The scope's rank of the job's rank @root_rank (the library's root)."""
    ps = getattr(_local, "ps", None)
    return root_rank if ps is None else ps.ranks.index(root_rank)


def handle_of(ps, what):
    """The context of @ps (None: the current scope's)."""
    if ps is None:
        return context_handle(what)
    with scope(ps):
        return context_handle(what)


def keeps_scope(cls):
    """A torch.autograd.Function whose backward pass runs in the scope its
    forward pass ran in."""
    fwd, bwd = cls.forward, cls.backward

    def forward(ctx, *args):
        ctx.rp_scope = getattr(_local, "ps", None)
        return fwd(ctx, *args)

    def backward(ctx, *grads):
        with scope(getattr(ctx, "rp_scope", None)):
            return bwd(ctx, *grads)
    cls.forward = staticmethod(forward)
    cls.backward = staticmethod(backward)
    return cls


def wrap_all(namespace, names):
    """in_process_set() every function @names of @namespace, in place."""
    for name in names:
        namespace[name] = in_process_set(namespace[name])


def in_process_set(fn):
    """Run @fn (a public call with a process_set parameter) in the scope
    of the set it is given; without one, in the scope it is called in."""
    names = list(inspect.signature(fn).parameters)
    at = names.index("process_set")

    @functools.wraps(fn)
    def call(*args, **kwargs):
        ps = kwargs.get("process_set") if "process_set" in kwargs else (
            args[at] if len(args) > at else None)
        if ps is None:
            return fn(*args, **kwargs)
        with scope(resolve(ps, fn.__name__)):
            return fn(*args, **kwargs)
    return call
