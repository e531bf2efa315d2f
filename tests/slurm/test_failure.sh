#!/usr/bin/env bash
# Failures on the real cluster: a task killed with SIGKILL, a node that
# crashes (slurmd, slurmstepd and tasks SIGKILLed at once), an application
# that crashes at start every time; and the site's requeue= policy (hold,
# off). The other ranks must notice within a bounded time and exit, never
# hang; a job that comes back resumes from its last periodic checkpoint
# with the digest of an uninterrupted run; a crash loop stops at MAX.
. "$(dirname "$0")/../lib/harness.sh"

export RP_TOP=$(cd "$(dirname "$0")/../.." && pwd)
export RP_WORK=$RP_CLUSTER_DIR/work/failure
export STEPS=300
. "$(dirname "$0")/../lib/jobs.sh"
# A real node failure is silent: bound the wait for a peer that stops
# answering (a killed process on this host is noticed at once anyway).
export TRAIN_ENV="RINGPOINT_COLL_TIMEOUT=20s"
export TRAIN_ARGS=""

# check_resumed NAME REF: the job resumed from a periodic checkpoint and
# ended with the reference digest.
check_resumed() {
    local out
    out=$(cat "$RP_WORK/$1.out")
    echo "$out"
    assert_contains "$out" "resumed from step"
    assert_eq "$(digest_in "$1")" "$2" "digest after the failure"
}

test_task_killed_others_exit_and_job_resumes() {
    local ref jid pid t0 t1
    with_site_args requeue_failed=yes
    ref=$(reference)
    jid=$(submit killed --requeue --ckpt-interval=2)
    wait_training killed
    wait_checkpoint killed
    pid=$(task_pid "$jid" 2) || fail "rank 2 of job $jid not found"
    t0=$(date +%s)
    kill -KILL "$pid"
    wait_restarts "$jid" 1 60
    t1=$(date +%s)
    echo "requeued $((t1 - t0)) s after the kill"
    # Noticed through the broken connection, well inside the 20 s timeout.
    [ $((t1 - t0)) -le 20 ] || fail "the other ranks took $((t1 - t0)) s to give up"
    wait_done "$jid" 180
    assert_contains "$(cat "$RP_WORK/killed.out")" "rank 2 failed"
    assert_eq "$(restarts "$jid")" 1 "restarts"
    assert_eq "$(state "$jid")" COMPLETED
    check_resumed killed "$ref"
    assert_contains "$(slurmd_log)" "job $jid: requeued after a failure (requeue 1 of 3)"
}

test_node_crash_others_exit_and_job_resumes() {
    local ref jid t0 t1
    with_site_args requeue_failed=yes
    trap 'cp "$RP_WORK/plugstack.saved" "$RP_PLUGSTACK"; "$RP_TOP/scripts/cluster.sh" start-node n2 -d "$RP_CLUSTER_DIR" || true' EXIT
    ref=$(reference)
    jid=$(submit crash --requeue --ckpt-interval=2)
    wait_training crash
    wait_checkpoint crash
    t0=$(date +%s)
    "$RP_TOP/scripts/cluster.sh" crash-node n2 -d "$RP_CLUSTER_DIR"
    wait_restarts "$jid" 1 60
    t1=$(date +%s)
    echo "requeued $((t1 - t0)) s after the node crashed"
    [ $((t1 - t0)) -le 30 ] || fail "the other ranks took $((t1 - t0)) s to give up"
    # The node comes back (a reboot); the job was waiting for it.
    wait_srun_gone "$jid"
    "$RP_TOP/scripts/cluster.sh" start-node n2 -d "$RP_CLUSTER_DIR"
    wait_done "$jid" 240
    assert_eq "$(restarts "$jid")" 1 "restarts"
    assert_eq "$(state "$jid")" COMPLETED
    check_resumed crash "$ref"
}

test_crash_at_start_stops_at_max() {
    local jid out
    with_site_args requeue_failed=yes
    cat >"$RP_WORK/crashloop.sh" <<'SCRIPT'
#!/bin/bash
echo "start restart=${SLURM_RESTART_COUNT:-0}"
srun sh -c 'echo "crashing at start"; kill -SEGV $$'
SCRIPT
    rm -f "$RP_WORK/crashloop.out"
    jid=$(sbatch --parsable -N2 -n2 --requeue --open-mode=append \
        -o "$RP_WORK/crashloop.out" --ckpt-requeue=2 --ckpt-interval=0 \
        "$RP_WORK/crashloop.sh")
    wait_restarts "$jid" 2 120
    wait_done "$jid" 120
    out=$(cat "$RP_WORK/crashloop.out")
    echo "$out"
    assert_eq "$(restarts "$jid")" 2 "restarts"
    assert_not_contains "$(state "$jid")" PENDING
    assert_eq "$(grep -c '^start restart=' "$RP_WORK/crashloop.out")" 3 "runs"
    assert_contains "$(slurmd_log)" "job $jid: requeue limit reached (2 of 2) after the step failed again"
}

test_without_requeue_failed_a_failure_is_not_requeued() {
    local jid pid
    jid=$(submit nofail --requeue --ckpt-interval=2)
    wait_training nofail
    pid=$(task_pid "$jid" 1) || fail "rank 1 of job $jid not found"
    kill -KILL "$pid"
    wait_done "$jid" 60
    cat "$RP_WORK/nofail.out"
    assert_eq "$(restarts "$jid")" 0 "restarts"
    assert_contains "$(cat "$RP_WORK/nofail.out")" "rank 1 failed"
}

test_site_requeue_hold_waits_for_release() {
    local ref jid
    with_site_args requeue=hold
    ref=$(reference)
    jid=$(submit hold --requeue)
    wait_training hold
    scancel -s USR2 "$jid"
    wait_restarts "$jid" 1 60
    sleep 8 # longer than cred_expire: a held job stays pending
    assert_eq "$(state "$jid")" PENDING
    scontrol show job "$jid" | grep -q "Reason=.*Held\|Priority=0" ||
        fail "job $jid is not held: $(scontrol show job "$jid" | grep -o 'Reason=[^ ]*')"
    assert_contains "$(slurmd_log)" "scontrol release $jid"
    scontrol release "$jid"
    wait_done "$jid" 180
    check_resumed hold "$ref"
}

test_site_requeue_off_leaves_it_to_slurm() {
    local jid out
    with_site_args requeue=off
    jid=$(submit off --requeue)
    wait_training off
    scancel -s USR2 "$jid"
    wait_done "$jid" 60
    out=$(cat "$RP_WORK/off.out")
    echo "$out"
    assert_contains "$out" "(SIGUSR2): checkpoint committed"
    assert_eq "$(restarts "$jid")" 0 "restarts"
    assert_eq "$(state "$jid")" COMPLETED
}

run_all
