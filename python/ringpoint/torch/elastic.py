"""Horovod's elastic API (hvd.elastic), which ringpoint does not implement.

Horovod's elastic mode keeps a job running while workers join and leave:
its driver re-forms the ring and run() replays the training function from
the last commit of a State. A ringpoint job step has a fixed set of ranks
(Slurm's allocation, bootstrapped once over PMIx), so there is no ring to
re-form. Its answer to a lost node or a preemption is the coordinated
checkpoint: every rank commits at a safe point, the job exits with
EXIT_STOPPED or fails, Slurm requeues it, and the next run restores the
last commit. Use ringpoint.torch.Checkpoint (doc/user-guide.md, sections 2
and 4) and submit with --requeue.

The names are here so that a Horovod script fails where it first uses
them, with NotSupportedError (a NotImplementedError) that says this.
"""
from ringpoint._errors import NotSupportedError
from ringpoint.torch import init, shutdown  # noqa: F401  (as Horovod's elastic has them)

_WHY = ("ringpoint.torch.elastic.%s: elastic training (workers joining and "
        "leaving a running job) is not implemented by ringpoint, whose job "
        "step keeps its ranks; for fault tolerance and preemption use "
        "ringpoint.torch.Checkpoint (a coordinated checkpoint, restored when "
        "Slurm requeues the job: sbatch --requeue; doc/user-guide.md)")


def run(func):
    """Horovod's elastic run decorator: raises NotSupportedError (see the
    module's documentation)."""
    raise NotSupportedError(_WHY % "run")


class TorchState:
    """Horovod's elastic state of a model and optimizer: raises
    NotSupportedError; ringpoint.torch.Checkpoint(model=, optimizer=)
    keeps that state across failures and requeues."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        raise NotSupportedError(_WHY % "TorchState")


class ElasticSampler:
    """Horovod's elastic sampler: raises NotSupportedError;
    ringpoint.torch.DistributedSampler, given to a Checkpoint, resumes an
    epoch where the last commit left it."""

    def __init__(self, dataset, shuffle=True, seed=0):
        raise NotSupportedError(_WHY % "ElasticSampler")
