#!/usr/bin/env bash
# Collectives: ringpoint beside Open MPI (default path, and pml ucx), an
# earlier ringpoint (-B) and PyTorch gloo, interleaved in one run on the
# same launcher and rank layout, with medians over rounds and the ratios
# per size; the ceilings (memory bandwidth, loopback TCP rate) and the
# machine's load measured in the same run.
#
#   scripts/bench-allreduce.sh [-r ROUNDS] [-p PREFIX] [-B PREFIX] [-l LAYOUTS]
#                              [-C COLLS] [-G] [-o FILE] [-q]
#
#   -r ROUNDS   rounds (default 5); every round runs every tool once per
#               layout and collective, in turn, so that a noisy neighbour
#               hits all alike
#   -p PREFIX   where ringpoint is installed (default: $RP_PREFIX, else the
#               directory above this script's ringpoint-bench on PATH)
#   -B PREFIX   also an earlier ringpoint installed there ("before")
#   -l LAYOUTS  comma-separated, from np2 (2 ranks, shared memory), np4
#               (4 ranks with --oversubscribe) and tcp (2 ranks with
#               UCX_TLS=tcp,self for both ringpoint and Open MPI's pml ucx:
#               an inter-node emulation; with the floor beside it: UCX's
#               own exchange of the same bytes, ucx-exchange-bench, and
#               ucx_perftest's latency and rate), tcp3 (the same at 3
#               ranks, --oversubscribe: the transport's algorithms past
#               two ranks); default np2,np4,tcp
#   -C COLLS    comma-separated, from allreduce, broadcast, allgather,
#               barrier, reduce_scatter and alltoall (against MPI_Allreduce,
#               MPI_Bcast, MPI_Allgather, MPI_Barrier,
#               MPI_Reduce_scatter_block, MPI_Alltoall); default allreduce.
#               Allreduce, reduce_scatter and alltoall run 4 B-256 MiB,
#               the others 4 B-16 MiB.
#               reduce_scatter and alltoall: the size is a rank's whole
#               send buffer (nccl-tests'), out of place only (ringpoint has
#               no in-place form); no gloo, and -B only where that build
#               has them
#   -G          no gloo
#   -E SIZE     only sizes up to SIZE, one of 4, 16, ..., 256K (more rounds
#               of the small rows, whose times swing between runs)
#   -n ITERS    timed iterations of the 1 MiB-256 MiB rows (default 10,
#               after 3 untimed; with -n, 1 untimed)
#   -m STAT     median (default) of the per-call times, or loop: every
#               tool times its iterations back to back and reports the
#               loop's time per call (nccl-tests' way: the sustained rate,
#               where a single call's time of the smallest operations
#               mostly says which rank arrived first); no gloo with loop,
#               and -B must be a build that has -m loop
#   -o FILE     also keep every row measured (TSV) in FILE
#   -q          quick: 2 rounds and fewer iterations (a smoke test)
#
# Every tool prints ringpoint-bench's table: the median over iterations of
# the slowest rank's per-iteration time. The summary then takes, per
# layout, collective, tool and size, the median over rounds. Ratios are the
# other tool's time over ringpoint's (above 1: ringpoint is faster; for a
# fixed size that is also the busbw ratio); "x best" takes the faster of
# Open MPI's two paths. Open MPI columns are out of place (ringpoint's
# too); gloo works in place, so it is set against ringpoint's in-place
# figure.
#
# Needs: mpirun (Open MPI 4.1); mpi-allreduce-bench, ringpoint-barrier-bench,
# ringpoint-membw, ucx-exchange-bench and gloo_allreduce.py, installed by `make install` under
# PREFIX/libexec/ringpoint; /usr/bin/python3 (with torch, Debian's
# python3-torch, for gloo). A tool that is missing is skipped and its
# columns say so.
set -euo pipefail

rounds=5
layouts=np2,np4,tcp
colls=allreduce
prefix=${RP_PREFIX:-}
before=
keep=
quick=0
nogloo=0
large_iters=
max_small=
stat=median
while getopts "r:p:B:l:C:GE:n:m:o:qh" opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    p) prefix=$OPTARG ;;
    B) before=$OPTARG ;;
    l) layouts=$OPTARG ;;
    C) colls=$OPTARG ;;
    G) nogloo=1 ;;
    E) max_small=$OPTARG ;;
    n) large_iters=$OPTARG ;;
    m) stat=$OPTARG ;;
    o) keep=$OPTARG ;;
    q) quick=1; rounds=2 ;;
    h) sed -n '2,/^set -euo/{/^set -euo/!p}' "$0"; exit 0 ;;
    *) exit 64 ;;
    esac
done
if [ -z "$prefix" ]; then
    b=$(command -v ringpoint-bench || true)
    [ -n "$b" ] || { echo "bench-allreduce: no ringpoint-bench on PATH; give -p PREFIX" >&2; exit 64; }
    prefix=$(cd "$(dirname "$b")/.." && pwd)
fi
RP_BENCH=$prefix/bin/ringpoint-bench
RP_BARRIER=$prefix/libexec/ringpoint/ringpoint-barrier-bench
MPI_BENCH=$prefix/libexec/ringpoint/mpi-allreduce-bench
MEMBW=$prefix/libexec/ringpoint/ringpoint-membw
UCX_XCHG=$prefix/libexec/ringpoint/ucx-exchange-bench
GLOO_BENCH=$prefix/libexec/ringpoint/gloo_allreduce.py
TORCH_PY=${RP_TORCH_PYTHON:-/usr/bin/python3}
[ -x "$RP_BENCH" ] || { echo "bench-allreduce: $RP_BENCH not found" >&2; exit 64; }
if [ -n "$before" ] && [ ! -x "$before/bin/ringpoint-bench" ]; then
    echo "bench-allreduce: $before/bin/ringpoint-bench not found" >&2
    exit 64
fi
# ringpoint-bench's aliases of the two newest, to their names.
colls=$(echo ",$colls," | sed -e 's/,reducescatter,/,reduce_scatter,/g' \
    -e 's/,reduce-scatter,/,reduce_scatter,/g' -e 's/,all_to_all,/,alltoall,/g' \
    -e 's/^,//' -e 's/,$//')
for c in ${colls//,/ }; do
    case $c in
    allreduce|broadcast|allgather|barrier|reduce_scatter|alltoall) ;;
    *) echo "bench-allreduce: unknown collective '$c' (allreduce, broadcast, allgather, barrier, reduce_scatter, alltoall)" >&2; exit 64 ;;
    esac
done
case $stat in
median|loop) ;;
*) echo "bench-allreduce: -m '$stat': expected median or loop" >&2; exit 64 ;;
esac
have_mpi=0; [ -x "$MPI_BENCH" ] && have_mpi=1
have_gloo=0
if [ $nogloo = 0 ] && [ "$stat" = median ] && [ -f "$GLOO_BENCH" ] &&
    "$TORCH_PY" -c 'import torch.distributed' 2>/dev/null; then
    have_gloo=1
fi

# Small sizes need many iterations for a stable median, large ones few.
# The two ranges together cover 4 B .. 256 MiB by factors of 4.
if [ $quick = 1 ]; then
    small="-b 4 -e 256K -f 4 -n 50 -w 10"
    large="-b 1M -e 256M -f 4 -n 5 -w 2"
    barrier="-n 200 -w 20"
else
    small="-b 4 -e 256K -f 4 -n 200 -w 20"
    large="-b 1M -e 256M -f 4 -n 10 -w 3"
    barrier="-n 1000 -w 100"
fi
[ -z "$large_iters" ] || large="-b 1M -e 256M -f 4 -n $large_iters -w 1"
if [ "$stat" = loop ]; then
    # One clock read each side of the loop: enough calls that the loop
    # lasts milliseconds even at 4 B.
    small="-b 4 -e 256K -f 4 -n 5000 -w 500 -m loop"
    large="$large -m loop"
    barrier="-n 20000 -w 1000 -m loop"
fi

if [ -n "$max_small" ]; then
    case $max_small in
    4|16|64|256|1K|4K|16K|64K|256K) ;;
    *) echo "bench-allreduce: -E '$max_small': expected one of 4, 16, 64, 256, 1K, 4K, 16K, 64K, 256K" >&2; exit 64 ;;
    esac
    small=${small/-e 256K/-e $max_small}
    large=
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/rp-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
rows=$work/rows.tsv
: > "$rows"
: > "$work/ceil"
: > "$work/load"

# mpirun outside any Slurm allocation's settings, as root if need be.
MPIRUN=(env -u SLURM_CONF -u SLURM_JOBID -u SLURM_JOB_ID mpirun --allow-run-as-root)
UCX_PML=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)

# run LAYOUT TOOL COLL ROUND ARGS...: run one benchmark command and append
# its rows as "layout tool coll round size oop_time oop_busbw ip_time
# ip_busbw".
run() {
    local layout=$1 tool=$2 coll=$3 round=$4 out
    shift 4
    if ! out=$("$@" 2>&1); then
        echo "bench-allreduce: $layout $tool $coll round $round failed:" >&2
        echo "$out" | tail -20 >&2
        return 0
    fi
    echo "$out" | awk -v l="$layout" -v t="$tool" -v c="$coll" -v r="$round" \
        '/^ *[0-9]/ { print l "\t" t "\t" c "\t" r "\t" $1 "\t" $6 "\t" $8 "\t" $10 "\t" $12 }' >> "$rows"
}

# The ceilings, in the same run: each process's memory bandwidth (two at
# once, as two ranks run); the loopback TCP rate of one stream, and of two
# at once, one each way, as a 2-rank ring over TCP sends and receives
# together; and, for the tcp layout, UCX's own figures over loopback TCP
# (ucx_perftest, the library both ringpoint and Open MPI's pml ucx use):
# the one-way latency of an 8-byte tagged message (half a ping-pong: what
# a 2-rank exchange of a few bytes cannot go below) and the rate of 16 MiB
# tagged sends.
ceilings() {
    local when=$1
    if [ -x "$MEMBW" ]; then
        "$MEMBW" -p 2 -s 128 -r 3 2>&1 | sed "s/^/# ceiling ($when): /" >> "$work/ceil"
    fi
    python3 - "$when" >> "$work/ceil" 2>&1 <<'PYEOF' || true
import socket, sys, threading, time
n = 1 << 30

def stream(rates):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)

    def sink():
        c, _ = srv.accept()
        buf, got = bytearray(1 << 20), 0
        while got < n:
            k = c.recv_into(buf)
            if not k:
                break
            got += k
        c.close()

    t = threading.Thread(target=sink)
    t.start()
    s = socket.create_connection(srv.getsockname())
    chunk, t0, sent = bytearray(1 << 20), time.time(), 0
    while sent < n:
        s.sendall(chunk)
        sent += len(chunk)
    s.close()
    t.join()
    srv.close()
    rates.append(n / (time.time() - t0) / 1e9)

for k in (1, 2):
    rates = []
    ts = [threading.Thread(target=stream, args=(rates,)) for _ in range(k)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    what = "one stream" if k == 1 else "two streams at once (GB/s each)"
    print(f"# ceiling ({sys.argv[1]}): loopback TCP, {what}, 1 GiB:"
          f" {' '.join(f'{r:.2f}' for r in sorted(rates))} GB/s")
PYEOF
    case ",$layouts," in *,tcp,*) ucx_ceilings "$when" ;; esac
}

# ucx_ceilings WHEN: ucx_perftest over loopback TCP, if installed.
ucx_ceilings() {
    local when=$1 perf port out t
    perf=$(command -v ucx_perftest) || return 0
    for t in "tag_lat 8 20000 2000" "tag_bw 16777216 100 10"; do
        # shellcheck disable=SC2086
        set -- $t
        port=$(( 14000 + RANDOM % 2000 ))
        UCX_TLS=tcp,self timeout 60 "$perf" -p "$port" >/dev/null 2>&1 &
        out=
        for _ in $(seq 1 50); do
            if out=$(UCX_TLS=tcp,self timeout 60 "$perf" 127.0.0.1 -p "$port" \
                -t "$1" -s "$2" -n "$3" -w "$4" -f 2>/dev/null); then
                break
            fi
            out=
            sleep 0.1
        done
        wait 2>/dev/null || true
        # -f: the last line is the final figures: iterations, then the
        # median latency (us) ... and the overall bandwidth (MiB/s).
        echo "$out" | awk -v w="$when" -v t="$1" '
            /^ *[0-9]/ { last = $0 }
            END {
                split(last, f)
                if (last == "") print "# ceiling (" w "): ucx_perftest " t " over loopback TCP failed"
                else if (t == "tag_lat") printf "# ceiling (%s): UCX over loopback TCP, 8 B tagged, one way (half a ping-pong), median: %.2f us\n", w, f[2]
                else printf "# ceiling (%s): UCX over loopback TCP, 16 MiB tagged sends: %.2f GB/s\n", w, f[5] * 1048576 / 1e9
            }' >> "$work/ceil"
    done
}

# before_has COLL: whether the earlier ringpoint's bench knows COLL (one
# from before reduce_scatter and alltoall would fail every run of them).
before_has() {
    [ "$1" = barrier ] ||
        "$before/bin/ringpoint-bench" --help 2>&1 | grep -qw -- "$1"
}

# one_coll LAYOUT COLL ROUND: every tool, in turn, over the size ranges.
one_coll() {
    local layout=$1 coll=$2 round=$3 range rp rpb
    local ranges=("$small" "$large")
    # Broadcast and allgather up to 16 MiB: a round of all of them stays
    # within minutes on a loaded 2-core machine. The reduce-scatter and the
    # all-to-all, which sharded training runs on whole models' gradients,
    # up to 256 MiB as the allreduce.
    case $coll in
    allreduce | reduce_scatter | alltoall) ;;
    *) ranges=("$small" "${large/-e 256M/-e 16M}") ;;
    esac
    rp=("$RP_BENCH" "$coll")
    rpb=("$before/bin/ringpoint-bench" "$coll")
    if [ "$coll" = barrier ]; then
        ranges=("$barrier")
        rp=("$RP_BARRIER")
        rpb=("$before/libexec/ringpoint/ringpoint-barrier-bench")
    fi
    for range in "${ranges[@]}"; do
        [ -n "$range" ] || continue
        # shellcheck disable=SC2086
        run "$layout" ringpoint "$coll" "$round" "${MPIRUN[@]}" "${np[@]}" \
            ${rpenv[@]+"${rpenv[@]}"} "${rp[@]}" $range
        if [ -n "$before" ] && [ -x "${rpb[0]}" ] && before_has "$coll"; then
            # shellcheck disable=SC2086
            run "$layout" before "$coll" "$round" "${MPIRUN[@]}" "${np[@]}" \
                ${rpenv[@]+"${rpenv[@]}"} "${rpb[@]}" $range
        fi
        if [ $have_mpi = 1 ]; then
            if [ "${layout#tcp}" = "$layout" ]; then
                # shellcheck disable=SC2086
                run "$layout" ompi "$coll" "$round" "${MPIRUN[@]}" "${np[@]}" \
                    "$MPI_BENCH" -C "$coll" $range
            fi
            # shellcheck disable=SC2086
            run "$layout" ompi-ucx "$coll" "$round" "${MPIRUN[@]}" "${np[@]}" \
                "${UCX_PML[@]}" ${mpitcp[@]+"${mpitcp[@]}"} "$MPI_BENCH" -C "$coll" $range
        fi
        # The floor over TCP: UCX's own exchange between the two ranks,
        # MPI only to start it. A 2-rank allreduce below the ring's 8 KiB
        # is one exchange of the buffer, a barrier one of nothing; from
        # 1 MiB the ring exchanges half the buffer twice (the allgather
        # once), so those rows (kept as "half") go up to 128 MiB.
        if [ "$layout" = tcp ] && [ -x "$UCX_XCHG" ]; then
            local xr='' xc=$coll
            case $coll,$range in
            allreduce,"$small") xr=${range/-e 256K/-e 4K}; xr=${xr/-e 64K/-e 4K}; xr=${xr/-e 16K/-e 4K} ;;
            allreduce,"$large") xr=${range/-b 1M -e 256M/-b 512K -e 128M}; xc=half ;;
            barrier,*) xr="-b 0 -e 0 $range" ;;
            esac
            if [ -n "$xr" ]; then
                # shellcheck disable=SC2086
                run "$layout" ucx-raw "$xc" "$round" "${MPIRUN[@]}" "${np[@]}" \
                    --mca pml ob1 --mca btl self,vader "${mpitcp[@]}" "$UCX_XCHG" $xr
            fi
        fi
        if [ $have_gloo = 1 ] && [ "${layout#tcp}" = "$layout" ] && [ "$coll" = allreduce ]; then
            port=$(( port + 1 ))
            # shellcheck disable=SC2086
            run "$layout" gloo "$coll" "$round" "${MPIRUN[@]}" "${np[@]}" \
                -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$port \
                "$TORCH_PY" "$GLOO_BENCH" $range
        fi
    done
}

port=$(( 29600 + RANDOM % 1000 ))
ceilings start
for round in $(seq 1 "$rounds"); do
    for layout in ${layouts//,/ }; do
        # shellcheck disable=SC2054
        case $layout in
        np2) np=(-np 2); rpenv=(); mpitcp=() ;;
        np4) np=(-np 4 --oversubscribe); rpenv=(); mpitcp=() ;;
        tcp) np=(-np 2); rpenv=(-x UCX_TLS=tcp,self); mpitcp=(-x UCX_TLS=tcp,self) ;;
        tcp3) np=(-np 3 --oversubscribe); rpenv=(-x UCX_TLS=tcp,self); mpitcp=(-x UCX_TLS=tcp,self) ;;
        *) echo "bench-allreduce: unknown layout $layout" >&2; exit 64 ;;
        esac
        for coll in ${colls//,/ }; do
            echo "# round $round/$rounds, $layout, $coll" >&2
            awk '{ print $1 }' /proc/loadavg >> "$work/load"
            one_coll "$layout" "$coll" "$round"
        done
    done
done
ceilings end
[ -z "$keep" ] || cp "$rows" "$keep"
cat "$work/ceil"
sort -n "$work/load" | awk '{ a[NR] = $1 } END {
    printf "# load (1-minute average; %d CPUs) as each layout and collective began: min %s, median %s, max %s\n",
        '"$(nproc)"', a[1], a[int((NR + 1) / 2)], a[NR] }'

# The summary: medians over rounds, ratios per size.
python3 - "$rows" "$rounds" "$stat" <<'EOF'
import statistics, sys
from collections import defaultdict

rows, rounds, stat = sys.argv[1], sys.argv[2], sys.argv[3]
d = defaultdict(list)  # (layout, coll, tool, size, place) -> [(time, busbw)]
for line in open(rows):
    l, t, c, r, size, ot, ob, it, ib = line.rstrip("\n").split("\t")
    for place, tm, bw in (("oop", ot, ob), ("ip", it, ib)):
        try:
            d[(l, c, t, int(size), place)].append((float(tm), float(bw)))
        except ValueError:
            pass  # gloo has no out-of-place figure

def med(l, c, t, size, place):
    v = d.get((l, c, t, size, place))
    if not v:
        return None
    return (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v))

def human(n):
    for unit, f in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= f and n % f == 0:
            return f"{n // f} {unit}"
    return f"{n} B"

def cell(m):
    return "      -         -" if m is None else f"{m[0]:10.2f} {m[1]:7.2f}"

def ratio(a, b):
    return "     -" if a is None or b is None else f"{b[0] / a[0]:6.2f}"

def best(*ms):
    return min((m for m in ms if m is not None), default=None, key=lambda m: m[0])

def rank(order, x):
    return order.index(x) if x in order else len(order)

layouts = sorted({k[0] for k in d}, key=lambda x: rank(["np2", "np4", "tcp", "tcp3"], x))
colls = sorted({k[1] for k in d} - {"half"}, key=lambda x: rank(
    ["allreduce", "broadcast", "allgather", "barrier", "reduce_scatter", "alltoall"], x))
# nccl-tests' size of these: a rank's whole send buffer; no in-place form.
blocks = {"reduce_scatter": "MPI_Reduce_scatter_block", "alltoall": "MPI_Alltoall"}
names = {"np2": "2 ranks, 1 node (shared memory)",
         "np4": "4 ranks on 2 cores (mpirun --oversubscribe)",
         "tcp": "2 ranks, UCX_TLS=tcp,self (inter-node emulation)",
         "tcp3": "3 ranks on 2 cores, UCX_TLS=tcp,self (inter-node emulation)"}
print(f"# float32 (allreduce, reduce_scatter: sum); medians over {rounds} interleaved rounds of the per-run"
      + (" time per call of the iterations back to back (-m loop), the slowest rank's"
         if stat == "loop" else " median of the slowest rank's per-iteration time"))
print("# time in us, busbw in GB/s; x = other tool's time / ringpoint's time"
      " (> 1: ringpoint faster); x best: against the faster Open MPI path")
for c in colls:
    for l in layouts:
        sizes = sorted({k[3] for k in d if k[0] == l and k[1] == c})
        if not sizes:
            continue
        print(f"\n## {c}, {names.get(l, l)}\n")
        if c in blocks:
            print(f"# size: a rank's whole send buffer (n blocks), against {blocks[c]};"
                  " out of place only (no in-place form in ringpoint)\n")
        hdr = (f"{'size':>9} | {'ringpoint':>18} | {'before':>18} | {'ompi default':>18} |"
               f" {'ompi ucx':>18} | {'x best':>6} {'x befr':>6} | {'rp in-place':>18} |"
               f" {'gloo':>18} | {'x gloo':>6}")
        print(hdr)
        print("-" * len(hdr))
        for s in sizes:
            rp, bf, om, ou = (med(l, c, t, s, "oop") for t in ("ringpoint", "before", "ompi", "ompi-ucx"))
            rpi, gl = med(l, c, "ringpoint", s, "ip"), med(l, c, "gloo", s, "ip")
            print(f"{human(s):>9} | {cell(rp)} | {cell(bf)} | {cell(om)} | {cell(ou)} |"
                  f" {ratio(rp, best(om, ou))} {ratio(rp, bf)} | {cell(rpi)} | {cell(gl)} |"
                  f" {ratio(rpi, gl)}")
        def floor_of(s):
            # One exchange of the buffer (small allreduce, barrier); from
            # 1 MiB, of half the buffer: twice for the allreduce (the ring's
            # two steps, no reduction counted), once for the allgather.
            m = med(l, c, "ucx-raw", s, "oop")
            h = med(l, "half", "ucx-raw", s // 2, "oop") if s >= 1 << 20 else None
            if m is None and h is not None and c in ("allreduce", "allgather"):
                m = (h[0] * (2 if c == "allreduce" else 1), h[1])
            return m
        floor = [s for s in sizes if floor_of(s)]
        if floor:
            print(f"\n# the floor: UCX's own tagged exchange between the two ranks"
                  f" (ucx-exchange-bench), same rounds: of the buffer up to 4 KiB, from 1 MiB of"
                  f" half of it, {'twice' if c == 'allreduce' else 'once'}; x = time / floor\n")
            hdr = (f"{'size':>9} | {'UCX exchange':>12} | {'ringpoint':>9} {'x floor':>7} |"
                   f" {'ompi best':>9} {'x floor':>7}")
            print(hdr)
            print("-" * len(hdr))
            for s in floor:
                fl = floor_of(s)[0]
                rp = med(l, c, "ringpoint", s, "oop")
                ob = best(med(l, c, "ompi", s, "oop"), med(l, c, "ompi-ucx", s, "oop"))
                x = [f"{'-':>9} {'-':>7}" if m is None else f"{m[0]:9.2f} {m[0] / fl:7.2f}"
                     for m in (rp, ob)]
                print(f"{human(s):>9} | {fl:12.2f} | {x[0]} | {x[1]}")
EOF
