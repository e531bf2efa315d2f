#!/usr/bin/env bash
# A rank that returns from a large rp_allreduce and then waits outside the
# library (as in another library's collective) must not leave its peer
# stuck in the same rp_allreduce: 2 ranks on one node (shared memory, whose
# rendezvous receiver owes the sender an acknowledgement), 256 MiB, each
# allreduce followed by a barrier through files that calls nothing of
# ringpoint's (ringpoint-flush-check). Without the transport's flush of its
# endpoints at the end of a collective, 20 iterations failed in 3 of 3
# tries (at iterations 8, 10 and 16; 10 iterations in 1 of 2). About 10-20 s.
. "$(dirname "$0")/../lib/harness.sh"

export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-flush-check
export RP_WORK=$RP_CLUSTER_DIR/work/flush

test_no_peer_left_waiting_after_large_allreduce() {
    local out
    rm -rf "$RP_WORK"
    mkdir -p "$RP_WORK"
    out=$(RINGPOINT_COLL_TIMEOUT=20s srun -N1 -n2 -t 3 "$CHECK" "$RP_WORK" 256 20 2>&1)
    echo "$out"
    assert_contains "$out" "flush-check: ok 20 iterations of 256 MiB"
}

run_all
