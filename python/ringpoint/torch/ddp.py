"""A communication hook for PyTorch's DistributedDataParallel.

    model = DDP(model)                                   # any process group
    model.register_comm_hook(None, ringpoint.torch.ddp_comm_hook)

DDP hands each gradient bucket to the hook as backward() fills it; the hook
starts a non-blocking ringpoint allreduce (average) in place on the
bucket's flat buffer and returns a torch.futures.Future that a waiter
thread completes when the library's progress thread is done, so the
reduction overlaps the rest of backward() as with DDP's own allreduce.
The process group only serves DDP's start-up (its broadcast of the model);
its ranks must be ringpoint's.
"""
import ctypes
import queue
import threading

import torch

from ringpoint import _lib, _runtime
from ringpoint._errors import InvalidArgumentError, check
from ringpoint._runtime import context_handle, size
from ringpoint.torch import mpi_ops
from ringpoint.torch.compression import Compression

lib = _lib.lib


class _Waiter:
    """One thread that waits for requests (GIL released) and completes
    their futures, in the order they were started."""

    def __init__(self):
        self._q = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def submit(self, req, fut, value, what):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run,
                                                name="ringpoint-ddp-waiter",
                                                daemon=True)
                self._thread.start()
                _runtime._finalizers.append(self.stop)
        self._q.put((req, fut, value, what))

    def _run(self):
        while True:
            item = self._q.get()
            if item is None:
                return
            req, fut, value, what = item
            status = lib.rp_wait(ctypes.byref(req))
            try:
                check(status, what)
            except Exception as exc:  # noqa: BLE001 - handed to the future
                fut.set_exception(exc)
            else:
                fut.set_result(value)

    def stop(self):
        with self._lock:
            t, self._thread = self._thread, None
            if t is not None:
                _runtime._finalizers.remove(self.stop)
        if t is not None:
            self._q.put(None)
            t.join()


_waiter = _Waiter()


def make_ddp_comm_hook(compression=Compression.none):
    """A DDP communication hook that averages each bucket through
    ringpoint; @compression (Compression.fp16/.bf16) sends float32
    gradients at half width."""
    def hook(state, bucket):
        what = "ddp_comm_hook"
        if state is not None and hasattr(state, "size") and state.size() != size():
            raise InvalidArgumentError(
                "%s: DDP's process group has %d ranks, ringpoint %d"
                % (what, state.size(), size()))
        t = bucket.buffer()
        dt = mpi_ops._dtype(t, what)
        one = ctypes.c_void_p(t.data_ptr())
        count = ctypes.c_size_t(t.numel())
        opts = _lib.AllreduceOpts(compression.wire_format(dt))
        req = _lib.req_t()
        check(lib.rp_iallreduce_group(context_handle(what), ctypes.byref(one),
                                      ctypes.byref(one), ctypes.byref(count), 1,
                                      dt, mpi_ops.Average, ctypes.byref(opts),
                                      ctypes.byref(req)), what)
        fut = torch.futures.Future()
        _waiter.submit(req, fut, t, what)
        return fut
    return hook


#: Average DDP's gradient buckets through ringpoint (no compression).
ddp_comm_hook = make_ddp_comm_hook()
