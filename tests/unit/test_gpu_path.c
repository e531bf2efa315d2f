/*
 * The GPU path without a GPU: the staging layout of device checkpoint
 * regions, the NCCL id exchange over the (single-process) bootstrap, and
 * a missing module, which must leave the host path untouched and make
 * only a real demand for the GPU fail, with a message naming the module.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <ringpoint.h>

#include "bootstrap/bootstrap.h"
#include "ckpt/engine/devstage.h"
#include "ckpt/engine/engine.h"
#include "gpu/gpu.h"

#define MISSING "/nonexistent/ringpoint-nccl.so"

static rp__ckpt_reg_t reg(rp__ckpt_region_kind_t kind, bool device,
                          uint64_t offset, uint64_t size)
{
    rp__ckpt_reg_t r;

    memset(&r, 0, sizeof(r));
    r.kind = kind;
    r.device = device;
    r.offset = offset;
    r.size = size;
    return r;
}

/* Stripe [4096, 12288) of a stream with a host region, a device region
 * that straddles the stripe's start, one inside it, one past its end, and
 * a per-rank device region (always whole). */
static void test_plan_takes_the_stripe_share(void **state)
{
    rp__ckpt_reg_t regs[6] = {
        reg(RP_CKPT_REGION_REPLICATED, false, 0, 1000),
        reg(RP_CKPT_REGION_REPLICATED, true, 1024, 5000),   /* 1024..6024 */
        reg(RP_CKPT_REGION_REPLICATED, true, 6080, 100),    /* inside */
        reg(RP_CKPT_REGION_REPLICATED, true, 12288, 4096),  /* past */
        reg(RP_CKPT_REGION_PER_RANK, true, 0, 777),
        reg(RP_CKPT_REGION_PER_RANK, false, 832, 64),
    };
    rp__ckpt_devcopy_t c[6];
    uint32_t n = 99;
    uint64_t bytes = 0;

    (void)state;
    rp__ckpt_devstage_plan(regs, 6, 4096, 8192, c, &n, &bytes);
    assert_int_equal(n, 3);
    assert_int_equal(c[0].reg, 1);
    assert_int_equal(c[0].src_off, 4096 - 1024);
    assert_int_equal(c[0].len, 6024 - 4096);
    assert_int_equal(c[0].dst_off, 0);
    assert_int_equal(c[1].reg, 2);
    assert_int_equal(c[1].src_off, 0);
    assert_int_equal(c[1].len, 100);
    assert_int_equal(c[1].dst_off % RP_CKPT_DEVSTAGE_ALIGN, 0);
    assert_true(c[1].dst_off >= c[0].dst_off + c[0].len);
    assert_int_equal(c[2].reg, 4);
    assert_int_equal(c[2].len, 777);
    assert_true(c[2].dst_off >= c[1].dst_off + c[1].len);
    assert_int_equal(bytes, c[2].dst_off + 777);
}

/* Stripes of all ranks together stage every replicated device byte once. */
static void test_plan_stripes_cover_each_byte_once(void **state)
{
    rp__ckpt_reg_t regs[3] = {
        reg(RP_CKPT_REGION_REPLICATED, true, 0, 10000),
        reg(RP_CKPT_REGION_REPLICATED, false, 10048, 3000),
        reg(RP_CKPT_REGION_REPLICATED, true, 13056, 9000),
    };
    uint64_t stream = 13056 + 9000, total = 0;

    (void)state;
    for (uint32_t world = 1; world <= 7; world++) {
        total = 0;
        for (uint32_t rank = 0; rank < world; rank++) {
            rp__ckpt_devcopy_t c[3];
            uint64_t off, len, bytes;
            uint32_t n;

            assert_int_equal(rp__ckpt_stripe(stream, world, rank, &off, &len),
                             RP_OK);
            rp__ckpt_devstage_plan(regs, 3, off, len, c, &n, &bytes);
            for (uint32_t k = 0; k < n; k++) {
                uint64_t at = regs[c[k].reg].offset + c[k].src_off;

                assert_true(at >= off && at + c[k].len <= off + len);
                total += c[k].len;
            }
        }
        assert_int_equal(total, 10000 + 9000);
    }
}

static void test_plan_no_device_region(void **state)
{
    rp__ckpt_reg_t regs[1] = {reg(RP_CKPT_REGION_REPLICATED, false, 0, 64)};
    rp__ckpt_devcopy_t c[1];
    uint32_t n = 5;
    uint64_t bytes = 5;

    (void)state;
    rp__ckpt_devstage_plan(regs, 1, 0, 4096, c, &n, &bytes);
    assert_int_equal(n, 0);
    assert_int_equal(bytes, 0);
}

/* The id NCCL needs travels through the bootstrap exchange unchanged, and
 * a second communicator uses a key of its own. */
static void test_uid_exchange_single(void **state)
{
    rp_bootstrap_t *bs = NULL;
    unsigned char uid[RP_GPU_UID_BYTES], want[RP_GPU_UID_BYTES];
    char k0[64], k1[64];

    (void)state;
    assert_int_equal(rp__bootstrap_init(true, NULL, &bs), RP_OK);
    for (size_t i = 0; i < sizeof(uid); i++) {
        want[i] = (unsigned char)(i * 37 + 11);
    }
    memcpy(uid, want, sizeof(uid));
    assert_int_equal(rp__gpu_uid_exchange(bs, 0, uid, sizeof(uid)), RP_OK);
    assert_memory_equal(uid, want, sizeof(uid));
    want[0] ^= 0xff;
    memcpy(uid, want, sizeof(uid));
    assert_int_equal(rp__gpu_uid_exchange(bs, 1, uid, sizeof(uid)), RP_OK);
    assert_memory_equal(uid, want, sizeof(uid));
    rp__gpu_uid_key(0, 0, k0, sizeof(k0));
    rp__gpu_uid_key(0, 1, k1, sizeof(k1));
    assert_string_not_equal(k0, k1);
    rp__gpu_uid_key(1, 0, k1, sizeof(k1));
    assert_string_not_equal(k0, k1);
    rp__bootstrap_finalize(bs);
}

static void test_missing_module_is_explained(void **state)
{
    char why[512] = "";

    (void)state;
    assert_string_equal(rp__gpu_module_path(), MISSING);
    assert_null(rp__gpu_module(why, sizeof(why)));
    assert_non_null(strstr(why, MISSING));
    assert_non_null(strstr(why, "cannot be loaded"));
}

/* Host memory is never taken for device memory, CUDA loaded or not. */
static void test_host_pointers_are_host(void **state)
{
    int on_stack = 1;
    void *heap = malloc(64);

    (void)state;
    assert_false(rp__gpu_probe_is_device(&on_stack));
    assert_false(rp__gpu_probe_is_device(heap));
    assert_false(rp__gpu_probe_is_device(NULL));
    free(heap);
}

/* Without the module the host collectives and checkpoints work as ever. */
static void test_host_path_without_module(void **state)
{
    rp_init_params_t p = {.field_mask = RP_INIT_FIELD_FLAGS,
                          .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;
    float x[4] = {1, 2, 3, 4}, y[4];
    int dev = -1;

    (void)state;
    assert_int_equal(rp_init(&p, &ctx), RP_OK);
    assert_int_equal(rp_allreduce(ctx, x, y, 4, RP_DTYPE_FLOAT32, RP_OP_SUM),
                     RP_OK);
    assert_memory_equal(x, y, sizeof(x));
    assert_int_equal(rp_cuda_set_stream(ctx, NULL), RP_OK);
    /* Asking for the GPU is what fails, and only that. */
    assert_int_equal(rp_cuda_device(ctx, &dev), RP_ERR_NOT_SUPPORTED);
    assert_int_equal(dev, -1);
    assert_int_equal(rp_allreduce(ctx, x, y, 4, RP_DTYPE_FLOAT32, RP_OP_SUM),
                     RP_OK);
    rp_finalize(ctx);
}

static void test_gpu_setting(void **state)
{
    rp_init_params_t p = {.field_mask = RP_INIT_FIELD_FLAGS,
                          .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;

    (void)state;
    setenv("RINGPOINT_GPU", "maybe", 1);
    assert_int_equal(rp_init(&p, &ctx), RP_ERR_INVALID_ARG);
    assert_null(ctx);
    /* "on" demands the GPU path at rp_init: no module, no context. */
    setenv("RINGPOINT_GPU", "on", 1);
    assert_int_equal(rp_init(&p, &ctx), RP_ERR_NOT_SUPPORTED);
    assert_null(ctx);
    setenv("RINGPOINT_GPU", "off", 1);
    assert_int_equal(rp_init(&p, &ctx), RP_OK);
    rp_finalize(ctx);
    unsetenv("RINGPOINT_GPU");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_takes_the_stripe_share),
        cmocka_unit_test(test_plan_stripes_cover_each_byte_once),
        cmocka_unit_test(test_plan_no_device_region),
        cmocka_unit_test(test_uid_exchange_single),
        cmocka_unit_test(test_missing_module_is_explained),
        cmocka_unit_test(test_host_pointers_are_host),
        cmocka_unit_test(test_host_path_without_module),
        cmocka_unit_test(test_gpu_setting),
    };

    /* Before anything loads: this process has no module (the tests that
     * open it before any rp_init name it as rp_init would). */
    setenv("RINGPOINT_GPU_MODULE", MISSING, 1);
    rp__gpu_module_set_path(MISSING);
    setenv("RINGPOINT_LOG_LEVEL", "error", 0);
    unsetenv("PMIX_NAMESPACE");
    return cmocka_run_group_tests(tests, NULL, NULL);
}
