#!/usr/bin/python3
"""PyTorch gloo allreduce, timed and printed like ringpoint-bench allreduce.

Run under a launcher that sets the rank and size (mpirun:
OMPI_COMM_WORLD_RANK/SIZE; srun: SLURM_PROCID/SLURM_NTASKS; or torch's
RANK/WORLD_SIZE), with Debian's python3-torch:

    mpirun -np 2 /usr/bin/python3 gloo_allreduce.py -b 4 -e 256M -f 4

Ranks meet on a TCP store at MASTER_ADDR:MASTER_PORT (127.0.0.1:29517 by
default: one node). gloo's allreduce works in place on a tensor, so only the
in-place columns are measured; the out-of-place ones print '-'. Each
iteration is timed alone, the times are combined with MAX over ranks, and
the row shows their median (or mean), exactly as the C benchmarks do. The
tensor is restored before each iteration, untimed, and the last result is
checked exactly (#wrong).
"""
import argparse
import os
import statistics
import sys
import time


def parse_size(s):
    mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    s = s.strip().rstrip("bB")
    if s and s[-1].lower() in mult:
        return int(float(s[:-1]) * mult[s[-1].lower()])
    return int(float(s))


def env_int(*names, default=None):
    for n in names:
        if n in os.environ:
            return int(os.environ[n])
    return default


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-b", "--minbytes", type=parse_size, default=8)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=32 << 20)
    p.add_argument("-f", "--stepfactor", type=float, default=2)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-m", "--stat", choices=["median", "mean"], default="median")
    p.add_argument("-d", "--datatype", choices=["float", "double", "int32", "int64"],
                   default="float")
    a = p.parse_args()

    import torch
    import torch.distributed as dist

    rank = env_int("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK", default=0)
    size = env_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "WORLD_SIZE", default=1)
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = int(os.environ.get("MASTER_PORT", "29517"))
    # Both benchmarks get the same cores: no intra-op thread pool fighting
    # the ranks for 2 CPUs.
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}",
                            rank=rank, world_size=size)

    dtype = {"float": torch.float32, "double": torch.float64,
             "int32": torch.int32, "int64": torch.int64}[a.datatype]
    es = torch.tensor([], dtype=dtype).element_size()
    bf = 2.0 * (size - 1) / size
    if rank == 0:
        print(f"# gloo_allreduce.py: torch {torch.__version__} gloo allreduce, "
              f"{size} ranks, minBytes {a.minbytes} maxBytes {a.maxbytes} "
              f"step {a.stepfactor:g} iters {a.iters} warmup {a.warmup_iters} "
              f"check {a.check}")
        print(f"# time: {a.stat} over iterations of the slowest rank's time, in us")
        print("#")
        print("#                                                        out-of-place"
              "                      in-place")
        print("#        size         count      type   redop    root      time   algbw"
              "   busbw #wrong      time   algbw   busbw #wrong")
        print("#         (B)    (elements)                                (us)  (GB/s)"
              "  (GB/s)             (us)  (GB/s)  (GB/s)")
        sys.stdout.flush()

    wrong_total = 0
    sz = float(a.minbytes)
    while sz <= a.maxbytes:
        count = int(sz) // es
        sz *= a.stepfactor
        if count == 0:
            continue
        nbytes = count * es
        # The inputs of ringpoint-bench: c_i + d_r, the d_r cancelling.
        idx = torch.arange(count, dtype=torch.int64)
        c = idx % 7 + 2
        d = 0 if (size % 2 == 1 and rank == size - 1) else (1 if rank % 2 == 0 else -1)
        pristine = (c + d).to(dtype)
        t = pristine.clone()
        times = []
        for it in range(a.warmup_iters + a.iters):
            if a.check and it == a.warmup_iters + a.iters - 1:
                t.fill_(-12345)
            t.copy_(pristine)
            t0 = time.perf_counter()
            dist.all_reduce(t, op=dist.ReduceOp.SUM)
            t1 = time.perf_counter()
            if it >= a.warmup_iters:
                times.append((t1 - t0) * 1e6)
        tt = torch.tensor(times, dtype=torch.float64)
        dist.all_reduce(tt, op=dist.ReduceOp.MAX)
        times = tt.tolist()
        us = statistics.median(times) if a.stat == "median" else statistics.fmean(times)
        wrong = "N/A"
        if a.check:
            w = torch.tensor([int((t != (c * size).to(dtype)).sum())], dtype=torch.int64)
            dist.all_reduce(w, op=dist.ReduceOp.SUM)
            wrong = int(w)
            wrong_total += wrong
        if rank == 0:
            algbw = nbytes / (us * 1e3)
            print(f"{nbytes:13d}  {count:12d}  {a.datatype:>8s}  {'sum':>6s}  {-1:6d}"
                  f"  {'-':>8s}  {'-':>6s}  {'-':>6s}  {'-':>6s}"
                  f"  {us:8.2f}  {algbw:6.2f}  {algbw * bf:6.2f}  {str(wrong):>6s}")
            sys.stdout.flush()
    if rank == 0:
        print(f"# Out of bounds values : {wrong_total} {'OK' if wrong_total == 0 else 'FAILED'}")
    dist.destroy_process_group()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
