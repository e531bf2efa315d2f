"""A ucx.conf in the working directory, written by someone else, does not
reach a process that only imports ringpoint and reads a checkpoint: UCX
(which reads ./ucx.conf when it loads) is not loaded at all before a job of
several ranks communicates. Rank-local: a child process of its own."""
import os
import subprocess
import sys

_CHILD = r"""
import sys
import ringpoint
import ringpoint.torch as hvd
try:
    hvd.load_state_dict(sys.argv[1])
except ringpoint.Error:
    pass                          # an empty directory: nothing to load
with open("/proc/self/maps") as f:
    ucx = sorted({line.split()[-1] for line in f
                  if "/libuc" in line or "ringpoint-ucx" in line})
print("ucx:", " ".join(ucx) or "none")
"""


def _single_process_env():
    # Without the launcher's variables the child is not a rank of this job;
    # without UCX's own variables only the file could set them.
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("PMIX_", "OMPI_", "SLURM_", "PRTE_", "UCX_",
                                 "RINGPOINT_UCX_"))}


def test_import_and_load_state_dict_load_no_ucx(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    (tmp_path / "ucx.conf").write_text(
        "UCX_LOG_LEVEL=trace\nUCX_LOG_FILE=%s\n" % victim)
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    out = subprocess.run([sys.executable, "-c", _CHILD, str(ckpt)],
                         cwd=str(tmp_path), env=_single_process_env(),
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ucx: none" in out.stdout, out.stdout + out.stderr
    assert victim.read_text() == "precious\n"
