#!/usr/bin/python3
"""DistributedDataParallel with ringpoint's comm hook, stopped and resumed.

The setup a user found drifting after a resume at 3 ranks: a residual
network with GroupNorm, two parameter groups (no weight decay on norms and
biases), Nesterov SGD, CosineAnnealingLR, gradient clipping, DDP with
ringpoint.torch.ddp_comm_hook, and small buckets so that there are several.
DDP rebuilds its buckets after the first iteration in the order the
gradients arrived, so a resumed run reduces its first step with another
bucket layout than the uninterrupted run did at that step: the digest is
the same only if an allreduce's bits do not depend on where an element
lies in its buffer. The last line is "final step=N digest=HEX".

    srun --mpi=pmix -N2 -n3 /usr/bin/python3 ddp_train.py --steps 40
"""
import argparse
import hashlib
import os
import socket
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

import ringpoint
import ringpoint.torch as rpt


class Images(torch.utils.data.Dataset):
    """N 3x16x16 images in 10 classes, each a fixed function of its index."""

    def __init__(self, n, seed):
        self.n, self.seed = n, seed
        g = torch.Generator().manual_seed(seed)
        self.patterns = torch.randn(10, 3, 16, 16, generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1000003 + i)
        label = int(torch.randint(0, 10, (1,), generator=g))
        return self.patterns[label] + 2.0 * torch.randn(3, 16, 16, generator=g), label


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.n1 = nn.GroupNorm(4, c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.n2 = nn.GroupNorm(4, c)

    def forward(self, x):
        y = F.relu(self.n1(self.c1(x)))
        return F.relu(x + self.n2(self.c2(y)))


class Net(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, padding=1, bias=False)
        self.norm = nn.GroupNorm(4, width)
        self.b1 = Block(width)
        self.down = nn.Conv2d(width, 2 * width, 3, stride=2, padding=1, bias=False)
        self.b2 = Block(2 * width)
        self.fc = nn.Linear(2 * width, 10)

    def forward(self, x):
        x = self.b1(F.relu(self.norm(self.stem(x))))
        x = self.b2(F.relu(self.down(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def rendezvous():
    """DDP's process group under srun or mpirun, named by rank 0."""
    where = None
    if rpt.rank() == 0:
        with socket.socket() as s:
            s.bind(("", 0))
            where = (socket.gethostname(), s.getsockname()[1])
    addr, port = rpt.broadcast_object(where, 0)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = addr, str(port)
    dist.init_process_group("gloo", rank=rpt.rank(), world_size=rpt.size())


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--batch", type=int, default=8, help="per rank")
    p.add_argument("--samples", type=int, default=384)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--bucket-mb", type=float, default=0.02)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep per step (a slower job)")
    p.add_argument("--log-every", type=int, default=0, help="(no logging)")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rpt.init()
    rendezvous()
    rank, size = rpt.rank(), rpt.size()

    data = Images(args.samples, args.seed)
    sampler = rpt.DistributedSampler(data, shuffle=True, seed=args.seed)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch,
                                         sampler=sampler, drop_last=True,
                                         generator=torch.Generator())
    net = Net(args.width)
    decay = [t for n, t in net.named_parameters() if t.dim() > 1]
    rest = [t for n, t in net.named_parameters() if t.dim() <= 1]
    model = nn.parallel.DistributedDataParallel(net, bucket_cap_mb=args.bucket_mb)
    model.register_comm_hook(None, rpt.ddp_comm_hook)
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                           {"params": rest, "weight_decay": 0.0}],
                          lr=0.05, momentum=0.9, nesterov=True)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)

    ckpt = rpt.Checkpoint(model=model, optimizer=opt, scheduler=sched,
                          sampler=sampler)
    step = ckpt.restore()
    if rank == 0:
        print("resumed from step %d" % step if step else "starting fresh", flush=True)
    per_epoch = len(data) // (size * args.batch)
    while step < args.steps:
        sampler.set_epoch(step // per_epoch)
        for x, y in loader:
            opt.zero_grad()
            F.cross_entropy(model(x), y).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if args.step_sleep:
                time.sleep(args.step_sleep)
            if ckpt.step(step):
                if rank == 0:
                    print("stopping at step %d: checkpoint committed" % step, flush=True)
                sys.exit(ringpoint.EXIT_STOPPED)
            if step >= args.steps:
                break
    if rank == 0:
        h = hashlib.sha256()
        for t in net.state_dict().values():
            h.update(t.detach().contiguous().numpy().tobytes())
        print("final step=%d digest=%s" % (step, h.hexdigest()[:16]), flush=True)


if __name__ == "__main__":
    main()
