"""The exception for every rp_status_t, one class each, under Error."""
import builtins

__all__ = ["Error", "check"]


class Error(RuntimeError):
    """A ringpoint call failed.

    A RuntimeError, as the errors of torch and Horovod are, so that code
    written for Horovod (``except RuntimeError``) catches it; each subclass
    is also the builtin exception its kind suggests (ValueError,
    MemoryError, OSError, ...), so ``except ValueError`` works as well.

    Attributes: ``status`` (the C ``rp_status_t``, a negative int) and
    ``status_string`` (the library's description of it).
    """

    status = None

    def __init__(self, message, status=None):
        if status is not None:
            self.status = status
        super().__init__(message)

    @property
    def status_string(self):
        return status_string(self.status) if self.status is not None else ""


class InvalidArgumentError(Error, ValueError):
    """RP_ERR_INVALID_ARG: an argument or a setting is malformed."""
    status = -1


class NoMemoryError(Error, MemoryError):
    """RP_ERR_NO_MEMORY."""
    status = -2


class NotSupportedError(Error, NotImplementedError):
    """RP_ERR_NOT_SUPPORTED: not built in, or not possible here."""
    status = -3


class BootstrapError(Error):
    """RP_ERR_BOOTSTRAP: the process manager (PMIx) failed."""
    status = -4


class CollectiveError(Error):
    """A collective could not complete: the transport failed, a rank died
    or stopped answering. The context cannot run collectives any more:
    exit and let the job restart from its last checkpoint."""


class TransportError(CollectiveError):
    """RP_ERR_TRANSPORT: UCX or NCCL failed."""
    status = -5


class TimeoutError(CollectiveError, builtins.TimeoutError):
    """RP_ERR_TIMEOUT: an operation did not finish within its limit."""
    status = -6


class PeerFailedError(CollectiveError):
    """RP_ERR_PEER_FAILED: another rank died or stopped answering."""
    status = -7


class IOError(Error, OSError):
    """RP_ERR_IO: a file system operation failed."""
    status = -8


class CorruptError(Error):
    """RP_ERR_CORRUPT: data failed a checksum, length or format check."""
    status = -9


class NotFoundError(Error, LookupError):
    """RP_ERR_NOT_FOUND."""
    status = -10


class BusyError(Error):
    """RP_ERR_BUSY: a previous operation is still in flight."""
    status = -11


class StateError(Error):
    """RP_ERR_STATE: not valid now (before init(), after shutdown(), ...)."""
    status = -12


class MismatchError(InvalidArgumentError):
    """RP_ERR_MISMATCH: the ranks called a collective with different
    arguments (shape, dtype, op, root). Raised on every rank, before any
    data moves; the context stays usable."""
    status = -13


_BY_STATUS = {cls.status: cls for cls in (
    InvalidArgumentError, NoMemoryError, NotSupportedError, BootstrapError,
    TransportError, TimeoutError, PeerFailedError, IOError, CorruptError,
    NotFoundError, BusyError, StateError, MismatchError)}


def status_string(status):
    from ringpoint._lib import lib
    return lib.rp_status_string(int(status)).decode()


def check(status, what):
    """Raise the Error subclass of a non-zero C status, naming @what."""
    if status == 0:
        return
    cls = _BY_STATUS.get(status, Error)
    raise cls("%s: %s (status %d)" % (what, status_string(status), status),
              status)
