#!/usr/bin/env bash
# The GPU path on a machine with an NVIDIA GPU, in one command: the device
# checks the test suite skips where there is no GPU, and the figures of the
# GPU section of doc/benchmarks.md.
#
#   scripts/gpu-checks.sh PREFIX OUTDIR [CKPT_GIB...]
#
# PREFIX is a `make install` of ringpoint configured with CUDA and NCCL;
# OUTDIR receives one log per part (env, checks, coll, ckpt, dup); the
# checks include python/tests where python3 has torch. The
# checkpoint sizes default to 1 4 16 GiB; their files go to
# RP_GPU_CKPT_DIR (default /var/tmp/rp-gpu-ckpt), removed after each size.
# Exit status: the number of parts that failed.
set -u
prefix=${1:?usage: gpu-checks.sh PREFIX OUTDIR [CKPT_GIB...]}
out=${2:?usage: gpu-checks.sh PREFIX OUTDIR [CKPT_GIB...]}
shift 2
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1 4 16)
ckdir=${RP_GPU_CKPT_DIR:-/var/tmp/rp-gpu-ckpt}
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
# One rank, no launcher: the single-process bootstrap.
unset PMIX_NAMESPACE PMIX_RANK
export RINGPOINT_LOG_LEVEL=${RINGPOINT_LOG_LEVEL:-warn}
failed=0
part() { # part NAME: run the rest as one part, its output into NAME.txt
    local name=$1 rc
    shift
    echo "== $name: $*" | tee -a "$out/$name.txt"
    "$@" >>"$out/$name.txt" 2>&1
    rc=$?
    echo "== $name: exit $rc" | tee -a "$out/$name.txt"
    [ $rc -eq 0 ] || failed=$((failed + 1))
    return $rc
}
# refused NAME PATTERN CMD...: a part whose command must fail, at once
# and by name: it passes when CMD exits non-zero before its timeout (124)
# and its output holds PATTERN.
refused() {
    local name=$1 pattern=$2 rc log
    shift 2
    echo "== $name (must be refused: $pattern): $*" | tee -a "$out/$name.txt"
    log=$("$@" 2>&1)
    rc=$?
    printf '%s\n' "$log" >>"$out/$name.txt"
    if [ $rc -ne 0 ] && [ $rc -ne 124 ] && printf '%s\n' "$log" | grep -q "$pattern"; then
        echo "== $name: refused as it should be (exit $rc)" | tee -a "$out/$name.txt"
        return 0
    fi
    echo "== $name: NOT refused as it should be (exit $rc)" | tee -a "$out/$name.txt"
    failed=$((failed + 1))
    return 1
}
libexec=$prefix/libexec/ringpoint

{
    nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv
    nvcc --version 2>/dev/null | tail -n 2
    grep -h 'define NCCL_\(MAJOR\|MINOR\|PATCH\)' /usr/include/nccl.h 2>/dev/null
    uname -r; nproc; free -g | head -n 2; df -h "$(dirname "$ckdir")" | tail -n 1
    "$prefix/bin/ringpoint-info"
} >"$out/env.txt" 2>&1

# 1. The device checks of the test suite, then bigger.
part checks env RP_GPU_MODULE="$prefix/lib/ringpoint/ringpoint-nccl.so" \
    RP_GPU_CHECK="$libexec/ringpoint-gpu-check" sh "$top/tests/tools/test_gpu_device.sh"
part checks env RINGPOINT_CKPT_DIR="$ckdir/check" timeout 300 \
    "$libexec/ringpoint-gpu-check" device 256
rm -rf "$ckdir/check"
for coll in allreduce broadcast allgather; do
    part checks timeout 300 "$prefix/bin/ringpoint-bench" $coll -D cuda -b 8 -e 256M -f 4 -n 20
done
part checks timeout 300 "$prefix/bin/ringpoint-bench" allreduce -D cuda -b 4K -e 4K \
    -o all -d all -n 5

# The Python package's tests under the machine's own torch, CUDA tensors
# among them (python/tests/test_cuda.py runs only where a GPU is seen).
if python3 -c 'import torch' 2>/dev/null; then
    part checks env RINGPOINT_LIBRARY="$prefix/lib/libringpoint.so.0" \
        sh -c 'cd "$1/python" && timeout 300 python3 -m pytest -q tests' sh "$top"
fi

# 2. The module's overhead over NCCL called directly.
part coll timeout 300 "$libexec/ringpoint-gpu-bench" coll -r 7 -i 2000

# 3. Two ranks on the one GPU: a clear error, never a hang (NCCL refuses
#    two ranks on one device). Both the default binding and a forced one.
if command -v mpirun >/dev/null; then
    mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 -x LD_LIBRARY_PATH -x RINGPOINT_LOG_LEVEL)
    refused dup 'tasks on this node share 1 visible GPU' \
        timeout 120 "${mpi[@]}" "$libexec/ringpoint-gpu-check" device 0
    refused dup 'Duplicate GPU' timeout 120 "${mpi[@]}" -x RINGPOINT_GPU_DEVICE=0 \
        "$libexec/ringpoint-gpu-check" device 0
    refused dup 'Duplicate GPU' timeout 120 "${mpi[@]}" -x RINGPOINT_GPU_DEVICE=0 \
        "$prefix/bin/ringpoint-bench" allreduce -D cuda -b 4K -e 4K
fi

# 4. Device checkpoint regions: staging, stall, write, restore beside
#    cudaMemcpy; the disk's own rate beside them.
mkdir -p "$ckdir"
part ckpt dd if=/dev/zero of="$ckdir/raw" bs=64M count=64 oflag=direct conv=fsync
part ckpt dd if="$ckdir/raw" of=/dev/null bs=64M iflag=direct
rm -f "$ckdir/raw"
for g in "${sizes[@]}"; do
    r=3
    for async in 1 0; do
        part ckpt env RINGPOINT_CKPT_DIR="$ckdir/c$g" RINGPOINT_CKPT_EVERY=1 \
            RINGPOINT_CKPT_KEEP=1 RINGPOINT_CKPT_INTERVAL=0 RINGPOINT_CKPT_ASYNC=$async \
            timeout 400 "$libexec/ringpoint-gpu-bench" ckpt "$g" -r $r
        rm -rf "$ckdir/c$g"
    done
done
rm -rf "$ckdir"
echo "gpu-checks: $failed part(s) failed"
exit $failed
