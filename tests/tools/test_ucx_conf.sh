#!/usr/bin/env bash
# A ucx.conf in the working directory, written by someone else, must not
# reach ringpoint: UCX 1.13 reads ./ucx.conf when it loads. The offline
# tools load no UCX at all; the library loads its UCX module so that UCX
# reads "/ucx.conf" in its place, unless RINGPOINT_UCX_CONFIG_CWD=1 asks
# for UCX's own behaviour. The trap: a ucx.conf whose UCX_LOG_FILE names a
# file that UCX would truncate. Prints TAP. Run by make check, which sets
# RP_CKPT_TOOL and RP_CKPT_FIXTURE.
set -u
ckpt=${RP_CKPT_TOOL:?}
fixture=${RP_CKPT_FIXTURE:?}
info=$(dirname "$ckpt")/ringpoint-info
dir=$(mktemp -d /var/tmp/rp-ucx-conf.XXXXXX)
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

skip() { # skip NAME WHY
    n=$((n + 1))
    echo "ok $n # SKIP $1: $2"
}

# trap DIR: a ucx.conf in DIR that sends UCX's trace log over DIR/victim.
make_trap() {
    mkdir -p "$1"
    echo precious >"$1/victim"
    printf 'UCX_LOG_LEVEL=trace\nUCX_LOG_FILE=%s/victim\n' "$1" >"$1/ucx.conf"
}

intact() { # intact DIR: DIR/victim still holds what make_trap wrote
    [ "$(cat "$1/victim")" = precious ] || {
        echo "$1/victim was overwritten:"
        head -c 300 "$1/victim"
        return 1
    }
}

# run_in DIR CMD...: CMD in DIR with the loader's list of the objects it
# opens on stderr, into DIR/ld.log; UCX's own variables cleared so that
# only the file can set them.
run_in() {
    local d=$1
    shift
    (cd "$d" && env -u UCX_LOG_FILE -u UCX_LOG_LEVEL -u UCX_CONFIG_DIR \
        -u RINGPOINT_UCX_CONFIG_CWD LD_DEBUG=files "$@") >"$d/out.log" \
        2>"$d/ld.log"
}

loaded_ucx() { # loaded_ucx DIR: the command run in DIR opened libucs
    grep -Eq 'file=[^ ]*libucs\.so' "$1/ld.log"
}

# The trap works: UCX's own tool, started there, overwrites the file.
t_trap_live() {
    make_trap "$dir/control"
    run_in "$dir/control" ucx_info -v
    ! intact "$dir/control" >/dev/null
}

t_fixture() {
    make_trap "$dir/trap"
    mkdir -p "$dir/trap/ckpt"
    "$fixture" "$dir/trap/ckpt" 10 2 10000 64 4096
}

t_ckpt_cmd() { # t_ckpt_cmd CMD...: ringpoint-ckpt CMD loads no UCX
    run_in "$dir/trap" "$ckpt" "$@" || { cat "$dir/trap/out.log"; return 1; }
    intact "$dir/trap" || return 1
    if loaded_ucx "$dir/trap"; then
        echo "ringpoint-ckpt $* loaded UCX:"
        grep -E 'file=[^ ]*libuc' "$dir/trap/ld.log"
        return 1
    fi
}

# ringpoint-info --build opens the module, as a job's first transport does:
# UCX loads, and reads no ./ucx.conf.
t_module_ignores_cwd_conf() {
    run_in "$dir/trap" "$info" --build || { cat "$dir/trap/out.log"; return 1; }
    grep -E '^ *ucx' "$dir/trap/out.log"
    grep -Eq '^ *ucx.*module ' "$dir/trap/out.log" &&
    loaded_ucx "$dir/trap" && intact "$dir/trap"
}

# Asked for, UCX reads it as it would on its own.
t_cwd_conf_when_asked() {
    make_trap "$dir/asked"
    (cd "$dir/asked" && env -u UCX_LOG_FILE -u UCX_LOG_LEVEL \
        RINGPOINT_UCX_CONFIG_CWD=1 "$info" --build) >/dev/null 2>&1
    ! intact "$dir/asked" >/dev/null
}

if command -v ucx_info >/dev/null; then
    check "the trap is live: ucx_info run beside the ucx.conf obeys it" t_trap_live
else
    skip "the trap is live" "no ucx_info (ucx-utils)"
fi
check "a checkpoint written beside the trap" t_fixture
check "ringpoint-ckpt ls loads no UCX, the file is intact" t_ckpt_cmd ls ckpt
check "ringpoint-ckpt verify loads no UCX, the file is intact" t_ckpt_cmd verify ckpt
check "ringpoint-ckpt show loads no UCX, the file is intact" t_ckpt_cmd show ckpt 10
if [ -x "$info" ] && "$info" --build 2>/dev/null | grep -Eq '^ *ucx.*module '; then
    check "the UCX module loaded there ignores ./ucx.conf" t_module_ignores_cwd_conf
    check "RINGPOINT_UCX_CONFIG_CWD=1 lets UCX read ./ucx.conf" t_cwd_conf_when_asked
else
    skip "the UCX module ignores ./ucx.conf" "no UCX module in this build"
    skip "RINGPOINT_UCX_CONFIG_CWD=1" "no UCX module in this build"
fi

echo "1..$n"
exit $failed
