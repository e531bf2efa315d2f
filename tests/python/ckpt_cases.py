#!/usr/bin/python3
"""Cases of ringpoint.torch.Checkpoint run by tests/slurm/test_torch_ckpt.sh.

    ckpt_cases.py moved STEPS        train a tiny model; at step 7 a parameter's
                                     storage and the optimizer state move
                                     (p.data = clone, new momentum tensors);
                                     prints "final digest=..."
    ckpt_cases.py sigterm            a Python SIGTERM handler set after the
                                     first step; SIGTERM to itself at step 5:
                                     must still stop with exit 75
    ckpt_cases.py only DIR           restore(only=("model",)) from DIR: the
                                     model equals load_state_dict(DIR)
"""
import hashlib
import os
import signal
import sys

import torch

import ringpoint
import ringpoint.torch as rpt


def digest(model):
    h = hashlib.sha256()
    for k, t in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def setup():
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(),
                                torch.nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return model, opt


def train(model, opt, ckpt, start, steps, on_step=None):
    for step in range(start, steps):
        g = torch.Generator().manual_seed(step * 10 + rpt.rank())
        x = torch.randn(16, 8, generator=g)
        loss = ((model(x) - x.sum(1, keepdim=True)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            rpt.allreduce_(p.grad)
        opt.step()
        if on_step is not None:
            on_step(step + 1)
        if ckpt.step(step + 1):
            print("stopped at step %d" % (step + 1), flush=True)
            sys.exit(ringpoint.EXIT_STOPPED)


def moved(steps):
    model, opt = setup()
    ckpt = rpt.Checkpoint(model=model, optimizer=opt)
    start = ckpt.restore()
    if rpt.rank() == 0:
        print("start=%d" % start, flush=True)

    def move(step):
        if step == 7:
            first = next(model.parameters())
            first.data = first.data.clone()
            for st in opt.state.values():
                st["momentum_buffer"] = st["momentum_buffer"].clone()
    train(model, opt, ckpt, start, steps, move)
    if rpt.rank() == 0:
        print("final digest=%s" % digest(model), flush=True)


def sigterm():
    model, opt = setup()
    ckpt = rpt.Checkpoint(model=model, optimizer=opt)
    ckpt.restore()
    seen = []

    def handler(signo, frame):
        seen.append(signo)

    def hit(step):
        if step == 2:
            signal.signal(signal.SIGTERM, handler)
        if step == 5:
            os.kill(os.getpid(), signal.SIGTERM)
    try:
        train(model, opt, ckpt, 0, 50, hit)
    finally:
        print("user handler called %d time(s)" % len(seen), flush=True)
    print("no stop: ran to the end", flush=True)


def only(path):
    os.environ["RINGPOINT_CKPT_DIR"] = path
    plain = rpt.load_state_dict(path)
    model, opt = setup()
    ckpt = rpt.Checkpoint(model=model, optimizer=opt, rng=False)
    step = ckpt.restore(only=("model",))
    same = all(torch.equal(plain[k], v) for k, v in model.state_dict().items())
    print("restored step=%d model equals load_state_dict: %s; optimizer state "
          "entries: %d" % (step, same, len(opt.state)), flush=True)
    try:
        ckpt.restore(only=("weights",))
    except ringpoint.InvalidArgumentError as exc:
        print("bad part refused: %s" % exc, flush=True)


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "moved":
        moved(int(sys.argv[2]))
    elif cmd == "sigterm":
        sigterm()
    elif cmd == "only":
        only(sys.argv[2])
    else:
        sys.exit("unknown case %s" % cmd)
