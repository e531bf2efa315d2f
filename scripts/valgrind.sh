#!/usr/bin/env bash
# valgrind memcheck over the unit tests, the checkpoint tool on corrupt
# checkpoints (tests/tools/test_ckpt_tool.sh with the tool under valgrind),
# and a 2-rank mpirun training run that checkpoints and restores.
#
#   scripts/valgrind.sh [-b BUILD_DIR]
#
#   -b DIR   a build without sanitizers (default build-vg; configured with
#            CFLAGS="-g -O1" and built, check programs included, if needed)
#
# One row per program: memcheck errors, definitely lost bytes, exit status.
# Suppressions for what is not ringpoint's (UCX's and PMIx's own reads of
# uninitialised memory, Open MPI's start-up): tests/valgrind.supp. Logs in
# DIR/valgrind/. Exits 1 if any program had an error or a definite leak.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=$top/build-vg
while getopts b:h opt; do
    case $opt in
    b) build=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
    esac
done
command -v valgrind >/dev/null || { echo "valgrind.sh: apt-get install valgrind" >&2; exit 1; }
if [ ! -f "$build/Makefile" ]; then
    mkdir -p "$build"
    (cd "$build" && "$top/configure" CFLAGS="-g -O1" >configure.out 2>&1) || exit 1
fi
build=$(cd "$build" && pwd)
make -C "$build" -j"$(nproc)" >"$build/vg-make.out" 2>&1 &&
    make -C "$build" -j"$(nproc)" check TESTS= >>"$build/vg-make.out" 2>&1 ||
    { tail -n 20 "$build/vg-make.out"; exit 1; }

logs=$build/valgrind
rm -rf "$logs"
mkdir -p "$logs"
vg=(valgrind --tool=memcheck --leak-check=full --errors-for-leak-kinds=definite
    --show-leak-kinds=definite --error-exitcode=99 --num-callers=30
    --suppressions="$top/tests/valgrind.supp" --gen-suppressions=all)
export CMOCKA_MESSAGE_OUTPUT=TAP RINGPOINT_LOG_LEVEL=error
bad=0
row() { # row NAME LOGFILE... RC
    local name=$1 rc=${*: -1} errors=0 lost=0 f
    for f in "${@:2:$#-2}"; do
        e=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$f" | tail -n 1)
        l=$(sed -n 's/.*definitely lost: \([0-9,]*\) bytes.*/\1/p' "$f" | tail -n 1 | tr -d ,)
        errors=$((errors + ${e:-0}))
        lost=$((lost + ${l:-0}))
    done
    [ "$errors" -eq 0 ] && [ "$lost" -eq 0 ] && [ "$rc" -eq 0 ] || bad=1
    printf '%-28s %7s %10s %5s\n' "$name" "$errors" "$lost" "$rc"
}
printf '%-28s %7s %10s %5s\n' program errors def-lost exit

cd "$build" || exit 1
for t in tests/unit/test_*; do
    [ -x "$t" ] && [ ! -d "$t" ] || continue
    case $t in *.o | *.log | *.trs) continue ;; esac
    n=$(basename "$t")
    "${vg[@]}" --log-file="$logs/$n.vg" "./$t" >"$logs/$n.out" 2>&1
    row "$n" "$logs/$n.vg" $?
done

# The tool over corrupt checkpoints: the tool test with the tool wrapped.
cat >"$logs/ckpt-tool" <<WRAP
#!/bin/sh
exec ${vg[*]} --log-file=$logs/ringpoint-ckpt.%p.vg $build/runtime/tools/ringpoint-ckpt "\$@"
WRAP
chmod +x "$logs/ckpt-tool"
RP_CKPT_TOOL=$logs/ckpt-tool RP_CKPT_FIXTURE=$build/tests/tools/ckpt_fixture \
    bash "$top/tests/tools/test_ckpt_tool.sh" >"$logs/ckpt-tool.out" 2>&1
rc=$?
grep -q '^not ok' "$logs/ckpt-tool.out" && rc=1
row "ringpoint-ckpt ($(ls "$logs"/ringpoint-ckpt.*.vg | wc -l) runs)" "$logs"/ringpoint-ckpt.*.vg "$rc"

# 2 ranks under mpirun: train with checkpoints (sync, then async), then
# restore and check.
if command -v mpirun >/dev/null; then
    for async in 0 1; do
        d=$(mktemp -d /var/tmp/rp-vg-ckpt.XXXXXX)
        rc=0
        for mode in "train -n 30 -b 300000" "restore -b 300000"; do
            env -u SLURM_CONF RINGPOINT_CKPT_DIR="$d" RINGPOINT_CKPT_EVERY=10 \
                RINGPOINT_CKPT_ASYNC=$async RINGPOINT_CKPT_CHUNK_SIZE=65536 \
                mpirun --allow-run-as-root --oversubscribe -np 2 \
                -x RINGPOINT_CKPT_DIR -x RINGPOINT_CKPT_EVERY -x RINGPOINT_CKPT_ASYNC \
                -x RINGPOINT_CKPT_CHUNK_SIZE -x RINGPOINT_LOG_LEVEL \
                "$build/libtool" --mode=execute "${vg[@]}" \
                --log-file="$logs/mpirun-async$async-${mode%% *}.%q{OMPI_COMM_WORLD_RANK}.vg" \
                "$build/tests/slurm/ringpoint-ckpt-check" $mode \
                >>"$logs/mpirun-async$async.out" 2>&1 || rc=$?
        done
        [ "$(grep -c 'restored step=30 .*ok' "$logs/mpirun-async$async.out")" -eq 2 ] ||
            { [ "$rc" -ne 0 ] || rc=1; }
        row "mpirun -np 2 ckpt (async=$async)" "$logs"/mpirun-async$async-*.vg "$rc"
        rm -rf "$d"
    done
fi
echo "logs: $logs"
exit $bad
