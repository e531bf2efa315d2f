#!/usr/bin/python3
"""A PyTorch training job that survives preemption: ringpoint's PyTorch demo.

A small convolutional network (about 2.4 million parameters) learns a
deterministic synthetic image data set, data-parallel over the job's ranks:

    srun --mpi=pmix -N2 -n3 --ckpt-interval=30s --ckpt-dir=ckpt-%j \\
        /usr/bin/python3 train_torch.py --steps 300

What it shows, with the few lines ringpoint needs marked "ringpoint:":
the data set sharded per rank (ringpoint.torch.DistributedSampler, which
also resumes mid-epoch), the learning rate scaled by the world size with a
warm-up, the model and optimizer broadcast from rank 0 at the start,
gradients averaged by DistributedOptimizer, distributed validation (the
metrics averaged over the ranks), rank 0 alone logging loss and
throughput, and the whole training state checkpointed: periodically, and
when Slurm sends SIGTERM or the warning signal, after which every rank
exits with ringpoint.EXIT_STOPPED (75) and the plugin requeues the job. A
requeued run resumes where the stopped one was and ends with the same
weights, bit for bit: the last line is "final step=N digest=HEX".
"""
import argparse
import hashlib
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import ringpoint
import ringpoint.torch as rpt


class SyntheticImages(torch.utils.data.Dataset):
    """N 3x32x32 images in 10 classes, each a fixed function of its index:
    a class pattern plus noise, made from a generator seeded by the index
    (the same on every rank and every run, no files)."""

    def __init__(self, n, seed, first=0):
        self.n, self.seed, self.first = n, seed, first
        g = torch.Generator().manual_seed(seed)
        self.patterns = torch.randn(10, 3, 32, 32, generator=g)

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(self.seed * 1000003 + self.first + i)
        label = int(torch.randint(0, 10, (1,), generator=g))
        x = self.patterns[label] + 2.0 * torch.randn(3, 32, 32, generator=g)
        return x, label


class Net(nn.Module):
    def __init__(self, width, hidden):
        super().__init__()
        self.c1 = nn.Conv2d(3, width, 3, padding=1)
        self.c2 = nn.Conv2d(width, 2 * width, 3, padding=1)
        self.c3 = nn.Conv2d(2 * width, 4 * width, 3, padding=1)
        # GroupNorm, not BatchNorm: BatchNorm's running statistics differ
        # between ranks, and the model is stored once for all ranks.
        self.norm = nn.GroupNorm(8, 4 * width)
        self.fc1 = nn.Linear(4 * width * 4 * 4, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        x = F.max_pool2d(F.relu(self.norm(self.c3(x))), 2)
        x = F.dropout(torch.flatten(x, 1), 0.1, self.training)
        return self.fc2(F.relu(self.fc1(x)))


def digest(model):
    h = hashlib.sha256()
    for k, t in sorted(model.state_dict().items()):
        h.update(k.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def validate(model, data):
    """Loss and accuracy over every rank's share of @data, averaged."""
    model.eval()
    loss = correct = count = 0.0
    with torch.no_grad():
        for x, y in data:
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(1) == y).sum().item()
            count += len(y)
    model.train()
    totals = rpt.allreduce(torch.tensor([loss, correct, count], dtype=torch.float64),
                           op=rpt.Sum)
    return (totals[0] / totals[2]).item(), (totals[1] / totals[2]).item()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=32, help="per rank")
    p.add_argument("--samples", type=int, default=4096)
    p.add_argument("--width", type=int, default=32, help="channels of the first convolution")
    p.add_argument("--hidden", type=int, default=1024, help="width of the hidden dense layer")
    p.add_argument("--lr", type=float, default=0.005, help="for one rank")
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--val-every", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds to sleep per step (tests: a slower job)")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    rpt.init()
    rank, size = rpt.rank(), rpt.size()

    train = SyntheticImages(args.samples, args.seed)
    val = SyntheticImages(512, args.seed, first=args.samples)  # unseen samples
    sampler = rpt.DistributedSampler(train, shuffle=True, seed=args.seed)
    # Its own generator: a DataLoader draws a seed for its workers from the
    # global RNG at every new iterator, which a resumed run makes at
    # another moment than the uninterrupted one.
    loader = torch.utils.data.DataLoader(train, batch_size=args.batch,
                                         sampler=sampler, drop_last=True,
                                         generator=torch.Generator())
    val_loader = torch.utils.data.DataLoader(
        val, batch_size=64, generator=torch.Generator(),
        sampler=rpt.DistributedSampler(val, shuffle=False))

    model = Net(args.width, args.hidden)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr * size, momentum=0.9,
                          weight_decay=1e-4)
    opt = rpt.DistributedOptimizer(opt, named_parameters=model.named_parameters())
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / max(args.warmup, 1)))

    # ringpoint: what to checkpoint; restore returns the steps already done.
    ckpt = rpt.Checkpoint(model=model, optimizer=opt, scheduler=sched,
                          sampler=sampler)
    start = ckpt.restore()
    if start == 0:
        rpt.broadcast_parameters(model.state_dict(), root_rank=0)
        rpt.broadcast_optimizer_state(opt, root_rank=0)
    if rank == 0:
        nparams = sum(t.numel() for t in model.parameters())
        print("train_torch: %d ranks, %d parameters, batch %d per rank" %
              (size, nparams, args.batch))
        print("resumed from step %d" % start if start else "starting fresh", flush=True)

    # The whole epoch: len(sampler) is what is left of a resumed one.
    steps_per_epoch = sampler.num_samples // args.batch
    step, t0, seen = start, time.time(), 0
    while step < args.steps:
        sampler.set_epoch(step // steps_per_epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            seen += len(y) * size
            if args.step_sleep:
                time.sleep(args.step_sleep)
            if rank == 0 and args.log_every and step % args.log_every == 0:
                dt = time.time() - t0
                print("step %d loss %.4f lr %.4f %.0f samples/s" %
                      (step, loss.item(), sched.get_last_lr()[0], seen / dt), flush=True)
                t0, seen = time.time(), 0
            if args.val_every and step % args.val_every == 0:
                vl, va = validate(model, val_loader)
                if rank == 0:
                    print("step %d val_loss %.4f val_acc %.3f" % (step, vl, va), flush=True)
            # ringpoint: the safe point; True once a stop's checkpoint is committed.
            if ckpt.step(step):
                if rank == 0:
                    print("stopping at step %d: checkpoint committed" % step, flush=True)
                sys.exit(ringpoint.EXIT_STOPPED)
            if step >= args.steps:
                break
    vl, va = validate(model, val_loader)
    if rank == 0:
        print("val_loss %.4f val_acc %.3f" % (vl, va))
        print("final step=%d digest=%s" % (step, digest(model)), flush=True)


if __name__ == "__main__":
    main()
