"""The process's one ringpoint context: start-up, identity, shutdown."""
import atexit
import ctypes
import os
import threading

from ringpoint import _lib
from ringpoint._errors import StateError, check

_lock = threading.Lock()
_ctx = None          # rp_context_h as an int, or None
_attr = None         # rp_context_attr_t, read once at init()
_finalizers = []     # called before rp_finalize (e.g. waiter threads)
_forked_from = None  # in a child forked after init(): the parent's pid

_ALL_FIELDS = (1 << 11) - 1


def init(single=False):
    """Start ringpoint in this process (collective; idempotent).

    Bootstraps from PMIx when started by ``srun --mpi=pmix`` or ``mpirun``,
    else runs as rank 0 of 1 (always with @single: tools that read a
    checkpoint by themselves inside a job). Reads the ``RINGPOINT_*``
    settings the Slurm plugin exported.
    """
    global _ctx, _attr
    with _lock:
        if _ctx is not None:
            return
        if not single:  # a tool reading a checkpoint may start afresh
            _refuse_in_child("ringpoint.init")
        handle = _lib.ctx_t()
        # RP_INIT_FIELD_FLAGS | RP_INIT_FIELD_ERROR; RP_INIT_FLAG_SINGLE.
        # The library writes why it failed into @error, so that the
        # exception says what its own line on stderr says.
        error = ctypes.create_string_buffer(1024)
        params = _lib.InitParams(1 | 2, 1 if single else 0,
                                 ctypes.cast(error, ctypes.c_char_p),
                                 len(error))
        status = _lib.lib.rp_init(ctypes.byref(params), ctypes.byref(handle))
        reason = error.value.decode(errors="replace")
        check(status, "ringpoint.init: " + reason if reason else "ringpoint.init")
        attr = _lib.ContextAttr()
        attr.field_mask = _ALL_FIELDS
        status = _lib.lib.rp_context_query(handle, ctypes.byref(attr))
        if status != 0:
            _lib.lib.rp_finalize(handle)
            check(status, "ringpoint.init: rp_context_query")
        _ctx, _attr = handle.value, attr


def shutdown():
    """Stop ringpoint (collective). Outstanding requests are completed
    first. A later init() starts a new context."""
    global _ctx, _attr
    with _lock:
        if _ctx is None:
            return
        for fn in list(_finalizers):
            fn()
        ctx, _ctx, _attr = _ctx, None, None
    _lib.lib.rp_finalize(ctx)


atexit.register(shutdown)


def _after_fork_in_child():
    """A child forked after init() (a DataLoader worker, the fork start
    method) holds a copy of the context but none of the library's threads,
    and shares its parent's connections: it must not run collectives or
    checkpoints, nor finalize at exit (atexit runs in an os.fork() child
    that returns normally). So it forgets the context; the library refuses
    too (runtime/core/fork.h)."""
    global _lock, _ctx, _attr, _forked_from
    _lock = threading.Lock()  # another thread may have held it at the fork
    if _ctx is not None:
        _forked_from = os.getppid()
        _ctx, _attr = None, None
        del _finalizers[:]


os.register_at_fork(after_in_child=_after_fork_in_child)


def _refuse_in_child(what):
    if _forked_from is not None:
        raise StateError(
            "%s: this process (pid %d) was forked from rank process %d after "
            "ringpoint.init(); ringpoint works only in that process (a "
            "DataLoader worker must leave collectives and checkpoints to the "
            "training loop)" % (what, os.getpid(), _forked_from))


def is_initialized():
    """True between init() and shutdown()."""
    return _ctx is not None


def context_handle(what="ringpoint"):
    """The rp_context_h (an int) for calls into libringpoint; raises
    StateError before init()."""
    ctx = _ctx
    if ctx is None:
        _refuse_in_child(what)
        raise StateError("%s: ringpoint is not initialized: call init() "
                         "first" % what)
    return ctx


def _field(name):
    context_handle("ringpoint.%s()" % name)
    return getattr(_attr, name)


def rank():
    """This process's rank, 0 .. size()-1."""
    return _field("rank")


def size():
    """Number of ranks in the job step."""
    return _field("size")


def local_rank():
    """Rank among the processes on this node."""
    return _field("local_rank")


def local_size():
    """Number of processes on this node."""
    return _field("local_size")


def node_id():
    """Index of this node, 0 .. node_count()-1."""
    return _field("node_id")


def node_count():
    """Number of nodes in the job step."""
    return _field("node_count")


def node_name():
    """Slurm node name (else the host name)."""
    return _field("node_name").decode()


def job_id():
    """Slurm job id (else the PMIx namespace)."""
    return _field("job_id").decode()


def ckpt_interval():
    """Periodic checkpoint interval in seconds (0: only on a stop)."""
    return _field("ckpt_interval_s")


def barrier():
    """Return once every rank has called barrier()."""
    check(_lib.lib.rp_barrier(context_handle("barrier")), "barrier")


def library_version():
    """Version of the libringpoint actually loaded."""
    return _lib.lib.rp_version().decode()
