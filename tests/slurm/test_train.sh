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
        out=$(RINGPOINT_CKPT_FAULT=stop:$((s % 3)):$s srun --mpi=pmix -N2 -n3 \
            --ckpt-dir="$dir" --ckpt-interval=0 ringpoint-example-train $TRAIN_ARGS)
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
