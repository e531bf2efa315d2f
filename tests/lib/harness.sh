# Test harness for the integration tests (sourced). Each test is a shell
# function run in a subshell with a time limit; a test passes when it
# returns 0. Output of a failing test is shown, of a passing one kept in
# the log directory. Results are appended to $RP_RESULTS (one line each)
# so the caller can total them across files.

: "${RP_TEST_TIMEOUT:=300}"
: "${RP_TEST_LOGDIR:=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}/test-logs}"
: "${RP_RESULTS:=$RP_TEST_LOGDIR/results}"
mkdir -p "$RP_TEST_LOGDIR"

rp_pass=0
rp_fail=0

# fail MESSAGE: print why a check failed and return non-zero.
fail() {
    echo "FAIL: $*" >&2
    return 1
}

# assert_contains HAYSTACK NEEDLE [WHAT]
assert_contains() {
    case "$1" in
        *"$2"*) return 0 ;;
    esac
    fail "${3:-output} does not contain '$2'"$'\n'"--- it was:"$'\n'"$1"
}

# assert_not_contains HAYSTACK NEEDLE [WHAT]
assert_not_contains() {
    case "$1" in
        *"$2"*) fail "${3:-output} contains '$2'"$'\n'"--- it was:"$'\n'"$1" ;;
    esac
    return 0
}

# assert_eq GOT EXPECTED [WHAT]
assert_eq() {
    [ "$1" = "$2" ] || fail "${3:-value} is '$1', expected '$2'"
}

# run_test NAME: run the function NAME as one test.
run_test() {
    local name=$1 log rc start
    log="$RP_TEST_LOGDIR/$name.log"
    start=$(date +%s)
    ( set -o pipefail; timeout --kill-after=10 "$RP_TEST_TIMEOUT" \
        bash -c "$(declare -f); set -eu; $name" ) >"$log" 2>&1
    rc=$?
    if [ $rc -eq 0 ]; then
        rp_pass=$((rp_pass + 1))
        printf 'ok - %s (%ss)\n' "$name" $(( $(date +%s) - start ))
        echo "pass $name" >>"$RP_RESULTS"
    else
        rp_fail=$((rp_fail + 1))
        [ $rc -eq 124 ] && echo "FAIL: timed out after ${RP_TEST_TIMEOUT}s" >>"$log"
        printf 'not ok - %s (exit %d, %ss)\n' "$name" $rc $(( $(date +%s) - start ))
        sed 's/^/    # /' "$log" | tail -n 40
        echo "fail $name" >>"$RP_RESULTS"
    fi
}

# run_all: run every function whose name starts with test_ (and contains
# $RP_TEST_FILTER, when set), in alphabetical order.
run_all() {
    local t
    for t in $(declare -F | awk '{print $3}' | grep '^test_' | grep -F -- "${RP_TEST_FILTER:-}"); do
        run_test "$t"
    done
    echo "# $(basename "$0"): $rp_pass passed, $rp_fail failed"
    [ $rp_fail -eq 0 ]
}
