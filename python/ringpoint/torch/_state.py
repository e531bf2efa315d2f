"""A scheduler's state_dict() as JSON, and back, without pickle.

torch's LR schedulers keep callables in their state: OneCycleLR its
annealing method, CyclicLR a weak reference to its scale method or the
user's scale_fn, SequentialLR and ChainedScheduler their schedulers'
states (with those callables inside), LambdaLR the user's lambdas (which
its own state_dict() leaves out as None). A checkpoint stores no pickle,
so that loading one can never run code. Instead:

- a method of the scheduler is stored by its name and, on restore, taken
  from the live scheduler by that name (only a method of that object,
  never anything the name could point at elsewhere);
- a function (a lambda, a def, a partial, a builtin) is code: it is
  stored by its name for the reader, and on restore the live one stays,
  which the training script made again with the scheduler (torch's own
  state_dict() does the same for LambdaLR);
- a callable object keeps its attributes (its __dict__, as LambdaLR's
  state_dict() does), restored into the live object;
- a reference to the optimizer stays the live optimizer.
JSON also loses what Python types a value had: dict keys become strings
(MultiStepLR's milestones are a Counter of ints), tuples lists. restore
takes them back from the live scheduler's own state_dict(), which the
script made with the same arguments.
"""
import functools
import types
import weakref

import torch

from ringpoint._errors import InvalidArgumentError

# Marker keys: a JSON object with one of these stands for a callable.
METHOD, FUNCTION, CALLABLE, OPTIMIZER = ("rp:method", "rp:function",
                                         "rp:callable", "rp:optimizer")
_MARKERS = (METHOD, FUNCTION, CALLABLE, OPTIMIZER)
_FUNCTIONS = (types.FunctionType, types.BuiltinFunctionType, functools.partial)


def _path(path):
    return "".join("[%r]" % p for p in path) or " itself"


def encode(obj, what, fix, path=()):
    """@obj as JSON can carry it, callables as described above; else
    InvalidArgumentError naming @what, where in it, and @fix."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        return [encode(v, what, fix, path + (i,)) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        return {str(k): encode(v, what, fix, path + (k,)) for k, v in obj.items()}
    if isinstance(obj, torch.Tensor) and obj.numel() == 1:
        return obj.item()
    if isinstance(obj, torch.optim.Optimizer):
        return {OPTIMIZER: type(obj).__name__}
    if isinstance(obj, weakref.WeakMethod):
        obj = obj()
        if obj is None:
            raise InvalidArgumentError(
                "Checkpoint: %s's state_dict()%s is a weak reference to a method "
                "of an object that no longer exists" % (what, _path(path)))
    if isinstance(obj, types.MethodType):
        return {METHOD: obj.__func__.__name__}
    if isinstance(obj, _FUNCTIONS):
        name = getattr(obj, "__qualname__", None) or type(obj).__name__
        return {FUNCTION: name}
    if callable(obj) and isinstance(getattr(obj, "__dict__", None), dict):
        return {CALLABLE: type(obj).__qualname__,
                "state": encode(vars(obj), what, fix, path + ("__dict__",))}
    raise InvalidArgumentError(
        "Checkpoint: %s's state_dict()%s is a %s, which a checkpoint cannot "
        "store (it keeps no pickle, so that loading one can never run code); "
        "%s" % (what, _path(path), type(obj).__name__, fix))


def _marker(value):
    if isinstance(value, dict) and 1 <= len(value) <= 2:
        for key in _MARKERS:
            if key in value:
                return key
    return None


def revive(template, value, where, path=()):
    """@value (JSON from encode) with the types and callables of
    @template, the live object's state_dict() at the same place."""
    kind = _marker(value)
    if kind == METHOD:
        return _method(template, value[METHOD], where, path)
    if kind == CALLABLE:
        if callable(template) and isinstance(getattr(template, "__dict__", None), dict):
            template.__dict__.update(revive(vars(template), value.get("state", {}),
                                            where, path + ("__dict__",)))
            return template
        raise _mismatch(where, path, "the checkpoint holds a %s object where "
                       "the scheduler has a %s" % (value[CALLABLE],
                                                   type(template).__name__))
    if kind is not None:          # a function or the optimizer: the live one
        return template
    if isinstance(template, dict) and isinstance(value, dict):
        keys = {str(k): k for k in template}
        out = template.copy()     # its type (Counter, OrderedDict) and extras
        out.clear()
        for k, v in value.items():
            key = keys.get(k, k)
            out[key] = revive(template.get(key), v, where, path + (key,))
        return out
    if isinstance(template, (list, tuple)) and isinstance(value, list):
        if len(template) == len(value):
            out = [revive(t, v, where, path + (i,))
                   for i, (t, v) in enumerate(zip(template, value))]
        else:
            out = [revive(None, v, where, path + (i,)) for i, v in enumerate(value)]
        return tuple(out) if isinstance(template, tuple) else out
    if isinstance(value, dict):
        return {k: revive(None, v, where, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [revive(None, v, where, path + (i,)) for i, v in enumerate(value)]
    return value


def _method(template, name, where, path):
    """The live object's method @name, in the form @template has it (a
    bound method or a weak reference to one)."""
    weak = isinstance(template, weakref.WeakMethod)
    live = template() if weak else template
    owner = getattr(live, "__self__", None)
    bound = getattr(owner, name, None) if isinstance(name, str) and owner is not None else None
    if not isinstance(bound, types.MethodType) or bound.__self__ is not owner:
        raise _mismatch(where, path, "the checkpoint holds method %.64r where "
                       "the scheduler has %s (another scheduler class?)"
                       % (name, "no method of its own" if owner is None
                          else type(owner).__name__ + "'s " + live.__func__.__name__))
    return weakref.WeakMethod(bound) if weak else bound


def _mismatch(where, path, what):
    return InvalidArgumentError("%s: scheduler state%s: %s" % (where, _path(path), what),
                                InvalidArgumentError.status)
