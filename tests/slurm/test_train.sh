#!/usr/bin/env bash
# The example training job end to end on the real cluster: a run that is
# stopped and resumed, or loses a rank in the middle of a checkpoint write,
# finishes with exactly the model of an uninterrupted run (the same digest).
# The stops here are requested through the engine's test hook
# (RINGPOINT_CKPT_FAULT); stops by real signals and requeue are tested
# with the preemption work.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export RP_WORK=$RP_CLUSTER_DIR/work/train
export TRAIN_ARGS="--steps 240 --hidden 48 --log-every 0"
mkdir -p "$RP_WORK"

digest_of() { echo "$1" | sed -n 's/^final step=240 digest=\([0-9a-f]*\)$/\1/p'; }

# The reference: one uninterrupted run, no checkpoints.
reference() {
    local out
    out=$(srun --mpi=pmix -N2 -n3 --ckpt-dir="$RP_WORK/ref-%j" --ckpt-interval=0 \
        ringpoint-example-train $TRAIN_ARGS)
    digest_of "$out"
}

test_train_uninterrupted_is_reproducible() {
    local a b
    a=$(reference)
    b=$(reference)
    [ -n "$a" ] || fail "no final line"
    assert_eq "$b" "$a" "digest of a second uninterrupted run"
}

test_train_stopped_three_times_same_digest() {
    local ref dir out s
    ref=$(reference)
    dir=$RP_WORK/stops.$$
    rm -rf "$dir"
    for s in 50 110 170; do
        # A stopped job exits with RP_EXIT_STOPPED (75) so the plugin may
        # requeue it.
        out=$(RINGPOINT_CKPT_FAULT=stop:$((s % 3)):$s srun --mpi=pmix -N2 -n3 \
            --ckpt-dir="$dir" --ckpt-interval=0 ringpoint-example-train $TRAIN_ARGS) &&
            fail "a stopped run exited 0"
        echo "$out"
        assert_contains "$out" "stopping at step $s: checkpoint committed"
    done
    out=$(srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" --ckpt-interval=0 \
        ringpoint-example-train $TRAIN_ARGS)
    echo "$out"
    assert_contains "$out" "resumed from step 170"
    assert_eq "$(digest_of "$out")" "$ref" "digest after three stops"
}

test_train_rank_killed_mid_write_same_digest() {
    local ref dir out
    ref=$(reference)
    dir=$RP_WORK/kill.$$
    rm -rf "$dir"
    # Checkpoints every 40 steps; rank 2 dies half way through writing the
    # one of step 120, so the job resumes from step 80 and redoes the rest.
    if out=$(RINGPOINT_CKPT_EVERY=40 RINGPOINT_CKPT_FAULT=kill:2:120 \
            RINGPOINT_COLL_TIMEOUT=20s srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" \
            --ckpt-interval=0 ringpoint-example-train $TRAIN_ARGS 2>&1); then
        fail "the job survived a killed rank: $out"
    fi
    [ ! -e "$dir/step-000000000120" ] || fail "step 120 was committed without rank 2"
    out=$(RINGPOINT_CKPT_EVERY=40 srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" \
        --ckpt-interval=0 ringpoint-example-train $TRAIN_ARGS)
    echo "$out"
    assert_contains "$out" "resumed from step 80"
    assert_eq "$(digest_of "$out")" "$ref" "digest after a killed rank"
}

# signal_one_rank SIGNAL N: signal the Nth training process (by pid
# order), i.e. one rank only, once the job is under way.
signal_one_rank() {
    local pids
    for _ in $(seq 100); do
        # By process name (15 characters): the test's own shell has the
        # program's name in its command line.
        # Only this test's (their checkpoint dir is under $RP_WORK): other
        # clusters on this machine may train at the same time.
        pids=$(for p in $(pgrep -x ringpoint-examp | sort -n); do
            tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null |
                grep -q "^RINGPOINT_CKPT_DIR=$RP_WORK/" && echo "$p"
        done; true)
        [ "$(echo "$pids" | grep -c .)" -ge 3 ] && break
        sleep 0.1
    done
    sleep 1
    kill -s "$1" "$(echo "$pids" | sed -n "${2}p")"
}

test_train_signal_on_one_rank_stops_all() {
    local ref dir out rc sig
    ref=$(reference)
    for sig in TERM USR2; do
        dir=$RP_WORK/sig-$sig.$$
        rm -rf "$dir"
        signal_one_rank "$sig" 2 &
        rc=0
        out=$(srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" --ckpt-interval=0 \
            ringpoint-example-train $TRAIN_ARGS --step-delay-ms 20 2>&1) || rc=$?
        wait
        echo "$out"
        # Every rank stopped at the same step and exited RP_EXIT_STOPPED.
        assert_eq "$rc" 75 "srun's exit status"
        assert_contains "$out" "(SIG$sig): checkpoint committed"
        assert_contains "$out" "Exited with exit code 75"
        assert_not_contains "$out" "Killed"
        out=$(srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" --ckpt-interval=0 \
            ringpoint-example-train $TRAIN_ARGS)
        echo "$out"
        assert_contains "$out" "resumed from step"
        assert_eq "$(digest_of "$out")" "$ref" "digest after SIG$sig on one rank"
    done
}

test_train_sigterm_under_mpirun_without_slurm() {
    local ref dir out rc=0
    ref=$(reference)
    dir=$RP_WORK/mpirun.$$
    rm -rf "$dir"
    signal_one_rank TERM 1 &
    out=$(env -u SLURM_CONF RINGPOINT_CKPT_DIR="$dir" mpirun --allow-run-as-root \
        --oversubscribe -np 3 -x RINGPOINT_CKPT_DIR \
        ringpoint-example-train $TRAIN_ARGS --step-delay-ms 20 2>&1) || rc=$?
    wait
    echo "$out"
    [ "$rc" -ne 0 ] || fail "mpirun exited 0 although the job was stopped"
    assert_contains "$out" "(SIGTERM): checkpoint committed"
    out=$(env -u SLURM_CONF RINGPOINT_CKPT_DIR="$dir" mpirun --allow-run-as-root \
        --oversubscribe -np 3 -x RINGPOINT_CKPT_DIR ringpoint-example-train $TRAIN_ARGS)
    echo "$out"
    assert_contains "$out" "resumed from step"
    # Same world size, same digest, whichever launcher started the ranks.
    assert_eq "$(digest_of "$out")" "$ref" "digest after SIGTERM under mpirun"
}

# The stop budget: at a time limit (SIGTERM after the end time) with no
# KillWait left, a stop checkpoint cannot fit; the ranks exit 75 at once
# without one (so the job could still be requeued), and the next run
# resumes from the last periodic checkpoint, with the same digest.
test_train_no_time_for_a_stop_checkpoint() {
    local ref dir out rc=0 stop resumed
    ref=$(reference)
    dir=$RP_WORK/budget.$$
    rm -rf "$dir"
    signal_one_rank TERM 1 &
    out=$(env -u SLURM_CONF RINGPOINT_CKPT_DIR="$dir" RINGPOINT_CKPT_EVERY=20 \
        RINGPOINT_SLURM_KILL_WAIT=0 RINGPOINT_SLURM_END_TIME=1 \
        mpirun --allow-run-as-root --oversubscribe -np 3 -x RINGPOINT_CKPT_DIR \
        -x RINGPOINT_CKPT_EVERY -x RINGPOINT_SLURM_KILL_WAIT -x RINGPOINT_SLURM_END_TIME \
        ringpoint-example-train $TRAIN_ARGS --step-delay-ms 20 2>&1) || rc=$?
    wait
    echo "$out"
    [ "$rc" -ne 0 ] || fail "mpirun exited 0 although the job was stopped"
    assert_contains "$out" "0.0 s until SIGKILL (time limit reached"
    assert_contains "$out" "no time for a stop checkpoint"
    assert_contains "$out" ": no new checkpoint"
    stop=$(echo "$out" | sed -n 's/^stopping at step \([0-9]*\):.*/\1/p')
    [ -n "$stop" ] || fail "no stop step"
    [ ! -e "$dir/$(printf 'step-%012d' "$stop")" ] || fail "a checkpoint of the stop step exists"
    out=$(env -u SLURM_CONF RINGPOINT_CKPT_DIR="$dir" mpirun --allow-run-as-root \
        --oversubscribe -np 3 -x RINGPOINT_CKPT_DIR ringpoint-example-train $TRAIN_ARGS)
    echo "$out"
    resumed=$(echo "$out" | sed -n 's/^resumed from step \([0-9]*\) .*/\1/p')
    [ -n "$resumed" ] && [ "$resumed" -lt "$stop" ] && [ $((resumed % 20)) -eq 0 ] ||
        fail "resumed from '$resumed', expected the periodic checkpoint before step $stop"
    assert_eq "$(digest_of "$out")" "$ref" "digest after a stop without a checkpoint"
}

test_train_help_and_bad_arguments() {
    local out
    out=$(ringpoint-example-train --help)
    assert_contains "$out" "--step-delay-ms"
    if out=$(ringpoint-example-train --steps banana 2>&1); then
        fail "accepted --steps banana"
    fi
    assert_contains "$out" "--steps needs a whole number"
}

run_all
