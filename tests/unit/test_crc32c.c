/*
 * Unit tests for the CRC32C engines: published check values, agreement of
 * the SSE4.2 and table engines on every length/alignment class that takes a
 * different code path, chaining, and the combine operator. With
 * RP_CRC_BENCH=1 in the environment it also prints throughput of both
 * engines (not asserted: timing depends on the machine).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ckpt/format/crc32c.h"
#include "test_rng.h"


/* Bit-at-a-time reference, written from the definition, shares no code or
 * tables with the engines under test. */
static uint32_t test_crc_bitwise(uint32_t crc, const unsigned char *p,
                                 size_t len)
{
    size_t i;
    int k;

    crc = ~crc;
    for (i = 0; i < len; i++) {
        crc ^= p[i];
        for (k = 0; k < 8; k++) {
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

static void test_known_vectors(void **state)
{
    unsigned char buf[48];
    unsigned i;

    (void)state;
    assert_int_equal(rp__crc32c(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(rp__crc32c_sw(0, "123456789", 9), 0xE3069283u);
    assert_int_equal(rp__crc32c(0, NULL, 0), 0);
    assert_int_equal(rp__crc32c(0x12345678u, NULL, 0), 0x12345678u);
    assert_int_equal(rp__crc32c(0, "a", 1), 0xC1D04330u);

    /* RFC 3720 (iSCSI) appendix B.4 vectors. */
    memset(buf, 0, 32);
    assert_int_equal(rp__crc32c(0, buf, 32), 0x8A9136AAu);
    memset(buf, 0xff, 32);
    assert_int_equal(rp__crc32c(0, buf, 32), 0x62A8AB43u);
    for (i = 0; i < 32; i++) {
        buf[i] = (unsigned char)i;
    }
    assert_int_equal(rp__crc32c(0, buf, 32), 0x46DD794Eu);
    for (i = 0; i < 32; i++) {
        buf[i] = (unsigned char)(31 - i);
    }
    assert_int_equal(rp__crc32c(0, buf, 32), 0x113FDB5Cu);
    assert_int_equal(rp__crc32c_sw(0, buf, 32), 0x113FDB5Cu);
}

static void test_matches_reference(void **state)
{
    enum { N = 5000 };
    unsigned char *buf = malloc(N + 16);
    size_t len;

    (void)state;
    assert_non_null(buf);
    test_fill(buf, N + 16);
    for (len = 0; len <= N; len += (len < 64 ? 1 : 37)) {
        uint32_t want = test_crc_bitwise(0, buf + 3, len);
        assert_int_equal(rp__crc32c_sw(0, buf + 3, len), want);
        assert_int_equal(rp__crc32c_hw(0, buf + 3, len), want);
        assert_int_equal(rp__crc32c(0, buf + 3, len), want);
    }
    free(buf);
}

/* Random lengths straddling both interleave thresholds (3*256, 3*8192) and
 * beyond, at every alignment, with non-zero starting CRCs. */
static void test_hw_equals_sw(void **state)
{
    enum { MAX = 200000 };
    unsigned char *buf = malloc(MAX + 64);
    static const size_t edges[] = {
        0, 1, 7, 8, 9, 767, 768, 769, 775, 776, 1535, 1536, 24575, 24576,
        24577, 24583, 25344, 49152, 49152 + 768, 65536, 131071
    };
    unsigned i;

    (void)state;
    assert_non_null(buf);
    test_fill(buf, MAX + 64);
    if (!rp__crc32c_hw_available()) {
        print_message("# SSE4.2 not available: hw path falls back to sw\n");
    }
    for (i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
        unsigned off;
        for (off = 0; off < 16; off++) {
            uint32_t seed = (uint32_t)test_rng();
            assert_int_equal(rp__crc32c_hw(seed, buf + off, edges[i]),
                             rp__crc32c_sw(seed, buf + off, edges[i]));
        }
    }
    for (i = 0; i < 3000; i++) {
        size_t off = test_rng() % 64;
        size_t len = test_rng() % (i < 2000 ? 4096 : MAX);
        uint32_t seed = (uint32_t)test_rng();
        assert_int_equal(rp__crc32c_hw(seed, buf + off, len),
                         rp__crc32c_sw(seed, buf + off, len));
    }
    /* A large buffer against the independent bitwise reference. */
    assert_int_equal(rp__crc32c_hw(0, buf + 5, MAX - 5),
                     test_crc_bitwise(0, buf + 5, MAX - 5));
    free(buf);
}

/* The fused copy: the same CRC as rp__crc32c, the same bytes as memcpy,
 * nothing written outside the destination, at every source and destination
 * alignment around the stream thresholds (the kernel aligns the
 * destination to 32 bytes first). */
static void test_copy(void **state)
{
    enum { MAX = 200000, GUARD = 64 };
    unsigned char *src = malloc(MAX + 64);
    unsigned char *dst = malloc(MAX + 64 + 2 * GUARD);
    static const size_t edges[] = {
        0, 1, 31, 32, 33, 767, 768, 769, 800, 24575, 24576, 24577, 24608,
        25344, 49152 + 768 + 31, 131072, 131101
    };
    unsigned i, k;

    (void)state;
    assert_non_null(src);
    assert_non_null(dst);
    test_fill(src, MAX + 64);
    for (i = 0; i < sizeof(edges) / sizeof(edges[0]) + 400; i++) {
        size_t len = i < sizeof(edges) / sizeof(edges[0])
                         ? edges[i] : test_rng() % (i % 2 ? 4096 : MAX);
        size_t so = test_rng() % 64, d_o = test_rng() % 64;
        uint32_t seed = (uint32_t)test_rng();
        unsigned char *d = dst + GUARD + d_o;

        memset(dst, 0xA5, MAX + 64 + 2 * GUARD);
        assert_int_equal(rp__crc32c_copy(seed, d, src + so, len),
                         rp__crc32c_sw(seed, src + so, len));
        assert_memory_equal(d, src + so, len);
        for (k = 0; k < GUARD + d_o; k++) {
            assert_int_equal(dst[k], 0xA5);
        }
        for (k = 0; k < GUARD; k++) {
            assert_int_equal(d[len + k], 0xA5);
        }
    }
    free(src);
    free(dst);
}

static void test_incremental(void **state)
{
    enum { N = 100000 };
    unsigned char *buf = malloc(N);
    uint32_t whole, part;
    unsigned i;

    (void)state;
    assert_non_null(buf);
    test_fill(buf, N);
    whole = rp__crc32c(0, buf, N);
    for (i = 0; i < 200; i++) {
        size_t a = test_rng() % (N + 1);
        size_t b = a + test_rng() % (N - a + 1);

        part = rp__crc32c(0, buf, a);
        part = rp__crc32c(part, buf + a, b - a);
        part = rp__crc32c(part, buf + b, N - b);
        assert_int_equal(part, whole);
        /* Mixing engines mid-stream must not matter either. */
        part = rp__crc32c_sw(0, buf, a);
        part = rp__crc32c_hw(part, buf + a, N - a);
        assert_int_equal(part, whole);
    }
    /* Byte at a time. */
    part = 0;
    for (i = 0; i < 1000; i++) {
        part = rp__crc32c(part, buf + i, 1);
    }
    assert_int_equal(part, rp__crc32c(0, buf, 1000));
    free(buf);
}

static void test_combine(void **state)
{
    enum { N = 70000 };
    unsigned char *buf = malloc(N);
    uint32_t whole;
    unsigned i;

    (void)state;
    assert_non_null(buf);
    test_fill(buf, N);
    whole = rp__crc32c(0, buf, N);
    for (i = 0; i < 100; i++) {
        size_t a = test_rng() % (N + 1);
        uint32_t ca = rp__crc32c(0, buf, a);
        uint32_t cb = rp__crc32c(0, buf + a, N - a);
        assert_int_equal(rp__crc32c_combine(ca, cb, N - a), whole);
    }
    assert_int_equal(rp__crc32c_combine(0x1234u, 0, 0), 0x1234u);
    free(buf);
}

/* A single flipped bit anywhere must change the CRC (CRCs detect all
 * single-bit errors); cheap sanity check that no byte is skipped. */
static void test_detects_bit_flips(void **state)
{
    enum { N = 30000 };
    unsigned char *buf = malloc(N);
    uint32_t base;
    unsigned i;

    (void)state;
    assert_non_null(buf);
    test_fill(buf, N);
    base = rp__crc32c(0, buf, N);
    for (i = 0; i < N; i += 97) {
        unsigned bit = (unsigned)(test_rng() % 8);
        buf[i] ^= (unsigned char)(1u << bit);
        assert_int_not_equal(rp__crc32c(0, buf, N), base);
        buf[i] ^= (unsigned char)(1u << bit);
    }
    assert_int_equal(rp__crc32c(0, buf, N), base);
    free(buf);
}

static double test_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double test_bench_one(uint32_t (*fn)(uint32_t, const void *, size_t),
                             const unsigned char *buf, size_t len)
{
    volatile uint32_t sink = 0;
    double t0, dt, best = 1e9;
    int rep, i;

    for (rep = 0; rep < 5; rep++) {
        t0 = test_now();
        for (i = 0; i < 8; i++) {
            sink ^= fn(sink, buf, len);
        }
        dt = test_now() - t0;
        if (dt < best) {
            best = dt;
        }
    }
    return 8.0 * (double)len / best / 1e9;
}

static void test_bench(void **state)
{
    static const size_t sizes[] = {4096, 65536, 4u << 20, 64u << 20};
    unsigned i;

    (void)state;
    /* Not skip(): cmocka reports it in TAP as "not ok # SKIP", which the
     * automake TAP driver counts as a failure. */
    if (getenv("RP_CRC_BENCH") == NULL) {
        return;
    }
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        unsigned char *buf = malloc(sizes[i]);
        assert_non_null(buf);
        test_fill(buf, sizes[i]);
        print_message("# crc32c %9zu B: slice-by-8 %6.2f GB/s, %s %6.2f GB/s\n",
                      sizes[i], test_bench_one(rp__crc32c_sw, buf, sizes[i]),
                      rp__crc32c_impl_name(),
                      test_bench_one(rp__crc32c, buf, sizes[i]));
        free(buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors),
        cmocka_unit_test(test_matches_reference),
        cmocka_unit_test(test_hw_equals_sw),
        cmocka_unit_test(test_copy),
        cmocka_unit_test(test_incremental),
        cmocka_unit_test(test_combine),
        cmocka_unit_test(test_detects_bit_flips),
        cmocka_unit_test(test_bench),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
