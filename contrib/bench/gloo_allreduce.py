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
import sys
import time

import benchcommon as bc


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bc.add_size_args(p)
    p.add_argument("-n", "--iters", type=int, default=20)
    p.add_argument("-w", "--warmup_iters", type=int, default=5)
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-m", "--stat", choices=["median", "mean"], default="median")
    p.add_argument("-d", "--datatype", choices=bc.DTYPES, default="float")
    a = p.parse_args()

    rank = bc.env_int("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID", "RANK", default=0)
    size = bc.env_int("OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS", "WORLD_SIZE", default=1)
    torch, dist = bc.init_gloo(rank, size, 29517)
    dtype = bc.torch_dtype(torch, a.datatype)
    es = torch.tensor([], dtype=dtype).element_size()
    bf = bc.busbw_factor(size)
    if rank == 0:
        bc.print_header(
            sys.stdout,
            f"# gloo_allreduce.py: torch {torch.__version__} gloo allreduce, "
            f"{size} ranks, minBytes {a.minbytes} maxBytes {a.maxbytes} "
            f"step {a.stepfactor:g} iters {a.iters} warmup {a.warmup_iters} "
            f"check {a.check}", a.stat, ["out-of-place", "in-place"])

    wrong_total = 0
    for count, nbytes in bc.sizes(a.minbytes, a.maxbytes, a.stepfactor, es):
        # The inputs of ringpoint-bench: c_i + d_r, the d_r cancelling.
        pristine, expected = bc.inputs(torch, count, rank, size, dtype)
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
        us = bc.combine(times, a.stat)
        wrong = "N/A"
        if a.check:
            w = torch.tensor([int((t != expected).sum())], dtype=torch.int64)
            dist.all_reduce(w, op=dist.ReduceOp.SUM)
            wrong = int(w)
            wrong_total += wrong
        if rank == 0:
            print(bc.row_head(nbytes, count, a.datatype, "sum") + "  "
                  + bc.EMPTY_CELLS + "  " + bc.cells(us, nbytes, bf, wrong))
            sys.stdout.flush()
    if rank == 0:
        bc.print_footer(sys.stdout, wrong_total)
    dist.destroy_process_group()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
