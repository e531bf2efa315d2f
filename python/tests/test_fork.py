"""Processes forked after init (DataLoader workers with the fork start
method, os.fork()) leave ringpoint to the rank: no collective, no
checkpoint, no finalize at exit, and SIGTERM ends them as it would without
ringpoint. The rank goes on as if nothing happened."""
import atexit
import ctypes
import os
import signal
import time

import pytest
import torch

import ringpoint
import ringpoint.torch as hvd
from ringpoint import _lib
from ringpoint._errors import StateError
from ringpoint._runtime import context_handle

_libc = ctypes.CDLL(None, use_errno=True)


def _sigterm_handler():
    """The address of this process's C-level SIGTERM handler (0: SIG_DFL).
    struct sigaction begins with the handler on Linux/glibc."""
    buf = ctypes.create_string_buffer(256)
    assert _libc.sigaction(signal.SIGTERM, None, buf) == 0
    return ctypes.c_void_p.from_buffer(buf).value or 0


def _install_ringpoint_handlers():
    """ringpoint takes SIGTERM when the checkpoint engine starts; any
    checkpoint call starts it (this one finds nothing or fails: no matter)."""
    desc = _lib.CkptDesc()
    _lib.lib.rp_ckpt_find(context_handle("test"), (1 << 64) - 1,
                          ctypes.byref(desc))
    _lib.lib.rp_ckpt_desc_free(ctypes.byref(desc))


def _in_child():
    """What a forked child sees and may do."""
    try:
        hvd.allreduce(torch.ones(1), name="from a child")
        refused = "ran"
    except StateError as e:
        refused = "refused" if "forked from rank process" in str(e) else str(e)
    return {"pid": os.getpid(), "initialized": ringpoint.is_initialized(),
            "allreduce": refused, "handler": _sigterm_handler()}


class _Probe(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, i):
        return _in_child()


def _check_rank_still_works():
    for _ in range(20):
        got = hvd.allreduce(torch.ones(4), op=hvd.Sum)
        assert torch.equal(got, torch.full((4,), float(hvd.size())))
        time.sleep(0.05)


def test_dataloader_fork_workers_leave_ringpoint_alone():
    _install_ringpoint_handlers()
    ours = _sigterm_handler()
    assert ours != 0
    loader = torch.utils.data.DataLoader(
        _Probe(), batch_size=None, num_workers=2,
        multiprocessing_context="fork")
    seen = list(loader)
    assert len(seen) == 8
    assert len({s["pid"] for s in seen}) == 2
    for s in seen:
        assert s["pid"] != os.getpid()
        assert s["initialized"] is False
        assert s["allreduce"] == "refused"
        assert s["handler"] != ours, "a worker kept ringpoint's SIGTERM handler"
    assert ringpoint.is_initialized()
    _check_rank_still_works()


def test_os_fork_child_exits_without_finalizing():
    _install_ringpoint_handlers()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = 0 if _in_child()["allreduce"] == "refused" else 2
            atexit._run_exitfuncs()  # what a normal exit runs: no finalize
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    _check_rank_still_works()


@pytest.mark.parametrize("signo", [signal.SIGTERM, signal.SIGUSR2])
def test_stop_signal_ends_forked_child(signo):
    _install_ringpoint_handlers()
    pid = os.fork()
    if pid == 0:
        try:
            time.sleep(30)
        finally:
            os._exit(0)
    time.sleep(0.2)
    os.kill(pid, signo)
    deadline = time.monotonic() + 10
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("%s did not end the forked child" % signo.name)
        time.sleep(0.05)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signo
    # The rank itself saw no stop.
    _check_rank_still_works()
