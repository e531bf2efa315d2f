"""ringpoint.torch.Checkpoint: every torch LR scheduler resumes with the
same learning rates bit for bit, torch's DistributedSampler resumes at
the exact sample, mistakes are refused when the Checkpoint is made (not
at the first due checkpoint) with the fix named, and step() holds the
loop to its count.

The scheduler and sampler cases go through the metadata exactly as a
checkpoint stores it (_Meta's JSON text) and back into fresh objects, so
they are rank-local; the disk round trip is in the last test."""
import os
import shutil
import tempfile
import warnings

import pytest
import torch
from torch.optim import lr_scheduler as lrs

import ringpoint
import ringpoint.torch as hvd
from ringpoint.torch import checkpoint as ckmod

STEPS, STOP = 14, 5


class _Warmup:
    """A callable object: its attributes are state (as in torch's
    LambdaLR.state_dict()), changed while training."""

    def __init__(self, n):
        self.n = n
        self.calls = 0

    def __call__(self, s):
        self.calls += 1
        return min(1.0, (s + 1) / self.n) * (1.0 + 0.001 * (self.calls % 3))


def _seq_onecycle(o):
    return lrs.SequentialLR(o, [lrs.LinearLR(o, 0.5, total_iters=2),
                                lrs.OneCycleLR(o, max_lr=1.0, total_steps=30)],
                            milestones=[3])


SCHEDULERS = {
    "LambdaLR": lambda o: lrs.LambdaLR(o, lambda s: 0.9 ** s),
    "LambdaLR-object": lambda o: lrs.LambdaLR(o, _Warmup(8)),
    "MultiplicativeLR": lambda o: lrs.MultiplicativeLR(o, lambda s: 0.95),
    "StepLR": lambda o: lrs.StepLR(o, 3, 0.5),
    "MultiStepLR": lambda o: lrs.MultiStepLR(o, [2, 7, 11], 0.5),
    "ConstantLR": lambda o: lrs.ConstantLR(o, factor=0.5, total_iters=7),
    "LinearLR": lambda o: lrs.LinearLR(o, start_factor=0.2, total_iters=9),
    "ExponentialLR": lambda o: lrs.ExponentialLR(o, 0.9),
    "SequentialLR": lambda o: lrs.SequentialLR(
        o, [lrs.ConstantLR(o, 0.5, total_iters=3), lrs.ExponentialLR(o, 0.9)],
        milestones=[7]),
    "SequentialLR-OneCycleLR": _seq_onecycle,
    "CosineAnnealingLR": lambda o: lrs.CosineAnnealingLR(o, T_max=5),
    "ChainedScheduler": lambda o: lrs.ChainedScheduler(
        [lrs.ConstantLR(o, 0.5, total_iters=8), lrs.ExponentialLR(o, 0.9)]),
    "ReduceLROnPlateau": lambda o: lrs.ReduceLROnPlateau(o, patience=1, factor=0.5),
    "CyclicLR-triangular": lambda o: lrs.CyclicLR(o, 0.01, 0.1, step_size_up=3),
    "CyclicLR-triangular2": lambda o: lrs.CyclicLR(o, 0.01, 0.1, step_size_up=2,
                                                   mode="triangular2"),
    "CyclicLR-exp_range": lambda o: lrs.CyclicLR(o, 0.01, 0.1, step_size_up=2,
                                                 mode="exp_range", gamma=0.9),
    "CyclicLR-scale_fn": lambda o: lrs.CyclicLR(o, 0.01, 0.1, step_size_up=2,
                                                scale_fn=lambda x: 0.7 ** x),
    "CosineAnnealingWarmRestarts": lambda o: lrs.CosineAnnealingWarmRestarts(
        o, T_0=3, T_mult=2),
    "OneCycleLR": lambda o: lrs.OneCycleLR(o, max_lr=1.0, total_steps=30),
    "OneCycleLR-linear": lambda o: lrs.OneCycleLR(o, max_lr=1.0, total_steps=30,
                                                  anneal_strategy="linear",
                                                  three_phase=True),
}
if hasattr(lrs, "PolynomialLR"):
    SCHEDULERS["PolynomialLR"] = lambda o: lrs.PolynomialLR(o, total_iters=9, power=2.0)

# ReduceLROnPlateau's metric: better, then worse for a while, then better.
_METRIC = [1.0, 0.9, 0.95, 0.96, 0.97, 0.98, 0.5, 0.6, 0.7, 0.8, 0.9, 0.4, 0.5, 0.6]


def _parts(name):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, opt, SCHEDULERS[name](opt)


def _run(opt, sched, start, stop):
    """The learning rates and momenta after each of steps start..stop-1."""
    out = []
    for i in range(start, stop):
        opt.step()
        if isinstance(sched, lrs.ReduceLROnPlateau):
            sched.step(_METRIC[i])
        else:
            sched.step()
        out.append([(g["lr"], g.get("momentum")) for g in opt.param_groups])
    return out


def _through_meta(ck):
    """The metadata as a restore reads it: the JSON text of the region."""
    meta = ckmod._Meta()
    meta.set(ck._meta_state())
    return meta.get("test")


@pytest.mark.parametrize("name", sorted(SCHEDULERS))
def test_scheduler_resumes_with_the_same_learning_rates(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # SequentialLR's step(0)
        _, opt, sched = _parts(name)
        want = _run(opt, sched, 0, STEPS)

        model, opt, sched = _parts(name)
        got = _run(opt, sched, 0, STOP)
        meta = _through_meta(hvd.Checkpoint(model, opt, sched, rng=False))

        model, opt, sched = _parts(name)     # the requeued run: made again
        ck = hvd.Checkpoint(model, opt, sched, rng=False)
        ck._apply_meta(meta, set(ckmod._PARTS), "test")
        got += _run(opt, sched, STOP, STEPS)
    assert got == want                        # bit for bit: floats compared with ==


def test_onecycle_method_comes_from_the_checkpoint():
    """The annealing method is stored by name: a run made with the other
    strategy gets the checkpoint's (its own object's method)."""
    model, opt, sched = _parts("OneCycleLR")
    _run(opt, sched, 0, STOP)
    meta = _through_meta(hvd.Checkpoint(model, opt, sched, rng=False))
    assert meta["scheduler"]["anneal_func"] == {"rp:method": "_annealing_cos"}
    model, opt, _ = _parts("OneCycleLR")
    sched = lrs.OneCycleLR(opt, max_lr=1.0, total_steps=30, anneal_strategy="linear")
    hvd.Checkpoint(model, opt, sched, rng=False)._apply_meta(meta, {"scheduler"}, "test")
    assert sched.anneal_func.__func__ is lrs.OneCycleLR._annealing_cos
    assert sched.anneal_func.__self__ is sched


def test_a_method_the_scheduler_lacks_is_refused():
    model, opt, sched = _parts("OneCycleLR")
    meta = _through_meta(hvd.Checkpoint(model, opt, sched, rng=False))
    meta["scheduler"]["anneal_func"] = {"rp:method": "__init__x"}
    with pytest.raises(ringpoint.InvalidArgumentError, match="anneal_func.*another scheduler"):
        hvd.Checkpoint(model, opt, sched, rng=False)._apply_meta(meta, {"scheduler"}, "test")


def test_torch_sampler_is_accepted_and_resumes_mid_epoch():
    def sampler():
        return torch.utils.data.DistributedSampler(list(range(50)), num_replicas=3,
                                                   rank=2, seed=4)
    full = sampler()
    full.set_epoch(1)
    want = list(full)

    first = sampler()
    ck = hvd.Checkpoint(sampler=first, rng=False)
    assert isinstance(first, hvd.DistributedSampler) and ck.sampler is first
    first.set_epoch(1)
    it = iter(first)
    got = [next(it) for _ in range(6)]
    meta = _through_meta(ck)

    second = sampler()
    hvd.Checkpoint(sampler=second, rng=False)._apply_meta(meta, {"sampler"}, "test")
    second.set_epoch(1)
    assert len(second) == len(want) - 6
    got += list(second)
    assert got == want


@pytest.mark.parametrize("what, kwargs, fix", [
    ("torch subclass", {"sampler": "subclass"}, "derive it from ringpoint.torch.DistributedSampler"),
    ("RandomSampler", {"sampler": "random"}, r"use ringpoint.torch.DistributedSampler\(dataset"),
    ("no state_dict", {"scheduler": object()}, "pass a torch.optim.lr_scheduler scheduler"),
    ("object in state", {"scheduler": "object"}, r"\['thing'\] is a object.*keep anything else out"),
    ("other optimizer", {"scheduler": "other"}, "Make the scheduler on the optimizer you pass"),
    ("extra", {"extra": [1, 2]}, "pass a dict of plain data"),
    ("extra object", {"extra": {"a": object()}}, "keep plain numbers"),
    ("optimizer", {"optimizer": "model"}, "pass the optimizer you step"),
    ("step_every", {"step_every": 0}, "1 or more"),
    ("step_every float", {"step_every": 1.5}, "an integer, 1 or more"),
])
def test_mistakes_are_refused_at_construction_with_the_fix(what, kwargs, fix):
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    args = {"model": model, "optimizer": opt, "rng": False}

    class Sub(torch.utils.data.DistributedSampler):
        pass

    class Holds(lrs.StepLR):
        def __init__(self, o):
            super().__init__(o, 3)
            self.thing = object()
    made = {"subclass": lambda: Sub(list(range(9)), num_replicas=1, rank=0),
            "random": lambda: torch.utils.data.RandomSampler(range(9)),
            "object": lambda: Holds(opt),
            "other": lambda: lrs.StepLR(torch.optim.SGD(model.parameters(), lr=1), 3),
            "model": lambda: model}
    for k, v in kwargs.items():
        args[k] = made[v]() if isinstance(v, str) else v
    with pytest.raises(ringpoint.InvalidArgumentError, match=fix):
        hvd.Checkpoint(**args)


def test_scheduler_on_the_unwrapped_optimizer_is_accepted():
    """DistributedOptimizer's optimizer shares the param_groups of the one
    it wraps: a scheduler made on either drives the same learning rates."""
    model = torch.nn.Linear(3, 1)
    inner = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = lrs.StepLR(inner, 3)
    opt = hvd.DistributedOptimizer(inner, named_parameters=model.named_parameters())
    hvd.Checkpoint(model, opt, sched, rng=False)


def _contract_error(ck, call, n, *want):
    with pytest.raises(ringpoint.InvalidArgumentError) as e:
        getattr(ck, call)(n)
    text = str(e.value)
    assert "the number of optimizer steps done" in text
    for w in want:
        assert w in text, text


def test_step_before_restore_is_refused():
    ck = hvd.Checkpoint(torch.nn.Linear(2, 1), rng=False)
    _contract_error(ck, "step", 1, "before Checkpoint.restore()", "ckpt.restore()")


@pytest.fixture
def fresh(tmp_path):
    """An empty checkpoint directory (rank 0's, for every rank) the
    runtime is restarted with around the test. Ranks on other nodes do not
    see rank 0's /tmp: under a launcher across nodes, RP_SHARED_TMP names a
    directory they all see (tests/slurm/test_python.sh sets it)."""
    where = None
    if hvd.rank() == 0:
        shared = os.environ.get("RP_SHARED_TMP")
        if shared:
            os.makedirs(shared, exist_ok=True)
            where = tempfile.mkdtemp(prefix="ckpt-", dir=shared)
        else:
            where = str(tmp_path)
    where = hvd.broadcast_object(where, 0)
    os.environ["RINGPOINT_CKPT_DIR"] = where
    hvd.shutdown()
    hvd.init()
    try:
        yield where
    finally:
        del os.environ["RINGPOINT_CKPT_DIR"]
        hvd.shutdown()
        hvd.init()
        if hvd.rank() == 0 and where != str(tmp_path):
            shutil.rmtree(where, ignore_errors=True)


def test_step_count_contract(fresh):
    ck = hvd.Checkpoint(torch.nn.Linear(2, 1), rng=False)
    assert ck.restore() == 0
    _contract_error(ck, "step", 0, "expected 1", "repeat a step", "loop's index")
    _contract_error(ck, "step", 5, "expected 1", "skip 4 step(s)", "step_every=k")
    for n in (1, 2, 3):                     # the correct loop
        assert ck.step(n) is False
    _contract_error(ck, "step", 3, "after the previous step() at step 3", "expected 4")
    _contract_error(ck, "step", 2, "goes back by 1")
    _contract_error(ck, "step", 9, "skip 5 step(s)")
    _contract_error(ck, "step", 4.0, "must be an integer")
    ck.save(3)                               # the state step(3) saw
    _contract_error(ck, "save", 2, "goes back")
    assert ck.step(torch.tensor(4)) is False


def test_step_every(fresh):
    ck = hvd.Checkpoint(torch.nn.Linear(2, 1), rng=False, step_every=4)
    assert ck.restore() == 0
    ck.step(4)
    ck.step(6)                               # at most 4 past the previous
    _contract_error(ck, "step", 11, "expected 7 to 10 (step_every=4)", "jump of 5")
    _contract_error(ck, "step", 6, "repeat a step")


def test_resume_checks_the_first_step_and_restores_the_scheduler(fresh):
    """Through the disk: restore() returns the count, the first step()
    must be one more, and the scheduler (OneCycleLR, whose method could
    not be stored before) and torch's sampler continue as uninterrupted."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, opt, sched = _parts("SequentialLR-OneCycleLR")
        want = _run(opt, sched, 0, STEPS)

        model, opt, sched = _parts("SequentialLR-OneCycleLR")
        ck = hvd.Checkpoint(model, opt, sched, rng=False)
        assert ck.restore() == 0
        got = []
        for n in range(1, STOP + 1):
            got += _run(opt, sched, n - 1, n)
            ck.step(n)
        ck.save(STOP)
        del ck
        hvd.shutdown()
        hvd.init()

        model, opt, sched = _parts("SequentialLR-OneCycleLR")
        ck = hvd.Checkpoint(model, opt, sched, rng=False)
        assert ck.restore() == STOP
        _contract_error(ck, "step", STOP, "after restore() at step %d" % STOP,
                        "expected %d" % (STOP + 1))
        _contract_error(ck, "step", STOP + 6, "skip 5 step(s)")
        for n in range(STOP + 1, STEPS + 1):
            got += _run(opt, sched, n - 1, n)
            ck.step(n)
    assert got == want


def _guide_loop(ckpt, model, opt, sched, sampler, loader, step, stop_at, total):
    """The user guide's loop; returns at @stop_at after saving (a stop)."""
    steps_per_epoch = sampler.num_samples // 4
    while step < total:
        sampler.set_epoch(step // steps_per_epoch)
        for x in loader:
            opt.zero_grad()
            (model(x.float().unsqueeze(1)) ** 2).mean().backward()
            opt.step()
            sched.step()
            step += 1
            ckpt.step(step)
            if step == stop_at:
                ckpt.save(step)
                return step
            if step == total:
                break
    return step


def test_guide_loop_with_torch_sampler_resumes_bitwise(fresh):
    """The user guide's loop with torch's own DistributedSampler, stopped
    mid-epoch and resumed, ends with the uninterrupted run's model."""
    def make():
        torch.manual_seed(1)
        model = torch.nn.Linear(1, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        sched = lrs.OneCycleLR(opt, max_lr=0.05, total_steps=40)
        sampler = torch.utils.data.DistributedSampler(torch.arange(30), num_replicas=1,
                                                      rank=0, seed=5)
        loader = torch.utils.data.DataLoader(torch.arange(30), batch_size=4,
                                             sampler=sampler, drop_last=True)
        ckpt = hvd.Checkpoint(model, opt, sched, sampler)
        return ckpt, model, opt, sched, sampler, loader

    parts = make()
    assert _guide_loop(*parts, parts[0].restore(), None, 20) == 20
    want = [t.clone() for t in parts[1].parameters()]
    del parts
    hvd.shutdown()                           # its regions go with it
    hvd.init()

    parts = make()
    assert _guide_loop(*parts, parts[0].restore(), 10, 20) == 10   # 3 of epoch 1's 7
    del parts
    hvd.shutdown()
    hvd.init()
    parts = make()
    start = parts[0].restore()
    assert start == 10 and len(parts[4]) == 30 - 12
    assert _guide_loop(*parts, start, None, 20) == 20
    for a, b in zip(parts[1].parameters(), want):
        assert torch.equal(a, b)
