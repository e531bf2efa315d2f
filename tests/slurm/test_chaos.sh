#!/usr/bin/env bash
# The chaos test, short: a few trials of scripts/chaos.sh (random
# preemption, requeue, warning signal, SIGKILL of a rank, SIGKILL during a
# checkpoint write, scancel; sync and async; an array task or a time limit
# when the seed draws one) with a fixed seed, each of which must end with
# the digest of an uninterrupted run (a cancelled one: cancelled for good).
# The soak is scripts/chaos.sh -n 1000 -u HH:MM (doc/reliability.md).
. "$(dirname "$0")/../lib/harness.sh"
export RP_TOP=$(cd "$(dirname "$0")/../.." && pwd)
RP_TEST_TIMEOUT=900

test_chaos_short() {
    local out rc=0 n=${RP_CHAOS_TRIALS:-4} work=$RP_CLUSTER_DIR/work/chaos f
    local res=$work/ci-results.tsv
    rm -f "$res"
    mkdir -p "$work"
    touch "$work/ci-start"
    # Not out=$(...) alone: under set -e a failing soak would end the test
    # before its output reached the log.
    out=$(bash "$RP_TOP/scripts/chaos.sh" -n "$n" -s "${RP_CHAOS_SEED:-11}" -o "$res" \
        -e preempt,requeue,warn,kill,kill-write,scancel 2>&1) || rc=$?
    echo "$out"
    if ((rc != 0)); then
        # What this run's wrong trials left, into the log (CI keeps only
        # the log).
        find "$work/failed" -newer "$work/ci-start" \( -name '*.out' -o -name '*.job' \) 2>/dev/null |
            while read -r f; do
                echo "--- $f"
                tail -n 60 "$f"
            done || true
    fi
    assert_contains "$out" "this run: $n trials, 0 wrong"
    # One row per trial besides the header, each with its verdict.
    assert_eq "$(awk -F'\t' 'NR > 1 && $17 == "ok"' "$res" | wc -l)" "$n" "ok rows in $res"
}

run_all
