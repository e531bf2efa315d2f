#!/usr/bin/env bash
# Sub-communicators on the real local cluster (ringpoint-subcomm-check):
# an even/odd split, a split with reversed keys, an explicit list, a split
# of a split and one that leaves a rank out, each running allreduce
# (several types and operations, one past 1 MiB), broadcast from the last
# sub-rank, allgather, barrier and non-blocking collectives interleaved
# with the job's, checked exactly; lists that differ or repeat a rank and
# checkpoints on a sub-communicator refused on every rank. At 2 to 5 ranks
# over 2 nodes (so sub-communicators span nodes and share them), and with
# each allreduce algorithm forced.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-subcomm-check

# subcomm_ok OUTPUT SIZE: every check passed at SIZE ranks.
subcomm_ok() {
    local out=$1 size=$2
    echo "$out"
    assert_contains "$out" "subcomm-check: passed"
    assert_contains "$out" "checks on $size ranks"
    assert_not_contains "$out" "subcomm-check: not ok"
    assert_contains "$out" "subcomm-check: ok - split of a split: allreduce"
}

test_subcomm_two_ranks_two_nodes() {
    subcomm_ok "$(srun --mpi=pmix -N2 -n2 "$CHECK" 2>&1)" 2
}

test_subcomm_three_ranks() {
    subcomm_ok "$(srun --mpi=pmix -N2 -n3 "$CHECK" 2>&1)" 3
}

test_subcomm_four_ranks() {
    subcomm_ok "$(srun --mpi=pmix -N2 -n4 "$CHECK" 2>&1)" 4
}

test_subcomm_five_ranks() {
    subcomm_ok "$(srun --mpi=pmix -N2 -n5 --overcommit "$CHECK" 2>&1)" 5
}

# Each allreduce algorithm on its own: the sub-communicators' sizes (1 to
# 4 here) take every algorithm's odd cases.
test_subcomm_forced_algorithms() {
    local algo
    for algo in ring rd rh; do
        subcomm_ok "$(RINGPOINT_ALLREDUCE_ALGO=$algo srun --mpi=pmix -N2 -n5 --overcommit "$CHECK" 2>&1)" 5
    done
}

# The refusals name what is wrong and where, on every rank.
test_subcomm_refusals_name_the_rank() {
    local out
    out=$(srun --mpi=pmix -N2 -n3 "$CHECK" 2>&1)
    subcomm_ok "$out" 3
    assert_contains "$out" "rp_comm_create_group: rank 2 passed a different list"
    assert_contains "$out" "rp_comm_create_group: rank 0 passed a list that has a rank twice"
    assert_contains "$out" "rp_comm_split: rank 0 passed color -3"
    assert_contains "$out" "checkpoints belong to the whole job"
}

# A rank that leaves after a split: its sub-communicator's peers fail
# naming it and the sub-communicator, and the job's context fails with it
# (ranks outside that sub-communicator learn it there). Slurm may end the
# step soon after a task left, so one survivor's report suffices (at 5
# ranks rank 2's sub-communicator is job ranks 0,2,4: two survivors).
test_subcomm_failure_breaks_the_job() {
    local out
    out=$(RINGPOINT_COLL_TIMEOUT=20s srun --mpi=pmix -N2 -n5 --overcommit \
        --kill-on-bad-exit=0 "$CHECK" -k 2>&1) || true
    echo "$out"
    assert_contains "$out" "rank 2 failed"
    assert_contains "$out" "on sub-communicator"
    assert_contains "$out" "(job ranks 0,2,4)"
    echo "$out" | grep -qE "subcomm-check: rank [04]: sub allreduce returned 'peer failed', job allreduce returned 'peer failed'" ||
        fail "no member of rank 2's sub-communicator reported 'peer failed' on both"
}

run_all
