"""Start-up traps, each in a child Python of its own (its environment and
signal handlers are the test's): a program that a batch script started
without srun is refused with the reason in the exception, and a Python
SIGTERM handler installed before init is reported once, by name, and
still called after ringpoint's record of the stop."""
import os
import subprocess
import sys


def _single_process_env(**extra):
    # Without the launcher's variables the child is not a rank of this job.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMIX_", "OMPI_", "SLURM_", "PRTE_",
                                "RINGPOINT_"))
           and k not in ("WORLD_SIZE", "PMI_SIZE")}
    env.update(extra)
    return env


def _run(code, env, cwd=None):
    return subprocess.run([sys.executable, "-c", code], env=env, cwd=cwd,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=120)


# What sbatch -N2 -n3 gives the batch script: a job, three tasks, no step.
_BATCH = dict(SLURM_JOB_ID="4242", SLURM_JOBID="4242", SLURM_NTASKS="3",
              SLURM_NPROCS="3", SLURM_JOB_NUM_NODES="2", SLURM_NNODES="2")

_INIT = r"""
import ringpoint
try:
    ringpoint.init()
except ringpoint.BootstrapError as exc:
    print("refused:", exc)
else:
    print("size", ringpoint.size())
"""


def test_batch_script_without_srun_raises_with_the_reason():
    r = _run(_INIT, _single_process_env(**_BATCH))
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("refused: ringpoint.init: "), out
    assert "started without srun: Slurm job 4242 has 3 tasks on 2 nodes" in out
    assert "rank 0 of 1" in out
    assert "srun --mpi=pmix" in out
    assert "RINGPOINT_ALLOW_SINGLE=1" in out
    # The library's own line on stderr says the same.
    assert "started without srun" in r.stderr


def test_batch_script_alone_on_purpose_runs():
    r = _run(_INIT, _single_process_env(RINGPOINT_ALLOW_SINGLE="1", **_BATCH))
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "size 1", r.stdout + r.stderr
    code = "import ringpoint\nringpoint.init(single=True)\nprint('size', ringpoint.size())"
    r = _run(code, _single_process_env(**_BATCH))
    assert r.stdout.strip() == "size 1", r.stdout + r.stderr


def test_srun_step_of_one_task_runs():
    r = _run(_INIT, _single_process_env(SLURM_STEP_ID="0",
                                        SLURM_STEP_NUM_TASKS="1",
                                        **dict(_BATCH, SLURM_NTASKS="1")))
    assert r.stdout.strip() == "size 1", r.stdout + r.stderr


_HANDLER = r"""
import os, signal, sys
import torch
import ringpoint, ringpoint.torch as rpt

def on_term(signo, frame):
    print("on_term called", flush=True)

signal.signal(signal.SIGTERM, on_term)
rpt.init()
model = torch.nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
ckpt = rpt.Checkpoint(model=model, optimizer=opt)
ckpt.restore()
stopped = False
for step in range(1, 6):
    if step == 3:
        os.kill(os.getpid(), signal.SIGTERM)
    if ckpt.step(step):
        stopped = True
        break
print("stopped at", step, stopped, flush=True)
"""


def test_python_handler_before_init_is_named_once(tmp_path):
    r = _run(_HANDLER, _single_process_env(
        RINGPOINT_CKPT_DIR=str(tmp_path / "ckpt"), RINGPOINT_CKPT_INTERVAL="0"),
        cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    # ringpoint recorded the stop (a checkpoint, the loop ends), and the
    # user's handler still ran.
    assert "on_term called" in r.stdout
    assert "stopped at 3 True" in r.stdout, r.stdout + r.stderr
    told = [line for line in r.stderr.splitlines() if "handler" in line]
    assert len(told) == 1, r.stderr
    line = told[0]
    assert "a Python handler for SIGTERM, __main__.on_term()" in line
    assert "records the stop for its checkpoint, then calls it" in line
    # No address, and no advice that cannot apply to SIGTERM.
    assert "0x" not in r.stderr
    assert "--ckpt-signal" not in r.stderr
