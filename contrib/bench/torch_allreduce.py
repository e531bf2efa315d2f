#!/usr/bin/python3
"""ringpoint.torch.allreduce_ beside torch.distributed's gloo all_reduce, in one run.

Both are started in the same processes: ringpoint by PMIx (hvd.init()),
gloo on a TCP store at MASTER_ADDR:MASTER_PORT (127.0.0.1:29518 by
default) with ringpoint's rank and size. Run under mpirun or
srun --mpi=pmix, with Debian's python3-torch:

    mpirun -np 2 /usr/bin/python3 torch_allreduce.py -b 4 -e 256M -f 4 -r 5

Both reduce (sum) the same tensors in place: ringpoint-bench's inputs,
restored before each iteration (untimed), the last result checked exactly
(#wrong). For every size the tools take turns, -r rounds of -n iterations
each (-N from 1 MiB), the order rotating, so that a noisy neighbour hits
them alike: below 1 MiB each tool runs its iterations of a round back to
back (its steady state), from 1 MiB every iteration runs each tool once
(-I block|iter to choose). Each iteration is timed alone and
combined with MAX over ranks; a cell is the median over rounds of each
round's median (or mean, -m mean). 'x gloo' is gloo's time over
ringpoint.torch's (for a fixed size also the busbw ratio).

-P adds two columns that split the binding's cost per call: 'ctypes' calls
rp_allreduce through ctypes on data_ptr() and nothing else (the floor of
any ctypes binding), 'no check' is allreduce_ without its cross-rank
argument check (RINGPOINT_CHECK=0). ringpoint-bench on the same sizes
gives the C library's own time.
"""
import argparse
import sys
import time

import benchcommon as bc

LARGE = 1 << 20


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    bc.add_size_args(p, minbytes=4, maxbytes=256 << 20, stepfactor=4)
    p.add_argument("-n", "--iters", type=int, default=100,
                   help="iterations per round below 1 MiB (default 100)")
    p.add_argument("-w", "--warmup_iters", type=int, default=10)
    p.add_argument("-N", "--iters-large", type=int, default=10,
                   help="iterations per round from 1 MiB (default 10)")
    p.add_argument("-W", "--warmup-large", type=int, default=2)
    p.add_argument("-r", "--rounds", type=int, default=5)
    p.add_argument("-I", "--interleave", choices=["auto", "block", "iter"],
                   default="auto", help="ways take turns per round (block) or "
                   "per iteration (iter); auto: block below 1 MiB, iter from it")
    p.add_argument("-c", "--check", type=int, default=1)
    p.add_argument("-m", "--stat", choices=["median", "mean"], default="median")
    p.add_argument("-d", "--datatype", choices=bc.DTYPES, default="float")
    p.add_argument("-P", "--python-overhead", action="store_true",
                   help="also time rp_allreduce through bare ctypes and "
                   "allreduce_ without the cross-rank check")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="print each round's figure under the row")
    a = p.parse_args()

    torch, dist, hvd = bc.init_ringpoint_and_gloo(29518)
    from ringpoint import _coll, _lib, _runtime
    from ringpoint._errors import check
    from ringpoint.torch import mpi_ops

    rank, size = hvd.rank(), hvd.size()
    dtype = bc.torch_dtype(torch, a.datatype)
    es = torch.tensor([], dtype=dtype).element_size()
    bf = bc.busbw_factor(size)
    lib, ctx = _lib.lib, _runtime.context_handle()
    rp_dt = mpi_ops._dtype(torch.tensor([], dtype=dtype), "bench")

    def check_off():
        _coll.CHECK = False

    def check_on():
        _coll.CHECK = True

    # (title, call, before, after)
    ways = [("ringpoint.torch", lambda t: hvd.allreduce_(t, op=hvd.Sum), None, None),
            ("gloo", lambda t: dist.all_reduce(t, op=dist.ReduceOp.SUM), None, None)]
    if a.python_overhead:
        ways += [("ctypes", lambda t: check(lib.rp_allreduce(
                      ctx, t.data_ptr(), t.data_ptr(), t.numel(), rp_dt, hvd.Sum),
                      "rp_allreduce"), None, None),
                 ("no check", lambda t: hvd.allreduce_(t, op=hvd.Sum),
                  check_off, check_on)]
    nw = len(ways)
    if rank == 0:
        bc.print_header(
            sys.stdout,
            f"# torch_allreduce.py: ringpoint {_runtime.library_version()}"
            f" (ringpoint.torch.allreduce_) and torch {torch.__version__} gloo "
            f"all_reduce, in place, {size} ranks, minBytes {a.minbytes} "
            f"maxBytes {a.maxbytes} step {a.stepfactor:g} rounds {a.rounds} "
            f"iters {a.iters}/{a.iters_large} warmup {a.warmup_iters}/"
            f"{a.warmup_large} check {a.check}",
            a.stat, [w[0] for w in ways], "  x gloo")

    wrong_total = 0
    for count, nbytes in bc.sizes(a.minbytes, a.maxbytes, a.stepfactor, es):
        pristine, expected = bc.inputs(torch, count, rank, size, dtype)
        t = pristine.clone()
        large = nbytes >= LARGE
        iters = a.iters_large if large else a.iters
        warm = a.warmup_large if large else a.warmup_iters
        times = torch.zeros((nw, a.rounds, iters), dtype=torch.float64)
        wrong = [0] * nw
        mode = a.interleave if a.interleave != "auto" else ("iter" if large else "block")
        # block: per round, each way's iterations back to back (a tool's
        # steady state); iter: each iteration runs every way once, so that
        # load that comes and goes hits them alike.
        order = ([(k, it) for k in range(nw) for it in range(warm + iters)]
                 if mode == "block" else
                 [(k, it) for it in range(warm + iters) for k in range(nw)])
        for r in range(a.rounds):
            for k, it in order:
                w = (k + r + (it if mode == "iter" else 0)) % nw
                _, call, before, after = ways[w]
                if before:
                    before()
                t.copy_(pristine)
                t0 = time.perf_counter()
                call(t)
                t1 = time.perf_counter()
                if after:
                    after()
                if it >= warm:
                    times[w, r, it - warm] = (t1 - t0) * 1e6
                if a.check and it == warm + iters - 1:
                    wrong[w] += int((t != expected).sum())
        dist.all_reduce(times, op=dist.ReduceOp.MAX)
        wt = torch.tensor(wrong, dtype=torch.int64)
        dist.all_reduce(wt, op=dist.ReduceOp.SUM)
        wrong_total += int(wt.sum())
        per_round = [[bc.combine(times[w, r].tolist(), a.stat)
                      for r in range(a.rounds)] for w in range(nw)]
        us = [bc.combine(per_round[w], "median") for w in range(nw)]
        if rank == 0:
            row = bc.row_head(nbytes, count, a.datatype, "sum")
            for w in range(nw):
                row += "  " + bc.cells(us[w], nbytes, bf,
                                       int(wt[w]) if a.check else "N/A")
            row += f"  {us[1] / us[0]:7.2f}"
            print(row)
            if a.verbose:
                for w in range(nw):
                    print(f"#   {ways[w][0]:>16s} rounds: "
                          + " ".join(f"{x:.2f}" for x in per_round[w]))
            sys.stdout.flush()
        del t, pristine, expected
    if rank == 0:
        bc.print_footer(sys.stdout, wrong_total)
    dist.destroy_process_group()
    hvd.shutdown()
    return 1 if wrong_total else 0


if __name__ == "__main__":
    sys.exit(main())
