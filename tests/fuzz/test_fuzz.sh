#!/usr/bin/env bash
# make check: every fuzz target over its committed corpus (TAP, one result
# per target). In a libFuzzer build (RP_FUZZ_LIBFUZZER=1), each also runs
# RP_FUZZ_SECONDS (default 3) of new inputs from that corpus, in a scratch
# copy so the committed corpus is not changed. A broken property aborts
# the target: the input is named in the log (and kept as crash-* in the
# scratch directory).
set -uo pipefail

srcdir=${srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
targets=${RP_FUZZ_TARGETS:?set by make check}
seconds=${RP_FUZZ_SECONDS:-3}
work=$(mktemp -d "${TMPDIR:-/tmp}/rp-fuzz-check.XXXXXX")
trap 'rm -rf "$work"' EXIT

n=0
for t in $targets; do n=$((n + 1)); done
echo "1..$n"
i=0
for t in $targets; do
    i=$((i + 1))
    name=$(basename "$t")
    corpus=$srcdir/tests/fuzz/corpus/${name#fuzz_}
    if [ ! -d "$corpus" ]; then
        echo "not ok $i - $name: no corpus at $corpus"
        continue
    fi
    log=$work/$name.log
    if [ "${RP_FUZZ_LIBFUZZER:-0}" = 1 ]; then
        mkdir -p "$work/$name"
        cp "$corpus"/* "$work/$name"/ 2>/dev/null
        "./$t" -runs=0 "$corpus" >"$log" 2>&1 &&
            "./$t" -max_total_time="$seconds" -seed=1 -timeout=20 \
                -rss_limit_mb=2048 -artifact_prefix="$work/$name-" \
                "$work/$name" >>"$log" 2>&1
    else
        "./$t" "$corpus" >"$log" 2>&1
    fi
    rc=$?
    if [ $rc -eq 0 ]; then
        echo "ok $i - $name ($(grep -Eo '([0-9]+ inputs replayed|#[0-9]+[[:space:]]+DONE.*)' "$log" | tail -n 1))"
    else
        echo "not ok $i - $name (exit $rc)"
        grep -E 'property failed|ERROR|SUMMARY|Test unit written|runtime error' "$log" | head -n 20 | sed 's/^/# /'
    fi
done
