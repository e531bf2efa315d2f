#!/usr/bin/env bash
# ringpoint-ckpt against real checkpoints written by the format layer:
# ls, verify (naming the bad file and chunk), show, prune and --help.
# tests/tools/ckpt_flip.c damages a checkpoint everywhere. Prints TAP.
# Run by make check, which sets RP_CKPT_TOOL and RP_CKPT_FIXTURE.
set -u
ckpt=${RP_CKPT_TOOL:?}
fixture=${RP_CKPT_FIXTURE:?}
dir=$(mktemp -d /var/tmp/rp-ckpt-tool.XXXXXX)
trap 'rm -rf "$dir"' EXIT
n=0
failed=0

check() { # check NAME COMMAND...: one TAP result
    local name=$1
    shift
    n=$((n + 1))
    if out=$("$@" 2>&1); then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name"
        echo "$out" | sed 's/^/# /'
        failed=1
    fi
}

# A checkpoint's payload offset in a shard: after the 4 KiB header.
flip_byte() { # flip_byte FILE OFFSET
    local b
    b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "$(printf '\\%03o' $(( (b + 1) % 256 )))" |
        dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

t_ls_empty() {
    local out
    out=$("$ckpt" ls "$dir") && [[ $out == "no checkpoints in $dir" ]]
}

t_fixtures() {
    "$fixture" "$dir" 10 3 100000 64 4096 &&
    "$fixture" "$dir" 20 3 100000 64 4096 &&
    "$fixture" "$dir" 30 3 100000 64 4096
}

t_ls_complete() {
    local out
    out=$("$ckpt" ls "$dir") || return 1
    echo "$out"
    [ "$(echo "$out" | grep -c ' complete')" = 3 ] &&
    echo "$out" | grep -Eq '^ +20 .* +3 +complete'
}

t_verify_good() {
    "$ckpt" verify "$dir" 20 | grep -q "step 20: complete" &&
    "$ckpt" verify "$dir" | grep -q "step 30: complete"
}

t_verify_names_chunk() {
    local out rc
    # Byte 5000 of rank 1's payload is in chunk 1 (4 KiB chunks).
    flip_byte "$dir/step-000000000030/shard-000001.rp" $((4096 + 5000))
    out=$("$ckpt" verify "$dir" 30 2>&1)
    rc=$?
    echo "$out"
    [ $rc = 1 ] && [[ $out == *"shard-000001.rp chunk 1"* ]]
}

t_ls_shows_corrupt() {
    local out
    out=$("$ckpt" ls "$dir" --full) || return 1
    echo "$out"
    echo "$out" | grep -Eq '^ +30 .*corrupt.*shard-000001.rp chunk 1'
}

t_verify_default_walks_back() {
    local out rc
    # The newest one is corrupt: verify says so (exit 1), naming the file
    # and chunk, and goes on to the newest complete one, 20.
    out=$("$ckpt" verify "$dir" 2>&1)
    rc=$?
    echo "$out"
    [ $rc = 1 ] &&
    echo "$out" | grep -q "^step 30: corrupt: step-000000000030/shard-000001.rp chunk 1: " &&
    echo "$out" | grep -q "^step 20: complete"
}

t_missing_shard_incomplete() {
    local out
    "$fixture" "$dir" 25 2 5000 0 4096 || return 1
    rm "$dir/step-000000000025/shard-000000.rp"
    out=$("$ckpt" ls "$dir")
    echo "$out"
    echo "$out" | grep -Eq '^ +25 .*incomplete.*shard-000000.rp'
}

t_show() {
    local out
    out=$("$ckpt" show "$dir" 20) || return 1
    echo "$out"
    [[ $out == *"step           20"* ]] && [[ $out == *"world size     3"* ]] &&
    [[ $out == *"slurm job      4242"* ]] && [[ $out == *"model"*"replicated"* ]] &&
    [[ $out == *"rng"*"per-rank"* ]] && [[ $out == *"rank 2"* ]]
}

t_show_missing_step() {
    local rc
    "$ckpt" show "$dir" 99 >/dev/null 2>&1
    rc=$?
    [ $rc = 1 ]
}

t_usage_errors() {
    local rc
    "$ckpt" verify "$dir" banana >/dev/null 2>&1; rc=$?
    [ $rc = 2 ] || return 1
    "$ckpt" prune "$dir" >/dev/null 2>&1; rc=$?
    [ $rc = 2 ] || return 1
    "$ckpt" prune "$dir" --keep 0 >/dev/null 2>&1; rc=$?
    [ $rc = 2 ] || return 1
    "$ckpt" ls /nonexistent/rp >/dev/null 2>&1; rc=$?
    [ $rc = 2 ] || return 1
    "$ckpt" verify "$dir" --bogus >/dev/null 2>&1; rc=$?
    [ $rc = 2 ] || return 1
    "$ckpt" ls "$dir" 20 >/dev/null 2>&1; rc=$?
    [ $rc = 2 ]
}

t_prune() {
    local out
    # Newest complete (by CRC, not by a quick look) is 20: keep it, remove
    # 10; the incomplete 25 and the corrupt 30 stay (above the newest
    # complete one they may be a live writer's).
    out=$("$ckpt" prune "$dir" --keep 1) || return 1
    echo "$out"
    [ ! -e "$dir/step-000000000010" ] && [ -e "$dir/step-000000000020" ] &&
    [ -e "$dir/step-000000000030" ] &&
    echo "$out" | grep -q "^removed 1 checkpoint from" &&
    echo "$out" | grep -q "^step 10: complete (removed)" &&
    echo "$out" | grep -q "^step 30: corrupt: .*shard-000001.rp chunk 1: .*(kept" &&
    echo "$out" | grep -q "^step 25: incomplete: .*shard-000000.rp: missing (kept"
}

t_help_everywhere() {
    local c out
    # Every command takes --help and -h (usage on stdout, exit 0): never
    # taken for a directory.
    for c in ls verify show prune bench; do
        out=$("$ckpt" $c --help) || { echo "$c --help failed"; return 1; }
        [[ $out == "Usage: ringpoint-ckpt $c"* ]] || { echo "$out"; return 1; }
        out=$("$ckpt" $c "$dir" -h) || { echo "$c DIR -h failed"; return 1; }
        [[ $out == "Usage: ringpoint-ckpt $c"* ]] || { echo "$out"; return 1; }
    done
    "$ckpt" --help | grep -q "^Usage: ringpoint-ckpt"
}

t_show_corrupt() {
    local out rc
    # show judges in full: the verdict first, then the manifest; exit 1.
    out=$("$ckpt" show "$dir" 30)
    rc=$?
    echo "$out"
    [ $rc = 1 ] &&
    [[ $(echo "$out" | head -n 1) == "step 30: corrupt: step-000000000030/shard-000001.rp chunk 1: "* ]] &&
    [[ $out == *"step           30"* ]]
}

check "ls on an empty directory" t_ls_empty
check "write three fixtures" t_fixtures
check "ls shows three complete checkpoints" t_ls_complete
check "verify passes good checkpoints" t_verify_good
check "verify names the corrupt shard and chunk" t_verify_names_chunk
check "ls --full shows the corrupt checkpoint and why" t_ls_shows_corrupt
check "verify without STEP walks back to the newest complete" t_verify_default_walks_back
check "a missing shard makes a checkpoint incomplete" t_missing_shard_incomplete
check "show prints the manifest" t_show
check "show of a missing step exits 1" t_show_missing_step
check "show judges in full and names the bad chunk" t_show_corrupt
check "bad arguments exit 2" t_usage_errors
check "prune keeps the newest complete checkpoint" t_prune
check "every command takes --help" t_help_everywhere
echo "1..$n"
exit $failed
