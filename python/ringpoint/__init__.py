"""ringpoint: coordinated checkpoints and ring collectives for data-parallel
training on Slurm, from Python.

This package drives libringpoint (the C runtime) through ctypes: no
compiler at install time, buffers passed by address (no copies), the GIL
released during every blocking call. The framework-neutral part lives
here (start-up, identity, errors, collectives on NumPy arrays);
`ringpoint.torch` is the PyTorch binding, Horovod-compatible.

    import ringpoint
    ringpoint.init()
    ringpoint.allreduce_(array, op=ringpoint.AVG)      # in place, NumPy

Every failure raises a subclass of :class:`ringpoint.Error`, which carries
the C status (``status``, an ``rp_status_t`` value) and its description.
"""
from ringpoint._errors import (  # noqa: F401
    Error, InvalidArgumentError, NoMemoryError, NotSupportedError,
    BootstrapError, CollectiveError, TransportError, TimeoutError,
    PeerFailedError, IOError, CorruptError, NotFoundError, BusyError,
    StateError, MismatchError, check,
)
from ringpoint._runtime import (  # noqa: F401
    init, shutdown, is_initialized, rank, size, local_rank, local_size,
    node_id, node_count, node_name, job_id, ckpt_interval, context_handle,
    barrier, library_version,
)
from ringpoint._dtypes import (  # noqa: F401
    SUM, PROD, MIN, MAX, AVG, UINT8, INT32, INT64, FLOAT16, BFLOAT16,
    FLOAT32, FLOAT64,
)
from ringpoint._numpy import allreduce, allreduce_, broadcast_, allgather  # noqa: F401

__version__ = "0.1.0"

#: Exit status of a task that stopped at a committed checkpoint (75,
#: EX_TEMPFAIL): the ringpoint SPANK plugin requeues the job.
EXIT_STOPPED = 75
