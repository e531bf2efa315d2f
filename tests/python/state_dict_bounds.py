#!/usr/bin/python3
"""The metadata of a checkpoint cannot make load_state_dict allocate what the
checkpoint does not hold. Run by tests/slurm/test_torch_ckpt.sh, one
process, no launcher:

    state_dict_bounds.py DIR    prints one "ok NAME" or "FAIL NAME: why"
                                line per case and exits non-zero on a FAIL

1. Properties of the checks, on random input from a fixed seed: the
   metadata's dtype and shape of a region either describe exactly the
   region's verified size, or are refused with CorruptError; nothing else
   (no other exception, no allocation).
2. Crafted checkpoints, written through the C API the way an attacker
   would (their CRCs are right, only the metadata lies), each in a
   directory of its own under DIR: load_state_dict refuses every one with
   CorruptError naming the checkpoint's directory, while the process's
   memory stays small; and the one honest checkpoint among them loads.
"""
import ctypes
import json
import os
import random
import resource
import sys

import torch

import ringpoint
from ringpoint import _lib, _runtime
from ringpoint._errors import CorruptError
import ringpoint.torch as rpt
from ringpoint.torch import checkpoint as ck

results = []


def case(name, ok, why=""):
    results.append(ok)
    print("ok %s" % name if ok else "FAIL %s: %s" % (name, why), flush=True)


def rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---- 1. properties of the checks

def random_dtype(r):
    return r.choice(["float32", "float16", "bfloat16", "int64", "uint8", "bool",
                     "complex64", "float64", "load", "save", "Tensor", "__class__",
                     "dtype", "qint8", "float32 ", "", "x" * 300, None, 4, [],
                     "float", "int", "half", "cfloat", "quint4x2"])


def random_dim(r):
    return r.choice([0, 1, 2, 3, 7, 16, 1 << 20, 1 << 40, 1 << 62, 1 << 64, -1,
                     -(1 << 63), 2.0, True, "4", None, [2]])


def random_shape(r):
    k = r.choice([0, 1, 2, 3, 4, 65, 1000])
    shape = [random_dim(r) for _ in range(min(k, 70))]
    return r.choice([shape, tuple(shape), "2x2", None, {"a": 1}, 3])


def check_properties(seed, n):
    r = random.Random(seed)
    bad = 0
    for i in range(n):
        dtype, shape = random_dtype(r), random_shape(r)
        nbytes = r.choice([0, 1, 4, 8, 16, 64, 1 << 20, 1 << 42])
        try:
            dt, got = ck._tensor_spec("DIR", "m/x", dtype, shape, nbytes)
        except CorruptError as e:
            if "DIR" not in str(e):
                bad += 1
                print("# case %d: the error does not name the checkpoint: %s" % (i, e))
            continue
        except Exception as e:  # anything else is a bug in the checks
            bad += 1
            print("# case %d: %r %r %d raised %r" % (i, dtype, shape, nbytes, e))
            continue
        size = torch.empty((), dtype=dt).element_size()
        for d in got:
            size *= d
        if not isinstance(dt, torch.dtype) or size != nbytes:
            bad += 1
            print("# case %d: accepted %r %r for %d bytes" % (i, dtype, shape, nbytes))
    case("random dtypes and shapes: exact or refused (%d cases)" % n, bad == 0,
         "%d wrong" % bad)

    bad = 0
    names = ["o/0/exp_avg/float32/2x2", "o/1/momentum_buffer/float16/",
             "o/x/k/float32/2", "o//k/float32/2", "o/0/float32/2", "o/0/k/float32/2x",
             "o/0/k/float32/-2", "o/0/k/float32/2x+3", "o/0/k/float32/1e9",
             "o/0/k/float32/" + "9" * 40, "o/0/a/b/float32/4", "o/0",
             "o/\u0661/k/float32/2", "o/0/k/float32/\u0662"]
    for i in range(n):
        name = r.choice(names)
        if r.random() < 0.5:  # a random cut or a random character
            j = r.randrange(len(name) + 1)
            name = name[:j] + r.choice(["", "/", "x", "9", "-", " "]) + name[j + 1:]
        try:
            index, key, dtype, dims = ck._opt_region("DIR", name)
        except CorruptError:
            continue
        except Exception as e:
            bad += 1
            print("# %r raised %r" % (name, e))
            continue
        if not (isinstance(index, int) and index >= 0 and key and
                all(isinstance(d, int) and 0 <= d < 10 ** 18 for d in dims)):
            bad += 1
            print("# %r parsed as %r" % (name, (index, key, dtype, dims)))
    case("optimizer region names: parsed or refused (%d cases)" % n, bad == 0,
         "%d wrong" % bad)

    bad = 0
    meta = ck._Meta()
    for text in [b"{", b"[]", b"\xff\xfe", b"1" * 5000, b"[" * 100000,
                 b'{"model": 1}', json.dumps({"model": {}}).encode()]:
        meta.buf = torch.frombuffer(bytearray(text), dtype=torch.uint8)
        try:
            obj = meta.get("DIR")
            ok = isinstance(obj, dict)
        except CorruptError:
            ok = True
        except Exception as e:
            ok = False
            print("# metadata %r raised %r" % (text[:20], e))
        bad += not ok
    case("malformed metadata text: refused as corrupt", bad == 0, "%d wrong" % bad)
    for n_ in (0, -1, ck._META_MAX + 1, 1 << 50):
        try:
            ck._meta_size("DIR", n_)
            case("metadata region of %d bytes refused" % n_, False, "accepted")
        except CorruptError:
            pass


# ---- 2. crafted checkpoints through the C API

def craft(root, name, regions):
    """A complete checkpoint of step 1 in ROOT/NAME holding @regions (name:
    bytes), written by the library itself: the CRCs are right."""
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    os.environ["RINGPOINT_CKPT_DIR"] = d
    _runtime.init(single=True)
    try:
        ctx = _runtime.context_handle("craft")
        keep = []
        for rname, data in regions.items():
            buf = ctypes.create_string_buffer(bytes(data), len(data))
            keep.append(buf)
            _lib.lib.rp_region_register(ctx, rname.encode(), ctypes.addressof(buf),
                                        len(data), ck.REPLICATED)
        rc = _lib.lib.rp_checkpoint(ctx, 1)
        assert rc == 0, "rp_checkpoint: %d" % rc
    finally:
        _runtime.shutdown()
        del os.environ["RINGPOINT_CKPT_DIR"]
    return d


def meta_region(model):
    text = json.dumps({"step": 1, "model": model}).encode()
    return text + b" " * (4096 - len(text))


def check_crafted(root):
    data = torch.arange(4, dtype=torch.float32).numpy().tobytes()  # 16 bytes
    honest = craft(root, "honest", {"rp/meta": meta_region({"w": ["float32", [2, 2]]}),
                                    "m/w": data})
    liars = {
        "huge shape": ({"w": ["float32", [1 << 40]]}, {}),
        "huge shape, two dims": ({"w": ["float32", [1 << 31, 1 << 31]]}, {}),
        "negative dim": ({"w": ["float32", [-4]]}, {}),
        "not a dtype": ({"w": ["load", [4]]}, {}),
        "dtype of the wrong size": ({"w": ["float64", [2, 2]]}, {}),
        "float dims": ({"w": ["float32", [2.0, 2.0]]}, {}),
        "no such region": ({"v": ["float32", [4]]}, {}),
        "not [dtype, shape]": ({"w": "float32"}, {}),
        "optimizer state of 4 TiB": ({}, {"o/0/exp_avg/float32/1099511627776": data}),
        "optimizer name without a shape": ({}, {"o/0/exp_avg/float32": data}),
    }
    before = rss_mib()
    for label, (model, extra) in liars.items():
        regions = {"rp/meta": meta_region(model), "m/w": data}
        regions.update(extra)
        d = craft(root, label.replace(" ", "-").replace(",", ""), regions)
        which = "optimizer" if extra else "model"
        try:
            got = rpt.load_state_dict(d, which)
            case("crafted: %s" % label, False, "loaded %r" % {k: tuple(t.shape)
                                                              for k, t in got.items()})
        except CorruptError as e:
            case("crafted: %s" % label, d in str(e), "the error does not name %s: %s"
                 % (d, e))
            print("#   %s" % e)
        except Exception as e:
            case("crafted: %s" % label, False, "raised %r" % e)
    grown = rss_mib() - before
    case("memory while refusing them grew %.0f MiB (< 64)" % grown, grown < 64)
    got = rpt.load_state_dict(honest)
    case("the honest checkpoint loads", set(got) == {"w"} and
         torch.equal(got["w"], torch.arange(4, dtype=torch.float32).reshape(2, 2)),
         repr(got))


def main():
    root = sys.argv[1]
    check_properties(seed=20261128, n=int(os.environ.get("RP_BOUNDS_CASES", "20000")))
    check_crafted(root)
    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
