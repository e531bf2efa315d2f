#!/usr/bin/env bash
# A rank that forks after rp_init (a DataLoader worker, a helper command):
# ringpoint-fork-check (tests/slurm/fork_check.c) forks a child that
# works and exits, one while a non-blocking allreduce is in flight, one
# that execs a shell, and ones ended by SIGTERM and SIGUSR2; the children
# must be refused every collective and checkpoint (not run them over the
# parent's connections), have none of the library's threads, finalize
# nothing, inherit none of rp_init's sockets across exec, and die of the
# stop signals; the ranks then train on and checkpoint without a word of
# error. Under srun (3 ranks on 2 nodes) and mpirun (3 ranks over TCP).
# Before the fork guard: the children of two ranks ran an allreduce
# together over their parents' channels, wrote a checkpoint, crashed in
# UCX at rp_finalize, and ignored SIGTERM. The Python side (DataLoader
# workers, os.fork) is python/tests/test_fork.py. About 25 s.
. "$(dirname "$0")/../lib/harness.sh"

export CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-fork-check
export RP_WORK=$RP_CLUSTER_DIR/work/fork

# check_output OUT: the verdict, and no error but the children's refusals.
check_output() {
    echo "$1"
    assert_contains "$1" "fork-check: ok"
    assert_not_contains "$(grep -v 'was forked from rank process' <<<"$1")" "error"
    assert_contains "$1" "rp_allreduce: this process (pid"
}

test_fork_under_srun() {
    local out
    rm -rf "$RP_WORK/srun"
    mkdir -p "$RP_WORK/srun"
    out=$(RINGPOINT_COLL_TIMEOUT=30s srun -N2 -n3 -t 3 --chdir="$RP_WORK" --ckpt-dir="$RP_WORK/srun" \
        --ckpt-interval=0 "$CHECK" 2>&1)
    check_output "$out"
    [ ! -e "$RP_WORK/srun/step-000000000002" ] || fail "a child wrote a checkpoint"
    ringpoint-ckpt verify "$RP_WORK/srun" 4
}

test_fork_under_mpirun_tcp() {
    local out
    rm -rf "$RP_WORK/mpirun"
    mkdir -p "$RP_WORK/mpirun"
    out=$(env -u SLURM_CONF RINGPOINT_COLL_TIMEOUT=30s timeout 120 mpirun \
        --allow-run-as-root --oversubscribe -np 3 -x UCX_TLS=tcp,self \
        -x RINGPOINT_CKPT_DIR="$RP_WORK/mpirun" -x RINGPOINT_COLL_TIMEOUT "$CHECK" 2>&1)
    check_output "$out"
    [ ! -e "$RP_WORK/mpirun/step-000000000002" ] || fail "a child wrote a checkpoint"
}

# The TCP stall of the in-flight case (issue 15): a bridge with an address
# exists when the job starts and is removed while it runs, as other
# sessions' emulated hosts (scripts/cluster.sh's 10.x.y.254) come and go
# on this machine. UCX 1.13 spread the ranks' connections over it too, and
# every rank then waited for its neighbour until the timeout (3 of 3 runs
# stalled; both stalls caught in the loops, a fork-check and a run without
# forks, had all their stuck bytes on a vanished 10.65.178.254). The
# transport leaves bridges out of UCX's devices (transport/ucx.c); with
# UCX_NET_DEVICES=all (UCX's own default, which the library keeps) this
# test fails as before. Needs CAP_NET_ADMIN; about 5 s.
test_fork_tcp_bridge_removed_mid_job() {
    local out rc br=rpfk$$ net=10.254.$(($$ % 250))
    rm -rf "$RP_WORK/bridge"
    mkdir -p "$RP_WORK/bridge"
    ip link add "$br" type bridge 2>/dev/null || {
        echo "skipped: cannot create a bridge (CAP_NET_ADMIN?)"
        return 0
    }
    ip addr add "$net.254/24" dev "$br" && ip link set "$br" up ||
        { ip link del "$br"; fail "cannot bring $br up"; return 1; }
    env -u SLURM_CONF RINGPOINT_COLL_TIMEOUT=10s timeout 120 mpirun \
        --allow-run-as-root --oversubscribe -np 3 -x UCX_TLS=tcp,self \
        -x RINGPOINT_CKPT_DIR="$RP_WORK/bridge" -x RINGPOINT_COLL_TIMEOUT \
        ${UCX_NET_DEVICES:+-x UCX_NET_DEVICES} \
        "$CHECK" >"$RP_WORK/bridge.out" 2>&1 &
    local pid=$!
    sleep 2
    ip link del "$br"
    rc=0
    wait $pid || rc=$?
    out=$(cat "$RP_WORK/bridge.out")
    echo "$out"
    [ $rc -eq 0 ] || fail "exit status $rc"
    check_output "$out"
}

# rp_finalize with an rp_iallreduce and an rp_ibarrier not waited for: the
# queued collectives run first and their results are there, and the
# finalize's barrier waits for them (it drove the UCX worker beside the
# progress thread, and UCX aborted every rank, 5 of 5 runs). Over TCP, as
# the in-flight case above; 3 runs, about 1 s each.
test_finalize_with_requests_pending_mpirun_tcp() {
    local out i
    for i in 1 2 3; do
        out=$(env -u SLURM_CONF RINGPOINT_COLL_TIMEOUT=30s timeout 60 mpirun \
            --allow-run-as-root --oversubscribe -np 3 -x UCX_TLS=tcp,self \
            -x RINGPOINT_COLL_TIMEOUT \
            "$RP_PREFIX/libexec/ringpoint/ringpoint-finalize-check" 2>&1) ||
            fail "run $i: $out"
        echo "$out"
        assert_contains "$out" "finalize-check: ok"
        assert_not_contains "$out" "Assertion"
        assert_not_contains "$out" "error"
    done
}

export PATH=$RP_PREFIX/bin:$PATH
run_all
