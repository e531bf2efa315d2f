"""Loading libringpoint and declaring the C functions the package calls.

ctypes.CDLL releases the GIL around every foreign call, so a blocking
collective or rp_wait never stops the interpreter's other threads. The
library's path is baked in at install time (_config.py, written by
`make install`); RINGPOINT_LIBRARY overrides it, which is how the tests run
the package from a build tree.
"""
import ctypes
import os

__all__ = ["lib", "path"]


def _library_path():
    env = os.environ.get("RINGPOINT_LIBRARY")
    if env:
        return env
    try:
        from ringpoint import _config
        return _config.LIBRINGPOINT
    except ImportError:
        # Not installed by `make install` (a source tree): the loader's
        # search path decides.
        return "libringpoint.so.0"


path = _library_path()
try:
    lib = ctypes.CDLL(path)
except OSError as exc:
    raise ImportError(
        "ringpoint: cannot load libringpoint from %r (%s); install ringpoint "
        "with `make install`, or point RINGPOINT_LIBRARY at libringpoint.so.0"
        % (path, exc)) from None

c_int = ctypes.c_int
c_size = ctypes.c_size_t
c_void = ctypes.c_void_p
c_u64 = ctypes.c_uint64
ctx_t = ctypes.c_void_p           # rp_context_h
req_t = ctypes.c_void_p           # rp_request_h

RP_NAME_MAX = 64
RP_UNDEFINED = -32766             # rp_comm_split: join no sub-communicator
RP_CONTEXT_ATTR_FIELD_PARENT = 1 << 11  # ContextAttr.parent_rank, job_rank


class InitParams(ctypes.Structure):
    _fields_ = [("field_mask", c_u64), ("flags", c_u64),
                ("error", ctypes.c_char_p), ("error_len", c_size)]


class ContextAttr(ctypes.Structure):
    _fields_ = [
        ("field_mask", c_u64),
        ("rank", c_int), ("size", c_int),
        ("local_rank", c_int), ("local_size", c_int),
        ("node_id", c_int), ("node_count", c_int),
        ("node_name", ctypes.c_char * RP_NAME_MAX),
        ("bootstrap", ctypes.c_char_p),
        ("job_id", ctypes.c_char * RP_NAME_MAX),
        ("ckpt_interval_s", c_u64),
        ("left_rank", c_int), ("right_rank", c_int),
        ("left_node", ctypes.c_char * RP_NAME_MAX),
        ("right_node", ctypes.c_char * RP_NAME_MAX),
        ("parent_rank", c_int), ("job_rank", c_int),
    ]


class AllreduceOpts(ctypes.Structure):
    _fields_ = [("compression", c_int), ("signature", c_u64)]


class RestoreInfo(ctypes.Structure):
    _fields_ = [
        ("restored", c_int),
        ("step", c_u64),
        ("age_s", ctypes.c_double),
        ("world_size", ctypes.c_uint32),
        ("path", ctypes.c_char * 4096),
    ]


class CkptRegionDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * 129), ("kind", c_int),
                ("size", c_u64)]


class CkptDesc(ctypes.Structure):
    _fields_ = [("step", c_u64), ("world_size", ctypes.c_uint32),
                ("nregions", c_size), ("regions", ctypes.POINTER(CkptRegionDesc)),
                ("path", ctypes.c_char * 4096)]


class StepResult(ctypes.Structure):
    _fields_ = [("checkpointed", c_int), ("stop", c_int)]


def _declare(name, restype, *argtypes):
    try:
        fn = getattr(lib, name)
    except AttributeError:
        # A library older than this package: say so when it is called.
        def missing(*_args, _name=name):
            raise ImportError("ringpoint: %s is missing from %s: the library is "
                              "older than the Python package (reinstall both)"
                              % (_name, path))
        setattr(lib, name, missing)
        return missing
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


P = ctypes.POINTER
_declare("rp_status_string", ctypes.c_char_p, c_int)
_declare("rp_version", ctypes.c_char_p)
_declare("rp_init", c_int, P(InitParams), P(ctx_t))
_declare("rp_finalize", None, ctx_t)
_declare("rp_context_query", c_int, ctx_t, P(ContextAttr))
_declare("rp_comm_split", c_int, ctx_t, c_int, c_int, P(ctx_t))
_declare("rp_comm_create_group", c_int, ctx_t, P(c_int), c_int, P(ctx_t))
_declare("rp_comm_free", None, ctx_t)
_declare("rp_allreduce", c_int, ctx_t, c_void, c_void, c_size, c_int, c_int)
_declare("rp_allreduce_group_opts", c_int, ctx_t, P(c_void), P(c_void),
         P(c_size), c_size, c_int, c_int, P(AllreduceOpts))
_declare("rp_broadcast", c_int, ctx_t, c_void, c_size, c_int, c_int)
_declare("rp_allgather", c_int, ctx_t, c_void, c_void, c_size, c_int)
_declare("rp_barrier", c_int, ctx_t)
_declare("rp_iallreduce", c_int, ctx_t, c_void, c_void, c_size, c_int, c_int,
         P(req_t))
_declare("rp_iallreduce_group", c_int, ctx_t, P(c_void), P(c_void), P(c_size),
         c_size, c_int, c_int, P(AllreduceOpts), P(req_t))
_declare("rp_ibroadcast", c_int, ctx_t, c_void, c_size, c_int, c_int, P(req_t))
_declare("rp_iallgather", c_int, ctx_t, c_void, c_void, c_size, c_int, P(req_t))
_declare("rp_ibarrier", c_int, ctx_t, P(req_t))
_declare("rp_reduce_scatterv", c_int, ctx_t, c_void, c_void, P(c_size), c_int,
         c_int)
_declare("rp_ireduce_scatterv", c_int, ctx_t, c_void, c_void, P(c_size), c_int,
         c_int, P(req_t))
_declare("rp_alltoall", c_int, ctx_t, c_void, c_void, c_size, c_int)
_declare("rp_alltoallv", c_int, ctx_t, c_void, P(c_size), c_void, P(c_size),
         c_int)
_declare("rp_ialltoallv", c_int, ctx_t, c_void, P(c_size), c_void, P(c_size),
         c_int, P(req_t))
_declare("rp_check", c_int, ctx_t, c_u64)
_declare("rp_join", c_int, ctx_t, P(c_int))
_declare("rp_test", c_int, P(req_t), P(c_int))
_declare("rp_wait", c_int, P(req_t))
_declare("rp_region_register", c_int, ctx_t, ctypes.c_char_p, c_void, c_size,
         c_int)
_declare("rp_restore", c_int, ctx_t, P(ctypes.c_char_p), c_size,
         P(RestoreInfo))
_declare("rp_step", c_int, ctx_t, c_u64, P(StepResult))
_declare("rp_checkpoint", c_int, ctx_t, c_u64)
_declare("rp_region_update", c_int, ctx_t, ctypes.c_char_p, c_void, c_size)
_declare("rp_region_unregister", c_int, ctx_t, ctypes.c_char_p)
_declare("rp_ckpt_find", c_int, ctx_t, c_u64, P(CkptDesc))
_declare("rp_ckpt_desc_free", None, P(CkptDesc))
_declare("rp_restore_step", c_int, ctx_t, c_u64, P(ctypes.c_char_p), c_size,
         P(RestoreInfo))
_declare("rp_request_stop", c_int, c_int)
_declare("rp_cuda_set_stream", c_int, ctx_t, c_void)
_declare("rp_cuda_device", c_int, ctx_t, P(c_int))
