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
#include <math.h>
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

/* One rank: the reduce-scatter is a copy of the input (its one block), the
 * all-to-all too; the argument checks refuse what would read or write
 * outside the buffers or mix them. */
static void test_exchange_single_rank_and_arguments(void **state)
{
    rp_context_h ctx = single();
    int32_t in[4] = {4, -1, 9, 2}, out[4] = {0};
    size_t one = 4, huge = SIZE_MAX / 2;
    rp_request_h req = NULL;
    (void)state;

    assert_int_equal(rp_reduce_scatter(ctx, in, out, 4, RP_DTYPE_INT32,
                                       RP_OP_SUM), RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(rp_reduce_scatterv(ctx, in, out, &one, RP_DTYPE_INT32,
                                        RP_OP_MAX), RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(rp_ireduce_scatter(ctx, in, out, 4, RP_DTYPE_INT32,
                                        RP_OP_AVG, &req), RP_OK);
    assert_int_equal(rp_wait(&req), RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(rp_alltoall(ctx, in, out, 4, RP_DTYPE_INT32), RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    memset(out, 0, sizeof(out));
    assert_int_equal(rp_ialltoallv(ctx, in, &one, out, &one, RP_DTYPE_INT32,
                                   &req), RP_OK);
    assert_int_equal(rp_wait(&req), RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(rp_reduce_scatter(ctx, NULL, NULL, 0, RP_DTYPE_FLOAT32,
                                       RP_OP_SUM), RP_OK);

    /* No in-place form: the result needs a buffer of its own. */
    assert_int_equal(rp_reduce_scatter(ctx, in, in, 4, RP_DTYPE_INT32,
                                       RP_OP_SUM), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_alltoall(ctx, in, in + 1, 2, RP_DTYPE_INT32),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_reduce_scatterv(ctx, in, out, NULL, RP_DTYPE_INT32,
                                        RP_OP_SUM), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_alltoallv(ctx, in, &one, out, NULL, RP_DTYPE_INT32),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_reduce_scatter(ctx, in, out, 4, RP_DTYPE_INT32,
                                       RP_OP_COUNT), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_reduce_scatter(ctx, in, NULL, 4, RP_DTYPE_INT32,
                                       RP_OP_SUM), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_reduce_scatterv(ctx, in, out, &huge, RP_DTYPE_INT32,
                                        RP_OP_SUM), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_alltoall(NULL, in, out, 1, RP_DTYPE_INT32),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_ialltoall(ctx, in, out, 1, RP_DTYPE_COUNT, &req),
                     RP_ERR_INVALID_ARG);
    assert_null(req);
    assert_int_equal(rp_ireduce_scatter(ctx, in, out, 1, RP_DTYPE_INT32,
                                        RP_OP_SUM, NULL), RP_ERR_INVALID_ARG);
    rp_finalize(ctx);
}

/* One rank: non-blocking calls complete with the blocking calls' results,
 * in order, blocking calls interleaved; NULL requests are complete. */
static void test_single_rank_nonblocking(void **state)
{
    rp_context_h ctx = single();
    float in[100], out[100], gout[100];
    char gather[4];
    const void *ins[2] = {in, in + 60};
    void *outs[2] = {gout, gout + 60};
    size_t counts[2] = {60, 40};
    rp_request_h reqs[5] = {NULL};
    int done = 0;
    (void)state;

    for (int i = 0; i < 100; i++) {
        in[i] = (float)i * 0.25f - 3.0f;
    }
    assert_int_equal(rp_iallreduce(ctx, in, out, 100, RP_DTYPE_FLOAT32,
                                   RP_OP_SUM, &reqs[0]), RP_OK);
    assert_int_equal(rp_iallreduce_group(ctx, ins, outs, counts, 2,
                                         RP_DTYPE_FLOAT32, RP_OP_AVG, NULL,
                                         &reqs[1]), RP_OK);
    /* The arrays were copied: clobbering them changes nothing. */
    counts[0] = counts[1] = 0;
    assert_int_equal(rp_ibroadcast(ctx, in, 100, RP_DTYPE_FLOAT32, 0, &reqs[2]),
                     RP_OK);
    assert_int_equal(rp_barrier(ctx), RP_OK); /* after the three */
    assert_int_equal(rp_iallgather(ctx, "wxyz", gather, 4, RP_DTYPE_UINT8,
                                   &reqs[3]), RP_OK);
    assert_int_equal(rp_ibarrier(ctx, &reqs[4]), RP_OK);
    while (!done) {
        assert_int_equal(rp_test(&reqs[4], &done), RP_OK);
    }
    assert_null(reqs[4]);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(rp_test(&reqs[k], &done), RP_OK);
        assert_int_equal(done, 1); /* call order: all before 4 are done */
        assert_null(reqs[k]);
    }
    assert_memory_equal(in, out, sizeof(in));
    assert_memory_equal(in, gout, sizeof(in));
    assert_memory_equal(gather, "wxyz", 4);
    assert_int_equal(rp_wait(&reqs[0]), RP_OK); /* NULL: complete */
    assert_int_equal(rp_test(&reqs[0], &done), RP_OK);
    assert_int_equal(done, 1);
    /* Outstanding at finalize: run before the context goes. */
    assert_int_equal(rp_iallreduce(ctx, in, out, 100, RP_DTYPE_FLOAT32,
                                   RP_OP_MAX, &reqs[0]), RP_OK);
    assert_int_equal(rp_wait(&reqs[0]), RP_OK);
    rp_finalize(ctx);
}

/* One rank, compressed: each value makes the round trip through the wire
 * format (rounded once), AVG of one rank is the value. */
static void test_single_rank_compression(void **state)
{
    rp_context_h ctx = single();
    float in[3] = {1.0f + 1.0f / 1024, 3.14159265f, -65536.0f * 2}, out[3];
    const void *ins[1] = {in};
    void *outs[1] = {out};
    size_t n = 3;
    rp_allreduce_opts_t opts = {.compression = RP_COMPRESSION_BF16};
    (void)state;

    assert_int_equal(rp_allreduce_group_opts(ctx, ins, outs, &n, 1,
                                             RP_DTYPE_FLOAT32, RP_OP_SUM,
                                             &opts), RP_OK);
    assert_true(out[0] == 1.0f);           /* 8 significant bits */
    assert_true(out[1] == 3.140625f);
    assert_true(out[2] == -131072.0f);
    opts.compression = RP_COMPRESSION_FP16;
    assert_int_equal(rp_allreduce_group_opts(ctx, ins, outs, &n, 1,
                                             RP_DTYPE_FLOAT32, RP_OP_AVG,
                                             &opts), RP_OK);
    assert_true(out[0] == 1.0f + 1.0f / 1024); /* 11 significant bits */
    assert_true(out[1] == 3.140625f);
    assert_true(isinf(out[2]) && out[2] < 0); /* beyond fp16's range */
    rp_finalize(ctx);
}

static void test_nonblocking_bad_arguments(void **state)
{
    rp_context_h ctx = single();
    float buf[8] = {0};
    int32_t ibuf[2] = {0};
    const void *ins[1] = {ibuf};
    void *outs[1] = {ibuf};
    size_t n = 2;
    rp_allreduce_opts_t opts = {.compression = RP_COMPRESSION_FP16};
    rp_request_h req = (rp_request_h)buf;
    int done;
    (void)state;

    /* A failed start leaves no request behind. */
    assert_int_equal(rp_iallreduce(ctx, buf, buf + 1, 4, RP_DTYPE_FLOAT32,
                                   RP_OP_SUM, &req), RP_ERR_INVALID_ARG);
    assert_null(req);
    assert_int_equal(rp_iallreduce(ctx, buf, buf, 1, RP_DTYPE_FLOAT32,
                                   RP_OP_SUM, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_ibroadcast(ctx, buf, 1, RP_DTYPE_FLOAT32, 3, &req),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_ibarrier(NULL, &req), RP_ERR_INVALID_ARG);
    /* Compression is for float32 only, and must be a known value. */
    assert_int_equal(rp_allreduce_group_opts(ctx, ins, outs, &n, 1,
                                             RP_DTYPE_INT32, RP_OP_SUM, &opts),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_iallreduce_group(ctx, ins, outs, &n, 1,
                                         RP_DTYPE_INT32, RP_OP_SUM, &opts,
                                         &req), RP_ERR_INVALID_ARG);
    opts.compression = (rp_compression_t)7;
    ins[0] = buf;
    outs[0] = buf;
    assert_int_equal(rp_allreduce_group_opts(ctx, ins, outs, &n, 1,
                                             RP_DTYPE_FLOAT32, RP_OP_SUM,
                                             &opts), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_test(NULL, &done), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_test(&req, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_wait(NULL), RP_ERR_INVALID_ARG);
    rp_finalize(ctx);

    /* A bad RINGPOINT_COMPRESSION fails rp_init, naming it. */
    setenv("RINGPOINT_COMPRESSION", "zip", 1);
    {
        rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                                   .flags = RP_INIT_FLAG_SINGLE};
        rp_context_h bad = NULL;

        assert_int_equal(rp_init(&params, &bad), RP_ERR_INVALID_ARG);
        assert_null(bad);
    }
    unsetenv("RINGPOINT_COMPRESSION");
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
        cmocka_unit_test(test_exchange_single_rank_and_arguments),
        cmocka_unit_test(test_single_rank_nonblocking),
        cmocka_unit_test(test_single_rank_compression),
        cmocka_unit_test(test_nonblocking_bad_arguments),
        cmocka_unit_test(test_settings),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
