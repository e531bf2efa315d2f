#!/usr/bin/env bash
# The Horovod-style example (contrib/examples/horovod_train.py, installed
# under share/ringpoint/examples): a script written against Horovod's
# documented PyTorch API that runs on ringpoint by changing its import. On
# 2 ranks under mpirun and under srun --mpi=pmix on the cluster: every rank
# ends with the same weights (digest) and validation loss, the loss went
# down, and both launchers train the same model (same digest).
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export PY=/usr/bin/python3
export EXAMPLE=$RP_PREFIX/share/ringpoint/examples/horovod_train.py
[ -f "$EXAMPLE" ] || EXAMPLE=$(cd "$(dirname "$0")/../.." && pwd)/contrib/examples/horovod_train.py
# The package is installed for $PY; under a prefix of its own, point at it.
for d in "$RP_PREFIX"/lib/python3*/*-packages; do
    [ -d "$d/ringpoint" ] && export PYTHONPATH=$d${PYTHONPATH:+:$PYTHONPATH}
done
export ARGS="--epochs 3"

have_torch() {
    if ! $PY -c 'import torch, ringpoint.torch' 2>/dev/null; then
        echo "skipped: $PY cannot import torch and ringpoint.torch (apt-get install python3-torch; make install)"
        return 1
    fi
}

# finals OUTPUT NRANKS: check the 'final:' lines (one per rank, equal but
# for the rank, loss decreased) and print the common part.
finals() {
    local lines n common
    # Launchers forward each rank's output in pieces: another rank's line
    # may land in the middle of this one, or right after it before its
    # newline (both seen under mpirun), so the lines are picked out, not
    # matched from the start, and the digest is its 16 digits exactly (the
    # "f" of a "final:" glued to it is a hex digit too).
    lines=$(echo "$1" | grep -o 'final: rank [0-9]*/[0-9]* epochs [0-9]* first_val_loss [0-9.]* val_loss [0-9.]* val_acc [0-9.]* digest [0-9a-f]\{16\}' || true)
    n=$(echo "$lines" | grep -c . || true)
    assert_eq "$n" "$2" "number of final lines" || return 1
    common=$(echo "$lines" | sed 's/^final: rank [0-9]*\/[0-9]* //' | sort -u)
    assert_eq "$(echo "$common" | wc -l)" 1 "distinct final lines (digest, loss) over the ranks" ||
        { echo "$lines" >&2; return 1; }
    echo "$common" | awk '{
        for (i = 1; i < NF; i++) v[$i] = $(i + 1)
        if (v["digest"] !~ /^[0-9a-f]+$/ || length(v["digest"]) != 16 || !(v["val_loss"] + 0 < 0.5 * v["first_val_loss"])) exit 1
    }' || fail "no digest, or the validation loss did not halve: $common" || return 1
    echo "$common"
}

test_horovod_example_mpirun_and_srun() {
    have_torch || return 0
    local out a b
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
        ${PYTHONPATH:+-x PYTHONPATH} $PY "$EXAMPLE" $ARGS 2>&1) ||
        fail "under mpirun: exit $?"$'\n'"$out"
    echo "$out"
    assert_contains "$out" "epoch 3: train_loss"
    a=$(finals "$out" 2)
    out=$(srun --mpi=pmix -N2 -n2 $PY "$EXAMPLE" $ARGS 2>&1) ||
        fail "under srun: exit $?"$'\n'"$out"
    echo "$out"
    b=$(finals "$out" 2)
    # Only rank 0 prints the epochs.
    assert_eq "$(echo "$out" | grep -o 'epoch [0-9]*: train_loss' | wc -l)" 3 "epoch lines"
    assert_eq "$b" "$a" "final line under srun against mpirun"
}

# Three ranks on two nodes (uneven shards of the data: DistributedSampler
# pads), gradients sent as float16.
test_horovod_example_three_ranks_fp16() {
    have_torch || return 0
    local out
    out=$(srun --mpi=pmix -N2 -n3 $PY "$EXAMPLE" $ARGS --fp16-allreduce 2>&1) ||
        fail "under srun -n3: exit $?"$'\n'"$out"
    echo "$out"
    finals "$out" 3
}

# The script may use only Horovod's documented names: what it calls on hvd
# must all exist in horovod.torch (checked against a list of them).
test_horovod_example_uses_only_horovod_api() {
    local used extra
    used=$(grep -o 'hvd\.[A-Za-z_][A-Za-z_0-9.]*' "$EXAMPLE" | sed 's/^hvd\.//' | sort -u)
    extra=$(echo "$used" | grep -vxE 'init|shutdown|is_initialized|rank|size|local_rank|local_size|cross_rank|cross_size|allreduce|allreduce_|allreduce_async|allreduce_async_|grouped_allreduce|allgather|broadcast|broadcast_|broadcast_parameters|broadcast_optimizer_state|broadcast_object|allgather_object|DistributedOptimizer|Compression\.(none|fp16)|Average|Sum|synchronize|poll|join|barrier' || true)
    assert_eq "$extra" "" "names used that horovod.torch does not have"
    assert_eq "$(grep -c '^import ringpoint.torch as hvd  # Horovod: import horovod.torch as hvd$' "$EXAMPLE")" 1 \
        "the import line"
    assert_eq "$(grep -cE '^[[:space:]]*(import|from)[[:space:]]+ringpoint' "$EXAMPLE")" 1 \
        "imports of ringpoint"
}

run_all
