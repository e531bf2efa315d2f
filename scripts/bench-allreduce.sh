#!/usr/bin/env bash
# Allreduce: ringpoint beside Open MPI (default path, and pml ucx) and
# PyTorch gloo, interleaved in one run on the same launcher and rank layout,
# with medians over rounds and the ratios per size.
#
#   scripts/bench-allreduce.sh [-r ROUNDS] [-p PREFIX] [-l LAYOUTS] [-o FILE]
#
#   -r ROUNDS   rounds (default 5); every round runs every tool once per
#               layout, in turn, so that a noisy neighbour hits all alike
#   -p PREFIX   where ringpoint is installed (default: $RP_PREFIX, else the
#               directory above this script's ringpoint-bench on PATH)
#   -l LAYOUTS  comma-separated, from np2 (2 ranks, shared memory), np4
#               (4 ranks with --oversubscribe) and tcp (2 ranks with
#               UCX_TLS=tcp,self for both ringpoint and Open MPI's pml ucx:
#               an inter-node emulation); default np2,np4,tcp
#   -o FILE     also keep every row measured (TSV) in FILE
#   -q          quick: 2 rounds and fewer iterations (a smoke test)
#
# Every tool prints ringpoint-bench's table: the median over iterations of
# the slowest rank's per-iteration time. The summary then takes, per
# layout, tool and size, the median over rounds. Ratios are the other
# tool's time over ringpoint's (above 1: ringpoint is faster; for a fixed
# size that is also the busbw ratio). Open MPI columns are out of place
# (ringpoint's too); gloo works in place, so it is set against ringpoint's
# in-place figure.
#
# Needs: mpirun (Open MPI 4.1), the mpi-allreduce-bench and gloo_allreduce.py
# installed by `make install` under PREFIX/libexec/ringpoint, and
# /usr/bin/python3 with torch (Debian's python3-torch) for gloo; a tool that
# is missing is skipped and its columns say so.
set -euo pipefail

rounds=5
layouts=np2,np4,tcp
prefix=${RP_PREFIX:-}
keep=
quick=0
while getopts "r:p:l:o:qh" opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    p) prefix=$OPTARG ;;
    l) layouts=$OPTARG ;;
    o) keep=$OPTARG ;;
    q) quick=1; rounds=2 ;;
    h) sed -n '2,30p' "$0"; exit 0 ;;
    *) exit 64 ;;
    esac
done
if [ -z "$prefix" ]; then
    b=$(command -v ringpoint-bench || true)
    [ -n "$b" ] || { echo "bench-allreduce: no ringpoint-bench on PATH; give -p PREFIX" >&2; exit 64; }
    prefix=$(cd "$(dirname "$b")/.." && pwd)
fi
RP_BENCH=$prefix/bin/ringpoint-bench
MPI_BENCH=$prefix/libexec/ringpoint/mpi-allreduce-bench
GLOO_BENCH=$prefix/libexec/ringpoint/gloo_allreduce.py
TORCH_PY=${RP_TORCH_PYTHON:-/usr/bin/python3}
[ -x "$RP_BENCH" ] || { echo "bench-allreduce: $RP_BENCH not found" >&2; exit 64; }
have_mpi=0; [ -x "$MPI_BENCH" ] && have_mpi=1
have_gloo=0
if [ -f "$GLOO_BENCH" ] && "$TORCH_PY" -c 'import torch.distributed' 2>/dev/null; then
    have_gloo=1
fi

# Small sizes need many iterations for a stable median, large ones few.
# The two ranges together cover 4 B .. 256 MiB by factors of 4.
if [ $quick = 1 ]; then
    small="-b 4 -e 64K -f 4 -n 50 -w 10"
    large="-b 1M -e 256M -f 4 -n 5 -w 2"
else
    small="-b 4 -e 64K -f 4 -n 200 -w 20"
    large="-b 1M -e 256M -f 4 -n 10 -w 3"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rp-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv
: > "$rows"

# mpirun outside any Slurm allocation's settings, as root if need be.
MPIRUN=(env -u SLURM_CONF -u SLURM_JOBID -u SLURM_JOB_ID mpirun --allow-run-as-root)
UCX_PML=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)

# run LAYOUT TOOL ROUND ARGS...: run one benchmark command and append its
# rows as "layout tool round size oop_time oop_busbw ip_time ip_busbw".
run() {
    local layout=$1 tool=$2 round=$3 out
    shift 3
    if ! out=$("$@" 2>&1); then
        echo "bench-allreduce: $layout $tool round $round failed:" >&2
        echo "$out" | tail -20 >&2
        return 0
    fi
    echo "$out" | awk -v l="$layout" -v t="$tool" -v r="$round" \
        '/^ *[0-9]/ { print l "\t" t "\t" r "\t" $1 "\t" $6 "\t" $8 "\t" $10 "\t" $12 }' >> "$rows"
}

port=$(( 29600 + RANDOM % 1000 ))
for round in $(seq 1 "$rounds"); do
    for layout in ${layouts//,/ }; do
        case $layout in
        np2) np=(-np 2); rpenv=(); mpitcp=() ;;
        np4) np=(-np 4 --oversubscribe); rpenv=(); mpitcp=() ;;
        tcp) np=(-np 2); rpenv=(-x UCX_TLS=tcp,self); mpitcp=(-x UCX_TLS=tcp,self) ;;
        *) echo "bench-allreduce: unknown layout $layout" >&2; exit 64 ;;
        esac
        echo "# round $round/$rounds, $layout" >&2
        for range in "$small" "$large"; do
            # shellcheck disable=SC2086
            run "$layout" ringpoint "$round" "${MPIRUN[@]}" "${np[@]}" \
                ${rpenv[@]+"${rpenv[@]}"} "$RP_BENCH" allreduce $range
            if [ $have_mpi = 1 ]; then
                if [ "$layout" != tcp ]; then
                    # shellcheck disable=SC2086
                    run "$layout" ompi "$round" "${MPIRUN[@]}" "${np[@]}" \
                        "$MPI_BENCH" $range
                fi
                # shellcheck disable=SC2086
                run "$layout" ompi-ucx "$round" "${MPIRUN[@]}" "${np[@]}" \
                    "${UCX_PML[@]}" ${mpitcp[@]+"${mpitcp[@]}"} "$MPI_BENCH" $range
            fi
            if [ $have_gloo = 1 ] && [ "$layout" != tcp ]; then
                port=$(( port + 1 ))
                # shellcheck disable=SC2086
                run "$layout" gloo "$round" "${MPIRUN[@]}" "${np[@]}" \
                    -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$port \
                    "$TORCH_PY" "$GLOO_BENCH" $range
            fi
        done
    done
done
[ -z "$keep" ] || cp "$rows" "$keep"

# The summary: medians over rounds, ratios per size.
python3 - "$rows" "$rounds" <<'EOF'
import statistics, sys
from collections import defaultdict

rows, rounds = sys.argv[1], sys.argv[2]
d = defaultdict(list)  # (layout, tool, size, place) -> [(time, busbw)]
for line in open(rows):
    l, t, r, size, ot, ob, it, ib = line.split("\t")
    size = int(size)
    for place, tm, bw in (("oop", ot, ob), ("ip", it, ib)):
        try:
            d[(l, t, size, place)].append((float(tm), float(bw)))
        except ValueError:
            pass  # gloo has no out-of-place figure

def med(l, t, size, place):
    v = d.get((l, t, size, place))
    if not v:
        return None
    return (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v), len(v))

def human(n):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"

def cell(m):
    return "      -         -" if m is None else f"{m[0]:10.2f} {m[1]:7.2f}"

def ratio(a, b):
    return "     -" if a is None or b is None else f"{b[0] / a[0]:6.2f}"

layouts = sorted({k[0] for k in d}, key=lambda x: ["np2", "np4", "tcp"].index(x) if x in ("np2", "np4", "tcp") else 9)
names = {"np2": "2 ranks, 1 node (shared memory)",
         "np4": "4 ranks on 2 cores (mpirun --oversubscribe)",
         "tcp": "2 ranks, UCX_TLS=tcp,self (inter-node emulation)"}
print(f"# allreduce float sum; medians over {rounds} interleaved rounds of the per-run"
      " median of the slowest rank's per-iteration time")
print("# time in us, busbw in GB/s; x = other tool's time / ringpoint's time"
      " (> 1: ringpoint faster)")
for l in layouts:
    sizes = sorted({k[2] for k in d if k[0] == l})
    print(f"\n## {names.get(l, l)}\n")
    hdr = (f"{'size':>9} | {'ringpoint':>18} | {'ompi default':>18} | {'ompi ucx':>18} |"
           f" {'x ompi':>6} {'x ucx':>6} | {'rp in-place':>18} | {'gloo':>18} | {'x gloo':>6}")
    print(hdr)
    print("-" * len(hdr))
    for s in sizes:
        rp, om, ou = (med(l, t, s, "oop") for t in ("ringpoint", "ompi", "ompi-ucx"))
        rpi, gl = med(l, "ringpoint", s, "ip"), med(l, "gloo", s, "ip")
        print(f"{human(s):>9} | {cell(rp)} | {cell(om)} | {cell(ou)} |"
              f" {ratio(rp, om)} {ratio(rp, ou)} | {cell(rpi)} | {cell(gl)} | {ratio(rpi, gl)}")
EOF
