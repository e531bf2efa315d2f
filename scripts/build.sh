#!/usr/bin/env bash
# Build ringpoint out of tree. Used by test.sh and demo.sh.
#   scripts/build.sh DIR [configure options...]
# Prints the number of compiler warnings of the build (0 expected) as the
# last line: "warnings: N".
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:?usage: build.sh DIR [configure options]}
shift
jobs=$(nproc 2>/dev/null || echo 2)

if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
    (cd "$top" && ./autogen.sh) >/dev/null 2>&1 ||
        { echo "build.sh: autogen.sh failed" >&2; (cd "$top" && ./autogen.sh); exit 1; }
fi
mkdir -p "$dir"
cd "$dir"
if ! "$top/configure" "$@" >configure.out 2>&1; then
    tail -n 30 configure.out >&2
    echo "build.sh: configure failed (full log: $dir/config.log)" >&2
    exit 1
fi
# The summary at the end of configure says what will be built.
sed -n '/will be built with/,$p' configure.out
if ! make -j"$jobs" >make.out 2>&1; then
    grep -E 'error|warning' make.out | head -n 40 >&2 || tail -n 40 make.out >&2
    echo "build.sh: make failed (full log: $dir/make.out)" >&2
    exit 1
fi
echo "warnings: $(grep -c 'warning:' make.out || true)"
