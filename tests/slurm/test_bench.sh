#!/usr/bin/env bash
# ringpoint-bench on the real local cluster and under mpirun: every
# collective, every dtype and op, sizes from 0 up through the pipelined
# range, checked exactly (#wrong must be 0 and the exit status 0); and the
# MPI and gloo companions print the same table when they are installed.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export LIBEXEC=$RP_PREFIX/libexec/ringpoint

# bench_ok OUTPUT: a table with rows and nothing wrong.
bench_ok() {
    echo "$1"
    assert_contains "$1" "# Out of bounds values : 0 OK"
    assert_contains "$1" "#wrong"
}

test_bench_allreduce_all_types_and_ops() {
    local out
    out=$(srun --mpi=pmix -N2 -n3 ringpoint-bench allreduce -b 0 -e 300K -f 7 \
        -n 3 -w 1 -d all -o all 2>&1) || fail "ringpoint-bench exited $?"
    bench_ok "$out"
    # 7 types x 5 ops x 6-8 distinct sizes
    [ "$(echo "$out" | grep -c '^ *[0-9]')" -ge 150 ] || fail "rows missing"
}

# Grouped allreduce: 1 to 37 buffers of unequal sizes (some empty), in and
# out of place, every type and op; large enough that packs split at 64 MiB.
test_bench_grouped_allreduce() {
    local out
    out=$(srun --mpi=pmix -N2 -n3 ringpoint-bench allreduce -G 37 -b 0 -e 1M \
        -f 9 -n 2 -w 1 -d all -o all 2>&1) || fail "grouped bench exited $?"
    bench_ok "$out"
    out=$(srun --mpi=pmix -N2 -n2 ringpoint-bench allreduce -G 8 -b 300M -e 300M \
        -n 1 -w 0 -d float -o sum 2>&1) || fail "grouped bench (large) exited $?"
    bench_ok "$out"
}

test_bench_broadcast_and_allgather() {
    local out
    out=$(srun --mpi=pmix -N2 -n4 ringpoint-bench broadcast -r 3 -b 1 -e 1M \
        -f 13 -n 3 -w 1 -d all 2>&1) || fail "broadcast bench exited $?"
    bench_ok "$out"
    out=$(srun --mpi=pmix -N2 -n3 ringpoint-bench -C allgather -b 3 -e 1M \
        -f 13 -n 3 -w 1 -d all 2>&1) || fail "allgather bench exited $?"
    bench_ok "$out"
}

# rows_checked OUTPUT: how many rows have a number (0, as bench_ok
# requires of the total) as their out-of-place #wrong and N/A in every
# in-place column: reduce-scatter and all-to-all have no in-place form,
# and a row that did not check its result (N/A out of place) does not count.
rows_checked() {
    echo "$1" | awk '/^ *[0-9]/ && $9 == "0" && $10 == "N/A" && $11 == "N/A" &&
        $12 == "N/A" && $13 == "N/A" { n++ } END { print n + 0 }'
}

# Reduce-scatter and all-to-all on 2 nodes x 3 ranks, every type (and
# every op for reduce-scatter), sizes from 0 through the pipelined range,
# each rank checking every element of its output: reduce-scatter its block
# of the allreduce's exact result, all-to-all each sender's block for it.
# Every row is checked and right, and the in-place columns say N/A.
test_bench_reduce_scatter_and_alltoall() {
    local out rows
    out=$(srun --mpi=pmix -N2 -n3 ringpoint-bench reduce_scatter -c 1 -b 0 \
        -e 1M -f 13 -n 3 -w 1 -d all -o all 2>&1) || fail "reduce_scatter bench exited $?"
    bench_ok "$out"
    rows=$(echo "$out" | grep -c '^ *[0-9]')
    # 7 types x 5 ops x 5-7 distinct sizes, all checked
    [ "$rows" -ge 175 ] || fail "reduce_scatter: $rows rows"
    assert_eq "$(rows_checked "$out")" "$rows" "reduce_scatter rows checked, no in-place"
    assert_contains "$out" "reduce_scatter, 3 ranks on"
    out=$(srun --mpi=pmix -N2 -n3 ringpoint-bench alltoall -c 1 -b 0 -e 1M \
        -f 13 -n 3 -w 1 -d all 2>&1) || fail "alltoall bench exited $?"
    bench_ok "$out"
    rows=$(echo "$out" | grep -c '^ *[0-9]')
    [ "$rows" -ge 35 ] || fail "alltoall: $rows rows"
    assert_eq "$(rows_checked "$out")" "$rows" "alltoall rows checked, no in-place"
    assert_eq "$(echo "$out" | awk '/^ *[0-9]/ && $4 != "none"' | wc -l)" 0 "alltoall's redop"
    # The aliases, and a size past the pipelined range on 2 nodes x 2.
    out=$(srun --mpi=pmix -N2 -n4 ringpoint-bench -C reduce-scatter -b 64M -e 64M \
        -n 1 -w 0 -c 1 2>&1) || fail "reduce-scatter 64M exited $?"
    bench_ok "$out"
    assert_eq "$(rows_checked "$out")" 1 "reduce-scatter 64M row"
    out=$(srun --mpi=pmix -N2 -n4 ringpoint-bench -C all_to_all -b 64M -e 64M \
        -n 1 -w 0 -c 1 2>&1) || fail "all_to_all 64M exited $?"
    bench_ok "$out"
    assert_eq "$(rows_checked "$out")" 1 "all_to_all 64M row"
}

# Compression (sums of the bench's small integers are exact in fp16 and
# bf16, so every result is still checked) and the overlap table, for every
# collective kind.
test_bench_compression_and_overlap() {
    local out
    out=$(srun --mpi=pmix -N2 -n3 ringpoint-bench allreduce -Z fp16 -G 5 -b 0 \
        -e 1M -f 9 -n 2 -w 1 2>&1) || fail "fp16 bench exited $?"
    bench_ok "$out"
    assert_contains "$out" "# wire compression: fp16"
    out=$(srun --mpi=pmix -N2 -n2 ringpoint-bench allreduce -Z bf16 -b 4M -e 4M \
        -n 2 -w 1 2>&1) || fail "bf16 bench exited $?"
    bench_ok "$out"
    for coll in allreduce broadcast allgather reduce_scatter alltoall; do
        out=$(srun --mpi=pmix -N2 -n2 ringpoint-bench $coll -O sleep -b 64K \
            -e 1M -f 16 -n 3 -w 1 2>&1) || fail "$coll overlap bench exited $?"
        bench_ok "$out"
        assert_contains "$out" "hidden"
    done
}

test_bench_mpirun_and_companions() {
    local out
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
        ringpoint-bench -b 4 -e 4M -f 16 -n 5 -w 1 2>&1) || fail "under mpirun: $?"
    bench_ok "$out"
    if [ -x "$LIBEXEC/mpi-allreduce-bench" ]; then
        out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
            "$LIBEXEC/mpi-allreduce-bench" -b 4 -e 4M -f 16 -n 5 -w 1 2>&1) ||
            fail "mpi-allreduce-bench exited $?"
        bench_ok "$out"
        # Open MPI's MPI_Reduce_scatter_block and MPI_Alltoall, on the same
        # inputs and checks, out of place only as ringpoint's.
        for c in reduce_scatter alltoall; do
            out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
                "$LIBEXEC/mpi-allreduce-bench" -C $c -b 4 -e 4M -f 16 -n 5 -w 1 2>&1) ||
                fail "mpi-allreduce-bench -C $c exited $?"
            bench_ok "$out"
            [ "$(rows_checked "$out")" -ge 5 ] || fail "mpi-allreduce-bench -C $c: rows unchecked"
        done
    fi
    # -m loop (the iterations back to back, one clock read each side):
    # every collective kind, in both tools, still checked after the loop.
    for c in allreduce broadcast allgather reduce_scatter alltoall; do
        out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
            ringpoint-bench $c -b 4 -e 1M -f 16 -n 20 -w 2 -m loop 2>&1) ||
            fail "ringpoint-bench $c -m loop exited $?"
        bench_ok "$out"
        assert_contains "$out" "time: the iterations back to back, per call"
        if [ -x "$LIBEXEC/mpi-allreduce-bench" ]; then
            out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
                "$LIBEXEC/mpi-allreduce-bench" -C $c -b 4 -e 1M -f 16 -n 20 -w 2 -m loop 2>&1) ||
                fail "mpi-allreduce-bench -C $c -m loop exited $?"
            bench_ok "$out"
            assert_contains "$out" "time: the iterations back to back, per call"
        fi
    done
    # The floor over UCX: its own exchange between two ranks, a row per
    # size (0 B included), every byte received checked; pairs only.
    if [ -x "$LIBEXEC/ucx-exchange-bench" ]; then
        for m in median loop; do
            out=$(env -u SLURM_CONF mpirun --allow-run-as-root -np 2 --mca pml ob1 \
                --mca btl self,vader -x UCX_TLS=tcp,self \
                "$LIBEXEC/ucx-exchange-bench" -b 0 -e 64K -f 16 -n 50 -w 5 -m $m 2>&1) ||
                fail "ucx-exchange-bench -m $m exited $?"
            bench_ok "$out"
            assert_eq "$(echo "$out" | grep -cE '^ +[0-9]+ +[0-9]+ +byte +none .* 0 +[0-9.]+ .* 0$')" 6
        done
        out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
            --mca pml ob1 --mca btl self,vader "$LIBEXEC/ucx-exchange-bench" -n 5 2>&1) &&
            fail "ucx-exchange-bench ran with 3 ranks"
        assert_contains "$out" "an even number of ranks"
    fi
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
        "$LIBEXEC/ringpoint-barrier-bench" -n 100 -w 5 -m loop 2>&1) ||
        fail "ringpoint-barrier-bench -m loop exited $?"
    assert_contains "$out" "time: the iterations back to back, per call"
    if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null; then
        out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
            -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$(( 29000 + RANDOM % 500 )) \
            /usr/bin/python3 "$LIBEXEC/gloo_allreduce.py" -b 4 -e 1M -f 16 -n 3 -w 1 2>&1) ||
            fail "gloo_allreduce.py exited $?"
        bench_ok "$out"
    else
        echo "gloo companion skipped: /usr/bin/python3 has no torch (apt-get install python3-torch)"
    fi
}

# The PyTorch companions: ringpoint.torch beside gloo in one process
# (allreduce, checked exactly, with the -P columns; a training step four
# ways, whose distributed ways must end with equal weights on every rank).
test_bench_torch_companions() {
    local out port=$(( 29000 + RANDOM % 500 ))
    if ! /usr/bin/python3 -c 'import torch.distributed, ringpoint.torch' 2>/dev/null; then
        echo "skipped: /usr/bin/python3 cannot import torch and ringpoint.torch"
        return 0
    fi
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$port \
        /usr/bin/python3 "$LIBEXEC/torch_allreduce.py" -b 4 -e 2M -f 32 -r 2 \
        -n 5 -w 1 -N 2 -W 1 -P 2>&1) || fail "torch_allreduce.py exited $?"
    bench_ok "$out"
    assert_contains "$out" "x gloo"
    out=$(MASTER_ADDR=127.0.0.1 MASTER_PORT=$((port + 1)) srun --mpi=pmix -N2 -n3 \
        /usr/bin/python3 "$LIBEXEC/torch_allreduce.py" -b 1K -e 1M -f 32 -r 1 \
        -n 3 -w 1 -N 2 -W 1 -d int64 2>&1) || fail "torch_allreduce.py under srun exited $?"
    bench_ok "$out"
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x MASTER_ADDR=127.0.0.1 -x MASTER_PORT=$((port + 2)) \
        /usr/bin/python3 "$LIBEXEC/torch_train_step.py" -W 128 -r 2 -n 2 -w 1 2>&1) ||
        fail "torch_train_step.py exited $?"
    echo "$out"
    for way in local hvd ddp-gloo ddp-hook; do
        echo "$out" | grep -Eq "^ +$way +[0-9.]+ " || fail "no row for $way"
    done
    assert_contains "$out" "between ranks 0"
}

# Device mode (-D cuda). Without a GPU path (no module, no CUDA driver, no
# device, as in CI) it must skip at once: exit 77 and one line saying why.
# Where ringpoint-info sees a GPU it runs a small device benchmark, one
# rank per GPU as NCCL allows, and nothing may be wrong.
test_bench_device_mode() {
    local out rc=0
    if ringpoint-info -b 2>/dev/null | grep -q '^  gpu 0:'; then
        out=$(srun --mpi=pmix -N1 -n1 ringpoint-bench -D cuda -b 8 -e 64M -f 8 \
            -n 5 -w 2 -d all 2>&1) || fail "device bench exited $?"
        bench_ok "$out"
        assert_contains "$out" "device cuda"
        out=$(srun --mpi=pmix -N1 -n1 ringpoint-bench broadcast -D cuda -b 8 \
            -e 1M -f 32 -n 3 -w 1 2>&1) || fail "device broadcast exited $?"
        bench_ok "$out"
        return
    fi
    # (Slurm's own lines, srun's "exit code 77" and slurmstepd's, are not
    # counted. The steps start in / : a working directory the nodes lack,
    # as a checkout under the host's /tmp is from their private /tmp, makes
    # every slurmstepd say so, and two of them writing at once can splice
    # their lines into one that no filter recognises.)
    out=$(srun --chdir=/ --mpi=pmix -N1 -n1 ringpoint-bench -D cuda -b 8 -e 1M 2>&1) || rc=$?
    echo "$out"
    assert_eq "$rc" 77 "exit status of -D cuda without a GPU"
    out=$(echo "$out" | grep -Ev '^(srun|slurmstepd[^:]*): ')
    assert_eq "$(echo "$out" | wc -l)" 1 "lines printed by the skip"
    echo "$out" | grep -Eq '^ringpoint-bench: SKIP: -D cuda: (no CUDA device: .+|the GPU module .+ cannot be loaded: .+)$' ||
        fail "the skip does not say why"
    # Every rank of a larger job skips together, and only one says so.
    rc=0
    out=$(srun --chdir=/ --mpi=pmix -N2 -n3 ringpoint-bench -D cuda 2>&1) || rc=$?
    echo "$out"
    assert_eq "$rc" 77 "exit status of -D cuda on 3 ranks"
    out=$(echo "$out" | grep -Ev '^(srun|slurmstepd[^:]*): ')
    assert_eq "$(echo "$out" | wc -l)" 1 "lines printed by 3 ranks skipping"
    assert_contains "$out" "SKIP: -D cuda: rank 0: "
    # With the module missing the line names it.
    rc=0
    out=$(RINGPOINT_GPU_MODULE=/nonexistent/ringpoint-nccl.so ringpoint-bench \
        -D cuda 2>&1) || rc=$?
    assert_eq "$rc" 77 "exit status without the module"
    assert_contains "$out" "the GPU module /nonexistent/ringpoint-nccl.so cannot be loaded"
}

# tuned_bench TABLE [VAR=VALUE...]: a small checked allreduce run on one
# node with TABLE as RINGPOINT_COLL_TUNE_FILE and the debug log; prints it.
tuned_bench() {
    local table=$1 out
    shift
    out=$(env RINGPOINT_COLL_TUNE_FILE="$table" RINGPOINT_LOG_LEVEL=debug "$@" \
        srun --mpi=pmix -N1 -n2 ringpoint-bench allreduce -b 4 -e 64K -f 16 -n 2 -w 1 2>&1)
    echo "$out"
    # Checked here, by status: errexit does not reach into $(...).
    case "$out" in
    *"# Out of bounds values : 0 OK"*) ;;
    *) echo "FAIL: the bench with $table did not run clean" >&2; return 1 ;;
    esac
}

# The tuning table (coll/tune.h): --tune in its fast form (sizes to 16 KiB,
# 3 iterations: a few seconds) at 2 nodes x 2 ranks measures recursive
# doubling against the ring and the hierarchy against the flat path, and
# writes a versioned table; a job given it reads and applies it (the debug
# log says what it took); a switch point's own variable wins; a malformed
# table or one of another version is refused with a warning naming the
# file and line, and the job runs on the built-in switch points.
test_bench_tune_table() {
    local dir=$RP_CLUSTER_DIR/work/tune out rd
    mkdir -p "$dir"
    rm -f "$dir"/*.conf
    out=$(srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 ringpoint-bench --tune "$dir/t.conf" \
        -b 4 -e 16K -n 3 -w 1 2>&1) || fail "ringpoint-bench --tune exited $?"
    echo "$out"
    assert_contains "$out" "# allreduce_rd_max: recursive doubling (A) against the ring (B)"
    assert_contains "$out" "# hier_max: the hierarchy (A) against the flat algorithms (B)"
    assert_contains "$out" "# wrote $dir/t.conf"
    cat "$dir/t.conf"
    assert_eq "$(grep -v '^#' "$dir/t.conf" | head -1)" "ringpoint-coll-tune 1" "the table's version line"
    rd=$(sed -n 's/^allreduce_rd_max \([0-9]*\)$/\1/p' "$dir/t.conf")
    [ -n "$rd" ] || fail "no allreduce_rd_max in the table"
    grep -Eq '^hier_max [0-9]+$' "$dir/t.conf" || fail "no hier_max in the table"
    out=$(RINGPOINT_COLL_TUNE_FILE=$dir/t.conf RINGPOINT_LOG_LEVEL=debug \
        srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 ringpoint-bench allreduce -b 4 -e 64K -f 16 -n 2 -w 1 2>&1)
    bench_ok "$out"
    assert_contains "$out" "coll: tuning table $dir/t.conf: allreduce_rd_max $rd,"
    printf '# by hand\nringpoint-coll-tune 1\nallreduce_rd_max 12345\nshm_max 4096\n' >"$dir/hand.conf"
    out=$(tuned_bench "$dir/hand.conf")
    assert_contains "$out" "coll: tuning table $dir/hand.conf: allreduce_rd_max 12345, shm_max 4096,"
    out=$(tuned_bench "$dir/hand.conf" RINGPOINT_ALLREDUCE_RD_MAX=100)
    assert_contains "$out" "allreduce_rd_max 100 (RINGPOINT_ALLREDUCE_RD_MAX), shm_max 4096,"
    printf 'ringpoint-coll-tune 1\nallreduce_rd_max 12345\nbogus 1\n' >"$dir/bad.conf"
    out=$(tuned_bench "$dir/bad.conf")
    assert_contains "$out" "tuning table refused, the built-in switch points stay: $dir/bad.conf:3: unknown key 'bogus'"
    assert_not_contains "$out" "allreduce_rd_max 12345"
    printf 'ringpoint-coll-tune 7\nallreduce_rd_max 12345\n' >"$dir/v7.conf"
    out=$(tuned_bench "$dir/v7.conf")
    assert_contains "$out" "$dir/v7.conf:1: version 7; this ringpoint reads version 1"
}

test_bench_rejects_bad_arguments() {
    local rc=0 out
    ringpoint-bench -o nosuchop >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for a bad op"
    rc=0
    ringpoint-bench frobnicate >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for a bad collective"
    rc=0
    ringpoint-bench -Z fp16 -d int32 >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for compression of int32"
    rc=0
    ringpoint-bench -O gpu >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for a bad overlap mode"
    rc=0
    ringpoint-bench -D gpu >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for a bad device"
    rc=0
    ringpoint-bench -D cuda -O sleep >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for overlap on the device"
    rc=0
    ringpoint-bench -D cuda -Z fp16 >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for compression on the device"
    for c in reduce_scatter alltoall; do
        rc=0
        out=$(ringpoint-bench $c -D cuda 2>&1) || rc=$?
        assert_eq "$rc" 64 "exit status for $c on the device"
        assert_contains "$out" "$c runs on host buffers only: not with -D cuda (use -D host)"
    done
    rc=0
    ringpoint-bench -m fastest >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for a bad statistic"
    rc=0
    ringpoint-bench -m loop -O cpu >/dev/null 2>&1 || rc=$?
    assert_eq "$rc" 64 "exit status for -m loop with the overlap table"
}

run_all
