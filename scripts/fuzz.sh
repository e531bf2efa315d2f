#!/usr/bin/env bash
# Build the libFuzzer targets of tests/fuzz/ with clang (out of tree, ASan +
# UBSan) and run each for a time budget, starting from its committed corpus.
#
#   scripts/fuzz.sh [-t SECONDS] [-b BUILD_DIR] [-w WORK_DIR] [TARGET...]
#
#   -t SECONDS   per target (default 60)
#   -b DIR       the clang build (default build-fuzz; configured if needed)
#   -w DIR       corpora and crashes (default DIR/fuzz-work): new inputs
#                stay there, the committed corpus is not changed
#   TARGET       parse, ckpt_dir, admin, shard_header, manifest,
#                manifest_build, restore, options, settings (default all)
#
# Prints one row per target (seconds, executions, coverage, corpus, result)
# and exits 1 if a target found anything: its crash-* input is in the work
# directory; replay it with `BUILD/tests/fuzz/fuzz_TARGET FILE` and, once
# fixed, copy it into tests/fuzz/corpus/TARGET/ as a regression input.
# Needs clang and libclang-rt-14-dev (scripts/deps.sh installs them).
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
seconds=60
build=$top/build-fuzz
work=
while getopts t:b:w:h opt; do
    case $opt in
    t) seconds=$OPTARG ;;
    b) build=$OPTARG ;;
    w) work=$OPTARG ;;
    *) sed -n '2,21p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
work=${work:-$build/fuzz-work}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(parse ckpt_dir admin shard_header manifest manifest_build restore options settings)
fi

if [ ! -f "$build/Makefile" ]; then
    if [ ! -x "$top/configure" ]; then
        (cd "$top" && ./autogen.sh) >/dev/null 2>&1 || { echo "fuzz.sh: autogen.sh failed" >&2; exit 1; }
    fi
    mkdir -p "$build"
    (cd "$build" && CC=clang "$top/configure" --enable-sanitizers --enable-fuzz \
        --enable-werror >configure.out 2>&1) ||
        { tail -n 20 "$build/configure.out" >&2; echo "fuzz.sh: configure failed" >&2; exit 1; }
fi
bins=()
for t in "${targets[@]}"; do bins+=("tests/fuzz/fuzz_$t"); done
if ! make -C "$build" -j"$(nproc)" "${bins[@]}" >"$build/fuzz-make.out" 2>&1; then
    grep -E 'error|warning' "$build/fuzz-make.out" | head -n 20 >&2
    echo "fuzz.sh: build failed (log: $build/fuzz-make.out)" >&2
    exit 1
fi

printf '%-15s %7s %12s %9s %6s %6s %7s  %s\n' target seconds executions exec/s cov ft corpus result
failed=0
for t in "${targets[@]}"; do
    dir=$work/$t
    mkdir -p "$dir/corpus"
    cp -n "$top/tests/fuzz/corpus/$t"/* "$dir/corpus/" 2>/dev/null
    log=$dir/fuzz.log
    start=$(date +%s)
    "$build/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=25 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$dir/" \
        "$dir/corpus" >"$log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    cov=$(echo "$last" | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    ft=$(echo "$last" | sed -n 's/.*ft: \([0-9]*\).*/\1/p')
    ncorpus=$(ls "$dir/corpus" | wc -l)
    if [ $rc -eq 0 ]; then
        result=ok
    else
        result="FAILED: $(grep -hoE 'property failed: .{0,120}|ERROR: [A-Za-z]+: [^ ]+( [^ ]+)?' "$log" | head -n 1); input $(ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* 2>/dev/null | head -n 1)"
        failed=1
    fi
    printf '%-15s %7s %12s %9s %6s %6s %7s  %s\n' "$t" "$took" "${execs:-?}" "${rate:-?}" "${cov:-?}" "${ft:-?}" "$ncorpus" "$result"
done
exit $failed
