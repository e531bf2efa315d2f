#!/usr/bin/python3
"""A Horovod-style PyTorch training script, run by ringpoint unchanged but
for its import line.

Written only against Horovod's documented PyTorch API (hvd.init, rank,
size, local_rank, DistributedOptimizer with named_parameters,
broadcast_parameters, broadcast_optimizer_state, allreduce of the
validation metrics, broadcast_object) and torch's DistributedSampler. With
Horovod installed, `import horovod.torch as hvd` runs it the same way.

    srun --mpi=pmix -N2 -n2 /usr/bin/python3 horovod_train.py
    mpirun -np 2 /usr/bin/python3 horovod_train.py --epochs 5

The data are synthetic and the same on every rank (a fixed random "teacher"
labels Gaussian points into 4 classes); DistributedSampler gives each rank
its share. The learning rate is scaled by the number of ranks, as Horovod
recommends. Rank 0 prints one line per epoch; at the end every rank prints

    final: rank R/N epochs E first_val_loss L0 val_loss L val_acc A digest D

where D is a SHA-256 of the model's weights: the same on every rank, and
from run to run for the same arguments and number of ranks.
"""
import argparse
import hashlib

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

import ringpoint.torch as hvd  # Horovod: import horovod.torch as hvd


def parse_args():
    p = argparse.ArgumentParser(description="Horovod-style PyTorch training")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05,
                   help="learning rate of one rank (scaled by hvd.size())")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--train-size", type=int, default=4096)
    p.add_argument("--val-size", type=int, default=1024)
    p.add_argument("--features", type=int, default=32)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--fp16-allreduce", action="store_true",
                   help="send gradients as float16")
    p.add_argument("--cuda", action="store_true",
                   help="train on the GPU of hvd.local_rank()")
    return p.parse_args()


def synthetic(n, features, seed):
    """Points labelled by a fixed teacher: the same data on every rank."""
    g = torch.Generator().manual_seed(seed)
    teacher = torch.randn(features, 4, generator=torch.Generator().manual_seed(7))
    x = torch.randn(n, features, generator=g)
    y = (x @ teacher).argmax(dim=1)
    return TensorDataset(x, y)


class Net(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.fc1 = nn.Linear(features, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, 4)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def metric_average(value, name):
    """The average of a scalar over all ranks (Horovod's examples' helper)."""
    return hvd.allreduce(torch.tensor(value, dtype=torch.float64), name=name).item()


def evaluate(model, loader, sampler, device):
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(dim=1) == y).sum().item()
    n = len(sampler)
    return (metric_average(loss / n, "val_loss"),
            metric_average(correct / n, "val_acc"))


def main():
    args = parse_args()
    hvd.init()
    torch.manual_seed(args.seed)
    # One intra-op thread per rank: ranks share the node's cores.
    torch.set_num_threads(1)
    device = torch.device("cpu")
    if args.cuda:
        torch.cuda.set_device(hvd.local_rank())
        device = torch.device("cuda", hvd.local_rank())

    train_set = synthetic(args.train_size, args.features, args.seed)
    val_set = synthetic(args.val_size, args.features, args.seed + 1)
    train_sampler = DistributedSampler(train_set, num_replicas=hvd.size(),
                                       rank=hvd.rank(), shuffle=True,
                                       seed=args.seed)
    val_sampler = DistributedSampler(val_set, num_replicas=hvd.size(),
                                     rank=hvd.rank(), shuffle=False)
    train_loader = DataLoader(train_set, batch_size=args.batch_size,
                              sampler=train_sampler)
    val_loader = DataLoader(val_set, batch_size=256, sampler=val_sampler)

    model = Net(args.features, args.hidden).to(device)
    # Horovod: scale the learning rate by the number of ranks.
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr * hvd.size(),
                                momentum=args.momentum)
    # Horovod: start every rank from rank 0's weights and optimizer state.
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(optimizer, root_rank=0)
    compression = hvd.Compression.fp16 if args.fp16_allreduce else hvd.Compression.none
    optimizer = hvd.DistributedOptimizer(optimizer,
                                         named_parameters=model.named_parameters(),
                                         compression=compression,
                                         op=hvd.Average)
    # Where a script would resume: rank 0 decides the first epoch for all.
    start_epoch = hvd.broadcast_object(0, root_rank=0)

    first_val_loss, _ = evaluate(model, val_loader, val_sampler, device)
    if hvd.rank() == 0:
        print(f"{hvd.size()} ranks, {sum(p.numel() for p in model.parameters())} "
              f"parameters, lr {args.lr * hvd.size():g}; before training: "
              f"val_loss {first_val_loss:.6f}", flush=True)
    val_loss = val_acc = float("nan")
    for epoch in range(start_epoch, args.epochs):
        model.train()
        train_sampler.set_epoch(epoch)
        total, batches = 0.0, 0
        for x, y in train_loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            total += loss.item()
            batches += 1
        train_loss = metric_average(total / max(batches, 1), "train_loss")
        val_loss, val_acc = evaluate(model, val_loader, val_sampler, device)
        if hvd.rank() == 0:
            print(f"epoch {epoch + 1}: train_loss {train_loss:.6f} "
                  f"val_loss {val_loss:.6f} val_acc {val_acc:.4f}", flush=True)

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    print(f"final: rank {hvd.rank()}/{hvd.size()} epochs {args.epochs} "
          f"first_val_loss {first_val_loss:.6f} val_loss {val_loss:.6f} "
          f"val_acc {val_acc:.4f} digest {h.hexdigest()[:16]}", flush=True)
    hvd.shutdown()


if __name__ == "__main__":
    main()
