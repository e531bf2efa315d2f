#!/usr/bin/env bash
# The integration tests (tests/slurm/) against an AddressSanitizer + UBSan
# build of everything: the plugin inside srun, sbatch and slurmstepd, the
# library and the check programs in the tasks, the tools.
#
#   scripts/sanitize-integration.sh [-b BUILD_DIR] [-p PREFIX] [TEST...]
#
#   -b DIR    the sanitizer build (default build-san; configured, built and
#             installed into PREFIX by this script)
#   -p DIR    install prefix (default /opt/ringpoint-san); the plugin goes
#             to PREFIX/lib/slurm
#   TEST      tests/slurm/test_TEST.sh files to run (default: ckpt coll
#             train bootstrap plugin preempt failure)
#
# Slurm's own programs are not instrumented, and the plugin built with ASan
# needs the ASan runtime loaded first in every process that loads it:
# slurmd, srun, sbatch and salloc run through wrappers that preload
# libasan (slurmd hands its environment to slurmstepd, which loads the
# plugin; the tasks inherit it from srun). Reports go to files
# (ASAN_OPTIONS/UBSAN_OPTIONS log_path) in STATEDIR/sanitizer/, which the
# script lists at the end; it exits 1 if a test failed or a report names
# ringpoint code. Leak checking is off (Slurm's daemons and Python leak by
# design at exit); the unit tests check leaks.
#
# Environment: RP_CLUSTER_DIR (default /var/tmp/rp-cluster-san),
# RP_CLUSTER_CTLD_PORT, RP_CLUSTER_SLURMD_PORT (cluster.sh's defaults).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build-san
prefix=/opt/ringpoint-san
while getopts b:p:h opt; do
    case $opt in
    b) build=$OPTARG ;;
    p) prefix=$OPTARG ;;
    *) sed -n '2,30p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(ckpt coll train bootstrap plugin preempt failure)

export RP_CLUSTER_DIR=${RP_CLUSTER_DIR:-/var/tmp/rp-cluster-san}
san=$RP_CLUSTER_DIR/sanitizer
export RP_TEST_LOGDIR=$RP_CLUSTER_DIR/test-logs
export RP_RESULTS=$RP_TEST_LOGDIR/results
rm -rf "$san" "$RP_TEST_LOGDIR"
mkdir -p "$san" "$RP_TEST_LOGDIR"
chmod 1777 "$san" # tasks run as the job's user
: >"$RP_RESULTS"
t0=$(date +%s)
say() { printf '\n== %s (%ss)\n' "$*" $(( $(date +%s) - t0 )); }

say "sanitizer build into $prefix"
if ! "$top/scripts/build.sh" "$build" --enable-sanitizers --enable-werror \
        --prefix="$prefix" --with-slurm-plugindir="$prefix/lib/slurm"; then
    exit 1
fi
make -C "$build" install >"$build/install.out" 2>&1 || { tail "$build/install.out"; exit 1; }

asan=$(gcc -print-file-name=libasan.so)
asan=$(readlink -f "$asan")
[ -f "$asan" ] || { echo "sanitize-integration.sh: no libasan.so ($asan)" >&2; exit 1; }
# halt_on_error: a report ends the process (the test then fails too);
# the log files carry the process id.
export ASAN_OPTIONS="log_path=$san/asan:detect_leaks=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="log_path=$san/ubsan:print_stacktrace=1:halt_on_error=1"
# Not in this shell: the tests' own tools (dd's aligned_alloc) trip ASan.
# The programs that load the plugin get it through wrappers first on PATH:
# srun, sbatch, salloc, and slurmd (cluster.sh starts it by name, also when
# a test restarts a node), which hands its environment to slurmstepd. The
# tasks inherit it from srun (harmless in the instrumented programs).
mkdir -p "$san/bin"
for prog in srun sbatch salloc slurmd; do
    printf '#!/bin/sh\nLD_PRELOAD=%s exec %s "$@"\n' "$asan" "$(command -v $prog)" \
        >"$san/bin/$prog"
    chmod +x "$san/bin/$prog"
done
export PATH=$san/bin:$PATH
export RP_PREFIX=$prefix RP_PLUGIN=$prefix/lib/slurm/ringpoint.so
pythondir=$(sed -n 's/^RP_PYTHONDIR = //p' "$build/Makefile")
export RP_PYTHONDIR=${pythondir//\$\{prefix\}/$prefix}
[ -d "$RP_PYTHONDIR/ringpoint" ] && export PYTHONPATH=$RP_PYTHONDIR${PYTHONPATH:+:$PYTHONPATH}

say "local Slurm cluster ($RP_CLUSTER_DIR), slurmd with LD_PRELOAD=$asan"
trap '"$top/scripts/cluster.sh" down >/dev/null 2>&1 || true' EXIT
if ! RP_CLUSTER_CRED_EXPIRE=5 "$top/scripts/cluster.sh" up -n 2 -p "$RP_PLUGIN"; then
    echo "sanitize-integration.sh: the cluster did not come up" >&2
    exit 1
fi
eval "$("$top/scripts/cluster.sh" env)"
# Is the instrumented plugin really loaded, and the runtime with it?
srun -N1 -n1 --ckpt-interval=1m sh -c 'grep -c libasan /proc/$PPID/maps; grep -c ringpoint.so /proc/$PPID/maps;
    tr "\0" "\n" </proc/$PPID/environ | grep -c "^ASAN_OPTIONS=log_path="' \
    >"$san/probe.txt" 2>&1 || true
# And do reports reach the files from inside a job? A task's heap
# overflow must leave one (a control: moved aside, not counted).
control=${RP_CLUSTER_SHARED:-$RP_CLUSTER_DIR}/asan-control
printf '#include <stdlib.h>\nint main(void){char *p=malloc(8);p[8]=1;return p[0];}\n' \
    >"$control.c"
mkdir -p "$san/control"
if gcc -fsanitize=address -g -o "$control" "$control.c" &&
    ! srun -N1 -n1 "$control" >/dev/null 2>&1 &&
    grep -l heap-buffer-overflow "$san"/asan.* >/dev/null 2>&1; then
    mv $(grep -l heap-buffer-overflow "$san"/asan.*) "$san/control/"
    echo "control: a task's heap overflow was reported" >>"$san/probe.txt"
else
    echo "control: NO report from a task's heap overflow" >>"$san/probe.txt"
fi

for t in "${tests[@]}"; do
    f=$top/tests/slurm/test_$t.sh
    [ -f "$f" ] || { echo "no $f" >&2; continue; }
    say "integration: test_$t.sh"
    bash "$f" || true
done
say "tear down"
"$top/scripts/cluster.sh" down || true
trap - EXIT

passed=$(grep -c '^pass ' "$RP_RESULTS" || true)
failed=$(grep -c '^fail ' "$RP_RESULTS" || true)
grep '^fail ' "$RP_RESULTS" | sed 's/^fail /failed: /'
reports=$(ls "$san"/asan.* "$san"/ubsan.* 2>/dev/null)
ours=0
for r in $reports; do
    echo "-- $r"
    grep -E 'ERROR: AddressSanitizer|runtime error|SUMMARY' "$r" | head -n 3
    grep -qE 'ringpoint|/runtime/|/spank/|/tests/' "$r" && ours=$((ours + 1))
done
echo "probe (slurmstepd: libasan mapped, ringpoint.so mapped, ASAN_OPTIONS set): $(tr '\n' ' ' <"$san/probe.txt")"
echo "$passed passed, $failed failed; $(echo "$reports" | grep -c . || true) sanitizer reports, $ours naming ringpoint code"
[ "$failed" -eq 0 ] && [ "$ours" -eq 0 ] && [ "$passed" -gt 0 ]
