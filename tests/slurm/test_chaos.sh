#!/usr/bin/env bash
# The chaos test, short: a few trials of scripts/chaos.sh (random
# preemption, requeue, warning signal, SIGKILL of a rank, SIGKILL during a
# checkpoint write) with a fixed seed, each of which must end with the
# digest of an uninterrupted run. scripts/chaos.sh -n 200 is the long one.
. "$(dirname "$0")/../lib/harness.sh"
export RP_TOP=$(cd "$(dirname "$0")/../.." && pwd)
RP_TEST_TIMEOUT=900

test_chaos_short() {
    local out
    out=$(bash "$RP_TOP/scripts/chaos.sh" -n "${RP_CHAOS_TRIALS:-4}" -s "${RP_CHAOS_SEED:-11}" 2>&1)
    echo "$out"
    assert_contains "$out" "finished with the reference digest, 0 did not"
}

run_all
