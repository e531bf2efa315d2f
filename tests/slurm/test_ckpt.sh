#!/usr/bin/env bash
# The checkpoint engine on the real local cluster (ringpoint-ckpt-check, a
# toy training loop whose state is a known function of the step, so every
# restore is checked byte for byte): round trips at 1 to 3 ranks, sync and
# async; restore on another world size; corrupt, truncated, stale and
# half-written checkpoints, a removed shard, mixed shards of two attempts
# and a damaged manifest are never loaded and the previous one is; a write
# error or a full disk is reported at the next safe point; checkpoints by
# time; retention; mpirun.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-ckpt-check
# Checkpoints must be visible from every "node": not under /tmp.
export CKROOT=${RP_CLUSTER_SHARED:-/var/tmp/ringpoint-cluster/shared}/ckpt-tests
# Small chunks so the test data has several per shard.
export RINGPOINT_CKPT_CHUNK_SIZE=65536

# fresh_dir NAME: an empty checkpoint directory for one test.
fresh_dir() {
    local d=$CKROOT/$1
    rm -rf "$d"
    mkdir -p "$d"
    echo "$d"
}

# restored_all OUTPUT N STEP: each of N ranks restored STEP intact.
restored_all() {
    local out=$1 n=$2 step=$3 r
    for ((r = 0; r < n; r++)); do
        assert_contains "$out" "ckpt-check: rank $r restored step=$step " || return 1
    done
    assert_not_contains "$out" "WRONG"
    [ "$(echo "$out" | grep -c "restored step=$step .* ok bad=0")" -eq "$n" ] ||
        fail "not every rank restored step $step intact"
}

# committed DIR: the steps ringpoint-ckpt calls complete, one line.
committed() {
    ringpoint-ckpt ls "$1" | awk '$NF == "complete" {print $1}' | xargs
}

# round_trip RANKS ASYNC: train to 25 with a checkpoint every 10 steps,
# then restore in a new job; the state of step 20 comes back.
round_trip() {
    local n=$1 async=$2 d out
    d=$(fresh_dir "rt-$n-$async")
    out=$(RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_ASYNC=$async \
        srun --mpi=pmix -N2 -n"$n" --overcommit "$CHECK" train -n 25 2>&1); echo "$out"
    assert_contains "$out" "ckpt-check: rank 0 checkpointed step=20"
    assert_eq "$(committed "$d")" "10 20" "committed steps"
    ringpoint-ckpt verify "$d" 20
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n"$n" --overcommit "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" "$n" 20
}

test_ckpt_round_trip_1_rank_sync()   { round_trip 1 0; }
test_ckpt_round_trip_2_ranks_sync()  { round_trip 2 0; }
test_ckpt_round_trip_3_ranks_sync()  { round_trip 3 0; }
test_ckpt_round_trip_1_rank_async()  { round_trip 1 1; }
test_ckpt_round_trip_2_ranks_async() { round_trip 2 1; }
test_ckpt_round_trip_3_ranks_async() { round_trip 3 1; }

# An async snapshot large enough to be split between threads (3 forced:
# uneven parts over 2 ranks' 100 MB stripes) is written and restored byte
# for byte, on both nodes, and while the next steps change the state.
test_ckpt_parallel_snapshot_copy() {
    local d out
    d=$(fresh_dir pcopy)
    out=$(RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_ASYNC=1 \
        RINGPOINT_CKPT_COPY_THREADS=3 srun --mpi=pmix -N2 -n2 "$CHECK" train -n 25 \
        -b 200000000 2>&1); echo "$out"
    assert_eq "$(committed "$d")" "10 20" "committed steps"
    ringpoint-ckpt verify "$d" 20
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n2 "$CHECK" restore -b 200000000 2>&1)
    echo "$out"
    restored_all "$out" 2 20
    out=$(RINGPOINT_CKPT_COPY_THREADS=0 RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 \
        srun --mpi=pmix -N1 -n1 "$CHECK" train -n 5 2>&1) && fail "RINGPOINT_CKPT_COPY_THREADS=0 accepted"
    echo "$out"
    assert_contains "$out" "RINGPOINT_CKPT_COPY_THREADS='0': expected 1 to 64"
}

# A restarted job resumes from the checkpoint and goes on checkpointing.
test_ckpt_resume_continues() {
    local d out
    d=$(fresh_dir resume)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    srun --mpi=pmix -N2 -n2 "$CHECK" train -n 15
    out=$(srun --mpi=pmix -N2 -n2 "$CHECK" train -n 35 2>&1); echo "$out"
    restored_all "$out" 2 10
    assert_contains "$out" "ckpt-check: rank 0 checkpointed step=30"
    assert_not_contains "$out" "checkpointed step=10"
    assert_eq "$(committed "$d")" "20 30" "committed steps (keep 2)"
}

# Written by 3 ranks, restored by 2 and by 4: the replicated state is
# identical; the per-rank state cannot follow and says so.
test_ckpt_restore_other_world_size() {
    local d out
    d=$(fresh_dir resize)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    srun --mpi=pmix -N2 -n3 "$CHECK" train -n 20 -b 3000000
    out=$(srun --mpi=pmix -N2 -n2 "$CHECK" restore -R -b 3000000 2>&1); echo "$out"
    restored_all "$out" 2 20
    out=$(srun --mpi=pmix -N2 -n4 "$CHECK" restore -R -b 3000000 2>&1); echo "$out"
    restored_all "$out" 4 20
    out=$(srun --mpi=pmix -N1 -n1 "$CHECK" restore -R -b 3000000 2>&1); echo "$out"
    restored_all "$out" 1 20
    out=$(srun --mpi=pmix -N2 -n2 "$CHECK" restore -b 3000000 2>&1) && fail "restored per-rank regions on another size"
    echo "$out"
    assert_contains "$out" "per-rank region 'rng' cannot be restored"
    assert_contains "$out" "was written by 3 ranks and this job has 2"
    assert_contains "$out" "ckpt-check: rank 1 rp_restore returned 'invalid argument'"
}

# Ranks that registered different tables fail together, clearly.
test_ckpt_region_table_mismatch() {
    local d out
    d=$(fresh_dir mismatch)
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n3 "$CHECK" train -n 5 -x 2>&1) &&
        fail "a mismatched table was accepted"
    echo "$out"
    assert_contains "$out" "rank 1 registered other regions than rank 0"
    for r in 0 1 2; do
        assert_contains "$out" "ckpt-check: rank $r rp_restore returned 'invalid argument'"
    done
}

# A region registered with another size than the checkpoint's is an error.
test_ckpt_region_size_mismatch() {
    local d out
    d=$(fresh_dir size)
    RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 srun --mpi=pmix -N2 -n2 "$CHECK" train -n 10
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n2 "$CHECK" restore -b 5000 2>&1) &&
        fail "restored into regions of another size"
    echo "$out"
    assert_contains "$out" "region 'model' has 1048699 bytes in"
}

# One flipped byte in the newest checkpoint: every rank falls back to the
# older one, and the log names the file and the chunk.
test_ckpt_flipped_byte_falls_back() {
    local d out
    d=$(fresh_dir flip)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    srun --mpi=pmix -N2 -n3 "$CHECK" train -n 20
    # Byte 70000 of shard 1's payload: chunk 1 (64 KiB chunks).
    printf '\x5a' | dd of="$d/step-000000000020/shard-000001.rp" bs=1 \
        seek=$((4096 + 70000)) conv=notrunc status=none
    out=$(srun --mpi=pmix -N2 -n3 "$CHECK" restore 2>&1); echo "$out"
    assert_contains "$out" "step-000000000020/shard-000001.rp chunk 1: crc32c"
    assert_contains "$out" "falling back to an older checkpoint"
    restored_all "$out" 3 10
    # Restoring on another size reads other byte ranges: same verdict.
    out=$(srun --mpi=pmix -N2 -n2 "$CHECK" restore -R 2>&1); echo "$out"
    assert_contains "$out" "shard-000001.rp chunk 1: crc32c"
    restored_all "$out" 2 10
}

# A truncated manifest or shard makes that checkpoint invisible.
test_ckpt_truncated_files_ignored() {
    local d out
    d=$(fresh_dir trunc)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_KEEP=5
    srun --mpi=pmix -N2 -n2 "$CHECK" train -n 30
    truncate -s -20 "$d/step-000000000030/MANIFEST"
    truncate -s -1 "$d/step-000000000020/shard-000000.rp"
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n2 "$CHECK" restore 2>&1); echo "$out"
    assert_contains "$out" "skipping $d/step-000000000030 (corrupt)"
    assert_contains "$out" "skipping $d/step-000000000020 (corrupt)"
    restored_all "$out" 2 10
}

# A shard file removed from the newest checkpoint: every rank falls back
# to the older complete one, and the log names the missing shard.
test_ckpt_removed_shard_falls_back() {
    local d out
    d=$(fresh_dir rmshard)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    srun --mpi=pmix -N2 -n3 "$CHECK" train -n 20
    assert_eq "$(committed "$d")" "10 20" "committed steps"
    rm "$d/step-000000000020/shard-000001.rp"
    out=$(ringpoint-ckpt verify "$d" 20 2>&1) && fail "verify accepted a checkpoint without shard 1"
    echo "$out"
    assert_contains "$out" "shard-000001.rp"
    out=$(srun --mpi=pmix -N2 -n3 "$CHECK" restore 2>&1); echo "$out"
    assert_contains "$out" "skipping $d/step-000000000020 (incomplete): step-000000000020/shard-000001.rp: missing"
    # Each rank checks its share of the shards (doc/scale.md, part (f)):
    # shard 1's absence is found by rank 1, not by rank 0 opening them all.
    assert_contains "$out" "ringpoint[1]: warning: restore: skipping $d/step-000000000020 (incomplete)"
    assert_not_contains "$out" "ringpoint[0]: warning: restore: skipping $d/step-000000000020"
    restored_all "$out" 3 10
    assert_not_contains "$out" "restored step=20"
}

# Shards of two attempts mixed in one directory: a shard of an older step
# (other step and id), and a shard of the same step written by another job
# (same step, same bytes of payload, other checkpoint id). Both checkpoints
# are rejected by the shard header, the oldest one loads.
test_ckpt_mixed_shards_rejected() {
    local d other out
    d=$(fresh_dir mixed)
    other=$(fresh_dir mixed-other)
    export RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_KEEP=5
    RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n2 "$CHECK" train -n 30
    RINGPOINT_CKPT_DIR=$other srun --mpi=pmix -N2 -n2 "$CHECK" train -n 20
    assert_eq "$(committed "$d")" "10 20 30" "committed steps"
    # Same step, other attempt: same size, same payload, only the header's
    # checkpoint id differs.
    cmp -s "$other/step-000000000020/shard-000001.rp" "$d/step-000000000020/shard-000001.rp" &&
        fail "two attempts wrote identical shard files: the test would prove nothing"
    cmp -s <(tail -c +4097 "$other/step-000000000020/shard-000001.rp") \
        <(tail -c +4097 "$d/step-000000000020/shard-000001.rp") ||
        fail "the payloads of the two attempts at step 20 differ"
    cp "$other/step-000000000020/shard-000001.rp" "$d/step-000000000020/shard-000001.rp"
    # The older step's shard in the newer checkpoint (same size).
    cp "$d/step-000000000010/shard-000001.rp" "$d/step-000000000030/shard-000001.rp"
    out=$(ringpoint-ckpt ls "$d" 2>&1); echo "$out"
    assert_eq "$(committed "$d")" "10" "complete steps after mixing"
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n2 "$CHECK" restore 2>&1); echo "$out"
    assert_contains "$out" "skipping $d/step-000000000030 (corrupt): step-000000000030/shard-000001.rp shard header: checkpoint id differs"
    assert_contains "$out" "skipping $d/step-000000000020 (corrupt): step-000000000020/shard-000001.rp shard header: checkpoint id differs"
    restored_all "$out" 2 10
}

# One flipped byte (not a truncation) in the newest manifest: its CRC
# fails, the checkpoint is ignored, the older one loads.
test_ckpt_manifest_flipped_byte_ignored() {
    local d out m size off byte
    d=$(fresh_dir mflip)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    srun --mpi=pmix -N2 -n2 "$CHECK" train -n 20
    m=$d/step-000000000020/MANIFEST
    size=$(stat -c %s "$m")
    off=$((size / 2))
    byte=$(od -An -tu1 -j "$off" -N1 "$m" | tr -d ' ')
    printf '%b' "\\$(printf %03o $((byte ^ 0x04)))" | dd of="$m" bs=1 seek="$off" conv=notrunc status=none
    assert_eq "$(stat -c %s "$m")" "$size" "manifest size after the flip"
    assert_eq "$(od -An -tu1 -j "$off" -N1 "$m" | tr -d ' ')" "$((byte ^ 0x04))" "flipped byte"
    assert_eq "$(committed "$d")" "10" "complete steps after the flip"
    out=$(srun --mpi=pmix -N2 -n2 "$CHECK" restore 2>&1); echo "$out"
    assert_contains "$out" "skipping $d/step-000000000020 (corrupt): step-000000000020/MANIFEST"
    assert_contains "$out" "crc32c"
    restored_all "$out" 2 10
}

# interval_run NAME MS STEPS MIN_GAP MAX_GAP: train STEPS steps of MS ms
# with a 1 s interval and no RINGPOINT_CKPT_EVERY; every rank checkpoints
# the same steps (chosen by rank 0's clock), at least 2, spaced MIN_GAP to
# MAX_GAP steps apart, each complete with every rank's shard. Sets
# INTERVAL_STEPS to them (not printed: in a command substitution, set -e
# would be off and a failed check would go unnoticed).
interval_run() {
    local d out s0 s1 n prev s
    d=$(fresh_dir "$1")
    out=$(RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_INTERVAL=1 RINGPOINT_CKPT_KEEP=100 \
        srun --mpi=pmix -N2 -n2 "$CHECK" train -n "$3" -s "$2" 2>&1); echo "$out"
    s0=$(echo "$out" | sed -n 's/^ckpt-check: rank 0 checkpointed step=//p' | xargs)
    s1=$(echo "$out" | sed -n 's/^ckpt-check: rank 1 checkpointed step=//p' | xargs)
    assert_eq "$s1" "$s0" "steps checkpointed by rank 1 (rank 0's)"
    n=$(echo "$s0" | wc -w)
    [ "$n" -ge 2 ] || fail "$n checkpoints in $(($2 * $3)) ms with a 1 s interval: '$s0'"
    prev=0
    for s in $s0; do
        if [ $((s - prev)) -lt "$4" ] || [ $((s - prev)) -gt "$5" ]; then
            fail "checkpoint at step $s after step $prev with $2 ms steps: not about 1 s apart ($s0)"
        fi
        prev=$s
    done
    assert_eq "$(committed "$d")" "$s0" "complete checkpoints"
    for s in $s0; do
        ringpoint-ckpt verify "$d" "$s"
        for f in shard-000000.rp shard-000001.rp MANIFEST; do
            [ -f "$d/$(printf 'step-%012d' "$s")/$f" ] || fail "step $s has no $f"
        done
    done
    INTERVAL_STEPS=$s0
}

# RINGPOINT_CKPT_INTERVAL without RINGPOINT_CKPT_EVERY: checkpoints are
# taken by time, not by step count: 1 s is about 4 steps of 250 ms and
# about 10 steps of 100 ms.
test_ckpt_interval_by_time() {
    local slow fast
    unset RINGPOINT_CKPT_EVERY
    interval_run interval-slow 250 12 3 6
    slow=$INTERVAL_STEPS
    interval_run interval-fast 100 30 7 13
    fast=$INTERVAL_STEPS
    echo "checkpointed steps: 250 ms steps: $slow; 100 ms steps: $fast"
    [ "$slow" != "$fast" ] || fail "the same steps whatever the time per step"
}

# A full disk (a 64 KiB tmpfs) fails the checkpoint that does not fit, and
# only that one: reported, training goes on, the previous one stays and
# loads. The slurmd daemons of the local cluster live in private mount
# namespaces that would not see a mount made now, so this runs under
# mpirun (same engine, same file system calls).
full_disk() {
    local async=$1 mnt d out steps=25
    # Async: the failed write of step 20 is reported at a later safe point,
    # at the latest at step 30, where the next checkpoint must wait for it
    # (on a loaded machine the writer thread may still be busy at 25).
    [ "$async" = 1 ] && steps=35
    mnt=$(mktemp -d /var/tmp/rp-fulldisk.XXXXXX)
    # shellcheck disable=SC2064 # expand $mnt now
    trap "umount '$mnt' 2>/dev/null; rmdir '$mnt'" EXIT
    trap 'exit 143' TERM INT
    if ! mount -t tmpfs -o size=64k,mode=0755 tmpfs "$mnt"; then
        echo "skipped: cannot mount a tmpfs on $mnt in this environment"
        return 0
    fi
    d=$mnt/ckpt
    # -b 24000: one checkpoint of 2 ranks takes 13 pages (52 KiB) of the 16.
    out=$(env -u SLURM_CONF RINGPOINT_CKPT_DIR="$d" RINGPOINT_CKPT_EVERY=10 \
        RINGPOINT_CKPT_ASYNC="$async" mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x RINGPOINT_CKPT_DIR -x RINGPOINT_CKPT_EVERY -x RINGPOINT_CKPT_ASYNC \
        -x RINGPOINT_CKPT_CHUNK_SIZE "$CHECK" train -n $steps -b 24000 2>&1); echo "$out"
    assert_contains "$out" "ckpt-check: rank 0 checkpointed step=10"
    assert_contains "$out" "No space left on device"
    assert_contains "$out" "checkpoint step 20 failed on at least one rank"
    if [ "$async" = 1 ]; then
        # Snapshot taken at step 20, the failed write reported later.
        assert_not_contains "$out" "rp_step(20) returned"
        echo "$out" | grep -Eq "ckpt-check: rank 0 rp_step\((2[1-9]|30)\) returned" ||
            fail "the failed write of step 20 was not reported by rp_step 21..30"
    else
        assert_contains "$out" "ckpt-check: rank 0 rp_step(20) returned"
        assert_not_contains "$out" "checkpointed step=20"
    fi
    assert_contains "$out" "ckpt-check: rank 0 trained to step=$steps"
    assert_contains "$out" "ckpt-check: rank 1 trained to step=$steps"
    assert_eq "$(committed "$d")" "10" "committed steps"
    [ -z "$(find "$d" -mindepth 1 -maxdepth 1 -name "*inflight*")" ] || fail "in-flight debris left"
    ringpoint-ckpt verify "$d" 10
    df -k "$mnt"
    out=$(env -u SLURM_CONF RINGPOINT_CKPT_DIR="$d" mpirun --allow-run-as-root \
        --oversubscribe -np 2 -x RINGPOINT_CKPT_DIR "$CHECK" restore -b 24000 2>&1); echo "$out"
    restored_all "$out" 2 10
}

test_ckpt_full_disk_sync()  { full_disk 0; }
test_ckpt_full_disk_async() { full_disk 1; }

# A complete-looking in-flight directory (a crash between manifest and
# rename) is debris: removed at start, never loaded.
test_ckpt_stale_inflight_cleaned() {
    local d out stale
    d=$(fresh_dir stale)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    srun --mpi=pmix -N2 -n2 "$CHECK" train -n 20
    stale=$d/.inflight-step-000000000030-00000000deadbeef
    cp -a "$d/step-000000000020" "$stale"
    out=$(srun --mpi=pmix -N2 -n2 "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 2 20
    assert_contains "$out" "removed 1 leftover in-flight directory"
    [ ! -e "$stale" ] || fail "the stale in-flight directory is still there"
}

# A rank SIGKILLed half way through writing its shard: nothing new is
# committed, the job fails, and the next job loads the previous one.
kill_mid_write() {
    local async=$1 d out
    d=$(fresh_dir "kill-$async")
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_ASYNC=$async
    out=$(RINGPOINT_CKPT_FAULT=kill:1:20 RINGPOINT_COLL_TIMEOUT=20s \
        srun --mpi=pmix -N2 -n3 --kill-on-bad-exit=0 "$CHECK" train -n 30 2>&1) &&
        fail "the job survived a killed rank"
    echo "$out"
    assert_contains "$out" "killing this process mid-write"
    assert_eq "$(committed "$d")" "10" "committed steps after the kill"
    ls -a "$d"
    out=$(srun --mpi=pmix -N2 -n3 "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 3 10
    [ -z "$(ls -A "$d" | grep inflight)" ] || fail "in-flight debris left"
}

test_ckpt_killed_writer_sync()  { kill_mid_write 0; }
test_ckpt_killed_writer_async() { kill_mid_write 1; }

# An I/O error on one rank fails that checkpoint only: reported (async:
# at the next safe point), training goes on, the previous one stays.
write_error() {
    local async=$1 d out
    d=$(fresh_dir "werr-$async")
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_ASYNC=$async
    out=$(RINGPOINT_CKPT_FAULT=write:1:20 srun --mpi=pmix -N2 -n3 "$CHECK" train -n 25 2>&1); echo "$out"
    assert_contains "$out" "injected I/O error"
    assert_contains "$out" "checkpoint step 20 failed on at least one rank"
    assert_contains "$out" "ckpt-check: rank 0 rp_step("
    assert_contains "$out" "ckpt-check: rank 2 trained to step=25"
    if [ "$async" = 1 ]; then
        # Reported at a later safe point, never at the step itself.
        assert_not_contains "$out" "rp_step(20) returned"
    else
        assert_contains "$out" "ckpt-check: rank 0 rp_step(20) returned 'I/O error'"
    fi
    assert_eq "$(committed "$d")" "10" "committed steps"
    [ -z "$(ls -A "$d" | grep inflight)" ] || fail "in-flight debris left"
    out=$(srun --mpi=pmix -N2 -n3 "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 3 10
}

test_ckpt_write_error_sync()  { write_error 0; }
test_ckpt_write_error_async() { write_error 1; }

# A stop requested on one rank (as a signal handler would) stops every
# rank at the same step, after that step's checkpoint is durable; async
# mode waits for the checkpoint in flight first.
stop_on_one_rank() {
    local async=$1 d out r
    d=$(fresh_dir "stop-$async")
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10 RINGPOINT_CKPT_ASYNC=$async
    out=$(RINGPOINT_CKPT_FAULT=stop:2:17 srun --mpi=pmix -N2 -n3 "$CHECK" train -n 30 2>&1); echo "$out"
    for r in 0 1 2; do
        assert_contains "$out" "ckpt-check: rank $r stop at step 17"
    done
    assert_not_contains "$out" "checkpointed step=18"
    assert_eq "$(committed "$d")" "10 17" "committed steps"
    out=$(srun --mpi=pmix -N2 -n3 "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 3 17
}

test_ckpt_stop_sync()  { stop_on_one_rank 0; }
test_ckpt_stop_async() { stop_on_one_rank 1; }

# Retention keeps the newest N complete checkpoints.
test_ckpt_retention_keeps_n() {
    local d
    d=$(fresh_dir keep)
    RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=5 RINGPOINT_CKPT_KEEP=3 \
        srun --mpi=pmix -N2 -n2 "$CHECK" train -n 32
    assert_eq "$(committed "$d")" "20 25 30" "kept"
    assert_eq "$(ls -A "$d" | wc -l)" "3" "entries in the directory"
}

# rp_checkpoint at the end, with no periodic checkpoints.
test_ckpt_explicit_checkpoint() {
    local d out
    d=$(fresh_dir explicit)
    out=$(RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_INTERVAL=0 srun --mpi=pmix -N2 -n2 "$CHECK" train -n 7 -C 2>&1); echo "$out"
    assert_eq "$(committed "$d")" "7" "committed"
    out=$(RINGPOINT_CKPT_DIR=$d srun --mpi=pmix -N2 -n2 "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 2 7
}

test_ckpt_mpirun() {
    local d out
    d=$(fresh_dir mpirun)
    export RINGPOINT_CKPT_DIR=$d RINGPOINT_CKPT_EVERY=10
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 3 \
        -x RINGPOINT_CKPT_DIR -x RINGPOINT_CKPT_EVERY -x RINGPOINT_CKPT_CHUNK_SIZE \
        "$CHECK" train -n 25 2>&1); echo "$out"
    assert_eq "$(committed "$d")" "10 20" "committed steps"
    # One node: each rank reads its peers' stripes straight into its
    # regions (three regions, so stripes cross their edges) ...
    out=$(env -u SLURM_CONF RINGPOINT_LOG_LEVEL=info mpirun --allow-run-as-root \
        --oversubscribe -np 3 -x RINGPOINT_CKPT_DIR -x RINGPOINT_LOG_LEVEL \
        "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 3 20
    assert_contains "$out" "stripes exchanged in one copy"
    # ... and without cross-memory attach, through the rounds.
    out=$(env -u SLURM_CONF RINGPOINT_LOG_LEVEL=info RINGPOINT_COLL_CMA=0 \
        mpirun --allow-run-as-root --oversubscribe -np 3 -x RINGPOINT_CKPT_DIR \
        -x RINGPOINT_LOG_LEVEL -x RINGPOINT_COLL_CMA "$CHECK" restore 2>&1); echo "$out"
    restored_all "$out" 3 20
    assert_contains "$out" "stripes exchanged in rounds"
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x RINGPOINT_CKPT_DIR "$CHECK" restore -R 2>&1); echo "$out"
    restored_all "$out" 2 20
    # 300 regions: a stripe's pieces take several reads of a peer each.
    d=$(fresh_dir mpirun-pieces)
    RINGPOINT_CKPT_DIR=$d
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x RINGPOINT_CKPT_DIR -x RINGPOINT_CKPT_EVERY "$CHECK" train -n 10 -p 300 2>&1); echo "$out"
    out=$(env -u SLURM_CONF RINGPOINT_LOG_LEVEL=info mpirun --allow-run-as-root \
        --oversubscribe -np 2 -x RINGPOINT_CKPT_DIR -x RINGPOINT_LOG_LEVEL \
        "$CHECK" restore -p 300 2>&1); echo "$out"
    restored_all "$out" 2 10
    assert_contains "$out" "stripes exchanged in one copy"
}

run_all
