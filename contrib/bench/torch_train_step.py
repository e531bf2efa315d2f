#!/usr/bin/python3
"""One training step, data parallel, timed four ways in one run.

  local      the same step with no gradient exchange (the compute floor)
  hvd        ringpoint.torch.DistributedOptimizer (fused allreduces started
             from gradient hooks during backward(), waited for in step())
  ddp-gloo   torch DistributedDataParallel over the gloo process group
  ddp-hook   the same DDP with ringpoint.torch.ddp_comm_hook registered

Run under mpirun or srun --mpi=pmix (ringpoint starts by PMIx; gloo meets
on a TCP store at MASTER_ADDR:MASTER_PORT, 127.0.0.1:29519 by default,
with ringpoint's rank and size), with Debian's python3-torch:

    mpirun -np 2 /usr/bin/python3 torch_train_step.py -r 5 -n 20

The model (an MLP of -I/-W/-L, 4.0 M parameters by default, or a small CNN
with --model cnn) is built four times from one seed, so every way starts
from the same weights; each rank gets its own synthetic batch (seeded by
rank), the same every step. A step is zero_grad, forward, backward, step
(SGD with momentum). After -w warm-up steps of each, the ways take turns
step by step (-r rounds of -n steps of each, the order rotating), so that
load that comes and goes hits them alike; each step's time is the slowest
rank's, a way's figure the median over rounds of each round's median. Since every way took the same number of steps from the
same weights on the same data, the three distributed ways must end with
the same weights (printed: the largest difference; gradients averaged in
different orders differ by rounding only).
"""
import argparse
import statistics
import sys
import time

import benchcommon as bc


def build(torch, a):
    nn = torch.nn
    if a.model == "cnn":
        return nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, 256, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(256 * 4 * 4, 512), nn.ReLU(),
            nn.Linear(512, 10))
    layers, width = [], a.inputs
    for _ in range(a.layers):
        layers += [nn.Linear(width, a.width), nn.ReLU()]
        width = a.width
    layers.append(nn.Linear(width, 10))
    return nn.Sequential(*layers)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("-I", "--inputs", type=int, default=1024,
                   help="MLP input features (default 1024)")
    p.add_argument("-W", "--width", type=int, default=1536,
                   help="MLP hidden width (default 1536)")
    p.add_argument("-L", "--layers", type=int, default=2,
                   help="MLP hidden layers (default 2)")
    p.add_argument("-B", "--batch", type=int, default=8)
    p.add_argument("-n", "--steps", type=int, default=20,
                   help="timed steps per way and round (default 20)")
    p.add_argument("-w", "--warmup", type=int, default=3)
    p.add_argument("-r", "--rounds", type=int, default=5)
    p.add_argument("--ways", default="local,hvd,ddp-gloo,ddp-hook")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each round's figures")
    a = p.parse_args()

    torch, dist, hvd = bc.init_ringpoint_and_gloo(29519)
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank, size = hvd.rank(), hvd.size()

    names = a.ways.split(",")
    for n in names:
        if n not in ("local", "hvd", "ddp-gloo", "ddp-hook"):
            p.error(f"unknown way {n!r}")
    g = torch.Generator().manual_seed(1000 + rank)
    if a.model == "cnn":
        x = torch.randn(a.batch, 3, 32, 32, generator=g)
    else:
        x = torch.randn(a.batch, a.inputs, generator=g)
    y = torch.randint(0, 10, (a.batch,), generator=g)
    loss_fn = torch.nn.CrossEntropyLoss()

    ways = {}
    for n in names:
        torch.manual_seed(42)
        model = build(torch, a)
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        if n == "hvd":
            opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
        elif n.startswith("ddp"):
            model = DDP(model)
            if n == "ddp-hook":
                model.register_comm_hook(None, hvd.ddp_comm_hook)
        ways[n] = (model, opt)
    nparams = sum(q.numel() for q in build(torch, a).parameters())

    def step(model, opt):
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss

    nw = len(names)
    for n in names:
        for _ in range(a.warmup):
            step(*ways[n])
    times = torch.zeros((nw, a.rounds, a.steps), dtype=torch.float64)
    for r in range(a.rounds):
        for s in range(a.steps):
            for k in range(nw):
                w = (k + s + r) % nw
                t0 = time.perf_counter()
                step(*ways[names[w]])
                t1 = time.perf_counter()
                times[w, r, s] = (t1 - t0) * 1e3
    dist.all_reduce(times, op=dist.ReduceOp.MAX)

    def params(n):
        m = ways[n][0]
        m = m.module if hasattr(m, "module") else m
        return torch.cat([q.detach().reshape(-1) for q in m.parameters()])

    dist_ways = [n for n in names if n != "local"]
    diff = 0.0
    for n in dist_ways[1:]:
        diff = max(diff, float((params(n) - params(dist_ways[0])).abs().max()))
    # Every rank must hold the same weights after the same averaged steps.
    spread = 0.0
    for n in dist_ways:
        mine = params(n)
        ref = mine.clone()
        hvd.broadcast_(ref, 0)
        spread = max(spread, float((mine - ref).abs().max()))

    if rank == 0:
        desc = ("CNN (3x32x32 in)" if a.model == "cnn" else
                f"MLP {a.inputs}-{'-'.join([str(a.width)] * a.layers)}-10")
        print(f"# torch_train_step.py: torch {torch.__version__}, {size} ranks, "
              f"{desc}, {nparams} parameters ({nparams * 4 / 2**20:.1f} MiB "
              f"of float32 gradients), batch {a.batch} per rank, SGD momentum; "
              f"rounds {a.rounds} steps {a.steps} warmup {a.warmup}, ways "
              f"interleaved step by step; "
              f"torch threads 1")
        print("# step time: median over rounds of each round's median of the "
              "slowest rank's step, in ms")
        print("# x ddp-gloo: DDP-gloo's step time over this way's; paired: the "
              "median over steps of that ratio for the steps run side by side")
        print(f"# {'way':>10s}  {'step ms':>9s}  {'min..max of rounds':>19s}"
              f"  {'x ddp-gloo':>10s}  {'paired':>6s}")
        meds = {}
        for w, n in enumerate(names):
            per_round = [statistics.median(times[w, r].tolist())
                         for r in range(a.rounds)]
            meds[n] = (statistics.median(per_round), min(per_round), max(per_round))
            if a.verbose:
                print(f"#   {n} rounds: " + " ".join(f"{v:.2f}" for v in per_round))
        for n in names:
            m, lo, hi = meds[n]
            if "ddp-gloo" in meds:
                g = names.index("ddp-gloo")
                paired = statistics.median(
                    (times[g] / times[names.index(n)]).reshape(-1).tolist())
                ratio = f"{meds['ddp-gloo'][0] / m:10.2f}  {paired:6.2f}"
            else:
                ratio = f"{'-':>10s}  {'-':>6s}"
            print(f"  {n:>10s}  {m:9.2f}  {lo:8.2f}..{hi:9.2f}  {ratio}")
        print(f"# weights: largest difference between the distributed ways "
              f"{diff:.3g}, between ranks {spread:.3g}")
        sys.stdout.flush()
    dist.destroy_process_group()
    hvd.shutdown()
    return 0 if spread == 0.0 and diff < 1e-3 else 1


if __name__ == "__main__":
    sys.exit(main())
