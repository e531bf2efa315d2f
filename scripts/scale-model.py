#!/usr/bin/python3
"""scale-model.py - ringpoint's cost model at 8..4096 ranks, fitted on this
machine and checked against emulated runs it was not fitted on.

  scripts/scale-model.py [report] [--csv doc/scale-data.csv] [--svg doc/scale-fit.svg]
        read the measured rows, fit the model's parameters on the small runs
        (2 ranks, 4 ranks, 1-2 nodes), predict the larger emulated runs
        (8-32 ranks, 4-8 nodes), print the prediction error, the model's
        tables at 8..4096 ranks and the checkpoint interval table; write the
        plot of prediction against measurement as SVG.
  scripts/scale-model.py measure --prefix PREFIX [--csv FILE] [--only KIND,..]
        run the measurements (niced) and append rows to the CSV: allreduce
        (mpirun --oversubscribe -np 2..16, srun --mpi=pmix -N 2..8 when
        SLURM_CONF names a cluster), bootstrap (the same launches, a probe in
        every rank), checkpoints (ringpoint-ckpt bench), the hierarchy
        across nodes against the flat path (srun -N2 -n4, -N4 -n8), the
        stop path (ringpoint-ckpt-check train, SIGTERM).
  scripts/scale-model.py check [--csv FILE]
        the report, with exit status 1 unless every fitted model predicts its
        held-out rows within the tolerance stated in doc/scale.md.

Only the standard library and numpy (Debian's python3-numpy); the plot is an
SVG written here (python3-matplotlib is not installed on the build machine).
"""

import argparse
import csv
import ctypes
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import time

# ----------------------------------------------------------------- the probe
# Runs inside every rank (`scale-model.py probe`): times PMIx fences and
# rp_init, counts the endpoints the collectives open and the memory they
# take, and prints one line "PROBE k=v ...".


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def probe(args):
    lib = ctypes.CDLL(args.lib)
    pmix = ctypes.CDLL("libpmix.so.2")
    # pmix_proc_t is a 256-byte namespace and a uint32 rank; room to spare.
    proc = ctypes.create_string_buffer(512)
    if pmix.PMIx_Init(proc, None, ctypes.c_size_t(0)) != 0:
        sys.stderr.write("probe: PMIx_Init failed\n")
        return 2
    rank = int.from_bytes(proc.raw[256:260], "little")
    # The library's log (RINGPOINT_LOG_LEVEL=debug: one line per endpoint
    # opened) goes to a file of this rank's: the launcher's merged output
    # may cut lines of different ranks into each other.
    logpath = os.path.join(args.out, "rank-%d.log" % rank)
    logfd = os.open(logpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(logfd, 2)
    # One fence lines the ranks up (their start is skewed by the launch);
    # the next ones are the fence's own cost (no data collected).
    pmix.PMIx_Fence(None, ctypes.c_size_t(0), None, ctypes.c_size_t(0))
    fences = []
    for _ in range(args.fences):
        t = time.perf_counter()
        pmix.PMIx_Fence(None, ctypes.c_size_t(0), None, ctypes.c_size_t(0))
        fences.append(time.perf_counter() - t)
    # The buffers exist before the first reading: only the library's own
    # memory is counted.
    small = (ctypes.c_float * 1)()
    big = (ctypes.c_float * 65536)()
    out = (ctypes.c_float * 65536)()
    rss0 = _rss_kib()
    ctx = ctypes.c_void_p()
    t = time.perf_counter()
    rc = lib.rp_init(None, ctypes.byref(ctx))
    t_init = time.perf_counter() - t
    if rc != 0:
        sys.stderr.write("probe: rp_init returned %d\n" % rc)
        return 2
    rss1 = _rss_kib()
    # What every job does: small allreduces (recursive doubling), large ones
    # (the ring), a barrier (dissemination; rp_finalize runs one too).
    t = time.perf_counter()
    lib.rp_allreduce(ctx, small, out, ctypes.c_size_t(1), 5, 0)
    lib.rp_allreduce(ctx, big, out, ctypes.c_size_t(65536), 5, 0)
    lib.rp_barrier(ctx)
    t_first = time.perf_counter() - t
    rss2 = _rss_kib()
    lib.rp_finalize(ctx)
    pmix.PMIx_Finalize(None, ctypes.c_size_t(0))
    with open(logpath) as f:
        eps = sum("transport: connected to rank" in line for line in f)
    with open(os.path.join(args.out, "rank-%d.probe" % rank), "w") as f:
        f.write("PROBE rank=%d fence_s=%.6f init_s=%.6f first_s=%.6f rss0=%d "
                "rss1=%d rss2=%d eps=%d\n" % (rank, statistics.median(fences),
                                              t_init, t_first, rss0, rss1,
                                              rss2, eps))
    return 0


# ------------------------------------------------------------- measurements

# The srun "nodes" share this machine's cores (measure --real: they don't).
EMULATED = True
FIELDS = ["kind", "launcher", "nodes", "ranks", "algo", "size", "metric",
          "value", "round", "load"]
SIZES = [4, 64, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20]
# Emulated layouts: (launcher, nodes, ranks). mpirun is one node; srun spreads
# the ranks over the local cluster's slurmd daemons (all on this machine).
MPIRUN = [("mpirun", 1, n) for n in (2, 4, 8, 16)]
SRUN = [("srun", 1, 2), ("srun", 2, 4), ("srun", 4, 8), ("srun", 8, 16),
        ("srun", 8, 32)]


def _load():
    return os.getloadavg()[0]


def _launch(launcher, nodes, ranks, argv, env=None, timeout=600):
    if launcher == "mpirun":
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
               str(ranks)]
        for k in sorted(env or {}):
            cmd += ["-x", k]
    else:
        cmd = ["srun", "--mpi=pmix", "-N", str(nodes), "-n", str(ranks)]
    full = dict(os.environ)
    if launcher == "srun" and EMULATED:
        # Each emulated node has no more ranks than this machine has CPUs,
        # so the library would let them spin (right on a real node, where
        # they have the cores); here 4-32 spinning ranks share 2 cores.
        # They sleep on the transport's descriptor at once instead.
        full["RINGPOINT_COLL_SPIN_US"] = "0"
    full.update(env or {})
    p = subprocess.run(["nice", "-n", "10"] + cmd + argv, env=full,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=timeout)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:])
        raise RuntimeError("%s %dx%d %s: exit %d" % (launcher, nodes, ranks,
                                                     argv[0], p.returncode))
    return p.stdout


def _bench_rows(out):
    """(size, out-of-place median us) from ringpoint-bench's table."""
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 10 and not line.startswith("#") and f[0].isdigit():
            rows.append((int(f[0]), float(f[5])))
    return rows


def _bench_allreduce(a, w, rnd, kind, lay, algo, top, env):
    """One ringpoint-bench allreduce run of layout @lay, its rows as @kind
    and @algo."""
    launcher, nodes, ranks = lay
    out = _launch(launcher, nodes, ranks,
                  [os.path.join(a.prefix, "bin", "ringpoint-bench"), "allreduce",
                   "-b", "4", "-e", top, "-f", "4", "-n", "20", "-w", "3"],
                  env=env)
    load = _load()
    rows = _bench_rows(out)
    for size, us in rows:
        w.writerow([kind, launcher, nodes, ranks, algo, size, "time_us",
                    "%.2f" % us, rnd, "%.1f" % load])
    print("%s %s %dx%d %s: %d rows" % (kind, launcher, nodes, ranks, algo,
                                      len(rows)))


def measure_allreduce(a, w, rnd, layouts):
    for lay in layouts:
        for algo in ("ring", "rd"):
            _bench_allreduce(a, w, rnd, "allreduce", lay, algo,
                             "4M" if lay[2] <= 16 else "1M",
                             {"RINGPOINT_ALLREDUCE_ALGO": algo})


def measure_hier(a, w, rnd, layouts):
    """The hierarchy across nodes (coll/hier.c) against the flat path, the
    same float32 allreduce: RINGPOINT_COLL_HIER=1 (every allreduce through
    the node's segment and the leaders, or the lanes from 256 KiB) and =0
    (AUTO's flat algorithm over the job), interleaved."""
    for lay in layouts:
        for algo, hier in (("hier", "1"), ("flat", "0")):
            _bench_allreduce(a, w, rnd, "hier", lay, algo, "4M",
                             {"RINGPOINT_COLL_HIER": hier})


def measure_boot(a, w, rnd, layouts):
    lib = os.path.join(a.prefix, "lib", "libringpoint.so.0")
    me = os.path.abspath(__file__)
    # direct: peers' addresses fetched on first use (the default);
    # collect: every address to every node at the fence.
    for (launcher, nodes, ranks), mode in [(l, m) for l in layouts
                                           for m in ("direct", "collect")]:
        shutil.rmtree(a.probe_dir, ignore_errors=True)
        os.makedirs(a.probe_dir)
        _launch(launcher, nodes, ranks,
                ["/usr/bin/python3", me, "probe", "--lib", lib, "--out",
                 a.probe_dir],
                env={"RINGPOINT_LOG_LEVEL": "debug",
                     "RINGPOINT_PMIX_COLLECT": "1" if mode == "collect" else "0"})
        load = _load()
        probes = []
        for name in sorted(os.listdir(a.probe_dir)):
            if name.endswith(".probe"):
                with open(os.path.join(a.probe_dir, name)) as f:
                    probes.append(dict(kv.split("=") for kv in f.read().split()[1:]))
        if len(probes) != ranks:
            raise RuntimeError("probe: %d of %d ranks answered" %
                               (len(probes), ranks))
        eps = {int(p["rank"]): int(p["eps"]) for p in probes}
        vals = {
            "fence_us": statistics.median(float(p["fence_s"]) for p in probes) * 1e6,
            "init_ms": max(float(p["init_s"]) for p in probes) * 1e3,
            "first_ms": max(float(p["first_s"]) for p in probes) * 1e3,
            "rss_init_kib": statistics.median(int(p["rss1"]) - int(p["rss0"]) for p in probes),
            "rss_coll_kib": statistics.median(int(p["rss2"]) - int(p["rss1"]) for p in probes),
            "eps_max": max(eps.values()) if eps else 0,
            "eps_mean": sum(eps.values()) / ranks,
        }
        for k, v in vals.items():
            w.writerow(["boot", launcher, nodes, ranks, mode, 0, k, "%.3f" % v,
                        rnd, "%.1f" % load])
        print("boot %s %dx%d %s: %s" % (launcher, nodes, ranks, mode,
                                     " ".join("%s=%.1f" % kv for kv in vals.items())))


def _ckpt_values(out):
    v = {}
    m = re.search(r"O_DIRECT write\+fsync ([\d.]+), cold O_DIRECT read ([\d.]+)", out)
    if m:
        v["raw_w_gbs"], v["raw_r_gbs"] = float(m.group(1)), float(m.group(2))
    heads = None
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "sync" and len(f) == 8:
            v["sync_w_gbs"], v["commit_ms"] = float(f[1]), float(f[4])
            v["restore_gbs"] = float(f[5])
        if f and f[0] == "mode" and "begin" in f:
            heads = f[1:]
        elif heads and f and f[0] == "sync" and len(f) == len(heads) + 1:
            for h, x in zip(heads, f[1:]):
                if h in ("vote", "allgather", "rd-read", "pwrite", "fsync",
                         "restore", "rd-other"):
                    v["ph_" + h.replace("-", "_") + "_ms"] = float(x)
    return v


def measure_ckpt(a, w, rnd, layouts):
    tool = os.path.join(a.prefix, "bin", "ringpoint-ckpt")
    for launcher, nodes, ranks, size in layouts:
        out = _launch(launcher, nodes, ranks,
                      [tool, "bench", "--dir", a.ckpt_dir, "--size",
                       "%dM" % (size >> 20), "--iters", "3"])
        load = _load()
        vals = _ckpt_values(out)
        for k, x in vals.items():
            w.writerow(["ckpt", launcher, nodes, ranks, "sync", size, k,
                        "%.3f" % x, rnd, "%.1f" % load])
        print("ckpt %s %dx%d %dM: %s" % (launcher, nodes, ranks, size >> 20,
                                         " ".join("%s=%.2f" % kv for kv in vals.items())))


def _children(ppid, name):
    """Processes whose parent is @ppid and whose command line has @name."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cmd = f.read()
        except (OSError, ValueError, IndexError):
            continue
        if parent == ppid and name.encode() in cmd:
            found.append(int(d))
    return found


def _srun_job(name):
    """The id of this user's job named @name, once squeue lists it."""
    for _ in range(200):
        out = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"],
                             stdout=subprocess.PIPE, text=True).stdout.split()
        if out:
            return out[0]
        time.sleep(0.1)
    raise RuntimeError("stop: no job named %s in squeue" % name)


def measure_stop(a, w, rnd, layouts):
    """SIGTERM to a training loop under mpirun, or under srun on the
    emulated nodes; rank 0's log says when the stop checkpoint was
    committed, counted from the signal."""
    tool = os.path.join(a.prefix, "libexec", "ringpoint", "ringpoint-ckpt-check")
    for launcher, nodes, ranks, size, sleep_ms in layouts:
        d = os.path.join(a.ckpt_dir, "stop-%d" % os.getpid())
        name = "rp-scale-stop-%d" % os.getpid()
        env = dict(os.environ, RINGPOINT_CKPT_DIR=d,
                   RINGPOINT_SLURM_KILL_WAIT="30")
        if launcher == "mpirun":
            cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np",
                   str(ranks), "-x", "RINGPOINT_CKPT_DIR", "-x",
                   "RINGPOINT_SLURM_KILL_WAIT"]
        else:
            cmd = ["srun", "--mpi=pmix", "-N", str(nodes), "-n", str(ranks),
                   "-J", name]
            if EMULATED:
                env["RINGPOINT_COLL_SPIN_US"] = "0"   # as _launch says
        cmd = ["nice", "-n", "10"] + cmd + [tool, "train", "-n", "1000000",
                                            "-b", str(size), "-s", str(sleep_ms)]
        # The step time first: runs of 2 and 8 steps without a stop (no
        # checkpoint is due); the difference is 6 steps without the launch.
        runs = []
        for steps in (2, 8):
            i = cmd.index("1000000")
            t = time.perf_counter()
            subprocess.run(cmd[:i] + [str(steps)] + cmd[i + 1:],
                           env=dict(env, RINGPOINT_CKPT_DIR=d + "-steps"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           check=True)
            runs.append(time.perf_counter() - t)
            subprocess.run(["rm", "-rf", d + "-steps"])
        total = runs[1]
        step_s = max(0.0, (runs[1] - runs[0]) / 6)
        p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
        time.sleep(max(4.0, total))
        if launcher == "mpirun":
            # To the ranks themselves, as slurmstepd does (mpirun would
            # forward it, then kill the ranks before a large checkpoint is
            # committed).
            kids = _children(p.pid, "ringpoint-ckpt-check")
            if len(kids) != ranks:
                p.kill()
                raise RuntimeError("stop: found %d of %d ranks" % (len(kids), ranks))
            for pid in kids:
                os.kill(pid, signal.SIGTERM)
        else:
            # Every task of the job, through slurmstepd, as a preemption.
            subprocess.run(["scancel", "-s", "TERM", _srun_job(name)], check=True)
        out = p.communicate(timeout=120)[0]
        subprocess.run(["rm", "-rf", d, d + "-steps"])
        m = re.search(r"checkpoint committed, (\d+) bytes, ([\d.]+) s after the signal", out)
        if not m:
            sys.stderr.write(out[-2000:])
            raise RuntimeError("stop: no committed stop checkpoint in the log")
        load = _load()
        for k, x in (("after_signal_s", float(m.group(2))),
                     ("bytes", int(m.group(1))), ("step_s", step_s)):
            w.writerow(["stop", launcher, nodes, ranks, "sync", size, k,
                        "%.3f" % x, rnd, "%.1f" % load])
        print("stop %s %dx%d %d MiB: %.2f s after the signal (step %.3f s)"
              % (launcher, nodes, ranks, size >> 20, float(m.group(2)), step_s))


def measure(a):
    kinds = set(a.only.split(",")) if a.only else {"allreduce", "boot", "ckpt",
                                                   "hier", "stop"}
    if a.probe_dir is None:
        base = os.environ.get("RP_CLUSTER_DIR")
        a.probe_dir = os.path.join(base + "/work" if base else "/var/tmp",
                                   "rp-scale-probe.%d" % os.getpid())
    have_srun = bool(os.environ.get("SLURM_CONF"))
    os.makedirs(a.ckpt_dir, exist_ok=True)
    new = not os.path.exists(a.csv)
    with open(a.csv, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(FIELDS)
        for rnd in range(a.rounds):
            if "boot" in kinds:
                measure_boot(a, w, rnd, MPIRUN + (SRUN if have_srun else []))
            if "allreduce" in kinds:
                measure_allreduce(a, w, rnd, MPIRUN + (SRUN[1:] if have_srun else []))
            if "ckpt" in kinds:
                lay = [("mpirun", 1, 2, 64 << 20), ("mpirun", 1, 2, 256 << 20),
                       ("mpirun", 1, 4, 256 << 20), ("mpirun", 1, 8, 128 << 20)]
                if have_srun:
                    lay += [("srun", 2, 4, 256 << 20), ("srun", 4, 8, 128 << 20)]
                measure_ckpt(a, w, rnd, lay)
            if "hier" in kinds and have_srun:
                measure_hier(a, w, rnd, [("srun", 2, 4), ("srun", 4, 8)])
            if "stop" in kinds:
                lay = [("mpirun", 1, 2, 64 << 20, 200), ("mpirun", 1, 4, 256 << 20, 200)]
                if have_srun:
                    lay += [("srun", 2, 4, 64 << 20, 200), ("srun", 4, 8, 64 << 20, 200)]
                measure_stop(a, w, rnd, lay)
            f.flush()


# -------------------------------------------------------------------- model
# Every time in seconds, every size in bytes. The formulas follow the code:
# runtime/coll/allreduce*.c, barrier.c, runtime/core/context.c (which peers
# a rank connects to), runtime/ckpt/write/commit.c and engine/budget.c; doc/scale.md
# explains each.

CORES = 2                      # this machine's CPUs: emulated ranks share them
KIB, MIB, GIB, TIB = 1 << 10, 1 << 20, 1 << 30, 1 << 40
CARD_BYTES = 5 * 4 + 64        # rp_peer_card_t (core/peer.h)
UCX_CARD_BYTES = 4 + 4 + 8 + 40  # rp_ucx_card_t, before the worker address
PER_PEER_BYTES = 32 + 1 + 32   # per rank and peer: UCX peer, touched, notice
CHUNK = 4 * MIB                # RINGPOINT_CKPT_CHUNK_SIZE default
BUDGET_FACTOR, BUDGET_MARGIN = 1.25, 2.0   # ckpt/engine/budget.c


def log2i(n):
    return n.bit_length() - 1


def rd_max_bytes(n):
    """AUTO's switch in rp__comm_create: recursive doubling up to here."""
    return 8 * KIB if n <= 2 else 64 * KIB


def auto_algo(n, size, es=4):
    return "rd" if size <= rd_max_bytes(n) or size // es < n else "ring"


def peers(n, r):
    """The ranks rank @r opens an endpoint to: the ring's neighbours
    (allreduce ring, allgather, broadcast chain), recursive doubling's
    partners r^2^k and the extra ranks' r+-p, the dissemination barrier's
    r+-2^k (rp_finalize runs one)."""
    s = {(r - 1) % n, (r + 1) % n}
    p = 1 << log2i(n)
    if r < p:
        s |= {r ^ (1 << k) for k in range(log2i(p))}
        if r < n - p:
            s.add(r + p)
    else:
        s.add(r - p)
    d = 1
    while d < n:
        s |= {(r + d) % n, (r - d) % n}
        d <<= 1
    s.discard(r)
    return s


def endpoints(n):
    return max(len(peers(n, r)) for r in range(n)) if n > 1 else 0


def remote_peers(n, nodes):
    """Most peers of one rank on other nodes (srun's block distribution)."""
    q = -(-n // nodes)
    return max(sum(1 for x in peers(n, r) if x // q != r // q)
               for r in range(n)) if n > 1 else 0


class Net:
    """One allreduce cost model. alpha: s per message; b_ring: s per byte
    of the ring's 2(n-1)/n S (moved, and reduced on the way, pipelined);
    b_rd: s per byte of one recursive-doubling exchange (sent, received,
    reduced). alpha_os: the extra cost per message and per extra rank on
    a core when ranks outnumber the cores (this machine), where the bytes
    also cost n/cores times more. alpha_net, beta_net, q: a network
    between nodes of q ranks each (a site's cluster)."""

    def __init__(self, alpha, b_ring, b_rd, alpha_os=0.0, cores=None,
                 alpha_net=None, beta_net=None, q=None, p_a=1.0, p_b=1.0):
        self.alpha, self.b_ring, self.b_rd = alpha, b_ring, b_rd
        self.alpha_os, self.cores = alpha_os, cores if cores else CORES
        self.alpha_net, self.beta_net, self.q = alpha_net, beta_net, q
        self.p_a, self.p_b = p_a, p_b

    def _per_core(self, n):
        """Ranks per core on one node (all n here; q on a site's node)."""
        local = n if self.q is None else min(n, self.q)
        return max(1.0, local / self.cores)

    def _k(self, n):
        """What a byte costs more with k ranks per core: k^p_b."""
        return self._per_core(n) ** self.p_b

    def _a(self, n):
        return self.alpha + self.alpha_os * (self._per_core(n) - 1) ** self.p_a

    def _net(self, n):
        return self.q is not None and n > self.q

    def ring(self, n, size):
        if n <= 1:
            return 0.0
        a, b = self._a(n), self.b_ring * self._k(n)
        if self._net(n):
            # blocks of q ranks per node: one rank per node sends over the
            # network each way; every step waits for the slowest link
            a, b = self.alpha_net, max(b, self.beta_net)
        return 2 * (n - 1) * a + 2 * (n - 1) / n * size * b

    def rd(self, n, size):
        if n <= 1:
            return 0.0
        p = 1 << log2i(n)
        t = 0.0
        for k in range(log2i(p)):
            a, b = self._a(n), self.b_rd * self._k(n)
            if self._net(n) and (1 << k) >= self.q:
                # every rank of a node exchanges with another node at once:
                # q flows share the node's link
                a, b = self.alpha_net, max(b, self.beta_net * self.q)
            t += a + size * b
        if n > p:
            a, b = self._a(n), self.b_rd * self._k(n)
            if self._net(n):
                a, b = self.alpha_net, max(b, self.beta_net * self.q)
            t += 2 * (a + size * b)
        return t

    def allreduce(self, n, size, algo="auto"):
        algo = auto_algo(n, size) if algo == "auto" else algo
        return self.ring(n, size) if algo == "ring" else self.rd(n, size)

    def level(self, n_all, m, size, algo, cross=False, flows=1):
        """One level of the hierarchy (coll/hier.c): @algo ("ring", "rd",
        "gather": the ring allgather, "bcast": the chain) among @m ranks
        while all @n_all ranks of the job run (on this machine they all
        share its cores). cross: the level's messages leave the node (a
        site's network), @flows of them at once through the node's link."""
        if m <= 1:
            return 0.0
        a, k = self._a(n_all), self._k(n_all)
        br, bd = self.b_ring * k, self.b_rd * k
        if cross and self.q is not None:
            a = self.alpha_net
            br = max(br, self.beta_net * flows)
            bd = max(bd, self.beta_net * flows)
        if algo == "ring":
            return 2 * (m - 1) * a + 2 * (m - 1) / m * size * br
        if algo == "gather":
            return (m - 1) * a + (m - 1) / m * size * br
        if algo == "bcast":
            return (m - 1) * a + size * br
        p = 1 << log2i(m)
        return (log2i(p) + 2 * (m > p)) * (a + size * bd)

    def hier(self, n, nodes, size, es=4):
        """RINGPOINT_COLL_HIER=1 (coll/hier.c), q = n/nodes ranks on every
        node: the node's allreduce, then among one leader per node and a
        broadcast within the node; from 256 KiB (RP_HIER_LANES_MIN) in q
        lanes instead: local rank i of every node reduces the i-th q-th of
        the buffer (q flows through each node's link), then the node
        gathers the slices. Each level takes the job's algorithm when it
        is recursive doubling, else chooses by its own size as AUTO does
        (the job's RD_MAX). The node's levels go through its shared
        segment, which this model prices as the fitted transport (high)."""
        algo = auto_algo(n, size)
        q = max(1, n // nodes)

        def pick(m, b):
            if algo == "rd":
                return "rd"
            return "rd" if b <= rd_max_bytes(n) or b // es < m else "ring"
        t = self.level(n, q, size, pick(q, size))
        if q > 1 and size >= 256 * KIB and (size // es) % q == 0:
            part = size / q
            return t + self.level(n, nodes, part, pick(nodes, part), True, q) + \
                self.level(n, q, size, "gather")
        return t + self.level(n, nodes, size, pick(nodes, size), True) + \
            self.level(n, q, size, "bcast")

    def allgather(self, n, size):
        """The ring allgather of @size bytes in all (restore, region check):
        half the ring allreduce's steps and bytes (b_ring also covers the
        reduction, so this errs high)."""
        return self.ring(n, size) / 2

    def bcast(self, n, size):
        """The chain broadcast of a small message: n - 1 hops."""
        if n <= 1:
            return 0.0
        a = self.alpha_net if self._net(n) else self._a(n)
        return (n - 1) * a + size * (self.beta_net if self._net(n) else self.b_ring)


def agreement_bytes(n, size):
    """The commit's agreement buffer (ckpt/write/commit.c): per rank an ok flag,
    a chunk count and its chunk CRCs, int32 each, summed over all ranks."""
    maxn = -(-(size // n + 4096) // CHUNK)
    return 4 * n * (2 + maxn)


# ------------------------------------------------------------------ fitting

def _rows(data, **kw):
    return [r for r in data if all(str(r[k]) == str(v) for k, v in kw.items())]


def _median_by(rows, keyf):
    groups = {}
    for r in rows:
        groups.setdefault(keyf(r), []).append(float(r["value"]))
    return {k: statistics.median(v) for k, v in groups.items()}


def _wlsq(A, y):
    """Least squares on relative error (rows weighted by 1/y), the
    coefficients kept >= 0 (drop a negative one and refit)."""
    import numpy as np
    A = np.asarray(A, float)
    y = np.asarray(y, float)
    keep = list(range(A.shape[1]))
    while True:
        W = A[:, keep] / y[:, None]
        x, *_ = np.linalg.lstsq(W, np.ones(len(y)), rcond=None)
        if (x >= 0).all() or len(keep) == 1:
            out = [0.0] * A.shape[1]
            for i, k in enumerate(keep):
                out[k] = max(0.0, float(x[i]))
            return out
        keep.pop(int(np.argmin(x)))


def _design(n, size, algo):
    """alpha, b_ring, b_rd multipliers of one allreduce (no oversubscription)."""
    if algo == "ring":
        return [2 * (n - 1), 2 * (n - 1) / n * size, 0.0]
    p = 1 << log2i(n)
    steps = log2i(p) + 2 * (n > p)
    return [steps, 0.0, size * steps]


def fit_allreduce(data, launcher="mpirun", spin_env=""):
    ar = _median_by(_rows(data, kind="allreduce"),
                    lambda r: (r["launcher"], int(r["nodes"]), int(r["ranks"]),
                               r["algo"], int(r["size"])))
    # alpha, b_ring, b_rd: 2 ranks, a core each, both algorithms
    fit2 = [(k, v) for k, v in ar.items() if k[0] == "mpirun" and k[2] == 2]
    alpha, b_ring, b_rd = _wlsq([_design(2, k[4], k[3]) for k, _ in fit2],
                                [v * 1e-6 for _, v in fit2])
    # Oversubscription, fitted on 4 and 8 ranks (2 and 4 per core): each
    # message costs alpha_os (k-1)^p_a more, each byte k^p_b times more,
    # k = ranks per core (mpirun: polling ranks yield the core; srun: they
    # sleep at once, see measure). p_a, p_b by a grid, alpha_os by least
    # squares at each point of it.
    nets = {}
    for lau in ("mpirun", "srun"):
        fit = [(k, v * 1e-6) for k, v in ar.items()
               if k[0] == lau and 2 < k[2] <= 8]
        best = None
        for pa in [x / 20 for x in range(10, 61)]:
            for pb in [x / 20 for x in range(10, 61)]:
                base = Net(alpha, b_ring, b_rd, 0.0, p_a=pa, p_b=pb)
                num = den = 0.0
                xs = []
                for k, v in fit:
                    kk = k[2] / CORES
                    x = _design(k[2], k[4], k[3])[0] * (kk - 1) ** pa
                    d = v - base.allreduce(k[2], k[4], k[3])
                    num += x * d / v ** 2
                    den += x * x / v ** 2
                    xs.append((x, d, v))
                aos = max(0.0, num / den) if den else 0.0
                sse = sum(((d - aos * x) / v) ** 2 for x, d, v in xs)
                if best is None or sse < best[0]:
                    best = (sse, aos, pa, pb)
        if best is None:
            continue
        nets[lau] = Net(alpha, b_ring, b_rd, best[1], p_a=best[2], p_b=best[3])
    return nets, ar


def _err(pred, meas):
    return (pred - meas) / meas


# ------------------------------------------------------------------ report

def _fmt_t(t):
    if t < 1e-3:
        return "%.1f us" % (t * 1e6)
    if t < 1:
        return "%.1f ms" % (t * 1e3)
    if t < 600:
        return "%.1f s" % t
    if t < 7200:
        return "%.0f min" % (t / 60)
    return "%.1f h" % (t / 3600)


def _fmt_b(b):
    for unit, f in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if b >= f:
            x = b / f
            return ("%.0f %s" if x == int(x) else "%.1f %s") % (x, unit)
    return "%d B" % b


def _table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def report(a):
    with open(a.csv, newline="") as f:
        data = list(csv.DictReader(f))
    print("# ringpoint scale model: %d measured rows from %s\n" %
          (len(data), os.path.relpath(a.csv)))
    errors = {}
    points = []   # (panel, label, measured, predicted, held_out)

    # -------------------------------------------------- (c) allreduce
    nets, ar = fit_allreduce(data)
    net = nets["mpirun"]
    print("## (c) Allreduce\n")
    print("Fitted on 2 ranks (alpha, b_ring, b_rd: mpirun -np 2, a core "
          "each) and 4-8 ranks (oversubscription: mpirun -np 4, 8; srun -N2 "
          "-n4, -N4 -n8), 4 B - 4 MiB, both algorithms forced "
          "(RINGPOINT_ALLREDUCE_ALGO):\n")
    print("alpha %.2f us per message; b_ring %.3f ns/B (%.1f GB/s of ring "
          "traffic); b_rd %.3f ns/B (%.1f GB/s per exchange)\n" %
          (net.alpha * 1e6, net.b_ring * 1e9, 1e-9 / net.b_ring if net.b_ring else 0,
           net.b_rd * 1e9, 1e-9 / net.b_rd if net.b_rd else 0))
    for lau, how in (("mpirun", "polling ranks yield the core"),
                     ("srun", "ranks sleep on the transport at once")):
        if lau in nets:
            x = nets[lau]
            print("%s (%s): + %.2f us x (k-1)^%.2f per message, bytes x k^%.2f "
                  "(k = ranks per core)\n" % (lau, how, x.alpha_os * 1e6, x.p_a, x.p_b))
    rows = []
    held = []
    for key in sorted(ar, key=lambda k: (k[2], k[0], k[1], k[3], k[4])):
        launcher, nodes, n, algo, size = key
        meas = ar[key] * 1e-6
        pred = nets[launcher].allreduce(n, size, algo)
        fitted = n <= 8
        points.append(("allreduce", "%s %dx%d %s %s" % (launcher, nodes, n, algo, _fmt_b(size)),
                       meas, pred, not fitted))
        if not fitted:
            held.append((key, _err(pred, meas)))
    by_layout = {}
    for key, e in held:
        by_layout.setdefault(key[:4] + ("<= 64 KiB" if key[4] <= 64 * KIB else ">= 256 KiB",),
                             []).append(e)
    for lay, es in sorted(by_layout.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][3], kv[0][4])):
        ab = [abs(e) for e in es]
        rows.append(["%s -N%d -n%d" % lay[:3], lay[3], lay[4],
                     "%+.0f %%" % (100 * statistics.median(es)),
                     "%.0f %%" % (100 * statistics.median(ab)),
                     "%.0f %%" % (100 * max(ab))])
    print("Held out (not fitted on): |predicted - measured| / measured; bias "
          "> 0: the model is slow\n")
    print(_table(["layout", "algorithm", "sizes", "bias (median)", "median error",
                  "max error"], rows))
    allerr = [abs(e) for _, e in held]
    errors["allreduce"] = allerr
    print()
    # the switch point the model gives against the one in the code
    rows = []
    for n in (2, 4, 8, 16, 32):
        cross = next((s for s in (2 ** i for i in range(2, 31))
                      if net.ring(n, s) < net.rd(n, s)), None)
        rows.append([n, _fmt_b(rd_max_bytes(n)),
                     _fmt_b(cross) if cross else "> 1 GiB"])
    print("Switch point on this machine (mpirun; ring faster from):\n")
    print(_table(["ranks", "code's RD_MAX (AUTO)", "model: ring faster from"], rows))
    print()

    # -------------------------------------------------- (c) the hierarchy
    hr = _median_by(_rows(data, kind="hier"),
                    lambda r: (int(r["nodes"]), int(r["ranks"]), r["algo"],
                               int(r["size"])))
    if hr and "srun" in nets:
        hnet = nets["srun"]
        print("## (c) The hierarchy across nodes (RINGPOINT_COLL_HIER=1)\n")
        print("Nothing fitted: the srun parameters above, the node's levels "
              "priced as the transport (they go through the segment). "
              "Measured against the flat path (=0) in the same rounds.\n")
        by = {}
        for (N, n, algo, size), v in sorted(hr.items()):
            if algo != "hier" or (N, n, "flat", size) not in hr:
                continue
            meas, flat = v * 1e-6, hr[(N, n, "flat", size)] * 1e-6
            pred = hnet.hier(n, N, size)
            points.append(("hier", "srun %dx%d hier %s" % (N, n, _fmt_b(size)),
                           meas, pred, True))
            band = "<= 64 KiB" if size <= 64 * KIB else ">= 256 KiB"
            by.setdefault((N, n, band), []).append((meas, flat, pred))
        rows, herr = [], []
        for (N, n, band), xs in sorted(by.items()):
            es = [_err(p, m) for m, _, p in xs]
            herr += [abs(e) for e in es]
            rows.append(["srun -N%d -n%d" % (N, n), band,
                         "%.2f" % statistics.median(f / m for m, f, _ in xs),
                         "%+.0f %%" % (100 * statistics.median(es)),
                         "%.0f %%" % (100 * statistics.median(abs(e) for e in es)),
                         "%.0f %%" % (100 * max(abs(e) for e in es))])
        print(_table(["layout", "sizes", "flat / hierarchy (measured, median)",
                      "model bias (median)", "median error", "max error"], rows))
        print()
        errors["hier"] = herr

    # -------------------------------------------------- (a) bootstrap
    boot = _median_by(_rows(data, kind="boot"),
                      lambda r: (r["launcher"], int(r["nodes"]), int(r["ranks"]),
                                 r["algo"], r["metric"]))
    def b(launcher, nodes, n, mode, metric):
        return boot.get((launcher, nodes, n, mode, metric))
    srun_lays = sorted({(k[1], k[2]) for k in boot if k[0] == "srun"})
    print("## (a) Bootstrap\n")
    # the bare fence: a tree over the nodes' PMIx servers
    fit = [(N, n) for N, n in srun_lays if n <= 8]
    A = [[1.0, math.log2(N)] for N, n in fit for m in ("direct", "collect")]
    y = [b("srun", N, n, m, "fence_us") * 1e-6 for N, n in fit
         for m in ("direct", "collect")]
    f0, f1 = _wlsq(A, y)
    print("PMIx fence (no data), srun: %.0f us + %.0f us per doubling of "
          "the nodes (fitted on -N1 -n2, -N2 -n4, -N4 -n8)\n" % (f0 * 1e6, f1 * 1e6))
    # direct modex: the first collectives fetch the remote peers' addresses
    gfit = []
    for N, n in srun_lays:
        d, c = b("srun", N, n, "direct", "first_ms"), b("srun", N, n, "collect", "first_ms")
        if d is not None and c is not None:
            gfit.append((N, n, remote_peers(n, N), (d - c) * 1e-3))
    # t_get per remote peer, fitted on -N2 -n4 and -N4 -n8 (the servers
    # and the ranks share the 2 cores: it grows with them, but too unevenly
    # here to fit a law to)
    fitg = [x for x in gfit if 2 <= x[0] <= 4 and x[2] > 0]
    t_get = (sum(x[3] for x in fitg) / sum(x[2] for x in fitg)) if fitg else 0.0
    get = lambda n, remote: t_get * remote
    print("Direct modex: %.1f ms per remote peer's address fetched on first "
          "use (fitted on -N2 -n4 and -N4 -n8)\n" % (t_get * 1e3))
    rows = []
    for N, n in srun_lays:
        fm = b("srun", N, n, "direct", "fence_us") * 1e-6
        fc = b("srun", N, n, "collect", "fence_us") * 1e-6
        fmeas = (fm + fc) / 2
        fpred = f0 + f1 * math.log2(N)
        held_out = n > 8
        points.append(("bootstrap", "fence srun %dx%d" % (N, n), fmeas, fpred, held_out))
        g_held = n > 8
        g = next(x for x in gfit if x[:2] == (N, n))
        gpred = get(n, g[2])
        if g[2] > 0:
            points.append(("bootstrap", "modex srun %dx%d" % (N, n), g[3], gpred, g_held))
        rows.append(["-N%d -n%d" % (N, n), "%.0f" % (fmeas * 1e6), "%.0f" % (fpred * 1e6),
                     "%+.0f %%" % (100 * _err(fpred, fmeas)), g[2],
                     "%.0f" % (g[3] * 1e3), "%.0f" % (gpred * 1e3),
                     "%+.0f %%" % (100 * _err(gpred, g[3])) if g[3] > 0 else "-",
                     "held out" if held_out else "fit"])
        if held_out:
            errors.setdefault("fence", []).append(abs(_err(fpred, fmeas)))
        if g_held and g[3] > 0:
            errors.setdefault("modex", []).append(abs(_err(gpred, g[3])))
    print(_table(["srun", "fence us", "model", "error", "remote peers",
                  "modex ms (direct - collect)", "model", "error", ""], rows))
    mp = sorted({k[2] for k in boot if k[0] == "mpirun"})
    rows = []
    for n in mp:
        rows.append([n, "%.0f" % b("mpirun", 1, n, "direct", "fence_us"),
                     "%.0f" % b("mpirun", 1, n, "direct", "init_ms"),
                     "%.0f" % b("mpirun", 1, n, "collect", "init_ms")])
    print("\nOne node (mpirun --oversubscribe): the fence and rp_init grow with "
          "the processes per core, which is the emulation, not the design:\n")
    print(_table(["ranks", "fence us", "rp_init ms direct", "rp_init ms collect"], rows))
    print()

    # -------------------------------------------------- (b) endpoints, memory
    print("## (b) Endpoints and memory per rank\n")
    rows = []
    mem = []
    for key in sorted(k for k in boot if k[4] == "eps_max" and k[3] == "direct"):
        launcher, N, n = key[:3]
        meas = boot[key]
        pred = endpoints(n)
        rows.append(["%s -N%d -n%d" % (launcher, N, n), "%.0f" % meas, pred,
                     "exact" if meas == pred else "%+.0f" % (pred - meas)])
        points.append(("endpoints", "%s %dx%d" % (launcher, N, n), meas, pred, True))
        errors.setdefault("endpoints", []).append(abs(pred - meas))
        mem.append((n, pred, b(launcher, N, n, "direct", "rss_init_kib"),
                    b(launcher, N, n, "direct", "rss_coll_kib")))
    print("Endpoints one rank opens (the most over its ranks; from "
          "RINGPOINT_LOG_LEVEL=debug 'connected to rank' lines) against the "
          "model's count of ring, recursive-doubling and barrier peers:\n")
    print(_table(["layout", "measured", "model", ""], rows))
    rss_init = statistics.median(m[2] for m in mem)
    fitm = [m for m in mem if m[0] <= 8]
    m0, m_ep = _wlsq([[1.0, m[1]] for m in fitm], [m[3] for m in fitm])
    rows = []
    for n, e, ri, rc in mem:
        pred = m0 + m_ep * e
        held_out = n > 8
        points.append(("memory", "%d ranks" % n, rc, pred, held_out))
        if held_out:
            errors.setdefault("memory", []).append(abs(_err(pred, rc)))
    print("\nMemory (RSS) per rank: rp_init %.1f MiB (UCX worker, PMIx "
          "client; the same at 2-32 ranks), the first collectives %.0f KiB + "
          "%.0f KiB per endpoint (fitted on <= 8 ranks; held-out 16-32 "
          "ranks: error up to %.0f %%)\n" %
          (rss_init / 1024, m0, m_ep,
           100 * max(errors.get("memory", [float("nan")]))))

    # -------------------------------------------------- (d) checkpoints
    ck = _median_by(_rows(data, kind="ckpt"),
                    lambda r: (r["launcher"], int(r["nodes"]), int(r["ranks"]),
                               int(r["size"]), r["metric"]))
    lays = sorted({k[:4] for k in ck if k[:4] + ("restore_gbs",) in ck and
                   k[:4] + ("sync_w_gbs",) in ck}, key=lambda k: (k[2], k[0], k[3]))
    print("## (d) Checkpoint write and restore (one disk under every emulated node)\n")
    fitc = [k for k in lays if k[0] == "mpirun" and k[2] == 2]
    tw = lambda k: k[3] / (ck[k + ("sync_w_gbs",)] * 1e9)
    tr = lambda k: k[3] / (ck[k + ("restore_gbs",)] * 1e9)

    def commit_coll(nt, n, size):
        # begin and outcome allreduces (small), the agreement (CRC slots),
        # the region tables' hash allgathered
        return 2 * nt.allreduce(n, 64) + nt.allreduce(n, agreement_bytes(n, size)) \
            + nt.allgather(n, 8 * n)
    w0, w1 = _wlsq([[1.0, k[3]] for k in fitc],
                   [tw(k) - commit_coll(net, 2, k[3]) for k in fitc])
    r0, r1 = _wlsq([[1.0, k[3]] for k in fitc],
                   [tr(k) - net.allgather(2, k[3]) for k in fitc])
    print("Write: %.0f ms + S / %.2f GB/s + the commit's collectives; restore: "
          "%.0f ms + S / %.2f GB/s + the ring allgather of S (fitted on 2 "
          "ranks, 64 and 256 MiB; raw O_DIRECT ceilings of the same runs: "
          "write %.2f, read %.2f GB/s)\n" %
          (w0 * 1e3, 1e-9 / w1 if w1 else float("inf"), r0 * 1e3,
           1e-9 / r1 if r1 else float("inf"),
           statistics.median(v for k, v in ck.items() if k[4] == "raw_w_gbs"),
           statistics.median(v for k, v in ck.items() if k[4] == "raw_r_gbs")))
    rows = []
    for k in lays:
        held_out = k not in fitc
        kn = nets.get(k[0], net)   # the launcher's way of waiting
        pw = w0 + w1 * k[3] + commit_coll(kn, k[2], k[3])
        pr = r0 + r1 * k[3] + kn.allgather(k[2], k[3])
        points.append(("checkpoint", "write %s %dx%d %s" % (k[0], k[1], k[2], _fmt_b(k[3])), tw(k), pw, held_out))
        points.append(("checkpoint", "restore %s %dx%d %s" % (k[0], k[1], k[2], _fmt_b(k[3])), tr(k), pr, held_out))
        if held_out:
            errors.setdefault("ckpt_write", []).append(abs(_err(pw, tw(k))))
            errors.setdefault("ckpt_restore", []).append(abs(_err(pr, tr(k))))
        rows.append(["%s -N%d -n%d" % k[:3], _fmt_b(k[3]),
                     "%.0f" % (tw(k) * 1e3), "%.0f" % (pw * 1e3), "%+.0f %%" % (100 * _err(pw, tw(k))),
                     "%.0f" % (tr(k) * 1e3), "%.0f" % (pr * 1e3), "%+.0f %%" % (100 * _err(pr, tr(k))),
                     "fit" if not held_out else "held out"])
    print(_table(["layout", "state", "write ms", "model", "error", "restore ms",
                  "model", "error", ""], rows))
    print()

    # -------------------------------------------------- (e) stop path
    st = _median_by(_rows(data, kind="stop"),
                    lambda r: (r["launcher"], int(r["nodes"]), int(r["ranks"]),
                               int(r["size"]), r["metric"]))
    print("## (e) Stop path: signal -> agreed step -> committed checkpoint\n")
    rows = []
    for lau, N, n, size in sorted({k[:4] for k in st}, key=lambda k: (k[2], k[0])):
        meas = st[(lau, N, n, size, "after_signal_s")]
        nbytes = st[(lau, N, n, size, "bytes")]
        step = st[(lau, N, n, size, "step_s")]
        snet = nets.get(lau, net)
        write = w0 + w1 * nbytes + commit_coll(snet, n, nbytes)
        agree = snet.allreduce(n, 64) + snet.bcast(n, 64)
        lo, hi = write + agree, write + agree + step
        mid = (lo + hi) / 2
        points.append(("stop", "%s %dx%d %s" % (lau, N, n, _fmt_b(nbytes)), meas, mid, True))
        errors.setdefault("stop", []).append(abs(_err(mid, meas)))
        rows.append(["%s -N%d -n%d" % (lau, N, n), _fmt_b(nbytes), "%.0f" % (step * 1e3),
                     "%.2f" % meas, "%.2f - %.2f" % (lo, hi),
                     "yes" if lo <= meas <= hi else "no",
                     "%+.0f %%" % (100 * _err(mid, meas))])
    print(_table(["layout", "checkpoint bytes", "step ms", "measured s after SIGTERM",
                  "model: write + agree + [0, step]", "inside", "error (mid)"], rows))
    print()
    fitted = dict(net=net, f0=f0, f1=f1, t_get=t_get, rss_init=rss_init, m0=m0,
                  m_ep=m_ep, w0=w0, w1=w1, r0=r0, r1=r1)
    scale_tables(fitted, commit_coll)
    # endpoints: a count the model must get exactly right, so the worst;
    # the times: the median over the held-out rows
    summary = {k: (max(v) if k == "endpoints" else statistics.median(v))
               for k, v in errors.items() if v}
    print("## Prediction error on held-out runs (median |predicted - measured| / measured)\n")
    print(_table(["model", "median error", "rows"],
                 [[k, ("%.0f %%" % (100 * v)) if k != "endpoints" else "%.0f endpoints (the worst)" % v,
                   len(errors[k]) if isinstance(errors[k], list) else "-"]
                  for k, v in summary.items()]))
    if a.svg:
        write_svg(a.svg, points)
        print("\nplot: %s" % os.path.relpath(a.svg))
        png = svg_to_png(a.svg)
        if png:
            print("plot: %s" % os.path.relpath(png))
    return summary


# ------------------------------------------------- the model at 8..4096 ranks

# A site's cluster; `--site key=value` overrides one (doc/scale.md says how
# to measure each on the cluster itself).
SITE = {
    "q": 8,               # ranks per node
    "alpha_net": 3e-6,    # s per message between nodes (UCX over InfiniBand)
    "bw_net": 12.5e9,     # B/s per node and direction (100 Gb/s)
    "disk_w": 2e9,        # B/s one node writes to the checkpoint file system
    "disk_r": 4e9,        # B/s one node reads from it
    "fs_w": 100e9,        # B/s the file system takes from all nodes at once
    "fs_r": 200e9,        # B/s it gives to all nodes at once
    "t_meta": 1e-3,       # s to check one shard (open, header, close)
    "addr": 215,          # UCX worker address bytes (ucx_info -u t -w)
    "kill_wait": 30,      # s, Slurm's KillWait (its default)
    "step": 1.0,          # s per training step (the wait for the safe point)
    "node_mtbf_h": 8760,  # hours between interruptions of one node
    "copy_bw": 5e9,       # B/s of the async snapshot's copy into staging
}
RANKS = (8, 64, 512, 4096)


def scale_tables(fit, commit_coll):
    s = SITE
    q = int(s["q"])
    LAYOUTS = [(n, max(1, n // q)) for n in RANKS]
    emu = fit["net"]
    site = Net(emu.alpha, emu.b_ring, emu.b_rd, 0.0, cores=q,
               alpha_net=s["alpha_net"], beta_net=1 / s["bw_net"], q=q)
    print("## The model at 8..4096 ranks (site parameters: %s)\n" %
          ", ".join("%s=%g" % kv for kv in s.items()))

    def write(S, n, N):
        """Each node writes its ranks' stripes, S/N, unless the file system's
        aggregate is the limit; then the commit."""
        return fit["w0"] + max(S / N / s["disk_w"], S / s["fs_w"]) + commit_coll(site, n, S)

    print("### (a) Bootstrap\n")
    rows = []
    for n, N in LAYOUTS:
        put = CARD_BYTES + UCX_CARD_BYTES + s["addr"]
        rp = remote_peers(n, N)
        rows.append(["%d / %d" % (n, N), put,
                     _fmt_t(fit["f0"] + fit["f1"] * math.log2(N)),
                     "%d (%s)" % (rp, _fmt_t(rp * fit["t_get"])),
                     _fmt_b(n * put)])
    print(_table(["ranks / nodes", "bytes put per rank", "fence (direct modex)",
                  "remote addresses fetched per rank (time, as measured here)",
                  "collect: bytes into each node"], rows))
    print()

    print("### (b) Endpoints and memory per rank\n")
    rows = []
    for n, N in LAYOUTS:
        e = endpoints(n)
        kib = fit["rss_init"] + fit["m0"] + fit["m_ep"] * e + n * PER_PEER_BYTES / 1024
        rows.append(["%d / %d" % (n, N), e, "%.1f KiB" % (n * PER_PEER_BYTES / 1024),
                     "%.1f MiB" % (kib / 1024)])
    print(_table(["ranks / nodes", "endpoints", "O(n) arrays", "library total (without buffers)"], rows))
    print("\nBuffers on top: a recursive-doubling allreduce of S bytes S of "
          "scratch, an in-place ring a few segments, the grouped allreduce's "
          "64 MiB fusion buffer, async checkpoints a staging copy of the "
          "rank's stripe (S/n + its own regions).\n")

    print("### (c) Allreduce, float32 sum\n")
    rows = []
    sizes = [4, 64 * KIB, 1 * MIB, 16 * MIB, 64 * MIB]
    hsizes = [1 * MIB, 64 * MIB]
    for n, N in LAYOUTS:
        row = ["%d / %d" % (n, N)]
        for size in sizes:
            algo = auto_algo(n, size)
            t = site.allreduce(n, size, algo)
            best = min(site.ring(n, size), site.rd(n, size))
            row.append("%s %s%s" % (_fmt_t(t), algo,
                                    "" if t <= best * 1.1 else " (best %s)" % _fmt_t(best)))
        cross = next((x for x in (2 ** i for i in range(2, 34))
                      if site.ring(n, x) < site.rd(n, x)), None)
        row.append(_fmt_b(cross) if cross else "> 8 GiB")
        for size in hsizes:
            row.append(_fmt_t(site.hier(n, N, size)) if N > 1 else "- (one node)")
        rows.append(row)
    print(_table(["ranks / nodes"] + [_fmt_b(x) + " (AUTO)" for x in sizes] +
                 ["ring faster from (RINGPOINT_ALLREDUCE_RD_MAX)"] +
                 [_fmt_b(x) + " (RINGPOINT_COLL_HIER=1)" for x in hsizes], rows))
    print()

    print("### (d) Checkpoint write and restore, replicated state S striped over the ranks\n")
    rows = []
    for S in (10 * GIB, 100 * GIB, TIB):
        for n, N in LAYOUTS:
            w = write(S, n, N)
            # Each rank checks its share of the n shards (reader_plan.c),
            # one each when the world size is the writers', all at once:
            # one t_meta where rank 0 used to take n of them.
            checks = s["t_meta"]
            r = fit["r0"] + max(S / N / s["disk_r"], S / s["fs_r"]) + \
                site.allgather(n, S) + checks
            rows.append([_fmt_b(S), "%d / %d" % (n, N), _fmt_b(S // n), _fmt_t(w),
                         _fmt_t(r), _fmt_t(commit_coll(site, n, S)),
                         _fmt_t(checks), _fmt_t(n * s["t_meta"])])
    print(_table(["state", "ranks / nodes", "stripe per rank", "write + commit",
                  "restore", "of which commit collectives", "of which shard checks",
                  "shard checks on rank 0 alone (before)"], rows))
    print()

    print("### (e) Stop path against KillWait %g s\n" % s["kill_wait"])
    rows = []
    for S in (10 * GIB, 100 * GIB, TIB):
        for n, N in LAYOUTS:
            w = write(S, n, N)
            agree = site.allreduce(n, 64) + site.bcast(n, 64)
            total = s["step"] + agree + w
            need = w * BUDGET_FACTOR + BUDGET_MARGIN
            rows.append([_fmt_b(S), "%d / %d" % (n, N), _fmt_t(agree), _fmt_t(total),
                         "yes" if need + s["step"] <= s["kill_wait"] else "no: skipped"])
    print(_table(["state", "ranks / nodes", "agree", "signal -> committed (worst)",
                  "fits (1.25 x write + 2 s)"], rows))
    print()

    print("### Recommended checkpoint interval (Young/Daly: sqrt(2 C M))\n")
    rows = []
    for S in (10 * GIB, 100 * GIB, TIB):
        for n, N in LAYOUTS:
            w = write(S, n, N)
            M = s["node_mtbf_h"] * 3600 / N
            c_async = S / n / s["copy_bw"]
            t_sync = math.sqrt(2 * w * M)
            t_async = max(math.sqrt(2 * c_async * M), w)
            rows.append([_fmt_b(S), "%d / %d" % (n, N), _fmt_t(M), _fmt_t(w),
                         "%s (%.1f %%)" % (_fmt_t(t_sync), 100 * math.sqrt(2 * w / M)),
                         _fmt_t(c_async),
                         "%s (%.2f %%)" % (_fmt_t(t_async), 100 * (c_async / t_async + t_async / 2 / M))])
    print(_table(["state", "ranks / nodes", "MTBF of the job", "C sync",
                  "interval sync (time lost)", "C async (stall)",
                  "interval async (time lost)"], rows))
    print()


# --------------------------------------------------------------------- plot

PANELS = [("allreduce", "allreduce time (s)"), ("bootstrap", "fence / modex (s)"),
          ("checkpoint", "checkpoint write, restore (s)"),
          ("stop", "signal to commit (s)"), ("memory", "RSS of the first collectives (KiB)"),
          ("endpoints", "endpoints per rank"),
          ("hier", "allreduce, hierarchy (s)")]


def svg_to_png(svg):
    """The PNG beside @svg, rasterised by librsvg's rsvg-convert (Debian's
    librsvg2-bin) where it is installed; None (and why) where it is not."""
    tool = shutil.which("rsvg-convert")
    if tool is None:
        print("no rsvg-convert (apt install librsvg2-bin): %s only" % svg)
        return None
    png = os.path.splitext(svg)[0] + ".png"
    subprocess.run([tool, "--background-color=white", "-o", png, svg], check=True)
    return png


def write_svg(path, points):
    """Predicted against measured, one panel per model, log-log (endpoints
    linear); hollow: the rows the parameters were fitted on; filled: held
    out. The band is +-50 %."""
    W, H, cols, pad = 330, 300, 3, 52
    rows_n = -(-len(PANELS) // cols)
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'font-family="sans-serif" font-size="11">' % (W * cols, H * rows_n + 30),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="10" y="18" font-size="13">ringpoint scale model: predicted '
           'against measured on the 2-core machine (hollow: fitted on; filled: '
           'held out; band: +-50 %)</text>']
    for i, (panel, title) in enumerate(PANELS):
        pts = [p for p in points if p[0] == panel and p[2] > 0 and p[3] > 0]
        ox, oy = (i % cols) * W, 30 + (i // cols) * H
        x0, y0, x1, y1 = ox + pad, oy + H - pad + 10, ox + W - 12, oy + 22
        out.append('<text x="%d" y="%d" font-size="12">%s (%d rows)</text>' %
                   (ox + pad, oy + 14, title, len(pts)))
        if not pts:
            continue
        lin = panel == "endpoints"
        vals = [v for p in pts for v in p[2:4]]
        lo, hi = min(vals), max(vals)
        if lin:
            lo, hi = 0.0, hi + 1
            f = lambda v: (v - lo) / (hi - lo)
        else:
            lo, hi = math.log10(lo) - 0.2, math.log10(hi) + 0.2
            f = lambda v: (math.log10(v) - lo) / (hi - lo)
        X = lambda v: x0 + f(v) * (x1 - x0)
        Y = lambda v: y0 - f(v) * (y0 - y1)
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" '
                   'stroke="#888"/>' % (x0, y1, x1 - x0, y0 - y1))
        # ticks: decades (or integers)
        ticks = range(int(lo), int(hi) + 1) if lin else \
            range(math.ceil(lo), math.floor(hi) + 1)
        for t in ticks:
            v = t if lin else 10 ** t
            lab = ("%d" % t) if lin else ("1e%d" % t)
            out.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (X(v), y0 + 14, lab))
            out.append('<text x="%d" y="%.1f" text-anchor="end">%s</text>' % (x0 - 4, Y(v) + 4, lab))
        a, b = (lo, hi) if lin else (10 ** lo, 10 ** hi)
        out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444"/>' %
                   (X(a), Y(a), X(b), Y(b)))
        if not lin:
            for k in (1.5, 0.5):
                v0, v1 = max(a, a / k), min(b, b / k)
                out.append('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb" '
                           'stroke-dasharray="4,3"/>' % (X(v0), Y(v0 * k), X(v1), Y(v1 * k)))
        for _, label, meas, pred, held in pts:
            out.append('<circle cx="%.1f" cy="%.1f" r="3" fill="%s" stroke="#1f5fa8">'
                       '<title>%s: measured %.3g, model %.3g</title></circle>' %
                       (X(meas), Y(pred), "#1f5fa8" if held else "none", label, meas, pred))
        out.append('<text x="%.1f" y="%d" text-anchor="middle">measured</text>' %
                   ((x0 + x1) / 2, y0 + 30))
        out.append('<text x="%d" y="%.1f" text-anchor="middle" transform="rotate(-90 %d %.1f)">'
                   'model</text>' % (ox + 14, (y0 + y1) / 2, ox + 14, (y0 + y1) / 2))
    out.append("</svg>")
    with open(path, "w") as fh:
        fh.write("\n".join(out) + "\n")


# --------------------------------------------------------------------- main

# What `check` demands of the held-out predictions (medians of
# |predicted - measured| / measured; endpoints: a count, exact). doc/scale.md
# states the same figures.
TOLERANCE = {"endpoints": 0, "allreduce": 1.0, "hier": 1.0, "fence": 1.0,
             "modex": 1.0, "memory": 0.5, "ckpt_write": 1.0, "ckpt_restore": 1.0,
             "stop": 1.0}

def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    doc = os.path.join(os.path.dirname(here), "doc")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd")
    for name in ("report", "check"):
        p = sub.add_parser(name)
        p.add_argument("--csv", default=os.path.join(doc, "scale-data.csv"))
        p.add_argument("--svg", default=None,
                       help="write the plot here (e.g. doc/scale-fit.svg)")
        p.add_argument("--site", action="append", default=[], metavar="KEY=VALUE",
                       help="a site parameter of the tables at 8..4096 ranks "
                            "(%s)" % ", ".join(SITE))
        p.add_argument("--cores", type=int, default=2,
                       help="CPUs of the machine the CSV was measured on "
                            "(ranks beyond them are oversubscribed; default 2, "
                            "the machine of doc/scale-data.csv)")
    p = sub.add_parser("measure")
    p.add_argument("--prefix", required=True, help="ringpoint's install prefix")
    p.add_argument("--csv", default=os.path.join(doc, "scale-data.csv"))
    p.add_argument("--only", default="", help="allreduce,boot,ckpt,hier,stop")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--real", action="store_true",
                   help="srun's nodes are real ones: let the library choose "
                        "how ranks wait (no RINGPOINT_COLL_SPIN_US=0)")
    p.add_argument("--ckpt-dir", default="/var/tmp/rp-scale-ckpt")
    p.add_argument("--probe-dir", default=None,
                   help="a directory every node sees (default: under "
                        "RP_CLUSTER_DIR/work, else /var/tmp)")
    p = sub.add_parser("probe")
    p.add_argument("--lib", required=True)
    p.add_argument("--fences", type=int, default=5)
    p.add_argument("--out", required=True, help="a directory every rank sees")
    a = ap.parse_args(argv)
    if a.cmd == "probe":
        return probe(a)
    if a.cmd == "measure":
        global EMULATED
        EMULATED = not a.real
        measure(a)
        return 0
    if a.cmd is None:
        a = ap.parse_args(["report"] + (argv or []))
    global CORES
    CORES = a.cores
    for kv in a.site:
        key, _, value = kv.partition("=")
        if key not in SITE:
            ap.error("--site %s: no such parameter (one of %s)" % (kv, ", ".join(SITE)))
        try:
            SITE[key] = float(value)
        except ValueError:
            ap.error("--site %s: the value must be a number (e.g. %s=%g)" %
                     (kv, key, SITE[key]))
    summary = report(a)
    if a.cmd != "check":
        return 0
    bad = [k for k, tol in TOLERANCE.items()
           if not summary.get(k, float("inf")) <= tol]
    for k in bad:
        print("scale-model.py check: %s: median error %.3g above the "
              "tolerance %.3g" % (k, summary.get(k, float("nan")), TOLERANCE[k]),
              file=sys.stderr)
    print("check: %s" % ("FAILED: " + ", ".join(bad) if bad else "ok"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
