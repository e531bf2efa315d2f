#!/usr/bin/env bash
# rp_init after rp_finalize in the same process, under both launchers: 3
# ranks, each bringing ringpoint up 4 times (3 re-inits) with an allreduce
# and a broadcast every time (ringpoint-reinit-check), 10 runs per launcher.
# Before the PMIx client stayed open for the life of the process, closing
# and opening it again raced with the other ranks' fence (issue 15): 4 of
# 20 runs of this program under mpirun failed ("PMIx_Fence failed: PARTIAL
# SUCCESS", or one rank alone in its fence until the timeout). Every line
# must be clean too: a clean run prints no error. About 10-20 s.
. "$(dirname "$0")/../lib/harness.sh"

export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-reinit-check
# A regression shows as a fence that waits for a rank that will not come:
# fail in seconds, not in the default 2 minutes.
export RINGPOINT_BOOTSTRAP_TIMEOUT=20s
# The nodes have a /tmp of their own: srun runs from here, not from a
# checkout that may lie under /tmp (slurmstepd would print an error).
export RP_WORK=$RP_CLUSTER_DIR/work/reinit
mkdir -p "$RP_WORK"

# runs LABEL LAUNCHER...: 10 runs; each must end 0 with rank 0's ok line
# and no line saying error.
runs() {
    local label=$1 i out
    shift
    for i in $(seq 1 10); do
        out=$("$@" "$CHECK" 4 2>&1) || fail "$label run $i: exit $?"$'\n'"$out" || return 1
        echo "--- $label run $i"
        echo "$out"
        assert_contains "$out" "reinit-check: ok 4 rounds of 3 ranks" "$label run $i" || return 1
        assert_not_contains "$(echo "$out" | tr 'A-Z' 'a-z')" "error" "$label run $i" || return 1
    done
}

test_reinit_mpirun_3_ranks() {
    runs mpirun env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe \
        -x RINGPOINT_BOOTSTRAP_TIMEOUT -np 3
}

test_reinit_srun_2_nodes_3_ranks() {
    runs srun srun --mpi=pmix -N2 -n3 -t 2 --chdir="$RP_WORK"
}

run_all
