#!/bin/sh
# The GPU path on this machine's first GPU, single rank (make check). Where
# CUDA sees no device (or the module was not built) the whole file is
# skipped with the reason, as TAP "1..0 # SKIP ...": never a silent pass.
dir=$(mktemp -d "${TMPDIR:-/tmp}/rp-gpu-device.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
if [ ! -f "$RP_GPU_MODULE" ]; then
    echo "1..0 # SKIP the GPU module was not built (configure found no CUDA/NCCL)"
    exit 0
fi
out=$(env -u PMIX_NAMESPACE RINGPOINT_GPU_MODULE="$RP_GPU_MODULE" \
    RINGPOINT_CKPT_DIR="$dir" RINGPOINT_LOG_LEVEL=error "$RP_GPU_CHECK" device 64 2>&1)
rc=$?
if [ $rc -eq 77 ]; then
    echo "1..0 # SKIP $(echo "$out" | sed -n 's/^SKIP: //p' | head -n1)"
    exit 0
fi
echo "1..1"
echo "$out" | sed 's/^/# /'
if [ $rc -eq 0 ]; then
    echo "ok 1 - device collectives and a device checkpoint region"
else
    echo "not ok 1 - device checks (exit $rc)"
fi
