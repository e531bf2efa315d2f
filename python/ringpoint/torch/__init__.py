"""ringpoint for PyTorch, with Horovod's API.

A Horovod script ports by changing its import::

    import ringpoint.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer,
                                         named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)

Launch with ``srun --mpi=pmix`` (or ``mpirun``); rank, size and the ring
come from PMIx. Users of DistributedDataParallel can keep it and reduce
through ringpoint with ``model.register_comm_hook(None,
ringpoint.torch.ddp_comm_hook)``.

Every failure raises a ringpoint.Error subclass; a collective whose
arguments differ between ranks raises MismatchError on every rank.
HorovodInternalError is ringpoint.CollectiveError (a rank died, the
transport failed).
"""
import os as _os
import warnings as _warnings

import torch as _torch  # noqa: F401  (fail early and clearly without torch)

from ringpoint import (  # noqa: F401
    EXIT_STOPPED, CollectiveError, Error, InvalidArgumentError, MismatchError,
    NotSupportedError, StateError, init as _init, is_initialized, local_rank,
    local_size, rank, shutdown as _shutdown, size,
)
from ringpoint import _runtime
from ringpoint.torch.compression import Compression  # noqa: F401
from ringpoint.torch.mpi_ops import (  # noqa: F401
    Adasum, Average, Max, Min, Product, Sum, allgather, allgather_async,
    allreduce, allreduce_, allreduce_async, allreduce_async_, barrier,
    broadcast, broadcast_, broadcast_async, broadcast_async_,
    global_process_set, grouped_allgather, grouped_allgather_async,
    grouped_allreduce, grouped_allreduce_,
    grouped_allreduce_async, grouped_allreduce_async_, join, poll,
    sparse_allreduce_async, synchronize,
)
from ringpoint.torch.functions import (  # noqa: F401
    allgather_object, broadcast_object, broadcast_optimizer_state,
    broadcast_parameters,
)
from ringpoint.torch.exchange import (  # noqa: F401
    alltoall, alltoall_async, grouped_reducescatter,
    grouped_reducescatter_async, reducescatter, reducescatter_async)
from ringpoint.torch.optimizer import DistributedOptimizer  # noqa: F401
from ringpoint.torch.sync_batch_norm import SyncBatchNorm  # noqa: F401
from ringpoint.torch.ddp import ddp_comm_hook, make_ddp_comm_hook  # noqa: F401
from ringpoint.torch.checkpoint import Checkpoint, load_state_dict  # noqa: F401
from ringpoint.torch.data import DistributedSampler  # noqa: F401
from ringpoint.torch import mpi_ops as _mpi_ops
from ringpoint.torch import _pset
from ringpoint.torch._pset import (  # noqa: F401
    ProcessSet, add_process_set, process_sets, remove_process_set)

#: Horovod's name for a failed collective (a rank died, the transport failed).
HorovodInternalError = CollectiveError


def init(comm=None, process_sets=None):
    """Start ringpoint (collective; idempotent) and register
    @process_sets (a list of ProcessSet, as Horovod's; "dynamic" is
    accepted: sets can always be added later with add_process_set).
    @comm must be None: ringpoint runs on all ranks of the job step."""
    if comm is not None:
        raise NotSupportedError("init: ringpoint runs on all ranks of the job "
                                "step (comm= is not supported: make process "
                                "sets of the ranks instead)")
    _init()
    if process_sets not in (None, "dynamic"):
        for ps in process_sets:
            if getattr(ps, "process_set_id", None) is None:
                add_process_set(ps)


def shutdown():
    """Complete outstanding handles and stop ringpoint (collective)."""
    if is_initialized():
        _mpi_ops._shutdown_hook()
    _shutdown()


def cross_rank():
    """This rank's node index (Horovod: rank among the nodes' local rank 0s)."""
    return _runtime.node_id()


def cross_size():
    """Number of nodes."""
    return _runtime.node_count()


def is_homogeneous():
    """True when every node runs the same number of ranks."""
    return size() == local_size() * cross_size()


def _gpu_module_present():
    # Where the library itself looks: RINGPOINT_GPU_MODULE, else the path
    # `make install` baked in; a package used from the source tree (no
    # _config) with RINGPOINT_LIBRARY set looks beside that library, as
    # the library's own default ($libdir/ringpoint) does for an install.
    path = _os.environ.get("RINGPOINT_GPU_MODULE")
    if not path:
        try:
            from ringpoint import _config
            path = _config.GPU_MODULE
        except ImportError:
            lib = _os.environ.get("RINGPOINT_LIBRARY")
            if not lib:
                return False
            path = _os.path.join(_os.path.dirname(_os.path.realpath(lib)),
                                 "ringpoint", "ringpoint-nccl.so")
    return _os.path.exists(path)


def nccl_built():
    """As Horovod's: the NCCL version (e.g. 22809 for 2.28.9) when
    ringpoint's NCCL module (GPU collectives) is installed and its NCCL
    library loads, else 0."""
    if not _gpu_module_present():
        return 0
    return _nccl_version()


def _nccl_version():
    import ctypes
    try:
        lib = ctypes.CDLL("libnccl.so.2")
        v = ctypes.c_int(0)
        if lib.ncclGetVersion(ctypes.byref(v)) != 0:
            return 0
    except (OSError, AttributeError):
        return 0
    return v.value


def cuda_built():
    """True when CUDA tensors can be reduced (the NCCL module is installed)."""
    return _gpu_module_present()


def rocm_built():
    """False: ringpoint has no ROCm path."""
    return False


def mpi_built():
    """False: ringpoint does not use MPI (it runs under mpirun through PMIx)."""
    return False


def gloo_built():
    """False: ringpoint does not use gloo."""
    return False


def ccl_built():
    """False."""
    return False


def ddl_built():
    """False."""
    return False


def mpi_enabled():
    """False (see mpi_built)."""
    return False


def gloo_enabled():
    """False (see gloo_built)."""
    return False


def mpi_threads_supported():
    """False: ringpoint does not use MPI."""
    return False


_timeline_warned = False


def _timeline_warning(what):
    # Once per process, from rank 0 only: a script calls these once, and
    # one line per rank would bury the rest of the output.
    global _timeline_warned
    _runtime.context_handle(what)       # StateError before init(), as any call
    if not _timeline_warned:
        _timeline_warned = True
        if rank() == 0:
            _warnings.warn("ringpoint.torch.%s: ringpoint has no timeline yet; "
                           "the call is accepted and records nothing" % what,
                           RuntimeWarning, stacklevel=3)


def start_timeline(file_path, mark_cycles=False):
    """Accepted (Horovod's signature); ringpoint does not write a timeline
    yet, and says so once."""
    _timeline_warning("start_timeline")


def stop_timeline():
    """Accepted; see start_timeline."""
    _timeline_warning("stop_timeline")


# Last: it takes init and shutdown from here, as Horovod's elastic does.
from ringpoint.torch import elastic  # noqa: E402,F401
