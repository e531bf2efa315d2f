#!/usr/bin/env bash
# The lines of doc/architecture.md that must not be crossed, checked on the
# sources' #include lines (and, when make check names the built objects,
# on what they link). Prints TAP. Run by make check; by hand, from the
# source tree: tests/tools/test_layers.sh
set -u
top=${srcdir:-$(dirname "$0")/../..}
cd "$top" || exit 1
n=0
failed=0

# check NAME BAD: BAD holds the offending lines; none is a pass. (Given as
# an argument, not piped in: the counters must change in this shell.)
check() {
    local name=$1 bad=$2
    n=$((n + 1))
    if [ -z "$bad" ]; then
        echo "ok $n - $name"
    else
        echo "not ok $n - $name"
        echo "$bad" | sed 's/^/# /'
        failed=1
    fi
}

# includes DIR...: "file:line:#include ..." for every C source under DIR.
includes() {
    find "$@" \( -name '*.c' -o -name '*.h' \) -print0 2>/dev/null |
        xargs -0 -r grep -Hn '^[[:space:]]*#[[:space:]]*include' || true
}

# needed LIB: the shared objects LIB links, one a line.
needed() {
    objdump -p "$1" 2>/dev/null | awk '$1 == "NEEDED" { print $2 }'
}

# The plugin is loaded by srun, sbatch and slurmstepd: it shares only the
# dependency-free util/ with the runtime (and the public headers), so that
# it never pulls in PMIx, UCX or CUDA.
check "spank/ includes nothing of runtime/ but util/" "$(includes spank |
    grep -v -E '#[[:space:]]*include[[:space:]]*("(spank|util|ringpoint)/[^"]*"|"config\.h"|<)')"
check "spank/ includes no PMIx, UCX or CUDA header" "$(includes spank |
    grep -E '<(pmix|ucp/|ucs/|uct/|cuda|nccl)')"

# Each layer uses only the ones below it: the lower layers include nothing
# of the runtime above them (the public headers and config.h aside).
# only_below DIR ALLOWED: DIR's quoted includes outside ALLOWED (a regex of
# folder names).
only_below() {
    includes "$1" | grep -E '#[[:space:]]*include[[:space:]]*"' |
        grep -v -E "#[[:space:]]*include[[:space:]]*\"(($2|ringpoint)/[^\"]*|config\.h|ringpoint\.h)\""
}
check "runtime/util/ includes nothing of the runtime" "$(only_below runtime/util 'util')"
check "runtime/reduce/ includes only util/" "$(only_below runtime/reduce 'reduce|util')"
check "runtime/bootstrap/ includes only util/" "$(only_below runtime/bootstrap 'bootstrap|util')"
check "runtime/transport/ includes only bootstrap/ and util/" "$(only_below runtime/transport 'transport|bootstrap|util')"
check "runtime/signal/ includes only util/" "$(only_below runtime/signal 'signal|util')"

# The floors above: core/ is the ground every upper layer stands on (the
# context, the settings table, the peers' cards), so it includes nothing of
# them; rp_init and rp_finalize live on the top floor, runtime/init.c, the
# one file that starts the layers. The collectives sit below the
# checkpoint and the GPU path; the GPU path below the checkpoint; the
# runtime includes nothing of its tools.
check "runtime/core/ includes only bootstrap/, transport/, signal/ and util/" "$(only_below runtime/core 'core|bootstrap|transport|signal|util')"
check "runtime/coll/ includes nothing of ckpt/ or tools/" "$(includes runtime/coll | grep -E '"(ckpt|tools)/')"
check "runtime/gpu/ includes nothing of ckpt/ or tools/" "$(includes runtime/gpu | grep -E '"(ckpt|tools)/')"
check "runtime/ckpt/ includes nothing of tools/" "$(includes runtime/ckpt | grep -E '"tools/')"
check "only runtime/init.c starts the layers (bootstrap, transport, collectives, GPU path)" "$(find runtime -name '*.c' ! -path runtime/init.c -print0 |
    xargs -0 -r grep -Hn -E '\brp__(bootstrap_init|transport_create|comm_create|gpu_init)[[:space:]]*\(' |
    grep -v -E '^runtime/(bootstrap/bootstrap|transport/transport|coll/comm_create|gpu/gpu)\.c:[0-9]+:rp_status_t ')"

# Every RINGPOINT_* variable is read once, by the settings table at
# rp_init (runtime/core/settings_table.c), and handed to the layers.
# Exceptions: util/log.c's level (logged before any rp_init, by the plugin
# too) and util/step_marker.h, the plugin's private channel to the
# runtime, not a setting.
check "only runtime/core/settings_table.c reads RINGPOINT_* variables" "$(grep -rnE '(secure_)?getenv[[:space:]]*\([[:space:]]*("RINGPOINT_|RP_[A-Z_]*_ENV)' runtime |
    grep -v -e '^runtime/core/settings_table\.c:' -e '^runtime/util/log\.c:.*"RINGPOINT_LOG_LEVEL"' \
        -e '^runtime/util/step_marker\.h:.*RP_STEP_MARKER_ENV')"

# The checkpoint format and catalog stand alone: ringpoint-ckpt judges,
# lists and prunes a directory with them and no context, so they include
# nothing of the engine, the writer or the reader.
check "runtime/ckpt/format/ and catalog/ include no ckpt/engine/, write/ or read/ header" "$(includes runtime/ckpt/format runtime/ckpt/catalog |
    grep -E '#[[:space:]]*include[[:space:]]*"ckpt/(engine|write|read)/')"

# The Python package reaches the library only through the public API: every
# function it declares to ctypes is one the public headers declare.
check "python/ringpoint declares only functions of include/ringpoint" "$(
    grep -rhoE '_declare\("[A-Za-z0-9_]+"' python/ringpoint 2>/dev/null |
        sed -E 's/_declare\("//; s/"$//' | sort -u |
        while read -r f; do
            grep -rqE "\b$f[[:space:]]*\(" include/ringpoint.h include/ringpoint ||
                echo "python/ringpoint: $f is not in the public headers"
        done
    grep -rnE '\brp__[a-z]' python/ringpoint 2>/dev/null)"

# Collectives choose a backend through coll/backend.h's table and reach the
# wire through transport/transport.h: never the GPU path's or the NCCL
# module's internals, never UCX itself.
check "runtime/coll/ includes no gpu/, nccl/, UCX or CUDA header" "$(includes runtime/coll |
    grep -E '"(gpu|nccl)/|<(ucp/|ucs/|uct/|cuda|nccl)')"

# Dispatch is one-way: the GPU path and the NCCL module run host
# collectives through the host backend's table, never through the public
# entry points (which would dispatch back into them).
check "runtime/gpu/ and runtime/nccl/ call no public collective" "$(find runtime/gpu runtime/nccl -name '*.c' -print0 |
    xargs -0 -r grep -Hn -E '\brp_i?(allreduce|broadcast|allgather|barrier)(_group)?(_opts)?[[:space:]]*\(')"

# libringpoint never links CUDA or NCCL: only the loadable module includes
# their headers, and the one benchmark that measures the module against
# CUDA and NCCL called directly (built only with the module).
check "only runtime/nccl/ (and the GPU benchmark) include CUDA or NCCL headers" "$(includes runtime spank contrib tests python include |
    grep -E '<(cuda|nccl)[a-z_]*\.h>' | grep -v -e '^runtime/nccl/' -e '^contrib/bench/gpu_bench\.c:')"

# UCX and PMIx each behind their one entry of a table; besides, the one
# benchmark that measures UCX itself, as the floor under the collectives.
check "only runtime/transport/ucx_* (and the UCX floor benchmark) include UCX headers" "$(includes runtime spank contrib include |
    grep -E '<(ucp|ucs|uct)/' | grep -v -e '^runtime/transport/ucx_[a-z]*\.[ch]:' -e '^contrib/bench/ucx_exchange\.c:')"
check "only runtime/bootstrap/pmix* includes PMIx headers" "$(includes runtime spank contrib include |
    grep -E '<pmix' | grep -v '^runtime/bootstrap/pmix[a-z_]*\.[ch]:')"

# The same lines on the built objects, when make check names them.
# links NAME LIB PATTERN: LIB (if built) links no library matching PATTERN.
links() {
    if command -v objdump >/dev/null && [ -f "$2" ]; then
        check "$1" "$(needed "$2" | grep -E "$3")"
    else
        n=$((n + 1))
        echo "ok $n # SKIP $1: not built here (or no objdump)"
    fi
}
links "libringpoint links no CUDA or NCCL" "${RP_LIBRINGPOINT:-}" \
    'libcuda|libnccl'
links "the plugin links no PMIx, UCX, CUDA or libringpoint" "${RP_PLUGIN:-}" \
    'libpmix|libucp|libucs|libcuda|libnccl|libringpoint'
# UCX is a module the library opens when a job first communicates: loading
# the library (import ringpoint, the offline tools) loads no UCX.
links "libringpoint links no UCX" "${RP_LIBRINGPOINT:-}" 'libucp|libucs|libuct|libucm'

echo "1..$n"
exit $failed
