#!/usr/bin/env bash
# Storage faults (issue 15, section 4), on real file systems where one can
# make the fault, and with the fault injector ringpoint-faultfs.so
# (tests/slurm/faultfs.c, LD_PRELOAD) at the points of the commit that a
# real device cannot be made to fail on purpose.
#
# Each test runs the checkpoint engine's end-to-end program
# (ringpoint-ckpt-check: a state that is a known function of the step, so a
# restore is checked byte for byte) with 2 ranks under mpirun, checkpoints
# every 10 steps, and then checks what the runtime promises: the error
# names the file (and with it the step) and the errno; training goes on
# (or, for a stop, stops as it would have); the previous complete
# checkpoint is intact (ringpoint-ckpt verify) and is what a new job
# restores; nothing of the failed attempt is left (no in-flight or
# deleting directory, its disk space given back); nothing is followed
# through a symbolic link planted in the tree.
#
# Real file systems need root (mount, losetup); without it those tests
# say "skipped" and pass. mpirun, not srun: the slurmd daemons of the
# local cluster live in private mount namespaces that do not see a mount
# made after they started. One test runs a batch job on the cluster (a
# stop on a failing disk, requeued). About 2-3 minutes.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-ckpt-check
export FAULTFS=$RP_PREFIX/libexec/ringpoint/ringpoint-faultfs.so
export SROOT=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}/work/storage
RP_TEST_TIMEOUT=400
mkdir -p "$SROOT"
# The batch-job helpers, for the one test on the cluster.
export RP_WORK=$SROOT/jobs STEPS=300
. "$(dirname "$0")/../lib/jobs.sh"

# ck DIR ASYNC [VAR=VALUE...] -- ckpt-check ARGS: 2 ranks under mpirun,
# checkpoints every $EVERY (10) steps and $INTERVAL (0: off) seconds, a
# model of $BYTES (24000) bytes; the VAR=VALUE go to the ranks only (RP_FAULTFS=...
# adds the fault injector).
ck() {
    local d=$1 async=$2 x=()
    shift 2
    while [ "$1" != -- ]; do
        x+=(-x "$1")
        case $1 in RP_FAULTFS=*) x+=(-x "LD_PRELOAD=$FAULTFS") ;; esac
        shift
    done
    shift
    env -u SLURM_CONF timeout 120 mpirun --allow-run-as-root --oversubscribe -np 2 \
        -x RINGPOINT_CKPT_DIR="$d" -x RINGPOINT_CKPT_EVERY="${EVERY:-10}" \
        -x RINGPOINT_CKPT_INTERVAL="${INTERVAL:-0}" -x RINGPOINT_CKPT_ASYNC="$async" \
        -x RINGPOINT_CKPT_CHUNK_SIZE=65536 "${x[@]}" "$CHECK" "$@" -b "${BYTES:-24000}" 2>&1
}

# committed DIR: the steps ringpoint-ckpt calls complete, one line.
committed() {
    ringpoint-ckpt ls "$1" | awk '$NF == "complete" {print $1}' | xargs
}

# intact DIR STEPS GOOD: exactly STEPS are committed, nothing else is in
# DIR (no in-flight or deleting directory), GOOD verifies byte for byte,
# and a new 2-rank job restores GOOD intact on both ranks.
intact() {
    local d=$1 want=$2 good=$3 out r
    assert_eq "$(committed "$d")" "$want" "committed steps in $d"
    [ -z "$(find "$d" -mindepth 1 -maxdepth 1 -name '.*')" ] ||
        fail "debris of a failed attempt left in $d: $(ls -A "$d")"
    ringpoint-ckpt verify "$d" "$good" || fail "step $good does not verify"
    out=$(ck "$d" 0 -- restore); echo "$out"
    for r in 0 1; do
        assert_contains "$out" "ckpt-check: rank $r restored step=$good " || return 1
    done
    [ "$(echo "$out" | grep -c "restored step=$good .* ok bad=0")" -eq 2 ] ||
        fail "step $good did not restore intact on both ranks"
}

# trained OUT STEPS: both ranks trained on to STEPS.
trained() {
    assert_contains "$1" "ckpt-check: rank 0 trained to step=$2" &&
        assert_contains "$1" "ckpt-check: rank 1 trained to step=$2"
}

fresh() {
    local d=$SROOT/$1
    rm -rf "$d"
    mkdir -p "$d"
    echo "$d"
}

# The fault injector at each file call of a checkpoint's commit, for step
# 20 only: in-flight directory, shard create/write/fsync, manifest
# create/write/fsync, in-flight directory fsync, the rename. Checkpoint 20
# fails, with the path and errno in the error; training goes on to 25;
# checkpoint 10 stays the latest, whole; nothing of 20 is left.
export P20='*/.inflight-step-000000000020-*'

commit_faults() {
    local async=$1 f rule text d out n=0 faults=(
        "mkdir:$P20:ENOSPC|No space left on device"
        "open:$P20/shard-000001.rp:EDQUOT|Disk quota exceeded"
        "write:$P20/shard-000001.rp:short|No space left on device"
        "write:$P20/shard-000000.rp:EIO|Input/output error"
        "fsync:$P20/shard-000001.rp:EIO|Input/output error"
        "open:$P20/*MANIFEST*:ENOSPC|No space left on device"
        "write:$P20/*MANIFEST*:short|No space left on device"
        "fsync:$P20/*MANIFEST*:EIO|Input/output error"
        "fsync:*/.inflight-step-000000000020-????????????????:EIO|Input/output error"
        "rename:*/.inflight-step-000000000020-????????????????:ENOSPC:1:1|No space left on device"
    )
    for f in "${faults[@]}"; do
        rule=${f%%|*} text=${f#*|}
        n=$((n + 1))
        echo "=== $rule (async=$async)"
        d=$(fresh "commit-$async-$n")
        out=$(ck "$d" "$async" RP_FAULTFS="$rule" -- train -n 25); echo "$out"
        assert_contains "$out" "faultfs: ${rule%%:*} " "output (the fault was reached)"
        # The error names the file of step 20 and the errno.
        echo "$out" | grep "ringpoint\[[01]\]: error: .*inflight-step-000000000020-.*$text" ||
            fail "no error naming step 20's file and '$text' for $rule"
        if [ "$async" = 1 ] && [ "${rule%%:*}" != mkdir ]; then
            # In the background: reported at a later safe point. (The
            # in-flight directory is made at the step itself.)
            assert_not_contains "$out" "rp_step(20) returned"
        else
            assert_contains "$out" "ckpt-check: rank 0 rp_step(20) returned"
        fi
        # (Async, "checkpointed" means the snapshot was taken.)
        [ "$async" = 1 ] || assert_not_contains "$out" "checkpointed step=20"
        trained "$out" 25
        intact "$d" 10 10
    done
    assert_eq "$n" 10 "fault points tried"
}

test_storage_commit_faults_sync()  { commit_faults 0; }
test_storage_commit_faults_async() { commit_faults 1; }

# The root's fsync after the rename fails: the checkpoint is in place and
# whole (its files and names were durable before the rename), only the
# rename itself may not survive a crash. Reported; both load.
test_storage_root_fsync_after_rename() {
    local d out
    d=$(fresh root-fsync)
    mkdir -p "$d/ck"
    # The root is fsynced after each rename (first: step 10's commit).
    out=$(ck "$d/ck" 0 RP_FAULTFS="fsync:$d/ck:EIO:2:1" -- train -n 25); echo "$out"
    assert_contains "$out" "faultfs: fsync $d/ck: EIO"
    assert_contains "$out" "error: fsync $d/ck: Input/output error"
    trained "$out" 25
    intact "$d/ck" "10 20" 20
    ringpoint-ckpt verify "$d/ck" 10
}

# A stop whose checkpoint cannot be written (the disk is full when SIGTERM
# comes) is still a stop: every rank leaves the loop at that step, the
# previous checkpoint stays, and rp_step returns RP_OK with checkpointed 0
# (so the job exits RP_EXIT_STOPPED and is requeued to resume from it),
# as when there is no time for a stop checkpoint. Before, rp_step returned
# the I/O error and a program that checks it exited as failed.
stop_write_fails() {
    local async=$1 d out
    d=$(fresh "stop-fails-$async")
    out=$(ck "$d" "$async" RINGPOINT_CKPT_FAULT=stop:1:17 \
        RP_FAULTFS="write:$d/.inflight-step-000000000017-*/shard-000000.rp:short" -- train -n 30); echo "$out"
    assert_contains "$out" "faultfs: write"
    assert_contains "$out" "No space left on device"
    assert_contains "$out" "ckpt-check: rank 0 stop at step 17"
    assert_contains "$out" "ckpt-check: rank 1 stop at step 17"
    assert_not_contains "$out" "rp_step(17) returned"
    assert_contains "$out" "NO new checkpoint"
    intact "$d" 10 10
}

test_storage_stop_write_fails_sync()  { stop_write_fails 0; }
test_storage_stop_write_fails_async() { stop_write_fails 1; }

# An async write that failed, reported at the stop's safe point, must not
# hide the stop that followed it: the stop checkpoint (the disk has room
# again) is committed, the stop reported, rp_step returns RP_OK.
test_storage_failed_write_then_stop_async() {
    local d out
    d=$(fresh failed-then-stop)
    out=$(ck "$d" 1 RINGPOINT_CKPT_FAULT=stop:0:21 \
        RP_FAULTFS="write:$P20/shard-000001.rp:EIO" -- train -n 30); echo "$out"
    assert_contains "$out" "faultfs: write"
    assert_contains "$out" "checkpoint step 20 failed on at least one rank"
    assert_contains "$out" "ckpt-check: rank 0 stop at step 21"
    assert_contains "$out" "ckpt-check: rank 1 stop at step 21"
    assert_not_contains "$out" "rp_step(21) returned"
    assert_contains "$out" "checkpoint committed"
    intact "$d" "10 21" 21
}

# ---- real file systems

# with_fs TYPE MNT: a sparse image of TYPE (ext4 48 MiB, xfs 320 MiB, its
# smallest), or a tmpfs of 8 MiB, mounted on MNT; returns 1 (the caller
# skips) where it cannot be.
with_fs() {
    local type=$1 mnt=$2 img=$2.img dev
    mkdir -p "$mnt"
    [ "$(id -u)" = 0 ] || { echo "skipped: not root"; return 1; }
    if [ "$type" = tmpfs ]; then
        mount -t tmpfs -o size=8m,mode=0755 tmpfs "$mnt" || { echo "skipped: no tmpfs mount here"; return 1; }
        return 0
    fi
    command -v "mkfs.$type" >/dev/null || { echo "skipped: no mkfs.$type"; return 1; }
    rm -f "$img"
    truncate -s "$([ "$type" = xfs ] && echo 320M || echo 48M)" "$img"
    case $type in
        ext4) mkfs.ext4 -q -F -m 0 "$img" ;; # no blocks reserved for root: full is full
        xfs) mkfs.xfs -q -f "$img" ;;
    esac || { echo "skipped: mkfs.$type failed"; return 1; }
    mount -o loop "$img" "$mnt" || { echo "skipped: cannot loop-mount $type"; return 1; }
}

drop_fs() {
    if mountpoint -q "$1"; then
        umount "$1" 2>/dev/null || umount -l "$1" || true
    fi
    rm -f "$1.img"
    rmdir "$1" 2>/dev/null || true
}

free_kb() { df -k --output=avail "$1" | tail -1 | tr -d ' '; }

# fill MNT LEFT_KB: a file that leaves about LEFT_KB free.
fill() {
    local avail
    sync -f "$1"
    avail=$(free_kb "$1")
    if [ "$avail" -gt "$2" ]; then
        # (fallocate may want more than df shows for the file's own
        # metadata; dd then writes what fits.)
        fallocate -l "$(( (avail - $2) * 1024 ))" "$1/fill" 2>/dev/null ||
            dd if=/dev/zero of="$1/fill" bs=1k count=$((avail - $2)) status=none 2>/dev/null ||
            true
    fi
    sync -f "$1"
}

# full_fs TYPE: on a real file system of TYPE, away from /tmp: a round
# trip; then the disk completely full (the in-flight directory or the
# first shard cannot be made) and then nearly full (ENOSPC in the middle
# of the shards). Each time training goes on, the previous checkpoint
# stays and loads, and the failed attempt gives all its space back.
full_fs() {
    local type=$1 mnt d out before after
    mnt=$SROOT/fs-$type
    # A checkpoint of about 1.2 MiB (two 600 KiB shards), so that 256 KiB
    # left is room for the in-flight directory and part of a shard on
    # every one of these file systems.
    export BYTES=400000
    drop_fs "$mnt"
    with_fs "$type" "$mnt" || return 0
    # shellcheck disable=SC2064 # expand $mnt now
    trap "drop_fs '$mnt'" EXIT
    trap 'exit 143' TERM INT
    d=$mnt/ckpt
    echo "=== $type: round trip"
    out=$(ck "$d" 1 -- train -n 10); echo "$out"
    trained "$out" 10
    intact "$d" 10 10
    before=$(free_kb "$mnt")

    echo "=== $type: full"
    fill "$mnt" 0
    out=$(ck "$d" 1 -- train -n 25); echo "$out"
    assert_contains "$out" "restored step=10"
    assert_contains "$out" "No space left on device"
    assert_contains "$out" "checkpoint step 20"
    trained "$out" 25
    rm -f "$mnt/fill"
    intact "$d" 10 10

    echo "=== $type: nearly full (256 KiB left: part of a shard)"
    fill "$mnt" 256
    out=$(ck "$d" 0 -- train -n 35); echo "$out"
    echo "$out" | grep -E "error: write .*inflight-step-0000000000[23]0-.*/shard-00000[01]\.rp.*No space left on device" ||
        fail "no ENOSPC in the middle of a shard"
    trained "$out" 35
    rm -f "$mnt/fill"
    intact "$d" 10 10
    sync -f "$mnt"
    after=$(free_kb "$mnt")
    echo "free before the failed attempts: $before KiB, after: $after KiB"
    [ "$after" -ge $((before - 8)) ] || fail "the failed attempts kept $((before - after)) KiB"
}

test_storage_full_tmpfs() { full_fs tmpfs; }
test_storage_full_ext4()  { full_fs ext4; }
test_storage_full_xfs()   { full_fs xfs; }

# A read-only file system (remounted ro under a job that has a
# checkpoint): the restore reads it, every checkpoint fails with EROFS
# naming the path, training goes on; writable again, the next job
# checkpoints as before.
test_storage_read_only_remount() {
    local mnt=$SROOT/fs-ro d out
    drop_fs "$mnt"
    with_fs ext4 "$mnt" || return 0
    # shellcheck disable=SC2064 # expand $mnt now
    trap "drop_fs '$mnt'" EXIT
    trap 'exit 143' TERM INT
    d=$mnt/ckpt
    out=$(ck "$d" 1 -- train -n 10); echo "$out"
    mount -o remount,ro "$mnt"
    out=$(ck "$d" 1 -- train -n 25); echo "$out"
    assert_contains "$out" "restored step=10"
    echo "$out" | grep -E "error: .*$d/.inflight-step-000000000020-.*Read-only file system" ||
        fail "no EROFS naming step 20's in-flight directory"
    trained "$out" 25
    intact "$d" 10 10
    mount -o remount,rw "$mnt"
    out=$(ck "$d" 0 -- train -n 25); echo "$out"
    intact "$d" "10 20" 20
}

# Real I/O errors from a block device: an ext4 image whose blocks live in
# a sparse file on a 12 MiB tmpfs, the tmpfs then filled: every new block
# the file system writes fails in the loop driver with EIO (ext4 then
# aborts its journal and turns read-only, as on a dying disk). The
# checkpoint in place was written before and is read back intact.
test_storage_device_io_errors() {
    local mnt=$SROOT/fs-eio back=$SROOT/fs-eio-back d out
    drop_fs "$mnt"
    umount "$back" 2>/dev/null || true
    mkdir -p "$back" "$mnt"
    [ "$(id -u)" = 0 ] || { echo "skipped: not root"; return 0; }
    mount -t tmpfs -o size=12m tmpfs "$back" || { echo "skipped: no tmpfs"; return 0; }
    # shellcheck disable=SC2064 # expand now
    trap "drop_fs '$mnt'; umount '$back'; rmdir '$back'" EXIT
    trap 'exit 143' TERM INT
    truncate -s 64M "$back/img"
    mkfs.ext4 -q -F -m 0 -E lazy_itable_init=0,lazy_journal_init=0 "$back/img" ||
        { echo "skipped: mkfs.ext4"; return 0; }
    mount -o loop "$back/img" "$mnt" || { echo "skipped: loop mount"; return 0; }
    d=$mnt/ckpt
    out=$(ck "$d" 1 -- train -n 10); echo "$out"
    intact "$d" 10 10
    sync -f "$mnt"
    # The backing store full: the next blocks ext4 allocates cannot be
    # stored, the device answers EIO.
    dd if=/dev/zero of="$back/fill" bs=64k status=none 2>/dev/null || true
    out=$(ck "$d" 0 -- train -n 25); echo "$out"
    assert_contains "$out" "restored step=10"
    echo "$out" | grep -E "ringpoint\[[01]\]: error: .*inflight-step-000000000020.*(Input/output error|Read-only file system|No space left)" ||
        fail "no I/O error naming step 20's file"
    trained "$out" 25
    # What ext4 has on the device is the checkpoint of step 10, whole:
    # its cached pages dropped (only this file system's), it is read from
    # the failing device.
    find "$d" -type f -exec dd if={} iflag=nocache count=0 status=none \;
    ringpoint-ckpt verify "$d" 10
    out=$(ck "$d" 0 -- restore); echo "$out"
    [ "$(echo "$out" | grep -c "restored step=10 .* ok bad=0")" -eq 2 ] ||
        fail "step 10 did not restore intact from the failing device"
    dmesg 2>/dev/null | tail -n 5
}

# ---- symbolic links

# The checkpoint directory itself a symbolic link (a user's choice, e.g.
# onto a scratch file system): followed, everything lands there.
test_storage_symlinked_root() {
    local d real out
    d=$(fresh symroot)
    real=$d/real
    mkdir -p "$real"
    ln -s "$real" "$d/link"
    out=$(ck "$d/link" 1 -- train -n 25); echo "$out"
    trained "$out" 25
    assert_eq "$(committed "$real")" "10 20" "checkpoints in the link's target"
    intact "$d/link" "10 20" 20
}

# A victim: a directory outside the checkpoint tree, with a whole, valid
# checkpoint of another job and a file, and a digest of all of it.
make_victim() {
    local v=$1 out
    rm -rf "$v"
    mkdir -p "$v"
    out=$(ck "$v/ck" 0 -- train -n 40) || { echo "$out"; return 1; }
    echo "keep me" >"$v/file"
    victim_sum "$v" >"$v.sum"
}
victim_sum() { (cd "$1" && find . -print0 | sort -z | xargs -0 ls -ld --time-style=+%s | awk '{$6 = ""; print}'; find . -type f -print0 | sort -z | xargs -0 sha256sum); }
victim_ok() { diff <(victim_sum "$1") "$1.sum" || fail "the victim $1 changed"; }

# Links planted by another user in a checkpoint directory everyone can
# write to (mode 1777): named like committed checkpoints, pointing at a
# whole checkpoint elsewhere and at a file. Never taken for checkpoints,
# never restored from, never deleted through by retention; the job
# trains, commits and prunes its own.
test_storage_planted_checkpoint_links() {
    local d v out
    d=$(fresh planted)
    v=$SROOT/victim-planted
    make_victim "$v"
    chmod 1777 "$d"
    setpriv --reuid=nobody --regid=nogroup --clear-groups \
        ln -s "$v/ck/step-000000000040" "$d/step-000000000040" 2>/dev/null ||
        ln -s "$v/ck/step-000000000040" "$d/step-000000000040"
    ln -s "$v/ck/step-000000000030" "$d/step-000000000005"
    ln -s "$v/file" "$d/step-000000000007"
    # KEEP=1: retention runs after every commit.
    out=$(ck "$d" 1 RINGPOINT_CKPT_KEEP=1 -- train -n 25); echo "$out"
    assert_contains "$out" "ckpt-check: rank 0 fresh"
    assert_not_contains "$out" "restored step=40"
    assert_not_contains "$out" "restored step=30"
    trained "$out" 25
    victim_ok "$v"
    # Retention removed the links below the newest checkpoint (unlinked,
    # not followed); the one above it is left alone, and ignored.
    [ ! -e "$d/step-000000000005" ] && [ ! -L "$d/step-000000000005" ] || fail "step-5 link kept"
    [ ! -L "$d/step-000000000007" ] || fail "step-7 link kept"
    out=$(ck "$d" 0 -- restore); echo "$out"
    assert_contains "$out" "ckpt-check: rank 0 restored step=20 "
    victim_ok "$v"
    ringpoint-ckpt prune "$d" --keep 1 || true
    victim_ok "$v"
}

# Links planted inside a checkpoint being written, just before the rank
# creates the file (what another user who wins the race does): a shard,
# the manifest, the in-flight directory itself. The create refuses to
# follow (EEXIST), the checkpoint fails, the cleanup unlinks the link and
# never touches what it points at; checkpoint 10 stays.
planted_in_flight() {
    local what=$1 rule=$2 d v out
    d=$(fresh "inflight-$what")
    v=$SROOT/victim-$what
    make_victim "$v"
    out=$(ck "$d" 0 RP_FAULTFS="${rule//VICTIM/$v}" -- train -n 25); echo "$out"
    assert_contains "$out" "faultfs: "
    assert_contains "$out" "File exists"
    trained "$out" 25
    victim_ok "$v"
    # The next start removes a leftover in-flight link, not its target.
    out=$(ck "$d" 0 -- restore); echo "$out"
    victim_ok "$v"
    intact "$d" 10 10
    victim_ok "$v"
}

test_storage_planted_shard_link() {
    planted_in_flight shard "open:$P20/shard-000001.rp:symlink=VICTIM/file"
}
test_storage_planted_manifest_link() {
    planted_in_flight manifest "open:$P20/*MANIFEST*:symlink=VICTIM/ck/step-000000000040/MANIFEST"
}
test_storage_planted_inflight_dir_link() {
    planted_in_flight dir "mkdir:$P20:symlink=VICTIM/ck"
}

# ---- permissions

# As an ordinary user: a checkpoint directory the user may read but not
# write (a checkpoint of 10 in it, written by its owner): the restore
# works, each checkpoint fails with EACCES naming the path, training goes
# on; one the user may not even enter: the job says so and trains from
# scratch without checkpoints.
test_storage_permission_denied() {
    local d out
    [ "$(id -u)" = 0 ] || { echo "skipped: not root"; return 0; }
    d=$(fresh perm)
    out=$(ck "$d/ck" 0 -- train -n 10); echo "$out"
    chmod 0755 "$d/ck"
    chmod -R a+rX "$d"
    out=$(cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/ \
        TMPDIR=/tmp bash -c "$(declare -f ck); ck '$d/ck' 1 -- train -n 25"); echo "$out"
    assert_contains "$out" "restored step=10"
    echo "$out" | grep -E "error: .*$d/ck.*Permission denied" ||
        fail "no EACCES naming the checkpoint directory"
    trained "$out" 25
    intact "$d/ck" 10 10
    chmod 0700 "$d/ck"
    if out=$(cd / && setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/ \
        TMPDIR=/tmp bash -c "$(declare -f ck); ck '$d/ck' 1 -- train -n 15"); then
        echo "$out"
        fail "a job that cannot read its checkpoint directory went on"
    fi
    echo "$out"
    echo "$out" | grep -E "error: .*$d/ck.*Permission denied" ||
        fail "no EACCES for a directory the user cannot enter"
    assert_not_contains "$out" "fresh" "output (must not start over)"
    intact "$d/ck" 10 10
}

# ---- a slow file system

# The first shard write of each rank takes 4 s; steps take 50 ms, one
# checkpoint a second (RINGPOINT_CKPT_INTERVAL). Async: training does not
# wait for the write; the checkpoint the interval makes due meanwhile is
# put off (logged), not waited for, and taken at the first safe point
# after the write ends. Every checkpoint is committed whole.
test_storage_slow_write_async_does_not_block() {
    local d out
    d=$(fresh slow-async)
    out=$(EVERY=0 INTERVAL=1 ck "$d" 1 RP_FAULTFS="write:*/shard-*:delay=4000:1:1" -- \
        train -n 120 -s 50); echo "$out"
    assert_contains "$out" "faultfs: write"
    assert_contains "$out" "postponed: the one of step"
    trained "$out" 120
    [ "$(echo "$out" | grep -c "rank 0 checkpointed")" -ge 2 ] || fail "fewer than 2 checkpoints"
    ringpoint-ckpt verify "$d"
    out=$(ck "$d" 0 -- restore); echo "$out"
    [ "$(echo "$out" | grep -c "restored step=.* ok bad=0")" -eq 2 ] || fail "no intact restore"
}

# A really slow device: ext4 on a loop device whose writes the ranks'
# block-I/O cgroup (v1 blkio) throttles to 512 KiB/s, a checkpoint of
# about 1.5 MiB (O_DIRECT writes, so the throttle sees them): each write
# takes about 3 s against a 1 s interval. Async: training goes on, the
# checkpoints due meanwhile are postponed, each one taken is whole.
test_storage_throttled_device_async() {
    local mnt=$SROOT/fs-slow cg d out dev
    cg=/sys/fs/cgroup/blkio/rp-storage-$$
    drop_fs "$mnt"
    [ -w /sys/fs/cgroup/blkio ] || { echo "skipped: no cgroup v1 blkio"; return 0; }
    with_fs ext4 "$mnt" || return 0
    mkdir "$cg" || { echo "skipped: cannot make a blkio cgroup"; return 0; }
    # shellcheck disable=SC2064 # expand now
    trap "rmdir '$cg' 2>/dev/null; drop_fs '$mnt'" EXIT
    trap 'exit 143' TERM INT
    dev=$(lsblk -no MAJ:MIN "$(findmnt -n -o SOURCE "$mnt")" | tr -d ' ')
    echo "$dev 524288" >"$cg/blkio.throttle.write_bps_device"
    d=$mnt/ckpt
    out=$(echo $BASHPID >"$cg/cgroup.procs" &&
        BYTES=1000000 EVERY=0 INTERVAL=1 ck "$d" 1 -- train -n 120 -s 50); echo "$out"
    echo "throttled: $(grep -o 'Write [0-9]*' "$cg/blkio.throttle.io_service_bytes" | head -1) bytes"
    assert_contains "$out" "postponed: the one of step"
    trained "$out" 120
    ringpoint-ckpt verify "$d"
    out=$(BYTES=1000000 ck "$d" 0 -- restore); echo "$out"
    [ "$(echo "$out" | grep -c "restored step=.* ok bad=0")" -eq 2 ] || fail "no intact restore"
}

# The stop budget on a slow file system: each shard write takes 1.5 s
# more (sync), so the checkpoints of 10 and 20 take 3 s or more. A stop at
# 25 at the time limit (RINGPOINT_SLURM_END_TIME reached) with KillWait
# 2 s cannot fit: the stop is taken WITHOUT a checkpoint, at once, and the
# job resumes from 20. With KillWait 60 s it fits and is committed.
test_storage_slow_fs_stop_budget() {
    local d out rule="write:*/shard-*:delay=1500"
    d=$(fresh budget-short)
    out=$(ck "$d" 0 RP_FAULTFS="$rule" RINGPOINT_CKPT_FAULT=stop:0:25 RINGPOINT_SLURM_KILL_WAIT=2 \
        RINGPOINT_SLURM_END_TIME="$(date +%s)" -- train -n 30); echo "$out"
    assert_contains "$out" "no time for a stop checkpoint"
    assert_contains "$out" "it resumes from step 20"
    assert_contains "$out" "ckpt-check: rank 0 stop at step 25"
    assert_contains "$out" "ckpt-check: rank 1 stop at step 25"
    intact "$d" "10 20" 20
    d=$(fresh budget-long)
    out=$(ck "$d" 0 RP_FAULTFS="$rule" RINGPOINT_CKPT_FAULT=stop:0:25 RINGPOINT_SLURM_KILL_WAIT=60 \
        RINGPOINT_SLURM_END_TIME="$(date +%s)" -- train -n 30); echo "$out"
    assert_not_contains "$out" "no time for a stop checkpoint"
    assert_contains "$out" "checkpoint committed"
    assert_contains "$out" "ckpt-check: rank 1 stop at step 25"
    intact "$d" "20 25" 25
}

# A checkpoint directory whose file system hangs at the stop (each shard
# write of the stop checkpoint of step 25 sleeps 10 minutes; those of 10
# and 20 go through): the stop gives up within its budget instead of
# waiting for SIGKILL. With the deadline known (time limit, KillWait 6 s)
# that is the time left less a margin, 5 s; with none known,
# RINGPOINT_CKPT_TIMEOUT (here 3 s, async writes). Each time the ranks name
# the directory and the checkpoint they give up and exit RP_EXIT_STOPPED
# (75), and step 20 stays intact: the next start removes the abandoned
# in-flight directory and restores it. Before, both runs hung until
# mpirun's timeout. About 15 s.
test_storage_hung_fs_stop_bounded() {
    # The shard writes of step 25 alone, named by its in-flight directory
    # (a count of earlier writes would change with the writer's buffering).
    local d out rc start rule="write:*000000000025-*/shard-*:delay=600000"
    d=$(fresh hung-deadline)
    start=$(date +%s)
    rc=0
    out=$(ck "$d" 0 RP_FAULTFS="$rule" RINGPOINT_CKPT_FAULT=stop:0:25 RINGPOINT_SLURM_KILL_WAIT=6 \
        RINGPOINT_SLURM_END_TIME="$(date +%s)" -- train -n 30) || rc=$?
    echo "$out"
    assert_eq "$rc" 75 "exit status"
    [ $(( $(date +%s) - start )) -lt 60 ] || fail "the stop took $(( $(date +%s) - start ))s"
    assert_contains "$out" "stop at step 25: the checkpoint of step 25 in $d did not finish within 5.0 s"
    out=$(ck "$d" 0 -- restore); echo "$out"
    assert_contains "$out" "removed 1 leftover in-flight directory"
    intact "$d" "10 20" 20
    d=$(fresh hung-timeout)
    start=$(date +%s)
    rc=0
    out=$(ck "$d" 1 RP_FAULTFS="$rule" RINGPOINT_CKPT_FAULT=stop:0:25 RINGPOINT_CKPT_TIMEOUT=3s \
        -- train -n 30) || rc=$?
    echo "$out"
    assert_eq "$rc" 75 "exit status"
    [ $(( $(date +%s) - start )) -lt 60 ] || fail "the stop took $(( $(date +%s) - start ))s"
    assert_contains "$out" "stop at step 25: the checkpoint of step 25 in $d did not finish within 3.0 s"
    out=$(ck "$d" 0 -- restore); echo "$out"
    intact "$d" "10 20" 20
}

# The same bound where the file system hangs in the kernel, as a hard NFS
# mount does when its server stops answering: the checkpoint directory is
# on a FUSE mount (bindfs over a directory of this disk) whose daemon gets
# SIGSTOP once step 20 is committed. Every call into it then sleeps in the
# kernel, killable only, with no shim in the process to return: the
# watchdog must still end each rank within its limit, no rank may be left
# behind in the frozen mount, and once the server answers again the
# previous checkpoint is whole. Sync with RINGPOINT_CKPT_TIMEOUT, async
# with a KillWait deadline.
hung_fuse_case() { # hung_fuse_case NAME ASYNC LIMIT_TEXT ENV...
    local name=$1 async=$2 limit=$3 back mnt bpid d out rc t0 left
    shift 3
    back=$(fresh "$name-back")
    mnt=$(fresh "$name-mnt")
    bindfs -f "$back" "$mnt" &
    bpid=$!
    for _ in $(seq 50); do mountpoint -q "$mnt" && break; sleep 0.1; done
    if ! mountpoint -q "$mnt"; then
        kill "$bpid" 2>/dev/null
        wait "$bpid" 2>/dev/null
        [ -e /dev/fuse ] || { echo "skipped: no /dev/fuse in this environment"; return 0; }
        fail "bindfs did not mount $back on $mnt"
        return 1
    fi
    # Whatever fails below, the server answers again and the mount goes.
    trap "kill -CONT $bpid 2>/dev/null; fusermount -u '$mnt' 2>/dev/null || umount -l '$mnt'" EXIT
    trap 'exit 143' TERM INT
    d=$mnt/ckpt
    mkdir -p "$d"
    rc=0
    ck "$d" "$async" RINGPOINT_CKPT_FAULT=stop:0:25 "$@" -- train -n 30 -s 200 \
        >"$SROOT/$name.out" &
    local job=$!
    # Freeze the server once step 20 is committed (seen in the backing
    # directory, which is not on the mount); steps 21-25 take 1 s.
    for _ in $(seq 600); do [ -d "$back/ckpt/step-000000000020" ] && break; sleep 0.05; done
    kill -STOP "$bpid"
    t0=$(date +%s)
    wait "$job" || rc=$?
    # Anchored at the program's path: the test's own shell has this text
    # in its command line too.
    left=$(pgrep -f "^$CHECK train -n 30 -s 200" | xargs)
    kill -CONT "$bpid"
    out=$(cat "$SROOT/$name.out"); echo "$out"
    assert_eq "$rc" 75 "exit status"
    [ $(( $(date +%s) - t0 )) -lt 40 ] || fail "the stop took $(( $(date +%s) - t0 ))s after the freeze"
    assert_eq "$left" "" "ranks still alive in the frozen mount"
    assert_contains "$out" "stop at step 25: the checkpoint of step 25 in $d did not finish within $limit"
    intact "$d" "10 20" 20
    fusermount -u "$mnt" || umount -l "$mnt"
    wait "$bpid" 2>/dev/null
    trap - EXIT
}

test_storage_hung_fuse_stop_bounded() {
    command -v bindfs >/dev/null || { fail "bindfs is not installed (scripts/deps.sh installs it)"; return 1; }
    hung_fuse_case fuse-timeout 0 "3.0 s" RINGPOINT_CKPT_TIMEOUT=3s || return 1
    # The time limit already reached, so the stop knows exactly when
    # SIGKILL comes (KillWait after the end time): the watchdog's bound.
    hung_fuse_case fuse-deadline 1 "" RINGPOINT_SLURM_KILL_WAIT=8 \
        RINGPOINT_SLURM_END_TIME="$(date +%s)"
}

# On the cluster, end to end: a batch job of the example trainer (3 ranks,
# 2 nodes, a checkpoint every 2 s) whose shard writes fail (EIO) from the
# third on, gets the warning signal. The stop checkpoint cannot be
# written: the ranks stop without it, exit RP_EXIT_STOPPED, the runtime
# tells the plugin, the plugin requeues, and the job resumes from the last
# good checkpoint and ends with the digest of an uninterrupted run.
# Before the fix rp_step returned the I/O error: the job failed.
test_storage_stop_on_failing_disk_requeues() {
    local ref jid out
    ref=$(reference)
    TRAIN_ENV="LD_PRELOAD=$FAULTFS RP_FAULTFS=write:*/shard-*:EIO:3" \
        jid=$(submit failing --requeue --ckpt-interval=2)
    wait_training failing
    sleep 8
    scancel -s USR2 "$jid"
    wait_done "$jid" 240
    out=$(cat "$RP_WORK/failing.out"); echo "$out"
    assert_contains "$out" "Input/output error"
    assert_contains "$out" "its checkpoint could not be written"
    assert_contains "$out" "resumed from step"
    assert_eq "$(state "$jid")" COMPLETED
    [ "$(restarts "$jid")" -ge 1 ] || fail "the job was not requeued"
    assert_eq "$(digest_in failing)" "$ref" "digest"
}

run_all
