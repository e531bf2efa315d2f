#!/usr/bin/env bash
# Failures between hosts, not only between processes. Each node of a
# cluster of its own is an emulated host (scripts/cluster.sh with
# RP_CLUSTER_NETNS=1: its own network namespace and address on a bridge),
# and ranks talk over TCP (UCX_TLS=tcp,self) as on an Ethernet cluster.
#   - a host cut off mid-training (its link set down: nothing closes,
#     packets are lost): the other rank fails within RINGPOINT_PEER_TIMEOUT
#     plus a little, naming the lost rank and its host; the checkpoints from
#     before the cut verify; once the host is back the job is requeued and
#     resumes to the digest of an uninterrupted run;
#   - the same with the cut in the middle of a checkpoint (rank 1's shard
#     fsync held 8 s by the fault injector): the checkpoint in flight is
#     never committed, the ones before it verify, the job resumes;
#   - with UCX's default transports, ranks on different emulated hosts of
#     one machine are not slowed by wakeups that cannot cross namespaces
#     (they were: 310 ms a step, shared memory chosen, its wakeup lost);
#   - a clean run over TCP prints no error (the connections that close as
#     ranks finish are not failures);
#   - a job suspended for longer than the timeout is not declared lost.
# The cluster is brought up and torn down here, in $RP_CLUSTER_DIR-netns on
# ports RP_NETNS_CTLD_PORT / RP_NETNS_SLURMD_PORT, by default next to the
# main cluster's (RP_CLUSTER_CTLD_PORT + 1, RP_CLUSTER_SLURMD_PORT + 4 and
# + 5: 16818 / 16834..16835 with cluster.sh's defaults), so that test runs
# beside each other on their own ports never share a bridge or a namespace
# (both are named after the port). About 3-3.5 minutes in all. Needs root and
# `ip` (netns, veth, bridge).
. "$(dirname "$0")/../lib/harness.sh"

RP_TOP=$(cd "$(dirname "$0")/../.." && pwd)
export RP_TOP
export RP_NETNS_DIR=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}-netns
export RP_WORK=$RP_NETNS_DIR/work/netns
export STEPS=600
export UCX_TLS=tcp,self

export RP_NETNS_CTLD_PORT=${RP_NETNS_CTLD_PORT:-$((${RP_CLUSTER_CTLD_PORT:-16817} + 1))}
export RP_NETNS_SLURMD_PORT=${RP_NETNS_SLURMD_PORT:-$((${RP_CLUSTER_SLURMD_PORT:-16830} + 4))}

netns_cluster() { # netns_cluster COMMAND ARGS...
    RP_CLUSTER_DIR=$RP_NETNS_DIR RP_CLUSTER_NETNS=1 RP_CLUSTER_CRED_EXPIRE=5 \
        RP_CLUSTER_CTLD_PORT=$RP_NETNS_CTLD_PORT \
        RP_CLUSTER_SLURMD_PORT=$RP_NETNS_SLURMD_PORT \
        "$RP_TOP/scripts/cluster.sh" "$@"
}

if ! ip netns list >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
    echo "# SKIP $(basename "$0"): needs root and ip netns"
    exit 0
fi
if ! netns_cluster up -n 2 -p "$RP_PLUGIN" -a requeue_failed=yes; then
    echo "fail netns-cluster-up" >>"$RP_RESULTS"
    echo "not ok - netns cluster up"
    exit 1
fi
trap 'netns_cluster down >/dev/null 2>&1 || true' EXIT
eval "$(netns_cluster env)"
. "$(dirname "$0")/../lib/jobs.sh"
# Jobs start in the submitter's directory, which must exist on the nodes:
# their /tmp is private, so a checkout under /tmp is not there (slurmstepd
# then logs "couldn't chdir" as an error, which the clean-run test reads).
mkdir -p "$RP_WORK" && cd "$RP_WORK" || exit 1
export TRAIN_DELAY="--step-delay-ms 20"

# submit2 NAME [sbatch options]: like submit, 2 ranks on the 2 hosts, a
# checkpoint every 2 s, a line every 50 steps.
submit2() {
    local name=$1
    shift
    cat >"$RP_WORK/$name.sh" <<SCRIPT
#!/bin/bash
echo "start restart=\${SLURM_RESTART_COUNT:-0}"
srun ${TASK_WRAP:-} ringpoint-example-train --steps $STEPS --log-every 50 $TRAIN_DELAY
echo "srun exit \$?"
SCRIPT
    rm -rf "$RP_WORK/$name.out" "$RP_WORK/$name.ckpt"
    sbatch --parsable -N2 -n2 --ntasks-per-node=1 --exclusive \
        --open-mode=append -o "$RP_WORK/$name.out" \
        --ckpt-dir="$RP_WORK/$name.ckpt" --ckpt-interval=2s "$@" \
        "$RP_WORK/$name.sh"
}

# seconds_since T0: elapsed seconds, to a tenth.
seconds_since() { awk -v t0="$1" -v t1="$(date +%s.%N)" 'BEGIN { printf "%.1f", t1 - t0 }'; }

# cut_host NAME WHEN TIMEOUT_S: run job NAME under RINGPOINT_PEER_TIMEOUT
# TIMEOUT_S, cut n2's link once a line of its output matches WHEN, and check
# everything a lost host promises.
cut_host() {
    local name=$1 when=$2 ref jid t0 before err_at ckpt
    export RINGPOINT_PEER_TIMEOUT=$3
    ref=$(srun -N2 -n2 --ntasks-per-node=1 --ckpt-dir="$RP_WORK/ref.$$" \
        --ckpt-interval=0 ringpoint-example-train --steps "$STEPS" --log-every 0 |
        sed -n 's/^final step=[0-9]* digest=//p')
    [ -n "$ref" ] || fail "no reference digest"
    jid=$(submit2 "$name" --requeue)
    trap 'netns_cluster net-up n2 || true' EXIT
    for _ in $(seq 900); do
        grep -q -- "$when" "$RP_WORK/$name.out" 2>/dev/null && break
        sleep 0.1
    done
    grep -q -- "$when" "$RP_WORK/$name.out" || fail "job $jid never printed '$when'"
    before=$(cd "$RP_WORK/$name.ckpt" && ls -d step-* | sort)
    [ -n "$before" ] || fail "no checkpoint before the cut"
    echo "$before" | tail -1 >"$RP_WORK/$name.last"
    t0=$(date +%s.%N)
    netns_cluster net-down n2
    for _ in $(seq 600); do
        grep -q 'is lost' "$RP_WORK/$name.out" && break
        sleep 0.1
    done
    err_at=$(seconds_since "$t0")
    grep -v '^step ' "$RP_WORK/$name.out"
    echo "error on the surviving rank ${err_at} s after the link went down"
    assert_contains "$(cat "$RP_WORK/$name.out")" "rank 1 on n2 (10." "the error"
    # Not before the timeout (less a ping interval), and with generous
    # room after it for a loaded machine; far below RINGPOINT_COLL_TIMEOUT
    # (5 min) either way.
    awk -v t="$err_at" -v lim="$3" 'BEGIN { exit !(t >= lim * 0.75 && t <= lim + 25) }' ||
        fail "the lost host was reported after ${err_at} s"
    # What was committed before the cut is all there and verifies.
    for ckpt in $before; do
        [ -d "$RP_WORK/$name.ckpt/$ckpt" ] || fail "$ckpt is gone"
    done
    ringpoint-ckpt verify "$RP_WORK/$name.ckpt" || fail "the checkpoints do not verify"
    # The host comes back: the requeued job resumes and ends as if never
    # interrupted.
    netns_cluster net-up n2
    wait_restarts "$jid" 1 150
    echo "requeued $(seconds_since "$t0") s after the cut"
    wait_done "$jid" 150
    echo "done $(seconds_since "$t0") s after the cut"
    grep -v '^step ' "$RP_WORK/$name.out"
    assert_contains "$(cat "$RP_WORK/$name.out")" "resumed from step"
    assert_eq "$(state "$jid")" COMPLETED
    assert_eq "$(digest_in "$name")" "$ref" "digest after the lost host"
}

test_lost_host_fails_within_bound_and_resumes() {
    cut_host cut '^step 300 ' 20 # the default
}

test_lost_host_mid_checkpoint() {
    local resumed
    # Rank 1's third shard: its fsync held 8 s, the cut comes inside it.
    export RP_FAULTFS='fsync:*/.inflight-*/shard-000001*:delay=8000:3:1'
    export TASK_WRAP="env LD_PRELOAD=$RP_PREFIX/libexec/ringpoint/ringpoint-faultfs.so"
    cut_host midckpt 'faultfs: fsync' 5 # shorter, to keep the suite short
    assert_contains "$(cat "$RP_WORK/midckpt.out")" "faultfs: fsync"
    # The checkpoint in flight at the cut was never committed: the job
    # resumed from the last one committed before it.
    resumed=$(sed -n 's/^resumed from step \([0-9]*\).*/\1/p' "$RP_WORK/midckpt.out")
    assert_eq "$((10#$resumed))" "$((10#$(sed 's/^step-//' "$RP_WORK/midckpt.last")))" \
        "the step resumed from"
}

test_clean_tcp_run_prints_no_error() {
    local out i
    for i in 1 2 3 4 5; do
        out=$(srun -N2 -n3 --ckpt-dir="$RP_WORK/clean.$$.$i" --ckpt-interval=0 \
            ringpoint-example-train --steps 50 --log-every 0 2>&1)
        echo "$out"
        assert_contains "$out" "final step=50"
        assert_not_contains "$out" "error" "run $i"
    done
}

test_default_transports_across_namespaces() {
    local t0 out secs
    unset UCX_TLS
    t0=$(date +%s.%N)
    out=$(srun -N2 -n3 --ckpt-dir="$RP_WORK/deftl.$$" --ckpt-interval=0 \
        ringpoint-example-train --steps 300 --log-every 0 2>&1)
    secs=$(seconds_since "$t0")
    echo "$out"
    echo "300 steps, 3 ranks on 2 emulated hosts, default UCX_TLS: $secs s"
    assert_contains "$out" "final step=300"
    assert_not_contains "$out" "error"
    # Measured 2-4 s on a loaded 2-core machine; a lost wakeup costs
    # ~0.3 s a step, 90 s for these 300.
    awk -v t="$secs" 'BEGIN { exit !(t < 45) }' || fail "300 steps took $secs s"
}

test_suspended_job_is_not_lost() {
    local jid
    export RINGPOINT_PEER_TIMEOUT=3s
    jid=$(submit2 suspend)
    for _ in $(seq 600); do
        grep -q '^step 100 ' "$RP_WORK/suspend.out" 2>/dev/null && break
        sleep 0.1
    done
    scontrol suspend "$jid"
    sleep 8
    scontrol resume "$jid"
    wait_done "$jid" 120
    cat "$RP_WORK/suspend.out"
    assert_not_contains "$(cat "$RP_WORK/suspend.out")" "error"
    assert_eq "$(state "$jid")" COMPLETED
    assert_contains "$(cat "$RP_WORK/suspend.out")" "final step=$STEPS"
}

run_all
