/*
 * The collectives' arithmetic and their single-process behaviour: how
 * buffers are cut into blocks and segments (sender and receiver must agree
 * on every message size), argument checking, and the settings that steer
 * them. The multi-rank behaviour is tested on the cluster (test_coll.sh).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ringpoint.h"
#include "coll/chunk.h"
#include "core/settings.h"

static void test_chunks_cover_exactly(void **state)
{
    static const size_t counts[] = {0, 1, 2, 3, 7, 17, 1000, 4099, 65537};
    (void)state;

    for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        for (int n = 1; n <= 9; n++) {
            size_t next = 0, min = SIZE_MAX, max = 0;

            for (int i = 0; i < n; i++) {
                size_t k = rp__chunk_count(counts[c], n, i);

                assert_int_equal(rp__chunk_offset(counts[c], n, i), next);
                next += k;
                min = k < min ? k : min;
                max = k > max ? k : max;
            }
            assert_int_equal(next, counts[c]);
            assert_true(max - min <= 1);
        }
    }
}

static void test_segments(void **state)
{
    (void)state;
    assert_int_equal(rp__seg_count(0, 4), 0);
    assert_int_equal(rp__seg_count(1, 4), 1);
    assert_int_equal(rp__seg_count(4, 4), 1);
    assert_int_equal(rp__seg_count(5, 4), 2);
    assert_int_equal(rp__seg_count(1u << 20, 1), 1u << 20);
}

static void test_pow2_and_mod(void **state)
{
    (void)state;
    assert_int_equal(rp__pow2_floor(1), 1);
    assert_int_equal(rp__pow2_floor(2), 2);
    assert_int_equal(rp__pow2_floor(3), 2);
    assert_int_equal(rp__pow2_floor(5), 4);
    assert_int_equal(rp__pow2_floor(1024), 1024);
    assert_int_equal(rp__pow2_floor(1025), 1024);
    assert_int_equal(rp__mod(-1, 5), 4);
    assert_int_equal(rp__mod(-6, 5), 4);
    assert_int_equal(rp__mod(7, 5), 2);
}

static rp_context_h single(void)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;

    assert_int_equal(rp_init(&params, &ctx), RP_OK);
    return ctx;
}

static void test_single_rank_collectives(void **state)
{
    rp_context_h ctx = single();
    int32_t in[5] = {1, -2, 3, 7, 9}, out[5] = {0};
    uint16_t h[3] = {0x3c00, 0x4000, 0xc000}, ho[3];
    char gather[8];
    (void)state;

    assert_int_equal(rp_allreduce(ctx, in, out, 5, RP_DTYPE_INT32, RP_OP_AVG), RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(rp_allreduce(ctx, in, in, 5, RP_DTYPE_INT32, RP_OP_PROD), RP_OK);
    assert_int_equal(in[1], -2);
    assert_int_equal(rp_allreduce(ctx, h, ho, 3, RP_DTYPE_FLOAT16, RP_OP_SUM), RP_OK);
    assert_memory_equal(h, ho, sizeof(h));
    assert_int_equal(rp_allreduce(ctx, NULL, NULL, 0, RP_DTYPE_FLOAT32, RP_OP_SUM), RP_OK);
    assert_int_equal(rp_broadcast(ctx, in, 5, RP_DTYPE_INT32, 0), RP_OK);
    assert_int_equal(rp_allgather(ctx, "abcdefgh", gather, 8, RP_DTYPE_UINT8), RP_OK);
    assert_memory_equal(gather, "abcdefgh", 8);
    assert_int_equal(rp_barrier(ctx), RP_OK);
    rp_finalize(ctx);
}

static void test_bad_arguments(void **state)
{
    rp_context_h ctx = single();
    float buf[8] = {0};
    (void)state;

    assert_int_equal(rp_allreduce(NULL, buf, buf, 1, RP_DTYPE_FLOAT32, RP_OP_SUM),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_allreduce(ctx, buf, buf, 1, RP_DTYPE_COUNT, RP_OP_SUM),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_allreduce(ctx, buf, buf, 1, RP_DTYPE_FLOAT32, RP_OP_COUNT),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_allreduce(ctx, NULL, buf, 1, RP_DTYPE_FLOAT32, RP_OP_SUM),
                     RP_ERR_INVALID_ARG);
    /* Partly overlapping buffers would be read after being written. */
    assert_int_equal(rp_allreduce(ctx, buf, buf + 1, 4, RP_DTYPE_FLOAT32, RP_OP_SUM),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_allreduce(ctx, buf, buf + 4, 4, RP_DTYPE_FLOAT32, RP_OP_SUM),
                     RP_OK);
    assert_int_equal(rp_allreduce(ctx, buf, buf, SIZE_MAX / 2, RP_DTYPE_FLOAT32,
                                  RP_OP_SUM), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_broadcast(ctx, buf, 1, RP_DTYPE_FLOAT32, 1), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_broadcast(ctx, buf, 1, RP_DTYPE_FLOAT32, -1), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_barrier(NULL), RP_ERR_INVALID_ARG);
    rp_finalize(ctx);
}

static void test_settings(void **state)
{
    rp_settings_t cfg;
    (void)state;

    unsetenv("RINGPOINT_CKPT_INTERVAL");
    assert_int_equal(rp__settings_load(&cfg), RP_OK);
    assert_int_equal(cfg.coll_timeout_s, RP_DEFAULT_COLL_TIMEOUT_S);
    assert_int_equal(cfg.allreduce_algo, RP_COLL_ALGO_AUTO);
    assert_true(cfg.coll_spin_us < 0);

    setenv("RINGPOINT_COLL_TIMEOUT", "90s", 1);
    setenv("RINGPOINT_ALLREDUCE_ALGO", "ring", 1);
    setenv("RINGPOINT_COLL_SPIN_US", "0", 1);
    assert_int_equal(rp__settings_load(&cfg), RP_OK);
    assert_int_equal(cfg.coll_timeout_s, 90);
    assert_int_equal(cfg.allreduce_algo, RP_COLL_ALGO_RING);
    assert_int_equal(cfg.coll_spin_us, 0);

    setenv("RINGPOINT_ALLREDUCE_ALGO", "fast", 1);
    assert_int_equal(rp__settings_load(&cfg), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_ALLREDUCE_ALGO", "rd", 1);
    setenv("RINGPOINT_COLL_TIMEOUT", "5 minutes", 1);
    assert_int_equal(rp__settings_load(&cfg), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_COLL_TIMEOUT", "10:00", 1);
    setenv("RINGPOINT_COLL_SEGMENT", "8", 1); /* below the 64-byte floor */
    assert_int_equal(rp__settings_load(&cfg), RP_ERR_INVALID_ARG);
    unsetenv("RINGPOINT_COLL_SEGMENT");
    assert_int_equal(rp__settings_load(&cfg), RP_OK);
    assert_int_equal(cfg.coll_timeout_s, 600);
    unsetenv("RINGPOINT_COLL_TIMEOUT");
    unsetenv("RINGPOINT_ALLREDUCE_ALGO");
    unsetenv("RINGPOINT_COLL_SPIN_US");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chunks_cover_exactly),
        cmocka_unit_test(test_segments),
        cmocka_unit_test(test_pow2_and_mod),
        cmocka_unit_test(test_single_rank_collectives),
        cmocka_unit_test(test_bad_arguments),
        cmocka_unit_test(test_settings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
