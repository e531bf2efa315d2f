#!/usr/bin/env bash
# The Python package's own tests (python/tests: ringpoint and
# ringpoint.torch against single-process references, DistributedOptimizer
# and the DDP comm hook against full-batch and gloo training, the bad
# calls' errors), run with pytest on every rank of a job: with no launcher,
# under mpirun at 2, 3 and 5 ranks (5: a subset), and under srun
# --mpi=pmix on 2 nodes of the local cluster. Each rank writes a JUnit
# file; a test counts as passed only when it passed on every rank, and
# each (launcher, test) is one result line; so is each launch (every rank
# reported, nothing failed).
. "$(dirname "$0")/../lib/harness.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
export PATH=$RP_PREFIX/bin:$PATH
export PY=/usr/bin/python3
# A copy the cluster's nodes can read: each slurmd has a /tmp of its own,
# and the source tree may be under /tmp.
export TESTS=$RP_CLUSTER_DIR/work/python-tests
# Checkpoint directories every rank of a job across nodes can write
# (python/tests/test_checkpoint.py's fixture).
export RP_SHARED_TMP=$RP_CLUSTER_DIR/work/python-shared
rm -rf "$TESTS"
mkdir -p "$(dirname "$TESTS")"
cp -r "$top/python/tests" "$TESTS"
# The package as make install put it (scripts/test.sh says where:
# RP_PYTHONDIR), else under RP_PREFIX; /usr/local's is on $PY's path anyway.
for d in ${RP_PYTHONDIR:-} "$RP_PREFIX"/lib/python3*/*-packages; do
    if [ -d "$d/ringpoint" ]; then
        export PYTHONPATH=$d${PYTHONPATH:+:$PYTHONPATH}
        break
    fi
done
# A peer that is gone fails a collective in 30 s, not 5 minutes; whatever
# still hangs is killed at LAUNCH_TIMEOUT (a launch takes 5-25 s here), so
# that five hung launches cost CI under 15 minutes.
export RINGPOINT_COLL_TIMEOUT=30s
export LAUNCH_TIMEOUT=${RP_PY_LAUNCH_TIMEOUT:-150}
RP_TEST_TIMEOUT=$((LAUNCH_TIMEOUT + 60))
# No __pycache__ in the source tree (it would end up in make dist).
export PYTHONDONTWRITEBYTECODE=1
export RP_RESULTS RP_TEST_LOGDIR
export PYLOGS=$RP_TEST_LOGDIR/python
mkdir -p "$PYLOGS"

have_python_deps() {
    if ! $PY -c 'import pytest, numpy, torch, ringpoint.torch' 2>/dev/null; then
        echo "skipped: $PY cannot import pytest, numpy, torch and ringpoint.torch" \
            "(scripts/deps.sh; make install)"
        $PY -c 'import ringpoint.torch' 2>&1 | tail -n 3
        return 1
    fi
    echo "package: $($PY -c 'import ringpoint; print(ringpoint.__file__, ringpoint.library_version())')"
}

# pytest_ranks LABEL NRANKS LAUNCHER... -- PYTEST_ARGS...: run pytest on
# every rank of LAUNCHER (none for a single process), each rank writing
# $PYLOGS/LABEL/rankN.{xml,log}; then count the results.
pytest_ranks() {
    local label=$1 n=$2 dir=$PYLOGS/$1 launcher=() rc=0
    shift 2
    while [ "$1" != -- ]; do launcher+=("$1"); shift; done
    shift
    rm -rf "$dir"
    mkdir -p "$dir"
    # The rank as the launcher tells it (PMIx under both; Slurm's and Open
    # MPI's names as fallbacks), read by each rank's own shell.
    # shellcheck disable=SC2016
    local cmd='r=${PMIX_RANK:-${SLURM_PROCID:-${OMPI_COMM_WORLD_RANK:-0}}}
export RP_PYTEST_PROGRESS=$0/rank$r.progress
cd "$TESTS" && exec "$PY" -m pytest -p no:cacheprovider -q -rfE \
    -o faulthandler_timeout=120 --junitxml="$0/rank$r.xml" "$@" >"$0/rank$r.log" 2>&1'
    timeout --kill-after=10 "$LAUNCH_TIMEOUT" "${launcher[@]}" \
        bash -c "$cmd" "$dir" "$@" || rc=$?
    [ $rc -eq 124 ] && echo "FAIL: $label killed after ${LAUNCH_TIMEOUT}s"
    count_results "$label" "$n" "$dir" || return 1
    # A launch that passed every test yet failed (e.g. at exit) fails too.
    [ $rc -eq 0 ] || fail "$label: the launch exited $rc"
}

# count_results LABEL NRANKS DIR: one line per test in $RP_RESULTS ("pass"
# when it passed on all NRANKS ranks; skipped everywhere: no line); fails
# when a test failed or a rank did not report.
count_results() {
    "$PY" - "$@" <<'EOF' >>"$RP_RESULTS"
import os
import sys
import xml.etree.ElementTree as ET

label, nranks, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
outcomes = {}          # test id -> [outcome per rank that reported it]
order = []
reported = 0
for r in range(nranks):
    path = os.path.join(d, "rank%d.xml" % r)
    mine = {}
    try:
        for case in ET.parse(path).iter("testcase"):
            tid = "%s.py::%s" % (case.get("classname", "").replace(".", "/"), case.get("name"))
            if case.find("failure") is not None or case.find("error") is not None:
                mine[tid] = "fail"
            elif case.find("skipped") is not None:
                mine[tid] = "skip"
            else:
                mine[tid] = "pass"
        reported += 1
    except (OSError, ET.ParseError) as exc:
        # Killed (a hang): what it finished, from its running record.
        print("rank %d wrote no JUnit file (%s); its log:" % (r, exc), file=sys.stderr)
        try:
            with open(os.path.join(d, "rank%d.log" % r)) as f:
                sys.stderr.write("".join(f.readlines()[-30:]))
            with open(os.path.join(d, "rank%d.progress" % r)) as f:
                for line in f:
                    outcome, tid = line.rstrip("\n").split(" ", 1)
                    if mine.get(tid) != "fail" and not (outcome == "skip" and tid in mine):
                        mine[tid] = outcome
        except OSError:
            pass
    for tid, outcome in mine.items():
        if tid not in outcomes:
            outcomes[tid] = []
            order.append(tid)
        outcomes[tid].append(outcome if outcome != "fail" else "fail@%d" % r)
failed = 0
for tid in order:
    got = outcomes[tid]
    if all(o == "skip" for o in got) and len(got) == nranks:
        print("skipped: python[%s] %s" % (label, tid), file=sys.stderr)
        continue
    ok = len(got) == nranks and not any(o.startswith("fail") for o in got)
    print("%s python[%s]/%s" % ("pass" if ok else "fail", label, tid))
    if not ok:
        failed += 1
        bad = [o[5:] for o in got if o.startswith("fail")]
        print("FAIL: %s: %s" % (tid, "failed on rank " + ",".join(bad) if bad
                                 else "not run on every rank"), file=sys.stderr)
if not order:
    print("fail python[%s]/no-tests-ran" % label)
print("%s: %d tests, %d failed, %d of %d ranks reported"
      % (label, len(order), failed, reported, nranks), file=sys.stderr)
sys.exit(1 if failed or not order or reported != nranks else 0)
EOF
}

# The first failure's details, from the rank logs (the harness shows the
# tail of this test's log).
show_failures() {
    grep -h -E '^(FAILED|ERROR) ' "$PYLOGS/$1"/rank*.log 2>/dev/null | sort | uniq -c | head -n 20
}

# (A string, split where used: the tests run in shells that inherit only
# exported variables and functions.)
export PYTHONPATH=${PYTHONPATH:-}
export MPIRUN="env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe
    -x PYTHONPATH -x RINGPOINT_COLL_TIMEOUT -x PYTHONDONTWRITEBYTECODE -x PY -x TESTS"

test_python_single_process() {
    have_python_deps || return 0
    pytest_ranks single 1 -- . || { show_failures single; return 1; }
}

test_python_mpirun_np2() {
    have_python_deps || return 0
    pytest_ranks mpirun-np2 2 $MPIRUN -np 2 -- . || { show_failures mpirun-np2; return 1; }
}

test_python_mpirun_np3() {
    have_python_deps || return 0
    pytest_ranks mpirun-np3 3 $MPIRUN -np 3 -- . || { show_failures mpirun-np3; return 1; }
}

# 5 ranks on this machine's cores: the collectives and training only.
test_python_mpirun_np5() {
    have_python_deps || return 0
    pytest_ranks mpirun-np5 5 $MPIRUN -np 5 -- test_collectives.py test_training.py ||
        { show_failures mpirun-np5; return 1; }
}

test_python_srun_n3_two_nodes() {
    have_python_deps || return 0
    pytest_ranks srun-N2-n3 3 srun --mpi=pmix -N2 -n3 -- . || { show_failures srun-N2-n3; return 1; }
}

run_all
