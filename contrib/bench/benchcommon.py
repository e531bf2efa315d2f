"""What the Python benchmarks beside ringpoint-bench share: nccl-tests'
flags and sizes, ringpoint-bench's inputs (exactly checkable), and the
cells of its table. Installed next to them; they import it from their own
directory.
"""
import os
import statistics


def parse_size(s):
    """'4', '64K', '256M', '1G' (powers of 1024) -> bytes."""
    mult = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    s = s.strip().rstrip("bB")
    if s and s[-1].lower() in mult:
        return int(float(s[:-1]) * mult[s[-1].lower()])
    return int(float(s))


def env_int(*names, default=None):
    """The first of the environment variables @names that is set, as int."""
    for n in names:
        if n in os.environ:
            return int(os.environ[n])
    return default


def init_gloo(rank, size, default_port):
    """torch with one intra-op thread (the ranks get the same cores as the
    other tool; no thread pool fighting them), and the gloo process group
    on a TCP store at MASTER_ADDR:MASTER_PORT (127.0.0.1:@default_port by
    default: one node). Returns (torch, torch.distributed)."""
    import torch
    import torch.distributed as dist
    addr = os.environ.get("MASTER_ADDR", "127.0.0.1")
    port = int(os.environ.get("MASTER_PORT", str(default_port)))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://{addr}:{port}",
                            rank=rank, world_size=size)
    return torch, dist


def init_ringpoint_and_gloo(default_port):
    """ringpoint.torch started by PMIx, then gloo with its rank and size.
    Returns (torch, torch.distributed, ringpoint.torch)."""
    import ringpoint.torch as hvd
    hvd.init()
    torch, dist = init_gloo(hvd.rank(), hvd.size(), default_port)
    return torch, dist, hvd


DTYPES = ("float", "double", "int32", "int64")


def torch_dtype(torch, name):
    return {"float": torch.float32, "double": torch.float64,
            "int32": torch.int32, "int64": torch.int64}[name]


def add_size_args(p, minbytes=8, maxbytes=32 << 20, stepfactor=2):
    """nccl-tests' -b -e -f on an argparse parser."""
    p.add_argument("-b", "--minbytes", type=parse_size, default=minbytes)
    p.add_argument("-e", "--maxbytes", type=parse_size, default=maxbytes)
    p.add_argument("-f", "--stepfactor", type=float, default=stepfactor)


def sizes(minbytes, maxbytes, stepfactor, elem_size):
    """(count, nbytes) per row, as ringpoint-bench steps: sizes below one
    element are skipped."""
    sz = float(minbytes)
    while sz <= maxbytes:
        count = int(sz) // elem_size
        sz *= stepfactor
        if count:
            yield count, count * elem_size


def inputs(torch, count, rank, size, dtype):
    """ringpoint-bench's allreduce inputs c_i + d_r (the d_r cancel over the
    ranks) and the exact sum c_i * size, as tensors of @dtype."""
    c = torch.arange(count, dtype=torch.int32) % 7 + 2
    d = 0 if (size % 2 == 1 and rank == size - 1) else (1 if rank % 2 == 0 else -1)
    return (c + d).to(dtype), (c * size).to(dtype)


def combine(values, stat):
    return statistics.median(values) if stat == "median" else statistics.fmean(values)


def busbw_factor(size):
    """nccl-tests' allreduce bus bandwidth factor 2(n-1)/n."""
    return 2.0 * (size - 1) / size


def cells(us, nbytes, bf, wrong):
    """'time algbw busbw #wrong' of one measured column."""
    algbw = nbytes / (us * 1e3)
    return f"{us:8.2f}  {algbw:6.2f}  {algbw * bf:6.2f}  {str(wrong):>6s}"


EMPTY_CELLS = f"{'-':>8s}  {'-':>6s}  {'-':>6s}  {'-':>6s}"
ROW_HEAD = "{nbytes:13d}  {count:12d}  {type:>8s}  {op:>6s}  {root:6d}"
HEAD_COLS = "#        size         count      type   redop    root"
HEAD_UNITS = "#         (B)    (elements)".ljust(len(HEAD_COLS))
CELL_COLS = "      time   algbw   busbw #wrong"
CELL_UNITS = "      (us)  (GB/s)  (GB/s)       "


def row_head(nbytes, count, type_name, op, root=-1):
    return ROW_HEAD.format(nbytes=nbytes, count=count, type=type_name, op=op,
                           root=root)


def print_header(out, first_line, stat, groups, extra=""):
    """ringpoint-bench's header: @groups are the column groups' titles,
    each with 'time algbw busbw #wrong' under it; @extra columns follow."""
    print(first_line, file=out)
    print(f"# time: {stat} over iterations of the slowest rank's time, in us",
          file=out)
    print("#", file=out)
    title = "#" + " " * (len(HEAD_COLS) - 1) + "".join(
        f"{g:^{len(CELL_COLS)}s}" for g in groups)
    print(title.rstrip(), file=out)
    print(HEAD_COLS + CELL_COLS * len(groups) + extra, file=out)
    print((HEAD_UNITS + CELL_UNITS * len(groups)).rstrip(), file=out)
    out.flush()


def print_footer(out, wrong_total):
    print(f"# Out of bounds values : {wrong_total} "
          f"{'OK' if wrong_total == 0 else 'FAILED'}", file=out)
    out.flush()
