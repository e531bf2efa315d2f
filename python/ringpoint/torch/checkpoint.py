"""Checkpointing PyTorch training state through libringpoint.

    ckpt = ringpoint.torch.Checkpoint(model=model, optimizer=opt,
                                      scheduler=sched, sampler=sampler)
    start = ckpt.restore()                  # completed steps; 0: fresh
    for step in range(start, steps):
        train_one_step()
        if ckpt.step(step + 1):             # collective, cheap when nothing is due
            sys.exit(ringpoint.EXIT_STOPPED)

The constructor checks what it is given (each part's kind, that its state
can be stored, where its tensors live), so that a mistake is an error
there, not at the first due checkpoint. step() checks the count it is
given: the steps done, one more at each call (see Checkpoint.step).

What is stored, as libringpoint regions (no copies, no pickle):
- ``m/<key>``: each tensor of ``model.state_dict()``, replicated (striped
  across the ranks' shards, restorable on any world size);
- ``o/<index>/<key>/<dtype>/<shape>``: each tensor of the optimizer's state
  (created lazily by its first step: registered when it appears), the dtype
  and shape in the name so a fresh optimizer can be given its state back;
- ``rp/meta``: JSON (replicated, so it must be the same on every rank): the
  step, the optimizer's hyper-parameters and non-tensor state, the
  scheduler's, the sampler's and ``extra``'s state_dict(); a checkpoint can
  never run code when it is loaded;
- ``rp/rng``: this rank's RNG states (torch, NumPy, ``random``), per rank:
  restored only on the same world size.
Before each rp_step the regions are matched against the live tensors: a
tensor that moved (load_state_dict, .to(), a new optimizer state) is
re-registered at its new address, never read from the old one.
"""
import array
import ctypes
import json
import operator
import random
import signal
import struct
import warnings

import torch

from ringpoint import _lib
from ringpoint.torch import _state
from ringpoint._errors import (CorruptError, InvalidArgumentError,
                               NotFoundError, check)
from ringpoint._runtime import context_handle, init, is_initialized, rank, size

lib = _lib.lib
REPLICATED, PER_RANK = 0, 1
NAME_MAX = 128
_PARTS = ("model", "optimizer", "scheduler", "sampler", "rng", "extra")


def _bytes_of(t):
    return t.numel() * t.element_size()


def _dtype_name(dt):
    return str(dt).split(".")[-1]


# What a checkpoint's metadata may ask this process to allocate. The region
# sizes come from the C library's verdict (checked against the shards'
# lengths); the JSON metadata and the optimizer's region names are only
# text, so a crafted checkpoint could ask for any dtype or shape. Each is
# checked against the verified size before a byte is allocated.
_META_MAX = 64 << 20       # the JSON region: far above any real model's
_DIMS_MAX = 64             # torch's own limit on a tensor's dimensions


def _corrupt(where, what):
    return CorruptError("%s: %s" % (where, what), CorruptError.status)


def _tensor_spec(where, rname, dtype, shape, nbytes):
    """(torch dtype, shape tuple) of region @rname as the checkpoint at
    @where describes it, if that is a real torch dtype and a shape whose
    bytes are exactly @nbytes (the region's verified size); else
    CorruptError naming @where and the region."""
    dt = None
    if isinstance(dtype, str) and dtype.isidentifier() and not dtype.startswith("_"):
        dt = getattr(torch, dtype, None)
    if not isinstance(dt, torch.dtype):
        raise _corrupt(where, "region %s: %.64r is not a torch dtype" % (rname, dtype))
    if (not isinstance(shape, (list, tuple)) or len(shape) > _DIMS_MAX or
            not all(type(d) is int and 0 <= d < 1 << 62 for d in shape)):
        raise _corrupt(where, "region %s: %.128r is not a tensor shape" % (rname, shape))
    try:
        want = torch.empty((), dtype=dt).element_size()
    except (RuntimeError, TypeError):
        raise _corrupt(where, "region %s: %s tensors cannot be restored" % (rname, dtype))
    for d in shape:
        want *= d
    if want != nbytes:
        raise _corrupt(where, "region %s: a %s tensor of shape %s has %d bytes, "
                       "the checkpoint holds %d" % (rname, dtype, list(shape), want,
                                                    nbytes))
    return dt, tuple(shape)


def _digits(text, most):
    return 0 < len(text) <= most and all(c in "0123456789" for c in text)


def _opt_region(where, rname):
    """(parameter index, key, dtype name, shape list) from an optimizer
    region's name "o/<index>/<key>/<dtype>/<shape>"; CorruptError when it
    does not have that form."""
    parts = rname.split("/", 2)
    tail = parts[2].rsplit("/", 2) if len(parts) == 3 else []
    if len(tail) != 3 or not _digits(parts[1], 9):
        raise _corrupt(where, "region %s is not an optimizer state's name" % rname)
    key, dtype, dims = tail
    dims = dims.split("x") if dims else []
    if not key or not all(_digits(d, 18) for d in dims):
        raise _corrupt(where, "region %s is not an optimizer state's name" % rname)
    return int(parts[1]), key, dtype, [int(d) for d in dims]


def _meta_size(where, nbytes):
    if not 0 < nbytes <= _META_MAX:
        raise _corrupt(where, "its metadata region is %d bytes (at most %d)"
                       % (nbytes, _META_MAX))
    return nbytes


class _Region:
    __slots__ = ("name", "kind", "addr", "size", "keep")

    def __init__(self, name, kind, addr, size, keep):
        self.name, self.kind, self.addr, self.size, self.keep = \
            name, kind, addr, size, keep


class _RNG:
    """This rank's RNG states in one fixed-size binary buffer."""
    _TAIL = struct.Struct("<qqdqqd")   # np pos, has_gauss, cached; py version, has_gauss, gauss

    def __init__(self):
        self.np = None
        try:
            import numpy
            self.np = numpy
        except ImportError:
            pass
        self.torch_len = torch.get_rng_state().numel()
        self.size = self.torch_len + 624 * 4 + 625 * 4 + self._TAIL.size
        self.buf = torch.zeros(self.size, dtype=torch.uint8)

    def capture(self):
        b = self.buf
        b[:self.torch_len].copy_(torch.get_rng_state())
        o = self.torch_len
        npos, nhas, ncached = 0, 0, 0.0
        if self.np is not None:
            _, keys, npos, nhas, ncached = self.np.random.get_state()
            b[o:o + 2496].copy_(torch.from_numpy(keys.astype("<u4").view("u1")))
        o += 2496
        version, internal, gauss = random.getstate()
        b[o:o + 2500].copy_(torch.frombuffer(bytearray(array.array("I", internal).tobytes()),
                                             dtype=torch.uint8))
        o += 2500
        tail = self._TAIL.pack(npos, nhas, ncached, version,
                               gauss is not None, gauss or 0.0)
        b[o:].copy_(torch.frombuffer(bytearray(tail), dtype=torch.uint8))

    def apply(self):
        b = self.buf
        torch.set_rng_state(b[:self.torch_len].clone())
        o = self.torch_len
        keys = b[o:o + 2496].numpy().view("<u4").copy()
        o += 2496
        internal = array.array("I", b[o:o + 2500].numpy().tobytes())
        o += 2500
        npos, nhas, ncached, version, has_g, gauss = self._TAIL.unpack(
            b[o:].numpy().tobytes())
        if self.np is not None:
            self.np.random.set_state(("MT19937", keys, npos, nhas, ncached))
        random.setstate((version, tuple(internal), gauss if has_g else None))


class _Meta:
    """The JSON region; padded with spaces to a power of two so that its
    size (and so the region table) changes rarely."""

    def __init__(self):
        self.buf = None
        self.text = b""

    def set(self, obj):
        text = json.dumps(obj, separators=(",", ":"), sort_keys=True,
                          allow_nan=True).encode()
        cap = 4096
        while cap < len(text):
            cap *= 2
        if self.buf is None or self.buf.numel() != cap:
            self.buf = torch.empty(cap, dtype=torch.uint8)
        if text != self.text:
            self.buf.fill_(0x20)
            self.buf[:len(text)].copy_(torch.frombuffer(bytearray(text),
                                                        dtype=torch.uint8))
            self.text = text

    def get(self, where="the checkpoint"):
        try:
            obj = json.loads(bytes(self.buf.numpy()).decode())
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            raise _corrupt(where, "its metadata is not JSON (%s)" % e)
        if not isinstance(obj, dict):
            raise _corrupt(where, "its metadata is not a JSON object")
        return obj


def _jsonable(obj, what):
    """@obj if JSON can carry it (tuples become lists), else a clear error:
    a checkpoint stores no pickle."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v, what) for v in obj]
    if isinstance(obj, dict):
        return {str(k): _jsonable(v, what) for k, v in obj.items()}
    if isinstance(obj, torch.Tensor) and obj.numel() == 1:
        return obj.item()
    raise InvalidArgumentError(
        "Checkpoint: %s holds a %s, which a checkpoint cannot store (it keeps "
        "no pickle, so that loading one can never run code); keep plain "
        "numbers, strings, lists and dicts there" % (what, type(obj).__name__))


def _check_tensor(name, t):
    if t.device.type != "cpu" and not t.is_cuda:
        raise InvalidArgumentError(
            "Checkpoint: %s is on %s; keep the state on the CPU or a CUDA "
            "device" % (name, t.device))
    if not t.is_contiguous():
        raise InvalidArgumentError(
            "Checkpoint: %s is not contiguous; its storage cannot be "
            "registered without a copy (make it with .contiguous() where the "
            "model or optimizer creates it)" % name)


def _has_state(obj):
    return (callable(getattr(obj, "state_dict", None)) and
            callable(getattr(obj, "load_state_dict", None)))


_SCHED_FIX = ("a scheduler's state may hold numbers, strings, lists, dicts, "
              "its own methods, functions and callable objects (see "
              "ringpoint.torch._state); keep anything else out of its __dict__")


def _resumable_sampler(sampler):
    """@sampler as Checkpoint keeps it: torch's DistributedSampler becomes
    ours in place (same order; it then records its position); one without
    state_dict()/load_state_dict() is refused with the fix."""
    from ringpoint.torch.data import DistributedSampler
    if sampler is None or isinstance(sampler, DistributedSampler):
        return sampler
    if type(sampler) is torch.utils.data.DistributedSampler:
        return DistributedSampler._adopt(sampler)
    if _has_state(sampler):
        return sampler
    if isinstance(sampler, torch.utils.data.DistributedSampler):
        raise InvalidArgumentError(
            "Checkpoint: sampler= is a %s, a subclass of "
            "torch.utils.data.DistributedSampler without state_dict() and "
            "load_state_dict(), so a resumed run would start its epoch again; "
            "derive it from ringpoint.torch.DistributedSampler instead (the "
            "same arguments and order of samples, and it records its position "
            "in the epoch)" % type(sampler).__name__)
    raise InvalidArgumentError(
        "Checkpoint: sampler= is a %s, which has no state_dict() and "
        "load_state_dict(), so a resumed run could not continue where this "
        "one stopped; use ringpoint.torch.DistributedSampler(dataset, "
        "shuffle=..., seed=...) (torch's DistributedSampler's arguments; "
        "num_replicas and rank come from ringpoint) and give it to the "
        "DataLoader, or give your sampler both methods" % type(sampler).__name__)


def _step_number(step, call):
    try:
        return operator.index(step)
    except TypeError:
        pass
    if isinstance(step, torch.Tensor) and step.numel() == 1 and \
            not step.is_floating_point():
        return int(step.item())
    raise InvalidArgumentError(
        "Checkpoint.%s(%r): the step must be an integer, the number of "
        "optimizer steps done" % (call, step))


_CONTRACT = ("Checkpoint.step(n) takes n = the number of optimizer steps done, "
             "counting the one just finished: start = ckpt.restore(), then "
             "for i in range(start, total): train one step; ckpt.step(i + 1)")


def _like(template, value):
    """JSON's lists back to the tuples the template had."""
    if isinstance(template, tuple) and isinstance(value, list):
        return tuple(value)
    return value


class Checkpoint:
    """Periodic and stop checkpoints of a PyTorch training loop; see the
    module's documentation. Every argument is optional.

    @model, @optimizer: their tensors are stored without copies.
    @scheduler, @sampler, @extra: anything with state_dict() /
    load_state_dict() whose state is plain data (numbers, strings, lists,
    dicts), or for @extra a dict (updated in place on restore).
    @scheduler: any torch.optim.lr_scheduler scheduler: its methods are
    stored by name, functions (LambdaLR's lambdas, a CyclicLR scale_fn)
    are the ones the script makes again (see ringpoint.torch._state).
    @sampler: ringpoint.torch.DistributedSampler resumes at the exact
    sample (see ringpoint.torch.data); torch's DistributedSampler is made
    one in place.
    @rng: store this rank's torch / NumPy / random states (default True).
    @step_every: the loop calls step() every this many optimizer steps
    (default 1): each call's count is then at most this far past the
    previous one instead of exactly one past it.

    Each part is checked here (its kind, that its state can be stored,
    where its tensors live): InvalidArgumentError names what to change.
    """

    def __init__(self, model=None, optimizer=None, scheduler=None,
                 sampler=None, extra=None, rng=True, step_every=1):
        if not is_initialized():
            init()
        try:
            every = operator.index(step_every)
        except TypeError:
            every = 0
        if every < 1:
            raise InvalidArgumentError(
                "Checkpoint: step_every=%r; it is how many optimizer steps "
                "apart the loop calls step(): an integer, 1 or more" % (step_every,))
        self.model, self.optimizer, self.scheduler = model, optimizer, scheduler
        self.sampler, self.extra = _resumable_sampler(sampler), extra
        self._rng = _RNG() if rng else None
        self._meta = _Meta()
        self._regions = {}          # name -> _Region, as libringpoint has it
        self._restored = False
        self._step = 0
        self._every = every
        self._last_step = None      # restore()'s count, then each step()'s
        self._last_call = None      # which call set it, for the messages
        self._sigterm = None
        self.last = None            # the last rp_step's result
        self._check_parts()

    def _check_parts(self):
        """What would otherwise fail at the first due checkpoint, checked
        now: each part's kind, that its state converts to what the
        checkpoint stores, and where its tensors live."""
        if self.model is not None and not callable(getattr(self.model, "state_dict", None)):
            raise InvalidArgumentError(
                "Checkpoint: model= is a %s, which has no state_dict(); pass the "
                "torch.nn.Module (or its DistributedDataParallel wrapper)"
                % type(self.model).__name__)
        if self.optimizer is not None and not (
                isinstance(getattr(self.optimizer, "param_groups", None), list) and
                isinstance(getattr(self.optimizer, "state", None), dict)):
            raise InvalidArgumentError(
                "Checkpoint: optimizer= is a %s, not a torch.optim.Optimizer; "
                "pass the optimizer you step (the one DistributedOptimizer "
                "returned)" % type(self.optimizer).__name__)
        if self.scheduler is not None:
            if not _has_state(self.scheduler):
                raise InvalidArgumentError(
                    "Checkpoint: scheduler= is a %s, which has no state_dict() "
                    "and load_state_dict(); pass a torch.optim.lr_scheduler "
                    "scheduler, or an object with both" % type(self.scheduler).__name__)
            self._check_scheduler_optimizer()
        if self.extra is not None and not (isinstance(self.extra, dict) or
                                           _has_state(self.extra)):
            raise InvalidArgumentError(
                "Checkpoint: extra= is a %s; pass a dict of plain data, or an "
                "object with state_dict() and load_state_dict()"
                % type(self.extra).__name__)
        model_state = self.model.state_dict() if self.model is not None else None
        self._meta_state(model_state)
        for name, (_, t) in self._wanted(with_meta=False, model_state=model_state).items():
            _check_tensor(name, t)

    def _check_scheduler_optimizer(self):
        """A scheduler made on another optimizer (the one before
        DistributedOptimizer wrapped it shares its param_groups, and is
        fine) sets learning rates that the optimizer given never uses."""
        theirs = getattr(self.scheduler, "optimizer", None)
        if self.optimizer is None or theirs is None or theirs is self.optimizer:
            return
        groups = getattr(theirs, "param_groups", None)
        if not isinstance(groups, list):
            return
        ours = [id(g) for g in self.optimizer.param_groups]
        if not any(id(g) in ours for g in groups):
            raise InvalidArgumentError(
                "Checkpoint: the scheduler (%s) was made on another optimizer "
                "than optimizer=, and they share no param_groups: its learning "
                "rates never reach the optimizer that is stepped. Make the "
                "scheduler on the optimizer you pass (the one "
                "DistributedOptimizer returned): %s(opt, ...)"
                % (type(self.scheduler).__name__, type(self.scheduler).__name__))

    # ------------------------------------------------------------ the table

    def _params(self):
        if self.optimizer is None:
            return []
        return [p for g in self.optimizer.param_groups for p in g["params"]]

    def _wanted(self, with_meta=True, model_state=None):
        """name -> (kind, tensor) for everything stored now."""
        want = {}
        if self.model is not None:
            if model_state is None:
                model_state = self.model.state_dict()
            for key, t in model_state.items():
                want[self._name("m/" + key)] = (REPLICATED, t)
        if self.optimizer is not None:
            for i, p in enumerate(self._params()):
                for key, t in self.optimizer.state.get(p, {}).items():
                    if isinstance(t, torch.Tensor) and t.dim() > 0:
                        want[self._opt_name(i, key, t)] = (REPLICATED, t)
        if with_meta:
            want["rp/meta"] = (REPLICATED, self._meta.buf)
        if self._rng is not None:
            want["rp/rng"] = (PER_RANK, self._rng.buf)
        return want

    _names = {}

    @classmethod
    def _name(cls, name):
        """@name as a region name: itself when it fits the rule (1 to 128
        printable characters, no space), else a hash of it (computed once)."""
        out = cls._names.get(name)
        if out is None:
            if len(name) <= NAME_MAX and all(0x21 <= ord(c) <= 0x7e for c in name):
                out = name
            else:
                import hashlib
                out = name[:2] + "~" + hashlib.blake2b(name.encode(),
                                                      digest_size=16).hexdigest()
            cls._names[name] = out
        return out

    _opt_names = {}

    @classmethod
    def _opt_name(cls, index, key, t):
        k = (index, key, t.dtype, t.shape)
        name = cls._opt_names.get(k)
        if name is not None:
            return name
        name = "o/%d/%s/%s/%s" % (index, key, _dtype_name(t.dtype),
                                  "x".join(str(d) for d in t.shape))
        if len(name) > NAME_MAX or not all(0x21 <= ord(c) <= 0x7e for c in name):
            raise InvalidArgumentError(
                "Checkpoint: optimizer state %r of parameter %d: its region "
                "name %r is longer than %d characters" % (key, index, name,
                                                          NAME_MAX))
        cls._opt_names[k] = name
        return name

    def _sync(self, want):
        """Make libringpoint's table what @want says (same calls on every
        rank: the state is the same everywhere)."""
        ctx = context_handle("Checkpoint")
        for name in [n for n in self._regions if n not in want]:
            check(lib.rp_region_unregister(ctx, name.encode()),
                  "Checkpoint: unregister %s" % name)
            del self._regions[name]
        for name, (kind, t) in want.items():
            _check_tensor(name, t)
            addr, nbytes = t.data_ptr(), _bytes_of(t)
            r = self._regions.get(name)
            if r is None:
                check(lib.rp_region_register(ctx, name.encode(), addr, nbytes, kind),
                      "Checkpoint: register %s" % name)
                self._regions[name] = _Region(name, kind, addr, nbytes, t)
            elif r.addr != addr or r.size != nbytes:
                check(lib.rp_region_update(ctx, name.encode(), addr, nbytes),
                      "Checkpoint: update %s" % name)
                r.addr, r.size, r.keep = addr, nbytes, t
            else:
                r.keep = t

    # ------------------------------------------------------------ meta

    def _meta_state(self, model_state=None):
        meta = {"version": 1, "step": self._step, "world_size": size()}
        if self.model is not None:
            if model_state is None:
                model_state = self.model.state_dict()
            meta["model"] = {k: [_dtype_name(t.dtype), list(t.shape)]
                             for k, t in model_state.items()}
        if self.optimizer is not None:
            params = self._params()
            groups = [{k: _jsonable(v, "optimizer.param_groups")
                       for k, v in g.items() if k != "params"}
                      for g in self.optimizer.param_groups]
            scalars = {}
            for i, p in enumerate(params):
                for key, v in self.optimizer.state.get(p, {}).items():
                    if not (isinstance(v, torch.Tensor) and v.dim() > 0):
                        if isinstance(v, torch.Tensor):
                            scalars["%d/%s" % (i, key)] = {
                                "tensor": _dtype_name(v.dtype), "value": v.item()}
                        else:
                            scalars["%d/%s" % (i, key)] = {
                                "value": _jsonable(v, "optimizer state")}
            meta["optimizer"] = {"param_groups": groups, "scalars": scalars}
        if self.scheduler is not None:
            meta["scheduler"] = _state.encode(self.scheduler.state_dict(),
                                              "scheduler", _SCHED_FIX)
        if self.sampler is not None:
            meta["sampler"] = _jsonable(self.sampler.state_dict(), "sampler")
        if self.extra is not None:
            state = self.extra.state_dict() if hasattr(self.extra, "state_dict") \
                else self.extra
            meta["extra"] = _jsonable(state, "extra")
        return meta

    def _apply_meta(self, meta, parts, where):
        if self.optimizer is not None and "optimizer" in parts and "optimizer" in meta:
            om = meta["optimizer"]
            for g, saved in zip(self.optimizer.param_groups, om["param_groups"]):
                for k, v in saved.items():
                    g[k] = _like(g.get(k), v)
            params = self._params()
            for name, s in om["scalars"].items():
                i, key = name.split("/", 1)
                st = self.optimizer.state[params[int(i)]]
                if "tensor" in s:
                    st[key] = torch.tensor(s["value"], dtype=getattr(torch, s["tensor"]))
                else:
                    st[key] = s["value"]
        if self.scheduler is not None and "scheduler" in parts and "scheduler" in meta:
            self.scheduler.load_state_dict(_state.revive(
                self.scheduler.state_dict(), meta["scheduler"], where))
        if self.sampler is not None and "sampler" in parts and "sampler" in meta:
            self.sampler.load_state_dict(meta["sampler"])
        if self.extra is not None and "extra" in parts and "extra" in meta:
            if hasattr(self.extra, "load_state_dict"):
                self.extra.load_state_dict(meta["extra"])
            else:
                self.extra.clear()
                self.extra.update(meta["extra"])

    # ------------------------------------------------------------ restore

    def restore(self, only=None):
        """Load the newest complete checkpoint (collective) and return the
        step it was taken at (0 when there is none: start fresh).

        @only: restore just these parts, e.g. ``("model",)`` for fine-tuning
        or inference: "model", "optimizer", "scheduler", "sampler", "rng",
        "extra". A checkpoint that fails its checks on any rank is refused
        and the next older one used.
        """
        parts = set(_PARTS if only is None else only)
        bad = parts - set(_PARTS)
        if bad:
            raise InvalidArgumentError("Checkpoint.restore: unknown part(s) %s "
                                       "(known: %s)" % (sorted(bad), ", ".join(_PARTS)))
        ctx = context_handle("Checkpoint.restore")
        before = (1 << 64) - 1
        while True:
            desc = _lib.CkptDesc()
            status = lib.rp_ckpt_find(ctx, before, ctypes.byref(desc))
            if status == NotFoundError.status:
                self._restored = True
                self._last_step, self._last_call = 0, "restore() (no checkpoint)"
                return 0
            check(status, "Checkpoint.restore")
            try:
                step = desc.step
                table = {desc.regions[i].name.decode(): (desc.regions[i].kind,
                                                          desc.regions[i].size)
                         for i in range(desc.nregions)}
                same_size = desc.world_size == size()
                where = "Checkpoint.restore: " + desc.path.decode(errors="replace")
            finally:
                lib.rp_ckpt_desc_free(ctypes.byref(desc))
            names = self._plan(table, parts, same_size, where)
            arr = (ctypes.c_char_p * len(names))(*[n.encode() for n in names])
            info = _lib.RestoreInfo()
            status = lib.rp_restore_step(ctx, step, arr, len(names), ctypes.byref(info))
            if status == CorruptError.status:
                before = step
                continue
            check(status, "Checkpoint.restore")
            break
        meta = self._meta.get(where)
        self._apply_meta(meta, parts, where)
        if self._rng is not None and "rp/rng" in names:
            self._rng.apply()
        elif self._rng is not None and "rng" in parts and rank() == 0:
            warnings.warn("ringpoint: the checkpoint of step %d was written by %d "
                          "ranks and this job has %d: RNG states are per rank and "
                          "were not restored" % (step, meta.get("world_size", -1), size()))
        self._step = int(meta.get("step", step))
        self._restored = True
        self._last_step, self._last_call = self._step, "restore()"
        return self._step

    def _plan(self, table, parts, same_size, where):
        """Register what the checkpoint of @table holds (allocating the
        optimizer's state and the meta buffer as it says, once each is
        checked against the region's verified size); the names to
        restore."""
        names = []
        want = {}
        kind, nbytes = table.get("rp/meta", (None, None))
        if kind != REPLICATED:
            raise CorruptError("Checkpoint.restore: the checkpoint has no "
                               "ringpoint.torch metadata (was it written by "
                               "another program?)", CorruptError.status)
        self._meta.buf = torch.empty(_meta_size(where, nbytes), dtype=torch.uint8)
        self._meta.text = None
        want["rp/meta"] = (REPLICATED, self._meta.buf)
        names.append("rp/meta")
        current = self._wanted(with_meta=False)
        if self.model is not None and "model" in parts:
            for name, (k, t) in current.items():
                if not name.startswith("m/"):
                    continue
                if name not in table:
                    raise InvalidArgumentError(
                        "Checkpoint.restore: the model's %s is not in the "
                        "checkpoint (another model?)" % name[2:])
                if table[name] != (REPLICATED, _bytes_of(t)):
                    raise InvalidArgumentError(
                        "Checkpoint.restore: the model's %s has %d bytes, the "
                        "checkpoint %d" % (name[2:], _bytes_of(t), table[name][1]))
                want[name] = (k, t)
                names.append(name)
        if self.optimizer is not None and "optimizer" in parts:
            params = self._params()
            for name in table:
                if not name.startswith("o/"):
                    continue
                index, key, dtype, shape = _opt_region(where, name)
                if table[name][0] != REPLICATED:
                    raise _corrupt(where, "region %s is not replicated" % name)
                dt, shape = _tensor_spec(where, name, dtype, shape, table[name][1])
                if index >= len(params):
                    raise InvalidArgumentError(
                        "%s: optimizer state of parameter %d, and the optimizer "
                        "has %d (another model?)" % (where, index, len(params)))
                p = params[index]
                st = self.optimizer.state[p]
                t = st.get(key)
                if not (isinstance(t, torch.Tensor) and tuple(t.shape) == shape
                        and t.dtype == dt and t.is_contiguous()):
                    t = torch.empty(shape, dtype=dt, device=p.device)
                    st[key] = t
                want[name] = (REPLICATED, t)
                names.append(name)
        if self._rng is not None and "rng" in parts and same_size and "rp/rng" in table:
            want["rp/rng"] = (PER_RANK, self._rng.buf)
            names.append("rp/rng")
        # Keep whatever else is registered (e.g. the model when restoring
        # only the optimizer) so the table stays the same on every rank.
        for name, (k, t) in current.items():
            want.setdefault(name, (k, t))
        self._sync(want)
        return names

    # ------------------------------------------------------------ step

    def step(self, step):
        """The safe point, after the optimizer's (and the scheduler's)
        step (collective; every rank, every step). @step: the number of
        optimizer steps done, counting the one just finished: restore()'s
        count + 1 at the first call, one more at each call after (at most
        step_every more with Checkpoint(step_every=k)); anything else is
        InvalidArgumentError, before the collective. Takes the periodic
        checkpoint when due and returns True once a stop was asked for
        (SIGTERM, the warning signal) and its checkpoint is committed:
        leave the loop and exit with ringpoint.EXIT_STOPPED."""
        n = self._check_step(_step_number(step, "step"), "step")
        self._step = n
        self._prepare()
        self._watch_signals()
        result = _lib.StepResult()
        check(lib.rp_step(context_handle("Checkpoint.step"), self._step,
                          ctypes.byref(result)), "Checkpoint.step")
        self._last_step, self._last_call = n, "the previous step()"
        self.last = result
        return bool(result.stop)

    def _check_step(self, n, call):
        """@n if it continues the count (see step()); else the error that
        says what the count must be."""
        last, every = self._last_step, self._every
        if last is None:
            if call == "save":
                return n          # a checkpoint taken outside a loop
            raise InvalidArgumentError(
                "Checkpoint.step(%d) before Checkpoint.restore(): call start = "
                "ckpt.restore() once before the loop (it returns 0 on a fresh "
                "start) and count from there; without it a requeued run starts "
                "again at step 0. %s" % (n, _CONTRACT))
        if last < n <= last + every:
            return n
        if call == "save" and n == last:
            return n              # a checkpoint of the state step() just saw
        if every == 1:
            want = "%d" % (last + 1)
        else:
            want = "%d to %d (step_every=%d)" % (last + 1, last + every, every)
        if n == last:
            why = ("the same count again, so a resumed run would repeat a "
                   "step (the loop's index instead of the steps done?)")
        elif n < last:
            why = "the count goes back by %d" % (last - n)
        elif every == 1:
            why = ("a jump: a run resumed from it would skip %d step(s). If the "
                   "loop calls step() only every k optimizer steps, say so with "
                   "Checkpoint(..., step_every=k)" % (n - last - 1))
        else:
            why = "a jump of %d, more than step_every" % (n - last)
        raise InvalidArgumentError(
            "Checkpoint.%s(%d) after %s at step %d: expected %s; %s. %s"
            % (call, n, self._last_call, last, want, why, _CONTRACT))

    def _prepare(self):
        """Bring the regions up to date: meta, RNG states, the table."""
        model_state = self.model.state_dict() if self.model is not None else None
        self._meta.set(self._meta_state(model_state))
        if self._rng is not None:
            self._rng.capture()
        self._sync(self._wanted(model_state=model_state))

    def save(self, step):
        """Take a checkpoint of @step now and wait until it is committed.
        @step as for step(), or the count the last step() had (the same
        state, e.g. after the loop)."""
        n = self._check_step(_step_number(step, "save"), "save")
        self._step = n
        self._prepare()
        check(lib.rp_checkpoint(context_handle("Checkpoint.save"), self._step),
              "Checkpoint.save")
        if self._last_step is not None:
            self._last_step, self._last_call = n, "save()"

    # ------------------------------------------------------------ signals

    def _watch_signals(self):
        """A Python handler for a stop signal, whether installed before
        ringpoint took the signal over (at the first registered state) or
        after (replacing ringpoint's, silently): chain it, so that the stop
        is recorded for the checkpoint first and the handler still runs,
        and say so once per job (rank 0), naming the handler."""
        for signo in (signal.SIGTERM, _warning_signal()):
            if signo is None:
                continue
            h = signal.getsignal(signo)
            if callable(h) and not getattr(h, "_ringpoint_chain", False):
                signal.signal(signo, _chain(signo, h))
                name = _handler_name(h)
                if rank() == 0 and (signo, name) not in _reported_handlers:
                    _reported_handlers.add((signo, name))
                    warnings.warn(
                        "ringpoint: a Python handler for %s, %s(): ringpoint "
                        "records the stop for its checkpoint, then calls it; "
                        "if it ends the process, no stop checkpoint is taken "
                        "(let ringpoint.torch.Checkpoint.step() end the loop "
                        "instead)" % (signal.Signals(signo).name, name),
                        RuntimeWarning, stacklevel=3)


# (signal, handler name) pairs already reported by this process: once per
# job (rank 0 says it), and once however many Checkpoint objects see it.
_reported_handlers = set()


def _handler_name(h):
    """module.qualname of a handler, as its author wrote it."""
    qual = getattr(h, "__qualname__", None) or getattr(h, "__name__", None)
    if qual is None:
        return repr(h)
    mod = getattr(h, "__module__", None)
    return "%s.%s" % (mod, qual) if mod else qual


def _warning_signal():
    import os
    name = os.environ.get("RINGPOINT_CKPT_SIGNAL", "USR2").upper()
    name = name if name.startswith("SIG") else "SIG" + name
    return getattr(signal, name, None)


def _chain(signo, user_handler):
    def handler(s, frame):
        lib.rp_request_stop(s)
        return user_handler(s, frame)
    handler._ringpoint_chain = True
    handler.__qualname__ = "ringpoint chain to %s" % getattr(
        user_handler, "__qualname__", repr(user_handler))
    return handler


def load_state_dict(ckpt_dir, name="model", step=None):
    """A plain state_dict of the model (@name "model") or of the optimizer's
    tensors ("optimizer": {"<param index>/<key>": tensor}) from the newest
    complete checkpoint in @ckpt_dir, or the one of @step, read by this
    process alone: no Slurm, no other ranks, no model object needed. For
    inference, export, or fine-tuning elsewhere. Call it before (or
    without) ringpoint.init() in this process."""
    import os
    from ringpoint import _runtime
    if name not in ("model", "optimizer"):
        raise InvalidArgumentError("load_state_dict: name must be 'model' or "
                                   "'optimizer', not %r" % (name,))
    if is_initialized():
        raise InvalidArgumentError(
            "load_state_dict: ringpoint is initialized in this process; inside "
            "a job use Checkpoint.restore(only=(...))")
    if not os.path.isdir(ckpt_dir):
        raise NotFoundError("load_state_dict: %s is not a directory" % ckpt_dir,
                            NotFoundError.status)
    saved = os.environ.get("RINGPOINT_CKPT_DIR")
    os.environ["RINGPOINT_CKPT_DIR"] = os.path.abspath(ckpt_dir)
    try:
        _runtime.init(single=True)
    finally:
        if saved is None:
            del os.environ["RINGPOINT_CKPT_DIR"]
        else:
            os.environ["RINGPOINT_CKPT_DIR"] = saved
    try:
        return _read_state(name, step)
    finally:
        _runtime.shutdown()


def _read_state(name, step):
    ctx = context_handle("load_state_dict")
    before = (1 << 64) - 1 if step is None else int(step) + 1
    desc = _lib.CkptDesc()
    status = lib.rp_ckpt_find(ctx, before, ctypes.byref(desc))
    if status == NotFoundError.status:
        raise NotFoundError("load_state_dict: no complete checkpoint%s in %s"
                            % ("" if step is None else " of step %d" % step,
                               _runtime_dir()), status)
    check(status, "load_state_dict")
    try:
        found = desc.step
        table = {desc.regions[i].name.decode(): desc.regions[i].size
                 for i in range(desc.nregions)}
        where = "load_state_dict: " + desc.path.decode(errors="replace")
    finally:
        lib.rp_ckpt_desc_free(ctypes.byref(desc))
    if step is not None and found != int(step):
        raise NotFoundError("load_state_dict: no complete checkpoint of step %d "
                            "(the newest before it is %d)" % (step, found),
                            NotFoundError.status)
    if "rp/meta" not in table:
        raise CorruptError("load_state_dict: not a ringpoint.torch checkpoint "
                           "(no rp/meta region)", CorruptError.status)
    meta = _Meta()
    meta.buf = torch.empty(_meta_size(where, table["rp/meta"]), dtype=torch.uint8)
    _restore_regions(ctx, found, {"rp/meta": meta.buf})
    info = meta.get(where)
    # Every tensor is checked before the first one is allocated.
    specs = {}
    if name == "model":
        model = info.get("model", {})
        if not isinstance(model, dict):
            raise _corrupt(where, "its metadata's model entry is not a table")
        for key, entry in model.items():
            rname = Checkpoint._name("m/" + key)
            if rname not in table:
                raise _corrupt(where, "the model's %s has no region %s" % (key, rname))
            if not (isinstance(entry, list) and len(entry) == 2):
                raise _corrupt(where, "region %s: %.128r is not [dtype, shape]"
                               % (rname, entry))
            specs[key] = (rname,) + _tensor_spec(where, rname, entry[0], entry[1],
                                                 table[rname])
    else:
        for rname in table:
            if rname.startswith("o/"):
                index, key, dtype, shape = _opt_region(where, rname)
                specs["%d/%s" % (index, key)] = (rname,) + _tensor_spec(
                    where, rname, dtype, shape, table[rname])
    out, regions = {}, {}
    for key, (rname, dt, shape) in specs.items():
        t = torch.empty(shape, dtype=dt)
        out[key] = t
        regions[rname] = t
    if regions:
        _restore_regions(ctx, found, regions)
    return out


def _runtime_dir():
    import os
    return os.environ.get("RINGPOINT_CKPT_DIR", "the checkpoint directory")


def _restore_regions(ctx, step, regions):
    for rname, t in regions.items():
        check(lib.rp_region_register(ctx, rname.encode(), t.data_ptr(),
                                     _bytes_of(t), REPLICATED),
              "load_state_dict: register %s" % rname)
    names = (ctypes.c_char_p * len(regions))(*[n.encode() for n in regions])
    check(lib.rp_restore_step(ctx, step, names, len(regions), None),
          "load_state_dict: restore step %d" % step)
