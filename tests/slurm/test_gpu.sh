#!/usr/bin/env bash
# The GPU path on the real cluster. Without a GPU: the NCCL id exchange
# through PMIx, the module built and kept out of libringpoint, and the host
# path unaffected. With a GPU (one H100/H200 is enough: NCCL allows one
# rank per GPU, so the communicator there has one rank): device collectives
# and a device checkpoint region. The device tests print
# "SKIP: no CUDA device: <why>" where there is none and are not counted.
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export GPU_CHECK=$RP_PREFIX/libexec/ringpoint/ringpoint-gpu-check
export GPU_MODULE=$RP_PREFIX/lib/ringpoint/ringpoint-nccl.so

# Rank 0's 128 bytes arrive identical at every rank across two nodes. Only
# the first generation: Slurm's PMIx server caches rank 0's data at the
# first fetch, so a later key can be missed by another node (the GPU path
# then falls back to a host broadcast, runtime/gpu/gpu.c).
test_gpu_uid_exchange_through_pmix() {
    local out n distinct
    out=$(srun --mpi=pmix -N2 -n5 "$GPU_CHECK" uid 1 2>&1)
    echo "$out"
    for gen in 0; do
        n=$(echo "$out" | grep -c "^rank=[0-4] size=5 gen=$gen uid=[0-9a-f]\{256\}$")
        assert_eq "$n" 5 "ranks reporting generation $gen"
        distinct=$(echo "$out" | sed -n "s/.* gen=$gen uid=//p" | sort -u | wc -l)
        assert_eq "$distinct" 1 "distinct ids of generation $gen"
    done
    assert_not_contains "$out" "uid=$(printf '0%.0s' $(seq 256))" "an all-zero id"
}

# libringpoint never links CUDA or NCCL; the module does.
test_gpu_module_apart_from_the_library() {
    local lib deps
    lib=$(ls "$RP_PREFIX"/lib/libringpoint.so.* | head -n1)
    deps=$(readelf -d "$lib")
    assert_not_contains "$deps" "libcudart" "libringpoint's NEEDED"
    assert_not_contains "$deps" "libnccl" "libringpoint's NEEDED"
    [ -f "$GPU_MODULE" ] || fail "$GPU_MODULE is not installed"
    deps=$(readelf -d "$GPU_MODULE")
    assert_contains "$deps" "libnccl.so"
    assert_contains "$deps" "libcudart.so"
    [ "$(nm -D --defined-only "$GPU_MODULE" | awk '{print $3}')" = rp_gpu_module_v1 ] ||
        fail "the module exports more than its entry point"
}

# Host collectives with RINGPOINT_GPU=on fail at rp_init with the reason
# where there is no GPU; with the module missing, auto leaves the host path
# alone.
test_gpu_host_path_unaffected() {
    local out
    out=$(RINGPOINT_GPU_MODULE=/nonexistent.so srun --mpi=pmix -N2 -n3 \
        "$RP_PREFIX/libexec/ringpoint/ringpoint-coll-check" 2>&1)
    assert_contains "$out" "coll-check: ok size=3 errors=0"
    if ! "$GPU_CHECK" device 0 >/dev/null 2>&1; then
        out=$(RINGPOINT_GPU=on srun --mpi=pmix -N1 -n1 ringpoint-info -r 2>&1) &&
            fail "RINGPOINT_GPU=on succeeded without a GPU"$'\n'"$out"
        assert_contains "$out" "no GPU path on this task"
    fi
}

# ---- device tests: run only where CUDA sees a device ----

device_gpu_collectives_and_checkpoint() {
    local out dir
    dir=$(mktemp -d /tmp/rp-gpu-ckpt.XXXXXX)
    out=$(RINGPOINT_CKPT_DIR=$dir srun --mpi=pmix -N1 -n1 "$GPU_CHECK" device 256 2>&1)
    echo "$out"
    rm -rf "$dir"
    assert_contains "$out" "device checks: ok (0 failed)"
}

device_gpu_without_slurm() {
    local out dir
    dir=$(mktemp -d /tmp/rp-gpu-ckpt.XXXXXX)
    out=$(env -u PMIX_NAMESPACE RINGPOINT_CKPT_DIR=$dir "$GPU_CHECK" device 64 2>&1)
    echo "$out"
    rm -rf "$dir"
    assert_contains "$out" "device checks: ok (0 failed)"
}

device_gpu_info_reports_gpus() {
    local out
    out=$(ringpoint-info -b 2>&1)
    echo "$out"
    assert_contains "$out" "NCCL 2."
    assert_contains "$out" "gpu 0:"
}

why=$("$GPU_CHECK" device 0 2>&1 | grep '^SKIP:' || true)
for t in $(declare -F | awk '{print $3}' | grep '^device_'); do
    if [ -n "$why" ]; then
        echo "# $t: $why"
    else
        run_test "$t"
    fi
done
run_all
