#!/usr/bin/env bash
# ringpoint.torch.Checkpoint end to end: the PyTorch example job
# (contrib/examples/train_torch.py) stopped and resumed under mpirun and on
# the local cluster ends with the weights of an uninterrupted run, bit for
# bit; a corrupt checkpoint is refused for the one before it; the restore
# works on another world size, model-only, and outside a job; a tensor that
# moved is checkpointed from its new storage; a SIGTERM handler set by the
# script after ringpoint's does not lose the stop.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
top=$(cd "$(dirname "$0")/../.." && pwd)
# The package as installed by make install (under RP_PREFIX when the suite
# installs elsewhere than /usr/local).
pydir=$(ls -d "$RP_PREFIX"/lib/python3*/*-packages 2>/dev/null | head -n 1)
export PYTHONPATH=${pydir}${PYTHONPATH:+:$PYTHONPATH}
export RP_WORK=$RP_CLUSTER_DIR/work/torch
# The example as installed, and the cases copied where the cluster's nodes
# can read them (each slurmd has a /tmp of its own, and the source tree may
# be under /tmp).
export TRAIN="$RP_PREFIX/share/ringpoint/examples/train_torch.py"
export CASES="$RP_WORK/ckpt_cases.py"
export ARGS="--steps 60 --samples 512 --width 8 --batch 16 --log-every 0"
export RINGPOINT_COLL_TIMEOUT=60s
mkdir -p "$RP_WORK"
cp "$top/tests/python/ckpt_cases.py" "$CASES"
export BOUNDS="$RP_WORK/state_dict_bounds.py"
cp "$top/tests/python/state_dict_bounds.py" "$BOUNDS"
export DDP="$RP_WORK/ddp_train.py"
cp "$top/tests/python/ddp_train.py" "$DDP"
RP_TEST_TIMEOUT=240
# Batch jobs of the example on the cluster (tests/lib/jobs.sh).
export STEPS=150
export TRAIN_CMD="/usr/bin/python3 $TRAIN --samples 512 --width 8 --batch 16"
export TRAIN_DELAY="--step-sleep 0.04"
. "$(dirname "$0")/../lib/jobs.sh"

# mpi N DIR [ENV=VALUE...] -- ARGS...: the example under mpirun.
mpi() {
    local n=$1 dir=$2 envs=()
    shift 2
    while [ "$1" != -- ]; do envs+=(-x "$1"); shift; done
    shift
    env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np "$n" \
        -x PYTHONPATH -x RINGPOINT_COLL_TIMEOUT -x RINGPOINT_CKPT_DIR="$dir" \
        -x RINGPOINT_CKPT_INTERVAL=0 "${envs[@]}" /usr/bin/python3 "$@" 2>&1
}
digest_of() { echo "$1" | sed -n 's/^final step=[0-9]* digest=\([0-9a-f]*\)$/\1/p'; }
mpi_reference() { digest_of "$(mpi 2 "$RP_WORK/ref.$$" -- "$TRAIN" $ARGS)"; }

stop_resume() { # stop_resume ASYNC: stop at step 25 (mid-epoch), resume
    local ref dir out
    ref=$(mpi_reference)
    [ -n "$ref" ] || fail "no digest from the uninterrupted run"
    dir=$RP_WORK/stop-$1.$$
    out=$(mpi 2 "$dir" RINGPOINT_CKPT_ASYNC="$1" RINGPOINT_CKPT_FAULT=stop:1:25 -- \
        "$TRAIN" $ARGS) && fail "a stopped run exited 0: $out"
    echo "$out"
    assert_contains "$out" "stopping at step 25: checkpoint committed"
    out=$(mpi 2 "$dir" RINGPOINT_CKPT_ASYNC="$1" -- "$TRAIN" $ARGS)
    echo "$out"
    assert_contains "$out" "resumed from step 25"
    assert_eq "$(digest_of "$out")" "$ref" "digest after stop and resume"
}
test_torch_stop_resume_same_digest_sync() { stop_resume 0; }
test_torch_stop_resume_same_digest_async() { stop_resume 1; }

test_torch_cluster_stop_resume_same_digest() {
    local ref dir out
    ref=$(srun --mpi=pmix -N2 -n3 --ckpt-dir="$RP_WORK/cref-%j" --ckpt-interval=0 \
        /usr/bin/python3 "$TRAIN" $ARGS 2>&1 | sed -n 's/^final step=[0-9]* digest=//p')
    [ -n "$ref" ] || fail "no digest from the uninterrupted run on the cluster"
    dir=$RP_WORK/cstop.$$
    out=$(RINGPOINT_CKPT_FAULT=stop:2:30 srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" \
        --ckpt-interval=0 /usr/bin/python3 "$TRAIN" $ARGS 2>&1) && fail "exited 0: $out"
    assert_contains "$out" "stopping at step 30: checkpoint committed"
    out=$(srun --mpi=pmix -N2 -n3 --ckpt-dir="$dir" --ckpt-interval=0 \
        /usr/bin/python3 "$TRAIN" $ARGS 2>&1)
    echo "$out"
    assert_contains "$out" "resumed from step 30"
    assert_eq "$(digest_of "$out")" "$ref" "digest on the cluster"
}

preempted_job() { # preempted_job ASYNC [NAME ENV]: preempted by a high-priority job
    local ref jid hid out name=${2:-torch-preempt-$1} TRAIN_ENV="RINGPOINT_CKPT_ASYNC=$1 ${3:-}"
    ref=$(reference)
    [ -n "$ref" ] || fail "no digest from the uninterrupted run"
    jid=$(submit "$name" --requeue -p low)
    wait_training "$name"
    hid=$(sbatch --parsable -p high -N2 --exclusive --wrap "sleep 1")
    wait_done "$jid"
    out=$(cat "$RP_WORK/$name.out")
    echo "$out"
    assert_eq "$(state "$jid")" COMPLETED
    assert_eq "$(restarts "$jid")" 1 "restarts"
    assert_contains "$out" "(SIGTERM): checkpoint committed"
    assert_contains "$out" "resumed from step"
    assert_eq "$(digest_in "$name")" "$ref" "digest after preemption"
    wait_done "$hid"
}
test_torch_preempted_requeued_same_digest_async() { preempted_job 1; }
test_torch_preempted_requeued_same_digest_sync() { preempted_job 0; }

# Results that do not depend on layout, 3 ranks on 2 nodes, preempted and
# requeued. DDP with ringpoint's comm hook (tests/python/ddp_train.py):
# DDP rebuilds its buckets after the first step in the order the gradients
# arrived, so the resumed run reduces its first step with another bucket
# layout than the uninterrupted run did at that step; the digest is the
# same only because an allreduce's bits do not depend on where an element
# lies in its buffer (before they did not: a different digest).
test_torch_ddp_hook_preempted_requeued_same_digest() {
    local TRAIN_CMD="/usr/bin/python3 $DDP" STEPS=120 TRAIN_DELAY="--step-sleep 0.05"
    preempted_job 1 torch-ddp-preempt
}
# DistributedOptimizer: the uninterrupted run fuses its gradients in one
# 4 MiB group (the default), the preempted and requeued job in 32 KiB
# groups (RINGPOINT_FUSION_BYTES): other groupings, other offsets, the same
# digest.
test_torch_fusion_threshold_preempted_requeued_same_digest() {
    preempted_job 1 torch-fusion-preempt RINGPOINT_FUSION_BYTES=32768
}

test_torch_corrupt_checkpoint_falls_back() {
    local ref dir out shard newest
    ref=$(mpi_reference)
    dir=$RP_WORK/corrupt.$$
    # Checkpoints at steps 10 and 20, then a stop at 25: three checkpoints.
    mpi 2 "$dir" RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_KEEP=5 RINGPOINT_CKPT_FAULT=stop:0:25 -- \
        "$TRAIN" $ARGS >/dev/null && fail "a stopped run exited 0"
    newest=$(ls -d "$dir"/step-* | sort | tail -n 1)
    shard=$(ls "$newest"/shard-* | head -n 1)
    # One byte of the data, past the shard's header, flipped (writing a
    # fixed value changed nothing the one time in 256 that the byte held
    # it already: the run then resumed from the intact step 25).
    local off byte
    off=$(( $(stat -c %s "$shard") - 100 ))
    byte=$(od -An -tu1 -j "$off" -N1 "$shard" | tr -d ' ')
    printf "\\$(printf '%03o' $(( byte ^ 255 )))" |
        dd of="$shard" bs=1 seek="$off" conv=notrunc status=none
    [ "$(od -An -tu1 -j "$off" -N1 "$shard" | tr -d ' ')" = $(( byte ^ 255 )) ] ||
        fail "the byte at $off of $shard was not flipped"
    out=$(mpi 2 "$dir" RINGPOINT_CKPT_EVERY=10 -- "$TRAIN" $ARGS)
    echo "$out"
    assert_contains "$out" "resumed from step 20"
    assert_eq "$(digest_of "$out")" "$ref" "digest after falling back to step 20"
}

test_torch_restore_on_another_world_size() {
    local dir out
    dir=$RP_WORK/resize.$$
    mpi 2 "$dir" RINGPOINT_CKPT_FAULT=stop:0:25 -- "$TRAIN" $ARGS >/dev/null &&
        fail "a stopped run exited 0"
    out=$(mpi 3 "$dir" -- "$TRAIN" $ARGS)
    echo "$out"
    assert_contains "$out" "train_torch: 3 ranks"
    assert_contains "$out" "resumed from step 25"
    assert_contains "$out" "RNG states are per rank and were not restored"
    assert_contains "$out" "final step=60"
}

test_torch_moved_tensors_are_checkpointed_from_new_storage() {
    local ref dir out
    ref=$(mpi 2 "$RP_WORK/mref.$$" -- "$CASES" moved 20 | sed -n 's/^final digest=//p' | head -n 1)
    dir=$RP_WORK/moved.$$
    mpi 2 "$dir" RINGPOINT_CKPT_FAULT=stop:0:12 -- "$CASES" moved 20 >/dev/null &&
        fail "a stopped run exited 0"
    out=$(mpi 2 "$dir" -- "$CASES" moved 20)
    echo "$out"
    assert_contains "$out" "start=12"
    assert_eq "$(echo "$out" | sed -n 's/^final digest=//p' | head -n 1)" "$ref" \
        "digest after a restore of tensors that had moved"
}

test_torch_python_sigterm_handler_is_chained() {
    local out rc=0
    out=$(mpi 2 "$RP_WORK/sig.$$" -- "$CASES" sigterm) || rc=$?
    echo "$out"
    assert_contains "$out" "a Python handler for SIGTERM"
    assert_contains "$out" "stopped at step 5"
    assert_contains "$out" "user handler called 1 time(s)"
    assert_not_contains "$out" "no stop: ran to the end"
    [ "$rc" -ne 0 ] || fail "exit 0 after a stop"
}

test_torch_model_only_restore_load_state_dict_and_export() {
    local dir out
    dir=$RP_WORK/only.$$
    mpi 2 "$dir" RINGPOINT_CKPT_FAULT=stop:0:12 -- "$CASES" moved 20 >/dev/null &&
        fail "a stopped run exited 0"
    # One process, no launcher, no Slurm.
    out=$(env -u SLURM_CONF /usr/bin/python3 "$CASES" only "$dir" 2>&1)
    echo "$out"
    assert_contains "$out" "restored step=12 model equals load_state_dict: True; optimizer state entries: 0"
    assert_contains "$out" "bad part refused"
    out=$(env -u SLURM_CONF /usr/bin/python3 -m ringpoint.torch.export "$dir" "$dir/model.pt" 2>&1)
    echo "$out"
    assert_contains "$out" "written to $dir/model.pt"
    out=$(/usr/bin/python3 -c "import torch; d = torch.load('$dir/model.pt'); print(sorted(d), tuple(d['0.weight'].shape))")
    assert_contains "$out" "(16, 8)"
    out=$(env -u SLURM_CONF /usr/bin/python3 -m ringpoint.torch.export "$RP_WORK/none.$$" x.pt 2>&1) &&
        fail "export of a missing directory succeeded"
    assert_contains "$out" "is not a directory"
}

# A checkpoint whose metadata lies (right CRCs, shapes and dtypes that
# do not match the regions the C verdict checked) is refused with an error
# naming it, before anything is allocated; the cases and their properties
# are in tests/python/state_dict_bounds.py.
test_torch_load_state_dict_bounded_by_the_checkpoint() {
    local dir=$RP_WORK/bounds.$$ out
    rm -rf "$dir"; mkdir -p "$dir"
    out=$(env -u SLURM_CONF /usr/bin/python3 "$BOUNDS" "$dir" 2>&1) ||
        { echo "$out"; fail "state_dict_bounds.py failed"; }
    echo "$out"
    assert_contains "$out" " 0 failed"
    assert_contains "$out" "ok crafted: huge shape"
    assert_contains "$out" "ok the honest checkpoint loads"
    rm -rf "$dir"
}

run_all
