#!/usr/bin/env bash
# Build ringpoint, run every test, and print one line "N passed, N failed".
#
#   scripts/test.sh [PATTERN]
#
# 1. a build with AddressSanitizer + UBSan and -Werror, and the unit tests
#    (make check) in it, which replay the fuzz corpora; with clang, the fuzz
#    targets a few seconds each (scripts/fuzz.sh, RP_TEST_FUZZ_SECONDS);
# 2. a release build with -Werror, installed (make install), and make
#    distcheck;
# 3. a real local Slurm cluster (scripts/cluster.sh) with the installed
#    plugin, and the integration tests in tests/slurm/ (those whose file
#    name matches PATTERN, default all);
# 4. the cluster torn down again.
# Run as root on Debian 12 after scripts/deps.sh. Environment:
#   RP_TEST_DISTCHECK=0   skip make distcheck (saves a few minutes)
#   RP_TEST_PREFIX=DIR    install into DIR (plugin into DIR/lib/slurm)
#                         instead of /usr/local and Slurm's plugin directory
#   RP_CLUSTER_DIR        where the cluster keeps its state
set -uo pipefail

install_args=()
if [ -n "${RP_TEST_PREFIX:-}" ]; then
    install_args=(--prefix="$RP_TEST_PREFIX" --with-slurm-plugindir="$RP_TEST_PREFIX/lib/slurm")
fi

top=$(cd "$(dirname "$0")/.." && pwd)
pattern=${1:-}
export RP_CLUSTER_DIR=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}
export RP_TEST_LOGDIR=$RP_CLUSTER_DIR/test-logs
export RP_RESULTS=$RP_TEST_LOGDIR/results
rm -rf "$RP_TEST_LOGDIR"
mkdir -p "$RP_TEST_LOGDIR"
: >"$RP_RESULTS"
t0=$(date +%s)

say() { printf '\n== %s (%ss)\n' "$*" $(( $(date +%s) - t0 )); }
record() { # record pass|fail NAME
    echo "$1 $2" >>"$RP_RESULTS"
    if [ "$1" = pass ]; then echo "ok - $2"; else echo "not ok - $2"; fi
}
summary() {
    local passed failed
    passed=$(grep -c '^pass ' "$RP_RESULTS" || true)
    failed=$(grep -c '^fail ' "$RP_RESULTS" || true)
    printf '\n== finished in %ss; logs in %s\n' $(( $(date +%s) - t0 )) "$RP_TEST_LOGDIR"
    grep '^fail ' "$RP_RESULTS" | sed 's/^fail /failed: /'
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
}

# ---- 1. sanitizer build and unit tests
say "build with sanitizers"
if "$top/scripts/build.sh" "$top/build-asan" --enable-sanitizers --enable-werror; then
    record pass build-sanitizers
    say "unit tests (make check, ASan + UBSan)"
    make -C "$top/build-asan" -j"$(nproc)" check >"$RP_TEST_LOGDIR/unit.log" 2>&1
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' "$RP_TEST_LOGDIR/unit.log" |
        sed -E 's/^PASS: /ok - unit: /; s/^(FAIL|ERROR|XPASS): /not ok - unit: /; s/^SKIP: /ok - unit (skipped): /'
    # Each cmocka case is one result; the TAP driver totals them.
    read -r upass ufail <<<"$(awk '/^# PASS:/{p=$3} /^# (FAIL|ERROR|XPASS):/{f+=$3} END{print p+0, f+0}' \
        "$RP_TEST_LOGDIR/unit.log")"
    for _ in $(seq 1 "$upass"); do echo "pass unit" >>"$RP_RESULTS"; done
    for _ in $(seq 1 "$ufail"); do echo "fail unit" >>"$RP_RESULTS"; done
    if [ "$upass" -eq 0 ] && [ "$ufail" -eq 0 ]; then
        tail -n 30 "$RP_TEST_LOGDIR/unit.log"
        record fail unit-tests-ran
    fi
else
    record fail build-sanitizers
fi

# ---- 1b. the fuzz targets, a few seconds each from their corpus (clang)
# Off unless asked for: a random search in CI fails at random when it finds
# something (it did: issue 15's notes); make check replays the corpora.
if [ -n "${RP_TEST_FUZZ_SECONDS:-}" ] && command -v clang >/dev/null 2>&1; then
    say "fuzz targets (libFuzzer, ${RP_TEST_FUZZ_SECONDS}s each)"
    "$top/scripts/fuzz.sh" -t "${RP_TEST_FUZZ_SECONDS:-3}" -b "$top/build-fuzz-ci" \
        >"$RP_TEST_LOGDIR/fuzz.log" 2>&1
    if ! grep -qE '^[a-z_]+ +[0-9]+ ' "$RP_TEST_LOGDIR/fuzz.log"; then
        tail -n 20 "$RP_TEST_LOGDIR/fuzz.log"
        record fail fuzz-build
    fi
    while read -r target _ _ _ _ _ _ result; do
        if [ "$result" = ok ]; then record pass "fuzz: $target"; else record fail "fuzz: $target ($result)"; fi
    done < <(grep -E '^[a-z_]+ +[0-9]+ ' "$RP_TEST_LOGDIR/fuzz.log")
fi

# ---- 2. release build, install, distcheck
say "release build"
if "$top/scripts/build.sh" "$top/build" --enable-werror "${install_args[@]}" | tee "$RP_TEST_LOGDIR/build.log"; then
    record pass build-release
    warnings=$(sed -n 's/^warnings: //p' "$RP_TEST_LOGDIR/build.log")
    if [ "${warnings:-1}" -eq 0 ]; then record pass build-warning-free; else record fail build-warning-free; fi
else
    record fail build-release
    summary
    exit 1
fi

say "make install"
if make -C "$top/build" install >"$RP_TEST_LOGDIR/install.log" 2>&1 && ldconfig; then
    record pass make-install
else
    tail -n 20 "$RP_TEST_LOGDIR/install.log"
    record fail make-install
fi
plugindir=$(sed -n 's/^SLURM_PLUGINDIR = //p' "$top/build/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$top/build/Makefile")
export RP_PREFIX=$prefix RP_PLUGIN=$plugindir/ringpoint.so
# The Python package (for /usr/bin/python3, when configure found it): on
# its path already under /usr/local, on PYTHONPATH under RP_TEST_PREFIX.
pythondir=$(sed -n 's/^RP_PYTHONDIR = //p' "$top/build/Makefile")
export RP_PYTHONDIR=${pythondir//\$\{prefix\}/$prefix}
if [ -d "$RP_PYTHONDIR/ringpoint" ]; then
    export PYTHONPATH=$RP_PYTHONDIR${PYTHONPATH:+:$PYTHONPATH}
fi

if [ "${RP_TEST_DISTCHECK:-1}" = 1 ]; then
    say "make distcheck"
    if make -C "$top/build" distcheck >"$RP_TEST_LOGDIR/distcheck.log" 2>&1; then
        record pass make-distcheck
    else
        tail -n 30 "$RP_TEST_LOGDIR/distcheck.log"
        record fail make-distcheck
    fi
fi

# ---- 3. the real local cluster and the integration tests
say "local Slurm cluster"
trap '"$top/scripts/cluster.sh" down >/dev/null 2>&1 || true' EXIT
# Requeued jobs wait cred_expire seconds before they may start again: the
# smallest value Slurm accepts keeps the preemption tests short.
if RP_CLUSTER_CRED_EXPIRE=5 "$top/scripts/cluster.sh" up -n 2 -p "$RP_PLUGIN"; then
    record pass cluster-up
    eval "$("$top/scripts/cluster.sh" env)"
    for f in "$top"/tests/slurm/test_*.sh; do
        case "$(basename "$f")" in *"$pattern"*) ;; *) continue ;; esac
        say "integration: $(basename "$f")"
        bash "$f" || true # failures are counted in $RP_RESULTS
    done
else
    record fail cluster-up
fi

say "tear down"
"$top/scripts/cluster.sh" down || record fail cluster-down
trap - EXIT
summary
