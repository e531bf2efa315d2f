"""Export a ringpoint.torch checkpoint to a file torch.load() reads.

    /usr/bin/python3 -m ringpoint.torch.export CKPT_DIR OUT.pt [--step N]
                                               [--part model|optimizer]

Reads the newest complete checkpoint in CKPT_DIR (or the one of step N)
in this process alone, verifying every chunk it reads, and writes its
model state_dict (or the optimizer's tensors) with torch.save to OUT.pt,
through a temporary file renamed into place.
"""
import argparse
import os
import sys

import torch

from ringpoint import Error
from ringpoint.torch.checkpoint import load_state_dict


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m ringpoint.torch.export",
                                description=__doc__.splitlines()[0])
    p.add_argument("ckpt_dir")
    p.add_argument("out")
    p.add_argument("--step", type=int, default=None)
    p.add_argument("--part", choices=("model", "optimizer"), default="model")
    args = p.parse_args(argv)
    try:
        state = load_state_dict(args.ckpt_dir, args.part, args.step)
    except Error as exc:
        print("ringpoint.torch.export: %s" % exc, file=sys.stderr)
        return 1
    tmp = args.out + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, args.out)
    print("ringpoint.torch.export: %d tensors of %s written to %s"
          % (len(state), args.part, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
