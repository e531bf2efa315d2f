#!/usr/bin/env bash
# The collectives on the real local cluster: every dtype x op x size x
# placement of allreduce, broadcast, allgather and barrier, checked exactly
# and for identical bits on every rank (ringpoint-coll-check), at 1 to 5
# ranks over 2 nodes and under mpirun; the same hash from two runs; and a
# rank killed mid-run makes the others fail fast, naming it. Every run also
# checks the non-blocking collectives (bitwise equal to the blocking ones,
# several outstanding, completed in call order, progressing while the
# application sleeps) and fp16/bf16 wire compression (within tolerance,
# identical on every rank); their bits are part of the run's hash.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-coll-check

# check_ok OUTPUT SIZE: the checker at SIZE ranks found nothing wrong.
check_ok() {
    local out=$1 size=$2
    echo "$out"
    assert_contains "$out" "coll-check: ok size=$size errors=0"
}

# hash_of OUTPUT: the hash of every result of that run.
hash_of() {
    echo "$1" | sed -n 's/.*coll-check: ok .* hash=\([0-9a-f]*\).*/\1/p'
}

test_coll_one_rank() {
    check_ok "$(srun --mpi=pmix -N1 -n1 "$CHECK" 2>&1)" 1
}

test_coll_two_ranks_two_nodes() {
    check_ok "$(srun --mpi=pmix -N2 -n2 "$CHECK" 2>&1)" 2
}

test_coll_three_ranks() {
    check_ok "$(srun --mpi=pmix -N2 -n3 "$CHECK" 2>&1)" 3
}

test_coll_four_ranks() {
    check_ok "$(srun --mpi=pmix -N2 -n4 "$CHECK" 2>&1)" 4
}

test_coll_five_ranks() {
    check_ok "$(srun --mpi=pmix -N2 -n5 --overcommit "$CHECK" 2>&1)" 5
}

# Each algorithm on its own, whatever the size (the same bits: one
# expression), and tiny segments so the pipelines run with thousands of
# messages per step.
test_coll_forced_algorithms() {
    local a b
    a=$(RINGPOINT_ALLREDUCE_ALGO=ring srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$a" 3
    b=$(RINGPOINT_ALLREDUCE_ALGO=rd srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$b" 3
    assert_eq "$(hash_of "$a")" "$(hash_of "$b")" "hash with RINGPOINT_ALLREDUCE_ALGO=ring and rd"
    b=$(RINGPOINT_ALLREDUCE_ALGO=rh srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$b" 3
    assert_eq "$(hash_of "$a")" "$(hash_of "$b")" "hash with RINGPOINT_ALLREDUCE_ALGO=ring and rh"
    check_ok "$(RINGPOINT_ALLREDUCE_ALGO=rd srun --mpi=pmix -N2 -n4 "$CHECK" -q 2>&1)" 4
    check_ok "$(RINGPOINT_COLL_SEGMENT=64 srun --mpi=pmix -N2 -n4 "$CHECK" -q 2>&1)" 4
}

# RINGPOINT_COMPRESSION is the default of float32 grouped allreduces (the
# checker compares it with the explicit option), never of other types; two
# runs give the same bits; a bad value fails rp_init with a clear message.
test_coll_compression_from_environment() {
    local a b out
    a=$(RINGPOINT_COMPRESSION=bf16 srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$a" 3
    b=$(RINGPOINT_COMPRESSION=bf16 srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$b" 3
    assert_eq "$(hash_of "$b")" "$(hash_of "$a")" "hash of the second compressed run"
    out=$(RINGPOINT_COMPRESSION=fp8 srun --mpi=pmix -N1 -n1 "$CHECK" -q 2>&1) && fail "fp8 accepted"
    echo "$out"
    assert_contains "$out" "RINGPOINT_COMPRESSION='fp8': expected none, fp16 or bf16"
}

# killed_rank2_reported OUTPUT: rank 2 SIGKILLed itself inside a stream of
# allreduces (coll-check -k 2). Every survivor that reports returns 'peer
# failed' (Slurm may kill one right after, so two of the three suffice),
# rank 2 is named as the lost one (by its pid, its broken connection or a
# survivor's notice, whichever comes first), no live rank is blamed,
# nothing reads as an argument mismatch, and rank 2 itself never returns:
# it died in the collective, it did not take a live peer for dead.
killed_rank2_reported() {
    local out=$1
    echo "$out"
    [ "$(echo "$out" | grep -c "coll-check: rank [013]: allreduce returned 'peer failed'")" -ge 2 ] ||
        fail "fewer than 2 survivors reported 'peer failed'"
    if echo "$out" | grep "allreduce returned '" | grep -v "returned 'peer failed'"; then
        fail "a survivor returned another status than 'peer failed'"
    fi
    echo "$out" | grep -Eq "rank 2 (failed|\(pid [0-9]+ on this (node|host)\) has exited)|connection to rank 2 " ||
        fail "the survivors did not name the killed rank 2"
    if echo "$out" | grep -E "rank [013] (failed|\(pid [0-9]+ on this node\))"; then
        fail "a live rank was reported as failed"
    fi
    assert_not_contains "$out" "different arguments"
    assert_not_contains "$out" "coll-check: rank 2: allreduce returned" "the killed rank's output"
}

# All ranks on one node: the collectives go through the node's shared
# segment (the log says so), and above RINGPOINT_COLL_SHM_MAX through
# single-copy reads of the peers' buffers (process_vm_readv), with the
# transport's bits: the same hash as with the segment off, as with the
# switch to the single-copy path moved into the checked sizes (4 KiB), as
# with that path off there too (the transport above 4 KiB), and as on two
# nodes, where both stay off. With every checked size through the segment
# (up to 8 MiB, so several 1 MiB slots per call), or with the default
# switches (2 ranks: broadcast and allgather single-copy above theirs,
# allreduce too), the bits are the transport's too. A rank killed on that
# node is named by the others, on either path and from another pid
# namespace; bad settings are refused.
test_coll_shared_segment() {
    local a b c d e f g h s out max
    a=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N1 -n3 --overcommit "$CHECK" -q 2>&1); check_ok "$a" 3
    assert_contains "$a" "coll: shared segment of"
    assert_contains "$a" "single-copy reads of the peers' buffers"
    b=$(RINGPOINT_COLL_SHM=0 srun --mpi=pmix -N1 -n3 --overcommit "$CHECK" -q 2>&1); check_ok "$b" 3
    c=$(RINGPOINT_COLL_SHM_MAX=4096 srun --mpi=pmix -N1 -n3 --overcommit "$CHECK" -q 2>&1); check_ok "$c" 3
    h=$(RINGPOINT_COLL_SHM_MAX=4096 RINGPOINT_COLL_CMA=0 srun --mpi=pmix -N1 -n3 --overcommit "$CHECK" -q 2>&1); check_ok "$h" 3
    d=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$d" 3
    assert_contains "$d" "no shared segment (ranks on several nodes)"
    assert_eq "$(hash_of "$b")" "$(hash_of "$a")" "hash with the segment off"
    assert_eq "$(hash_of "$c")" "$(hash_of "$a")" "hash with RINGPOINT_COLL_SHM_MAX=4096"
    assert_eq "$(hash_of "$h")" "$(hash_of "$a")" "hash with RINGPOINT_COLL_SHM_MAX=4096 RINGPOINT_COLL_CMA=0"
    assert_eq "$(hash_of "$d")" "$(hash_of "$a")" "hash on two nodes"
    # Told the ranks have cores of their own, a single-copy broadcast's
    # root writes its share into every reader's buffer while they read the
    # rest (shm_cma.c): every broadcast from every root still exact.
    o=$(RINGPOINT_LOG_LEVEL=info RINGPOINT_COLL_OVERSUBSCRIBED=0 RINGPOINT_COLL_SHM_MAX=4096 \
        srun --mpi=pmix -N1 -n3 --overcommit "$CHECK" -q 2>&1); check_ok "$o" 3
    assert_not_contains "$o" "waits poll with sched_yield"
    assert_eq "$(hash_of "$o")" "$(hash_of "$a")" "hash with the broadcast's root writing its share"
    o=$(RINGPOINT_LOG_LEVEL=info RINGPOINT_COLL_OVERSUBSCRIBED=1 srun --mpi=pmix -N1 -n2 "$CHECK" -q 2>&1)
    check_ok "$o" 2
    assert_contains "$o" "(RINGPOINT_COLL_OVERSUBSCRIBED=1): waits poll with sched_yield"
    # Every wait goes to sleep on the futex at once (no polling), so every
    # one runs the sleeper's side of the post/sleep pairing (plain-store
    # posts, the sleeper's membarrier: shm.c): the same bits, no hang.
    s=$(RINGPOINT_COLL_SPIN_US=0 srun --mpi=pmix -N1 -n3 --overcommit "$CHECK" -q 2>&1); check_ok "$s" 3
    assert_eq "$(hash_of "$s")" "$(hash_of "$a")" "hash with every wait asleep (RINGPOINT_COLL_SPIN_US=0)"
    e=$(RINGPOINT_COLL_SHM_MAX=16777216 srun --mpi=pmix -N1 -n2 "$CHECK" 2>&1); check_ok "$e" 2
    f=$(RINGPOINT_COLL_SHM=0 srun --mpi=pmix -N1 -n2 "$CHECK" 2>&1); check_ok "$f" 2
    g=$(srun --mpi=pmix -N1 -n2 "$CHECK" 2>&1); check_ok "$g" 2
    assert_eq "$(hash_of "$e")" "$(hash_of "$f")" "hash with every size through the segment"
    assert_eq "$(hash_of "$g")" "$(hash_of "$f")" "hash with the default switches"
    # Rank 2 killed in a stream of 1 MiB allreduces: single-copy with the
    # limit at 0, through the segment's slots with it at 4 MiB (as by
    # default for 4 ranks on a node's 1-2 CPUs: oversubscribed); then,
    # through the slots, with rank 2 in a pid namespace of its own (ranks
    # of one node in separate containers), where its pid means nothing to
    # the others, who learn of its loss from the transport.
    for max in 0 4194304; do
        killed_rank2_reported "$(RINGPOINT_COLL_SHM_MAX=$max RINGPOINT_COLL_TIMEOUT=20s \
            srun --mpi=pmix -N1 -n4 --overcommit --kill-on-bad-exit=0 "$CHECK" -k 2 -t 1500 2>&1)"
    done
    if srun -N1 -n1 unshare --pid --fork true >/dev/null 2>&1; then
        killed_rank2_reported "$(RINGPOINT_COLL_SHM_MAX=4194304 RINGPOINT_COLL_TIMEOUT=20s \
            srun --mpi=pmix -N1 -n4 --overcommit --kill-on-bad-exit=0 bash -c \
            'if [ "$SLURM_PROCID" = 2 ]; then exec unshare --pid --fork bash -c "$0 $*; true"; fi; exec "$0" "$@"' \
            "$CHECK" -k 2 -t 1500 2>&1)"
    else
        echo "# skipped the pid namespace case: unshare --pid fails on the node"
    fi
    out=$(RINGPOINT_COLL_SHM=yes srun --mpi=pmix -N1 -n1 "$CHECK" -q 2>&1) && fail "RINGPOINT_COLL_SHM=yes accepted"
    echo "$out"
    assert_contains "$out" "RINGPOINT_COLL_SHM='yes': expected 1"
    out=$(RINGPOINT_COLL_CMA=on srun --mpi=pmix -N1 -n2 "$CHECK" -q 2>&1) && fail "RINGPOINT_COLL_CMA=on accepted"
    echo "$out"
    assert_contains "$out" "RINGPOINT_COLL_CMA='on': expected 1"
    out=$(RINGPOINT_COLL_OVERSUBSCRIBED=yes srun --mpi=pmix -N1 -n2 "$CHECK" -q 2>&1) &&
        fail "RINGPOINT_COLL_OVERSUBSCRIBED=yes accepted"
    echo "$out"
    assert_contains "$out" "RINGPOINT_COLL_OVERSUBSCRIBED='yes': expected auto, 1 or 0"
}

# The hierarchy across nodes (coll/hier.h), 2 ranks on each of 2 nodes and
# 3 ranks on 2: by default (auto) it is set up and its bits are the flat
# paths' (the same hash as with RINGPOINT_COLL_HIER=0); forced on for
# every allreduce and broadcast, every dtype x op is still exact and every
# rank has the same bits (the checker's own checks), run to run; a bad
# value is refused.
test_coll_hierarchy() {
    local a b c d e f out
    a=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$CHECK" -q 2>&1); check_ok "$a" 4
    assert_contains "$a" "coll: hierarchy of 2 nodes"
    assert_contains "$a" "every allreduce (an aligned layout)"
    b=$(RINGPOINT_COLL_HIER=0 RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$CHECK" -q 2>&1); check_ok "$b" 4
    assert_not_contains "$b" "coll: hierarchy of"
    assert_eq "$(hash_of "$a")" "$(hash_of "$b")" "hash with the hierarchy (auto) and without"
    c=$(RINGPOINT_COLL_HIER=1 srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$CHECK" -q 2>&1); check_ok "$c" 4
    d=$(RINGPOINT_COLL_HIER=1 srun --mpi=pmix -N2 -n4 --ntasks-per-node=2 "$CHECK" -q 2>&1); check_ok "$d" 4
    assert_eq "$(hash_of "$d")" "$(hash_of "$c")" "hash of the second forced run"
    e=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$e" 3
    assert_contains "$e" "coll: hierarchy of 2 nodes"
    f=$(RINGPOINT_COLL_HIER=1 srun --mpi=pmix -N2 -n3 "$CHECK" -q 2>&1); check_ok "$f" 3
    out=$(RINGPOINT_COLL_HIER=yes srun --mpi=pmix -N2 -n2 "$CHECK" -q 2>&1) && fail "RINGPOINT_COLL_HIER=yes accepted"
    echo "$out"
    assert_contains "$out" "RINGPOINT_COLL_HIER='yes': expected auto"
}

# Bits independent of layout (coll_check_layout.c): at 2, 3, 4 and 5 ranks,
# on every path (the node's segment, single-copy reads, the transport's
# three algorithms, the hierarchy on an aligned layout, small segments),
# every placement of the same elements (offsets, lengths, groupings, in
# place, non-blocking) equals the expression evaluated one element at a
# time; and every path gives one hash per world size.
test_coll_layout_independent() {
    local n nodes env out h ref
    for n in 2 3 4 5; do
        ref=
        while read -r nodes env; do
            out=$(env $env srun --mpi=pmix -N"$nodes" -n"$n" --overcommit "$CHECK" -l 2>&1 </dev/null)
            check_ok "$out" "$n"
            assert_contains "$out" "coll-check: layout: 80 placements"
            h=$(hash_of "$out")
            ref=${ref:-$h}
            assert_eq "$h" "$ref" "layout hash at $n ranks on $nodes node(s) with ${env:-the defaults}"
        done <<'PATHS'
1 RINGPOINT_LOG_LEVEL=warn
1 RINGPOINT_COLL_SHM_MAX=4096
1 RINGPOINT_COLL_SHM_MAX=4096 RINGPOINT_COLL_CMA=0
1 RINGPOINT_COLL_SHM_MAX=16777216
1 RINGPOINT_COLL_SHM=0 RINGPOINT_ALLREDUCE_ALGO=ring
1 RINGPOINT_COLL_SHM=0 RINGPOINT_ALLREDUCE_ALGO=rd
1 RINGPOINT_COLL_SHM=0 RINGPOINT_ALLREDUCE_ALGO=rh
2 RINGPOINT_LOG_LEVEL=warn
2 RINGPOINT_COLL_HIER=0 RINGPOINT_COLL_SEGMENT=4096
PATHS
    done
}

test_coll_mpirun_oversubscribed() {
    check_ok "$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe \
        -np 3 "$CHECK" 2>&1)" 3
}

# Determinism: the same world size and input give the same bits run to run,
# whatever the launcher, node layout and segment size.
test_coll_same_hash_twice() {
    local a b c d
    a=$(srun --mpi=pmix -N2 -n4 "$CHECK" 2>&1); check_ok "$a" 4
    b=$(srun --mpi=pmix -N2 -n4 "$CHECK" 2>&1); check_ok "$b" 4
    c=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 4 "$CHECK" 2>&1); check_ok "$c" 4
    d=$(RINGPOINT_COLL_SEGMENT=4096 srun --mpi=pmix -N1 -n4 --overcommit "$CHECK" 2>&1); check_ok "$d" 4
    assert_eq "$(hash_of "$b")" "$(hash_of "$a")" "hash of the second run"
    assert_eq "$(hash_of "$c")" "$(hash_of "$a")" "hash under mpirun"
    assert_eq "$(hash_of "$d")" "$(hash_of "$a")" "hash on one node, small segments"
}

# A rank SIGKILLed in the middle of a stream of allreduces: every other rank
# returns an error naming it, well within the timeout, and nobody hangs.
test_coll_killed_peer_fails_fast() {
    local out start elapsed
    start=$(date +%s)
    out=$(RINGPOINT_COLL_TIMEOUT=20s srun --mpi=pmix -N2 -n4 --kill-on-bad-exit=0 \
        "$CHECK" -k 2 -t 1500 2>&1) || true
    elapsed=$(( $(date +%s) - start ))
    echo "$out"
    echo "elapsed ${elapsed}s"
    # Slurm's PMIx plugin aborts the step soon after a task dies, so a
    # survivor may be killed (and its last line lost) right after it
    # failed: require most survivors to have reported, none to have hung.
    [ "$(echo "$out" | grep -c "coll-check: rank [013]: allreduce returned 'peer failed'")" -ge 2 ] ||
        fail "fewer than 2 survivors reported 'peer failed'"
    assert_contains "$out" "rank 2 failed"
    [ "$elapsed" -lt 20 ] || fail "the survivors took ${elapsed}s to fail"
}

# A rank that stops answering (stopped, not dead) is caught by the timeout.
test_coll_silent_peer_times_out() {
    local out start elapsed
    start=$(date +%s)
    out=$(RINGPOINT_COLL_TIMEOUT=3s srun --mpi=pmix -N2 -n3 --kill-on-bad-exit=0 \
        bash -c 'if [ "$SLURM_PROCID" = 1 ]; then (sleep 2; kill -STOP $$; sleep 8; kill -KILL $$) & fi; exec "$0" -k 99' "$CHECK" 2>&1) || true
    elapsed=$(( $(date +%s) - start ))
    echo "$out"
    echo "elapsed ${elapsed}s"
    assert_contains "$out" "coll-check: rank 0: allreduce returned"
    assert_contains "$out" "coll-check: rank 2: allreduce returned"
    assert_contains "$out" "rank 1"
    [ "$elapsed" -lt 30 ] || fail "the survivors took ${elapsed}s to fail"
}

run_all
