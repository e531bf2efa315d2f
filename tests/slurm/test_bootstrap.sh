#!/usr/bin/env bash
# The first thread end to end: srun --mpi=pmix (and mpirun) start tasks, the
# runtime bootstraps from PMIx, exchanges addresses with its ring
# neighbours, and sees the interval the plugin handed down.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH

# check_ranks OUTPUT SIZE NODES INTERVAL: OUTPUT has SIZE well-formed
# ringpoint-info lines that agree with each other.
check_ranks() {
    local out=$1 size=$2 nodes=$3 interval=$4
    echo "$out"
    echo "$out" | awk -v size="$size" -v nodes="$nodes" -v iv="$interval" '
        function field(name,   i, kv) {
            for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] == name) return substr($i, length(name) + 2) }
            return "MISSING"
        }
        /^rank=/ {
            r = field("rank"); n++
            if (r in node) { print "duplicate rank " r; bad = 1 }
            node[r] = field("node"); right[r] = field("right"); left[r] = field("left")
            lr[r] = field("local_rank"); ls[r] = field("local_size")
            if (field("size") != size) { print "rank " r ": size=" field("size"); bad = 1 }
            if (field("nodes") != nodes) { print "rank " r ": nodes=" field("nodes"); bad = 1 }
            if (field("ckpt_interval") != iv) { print "rank " r ": ckpt_interval=" field("ckpt_interval"); bad = 1 }
            if (field("bootstrap") != "pmix") { print "rank " r ": bootstrap=" field("bootstrap"); bad = 1 }
            job[field("job")] = 1
            names[field("node")] = 1
        }
        END {
            if (n != size) { print "expected " size " ranks, got " n; exit 1 }
            for (r = 0; r < size; r++) {
                if (!(r in node)) { print "rank " r " missing"; bad = 1; continue }
                # The address exchange: what each rank learnt about its
                # neighbours matches what those neighbours say of themselves.
                nr = (r + 1) % size; nl = (r + size - 1) % size
                if (right[r] != nr "@" node[nr]) { print "rank " r ": right=" right[r] ", expected " nr "@" node[nr]; bad = 1 }
                if (left[r] != nl "@" node[nl]) { print "rank " r ": left=" left[r] ", expected " nl "@" node[nl]; bad = 1 }
                if (lr[r] < 0 || lr[r] >= ls[r]) { print "rank " r ": local_rank " lr[r] " of " ls[r]; bad = 1 }
            }
            c = 0; for (j in job) c++
            if (c != 1) { print "ranks disagree on the job id"; bad = 1 }
            c = 0; for (j in names) c++
            if (c != nodes) { print "ranks ran on " c " distinct nodes, expected " nodes; bad = 1 }
            exit bad
        }' || fail "inconsistent ranks"
}

test_info_alone_describes_build() {
    local out
    out=$(env -u PMIX_NAMESPACE ringpoint-info)
    assert_contains "$out" "ringpoint 0."
    assert_contains "$out" "SPANK plugin built against Slurm 22.05"
    assert_contains "$out" "PMIx 4."
    assert_contains "$out" "UCX"
}

test_srun_2_nodes_4_ranks() {
    local out
    out=$(srun --mpi=pmix -N2 --ntasks-per-node=2 --ckpt-interval=10m ringpoint-info)
    check_ranks "$out" 4 2 600
    assert_contains "$out" "node=n1"
    assert_contains "$out" "node=n2"
    assert_contains "$out" "local_size=2"
}

test_srun_uneven_ranks() {
    local out
    out=$(srun --mpi=pmix -N2 -n3 --ckpt-interval=90s ringpoint-info)
    check_ranks "$out" 3 2 90
}

test_srun_one_rank() {
    local out
    out=$(srun --mpi=pmix -N1 -n1 --ckpt-interval=0 ringpoint-info)
    check_ranks "$out" 1 1 0
}

test_srun_collected_exchange() {
    local out
    # The same exchange with all data collected at the fence.
    out=$(RINGPOINT_PMIX_COLLECT=1 srun --mpi=pmix -N2 -n4 --ckpt-interval=1h ringpoint-info)
    check_ranks "$out" 4 2 3600
}

test_srun_same_host_nodes_rendezvous() {
    local out
    # The slurmd "nodes" of this cluster share one host, so UCX reaches
    # them through shared memory: the transport must not take the TCP
    # rendezvous threshold (512k), whose eager 128 KiB ring segments
    # stalled in UCX's shared-memory FIFO (issue 13: a restore's exchange
    # 10x slower). With one rank per node too, and 512k where UCX_TLS
    # leaves TCP alone. Known from PMIx, not guessed from the node names:
    # the ranks of a node, and for a rank alone on its node the host names
    # the ranks traded (n1 and n2 are both this host).
    out=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n4 ringpoint-info 2>&1)
    echo "$out"
    assert_eq "$(echo "$out" | grep -c 'UCX rendezvous from 64k')" 4
    assert_eq "$(echo "$out" | grep 'UCX rendezvous' | grep -c 'peers on this host: yes')" 4
    assert_not_contains "$out" "guessed"
    out=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n2 ringpoint-info 2>&1)
    echo "$out"
    assert_eq "$(echo "$out" | grep -c 'UCX rendezvous from 64k')" 2
    assert_eq "$(echo "$out" | grep -c "runs on this host ($(hostname)) too (host names traded through PMIx)")" 2
    # Uneven: rank 2 alone on n2 learns it from the trade as well.
    out=$(RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n3 ringpoint-info 2>&1)
    echo "$out"
    assert_eq "$(echo "$out" | grep -c 'UCX rendezvous from 64k')" 3
    assert_not_contains "$out" "guessed"
    out=$(UCX_TLS=tcp,self RINGPOINT_LOG_LEVEL=debug srun --mpi=pmix -N2 -n4 \
        ringpoint-info 2>&1)
    echo "$out"
    assert_eq "$(echo "$out" | grep -c 'UCX rendezvous from 512k')" 4
}

test_mpirun_same_host_from_pmix() {
    local out
    # mpirun's PMIx puts both ranks on one node: that settles it, no trade.
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root -np 2 \
        -x RINGPOINT_LOG_LEVEL=debug ringpoint-info 2>&1)
    echo "$out"
    assert_eq "$(echo "$out" | grep -c 'peers on this host: yes (2 ranks on this node (PMIx))')" 2
}

test_srun_without_pmix_is_refused() {
    local out
    if out=$(srun --mpi=none -N2 -n2 ringpoint-info --rank 2>&1); then
        fail "two tasks without PMIx both ran as rank 0 of 1: $out"
    fi
    assert_contains "$out" "--mpi=pmix"
}

test_batch_script_without_srun_is_refused() {
    local dir=$RP_CLUSTER_DIR/work/nosrun out part pydir
    # The trap: sbatch -N2 -n3 whose script runs the program itself. It
    # must fail at start naming srun, in C and in Python (the exception
    # carries the text); on purpose it may run alone; under srun, at 3.
    pydir=$(ls -d "$RP_PREFIX"/lib/python3*/*-packages 2>/dev/null | head -n 1)
    export PYTHONPATH=${pydir}${PYTHONPATH:+:$PYTHONPATH}
    mkdir -p "$dir"
    cat >"$dir/job.sh" <<'SCRIPT'
#!/bin/bash
echo "== alone"
ringpoint-info --rank 2>&1
echo "== alone exit $?"
echo "== python"
/usr/bin/python3 -c '
import ringpoint
try:
    ringpoint.init()
except ringpoint.BootstrapError as exc:
    print("raised:", exc)
else:
    print("ran at size", ringpoint.size())' 2>/dev/null
echo "== allowed"
RINGPOINT_ALLOW_SINGLE=1 ringpoint-info --rank 2>&1
echo "== allowed exit $?"
echo "== srun"
srun --mpi=pmix ringpoint-info 2>&1
echo "== srun exit $?"
SCRIPT
    rm -f "$dir/job.out"
    sbatch --parsable --wait -N2 -n3 --chdir="$dir" -o "$dir/job.out" \
        "$dir/job.sh" >/dev/null || true
    out=$(cat "$dir/job.out")
    echo "$out"
    part() { echo "$out" | sed -n "/^== $1\$/,/^== $1 exit/p"; }
    assert_contains "$(part alone)" "started without srun: Slurm job"
    assert_contains "$(part alone)" "has 3 tasks on 2 nodes"
    assert_contains "$(part alone)" "srun --mpi=pmix"
    assert_contains "$(part alone)" "RINGPOINT_ALLOW_SINGLE=1"
    assert_not_contains "$(part alone)" "rank=0"
    assert_contains "$(part alone)" "== alone exit 1"
    # Python: the reason is in the exception itself (stderr was dropped).
    assert_contains "$out" "raised: ringpoint.init: bootstrap: this process was started without srun"
    assert_not_contains "$out" "ran at size"
    assert_contains "$(part allowed)" " size=1 "
    assert_contains "$(part allowed)" "bootstrap=single"
    assert_contains "$(part allowed)" "== allowed exit 0"
    assert_contains "$(part srun)" "== srun exit 0"
    check_ranks "$(part srun | grep '^rank=')" 3 2 "$(part srun | sed -n 's/.*ckpt_interval=\([0-9]*\).*/\1/p' | head -n 1)"
}

test_mpirun_4_ranks() {
    local out
    # Open MPI's mpirun provides PMIx itself; no Slurm involved.
    out=$(env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 4 \
        -x RINGPOINT_CKPT_INTERVAL=5m ringpoint-info)
    check_ranks "$out" 4 1 300
}

test_installed_api_via_pkg_config() {
    local dir=$RP_CLUSTER_DIR/work/hello out
    mkdir -p "$dir"
    # What an application author does: build against the installed headers
    # and library through pkg-config, then run under srun.
    export PKG_CONFIG_PATH=$RP_PREFIX/lib/pkgconfig
    cc -Wall -Wextra -Werror "$RP_PREFIX/share/ringpoint/examples/hello.c" \
        $(pkg-config --cflags --libs ringpoint) -Wl,-rpath,"$RP_PREFIX/lib" -o "$dir/hello"
    out=$(srun --mpi=pmix -N2 -n2 --ckpt-interval=2m "$dir/hello" | sort)
    assert_contains "$out" "hello from rank 0 of 2 on n1 (checkpoint every 120s)"
    assert_contains "$out" "hello from rank 1 of 2 on n2 (checkpoint every 120s)"
}

run_all
