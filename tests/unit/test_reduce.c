/*
 * Unit tests for the reduction kernels (runtime/reduce): every dtype x op
 * against a scalar reference written independently here, at awkward counts
 * and alignments, in place and out of place; AVG scaling; the float16 and
 * bfloat16 conversions against known bit patterns and an exhaustive or
 * dense sweep; and bit-identity across buffer splits and kernel variants.
 *
 * The reference deliberately shares no code with the kernels: conversions
 * are done by searching for the nearest representable value in double
 * precision rather than with bit tricks, and the NaN / signed-zero rules are
 * written out as plain branches.
 *
 * Every kernel test runs once per variant this CPU supports (generic, and
 * AVX2+F16C where present).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ringpoint/types.h"
#include "reduce/half.h"
#include "reduce/reduce.h"
#include "test_rng.h"

/* ---- small helpers -------------------------------------------------------- */

static const size_t counts[] = {0, 1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 1000, 4099};
#define NCOUNTS (sizeof counts / sizeof counts[0])
#define MAXN 4099

static const rp__reduce_isa_t all_isas[] = {RP__REDUCE_ISA_GENERIC, RP__REDUCE_ISA_AVX2};
#define NISAS (sizeof all_isas / sizeof all_isas[0])

/* Element size, written out here rather than taken from rp_dtype_size so
 * that a wrong table there cannot hide a wrong kernel. */
static size_t esize(rp_dtype_t dt)
{
    switch (dt) {
    case RP_DTYPE_UINT8:
        return 1;
    case RP_DTYPE_FLOAT16:
    case RP_DTYPE_BFLOAT16:
        return 2;
    case RP_DTYPE_INT32:
    case RP_DTYPE_FLOAT32:
        return 4;
    case RP_DTYPE_INT64:
    case RP_DTYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}


static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float f32_from(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static uint64_t f64_bits(double f)
{
    uint64_t u;
    memcpy(&u, &f, 8);
    return u;
}

static double f64_from(uint64_t u)
{
    double f;
    memcpy(&f, &u, 8);
    return f;
}

/* Select a kernel variant; false if the CPU lacks it (the test skips it). */
static bool use_isa(rp__reduce_isa_t isa)
{
    return rp__reduce_set_isa(isa);
}

/* ---- reference conversions ------------------------------------------------
 * A 16-bit format is described by its exponent width; its positive
 * finite patterns are ordered like their values, so rounding is a binary
 * search for the two neighbours followed by a nearest/even choice. */

struct fmt16 {
    int ebits;     /* 5 for binary16, 8 for bfloat16 */
    int mbits;     /* 10 or 7 */
    uint16_t inf;  /* 0x7C00 or 0x7F80 */
    uint16_t qbit; /* quiet bit: 0x0200 or 0x0040 */
};

static const struct fmt16 F16 = {5, 10, 0x7C00, 0x0200};
static const struct fmt16 BF16 = {8, 7, 0x7F80, 0x0040};

/* Value of a non-negative, non-NaN pattern; the infinity pattern counts as
 * the next power of two, which is what IEEE overflow rounding compares to. */
static double ref16_mag(const struct fmt16 *f, uint16_t h)
{
    int bias = (1 << (f->ebits - 1)) - 1;
    int e = h >> f->mbits;
    int m = h & ((1 << f->mbits) - 1);

    if (e == 0)
        return ldexp((double)m, 1 - bias - f->mbits);
    return ldexp((double)(m + (1 << f->mbits)), e - bias - f->mbits);
}

static uint16_t ref_from_f32(const struct fmt16 *f, float x)
{
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    double a = fabs((double)x);
    uint16_t lo = 0, hi = f->inf;

    if (isnan(x)) /* documented: quiet bit set, top payload bits kept */
        return (uint16_t)(sign | f->inf | f->qbit |
                          ((u & 0x007FFFFFu) >> (23 - f->mbits)));
    if (a >= ref16_mag(f, f->inf))
        return (uint16_t)(sign | f->inf);
    /* Invariant: mag(lo) <= a < mag(hi). */
    while (hi - lo > 1) {
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (ref16_mag(f, mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    {
        double dlo = a - ref16_mag(f, lo), dhi = ref16_mag(f, hi) - a;
        uint16_t r = (dlo < dhi || (dlo == dhi && (lo & 1) == 0)) ? lo : hi;
        return (uint16_t)(sign | r);
    }
}

static float ref_to_f32(const struct fmt16 *f, uint16_t h)
{
    uint16_t mag = h & 0x7FFFu;
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;

    if (mag > f->inf) /* NaN: payload moved up, quiet bit set */
        return f32_from(sign | 0x7FC00000u |
                        ((uint32_t)(mag & ((1u << f->mbits) - 1)) << (23 - f->mbits)));
    if (mag == f->inf)
        return f32_from(sign | 0x7F800000u);
    return (h & 0x8000u) ? -(float)ref16_mag(f, mag) : (float)ref16_mag(f, mag);
}

/* bfloat16 widening keeps a NaN's bits exactly (no quieting). */
static float ref_bf16_to_f32(uint16_t h)
{
    if ((h & 0x7FFFu) > 0x7F80u)
        return f32_from((uint32_t)h << 16);
    return ref_to_f32(&BF16, h);
}

/* ---- reference element operations ---------------------------------------- */

#define CANON32 0x7FC00000u
#define CANON64 0x7FF8000000000000ull

/* MIN/MAX rule: any NaN -> canonical NaN; -0 < +0; otherwise the usual. */
static uint32_t ref_minmax32(uint32_t ab, uint32_t bb, bool is_max)
{
    float a = f32_from(ab), b = f32_from(bb);

    if (isnan(a) || isnan(b))
        return CANON32;
    if (a == b) {
        if (a == 0 && signbit(a) != signbit(b))
            return (signbit(a) != 0) == !is_max ? ab : bb;
        return ab;
    }
    if (is_max)
        return a > b ? ab : bb;
    return a < b ? ab : bb;
}

static uint64_t ref_minmax64(uint64_t ab, uint64_t bb, bool is_max)
{
    double a = f64_from(ab), b = f64_from(bb);

    if (isnan(a) || isnan(b))
        return CANON64;
    if (a == b) {
        if (a == 0 && signbit(a) != signbit(b))
            return (signbit(a) != 0) == !is_max ? ab : bb;
        return ab;
    }
    if (is_max)
        return a > b ? ab : bb;
    return a < b ? ab : bb;
}

static uint32_t ref_f32_op(rp_op_t op, uint32_t ab, uint32_t bb)
{
    float r;

    switch (op) {
    case RP_OP_SUM:
    case RP_OP_AVG:
        r = f32_from(ab) + f32_from(bb);
        break;
    case RP_OP_PROD:
        r = f32_from(ab) * f32_from(bb);
        break;
    case RP_OP_MIN:
        return ref_minmax32(ab, bb, false);
    case RP_OP_MAX:
        return ref_minmax32(ab, bb, true);
    default:
        fail_msg("bad op %d", (int)op);
        return 0;
    }
    return isnan(r) ? CANON32 : f32_bits(r);
}

static uint64_t ref_f64_op(rp_op_t op, uint64_t ab, uint64_t bb)
{
    double r;

    switch (op) {
    case RP_OP_SUM:
    case RP_OP_AVG:
        r = f64_from(ab) + f64_from(bb);
        break;
    case RP_OP_PROD:
        r = f64_from(ab) * f64_from(bb);
        break;
    case RP_OP_MIN:
        return ref_minmax64(ab, bb, false);
    case RP_OP_MAX:
        return ref_minmax64(ab, bb, true);
    default:
        fail_msg("bad op %d", (int)op);
        return 0;
    }
    return isnan(r) ? CANON64 : f64_bits(r);
}

/* One element: out = a OP b, all as raw bytes of dtype dt. */
static void ref_elem(rp_dtype_t dt, rp_op_t op, void *out, const void *pa, const void *pb)
{
    switch (dt) {
    case RP_DTYPE_UINT8: {
        uint8_t a, b, r = 0;
        memcpy(&a, pa, 1);
        memcpy(&b, pb, 1);
        if (op == RP_OP_SUM || op == RP_OP_AVG)
            r = (uint8_t)(a + b);
        else if (op == RP_OP_PROD)
            r = (uint8_t)(a * b);
        else if (op == RP_OP_MIN)
            r = a < b ? a : b;
        else
            r = a > b ? a : b;
        memcpy(out, &r, 1);
        break;
    }
    case RP_DTYPE_INT32: {
        int32_t a, b, r;
        memcpy(&a, pa, 4);
        memcpy(&b, pb, 4);
        /* Wrap-around computed in 64 bits, then reduced modulo 2^32. */
        if (op == RP_OP_SUM || op == RP_OP_AVG)
            r = (int32_t)(uint32_t)((uint64_t)(int64_t)a + (uint64_t)(int64_t)b);
        else if (op == RP_OP_PROD)
            r = (int32_t)(uint32_t)((uint64_t)(int64_t)a * (uint64_t)(int64_t)b);
        else if (op == RP_OP_MIN)
            r = a < b ? a : b;
        else
            r = a > b ? a : b;
        memcpy(out, &r, 4);
        break;
    }
    case RP_DTYPE_INT64: {
        int64_t a, b, r;
        memcpy(&a, pa, 8);
        memcpy(&b, pb, 8);
        if (op == RP_OP_SUM || op == RP_OP_AVG)
            r = (int64_t)((uint64_t)a + (uint64_t)b);
        else if (op == RP_OP_PROD)
            r = (int64_t)((uint64_t)a * (uint64_t)b);
        else if (op == RP_OP_MIN)
            r = a < b ? a : b;
        else
            r = a > b ? a : b;
        memcpy(out, &r, 8);
        break;
    }
    case RP_DTYPE_FLOAT16:
    case RP_DTYPE_BFLOAT16: {
        const struct fmt16 *f = dt == RP_DTYPE_FLOAT16 ? &F16 : &BF16;
        uint16_t a, b, r;
        float fa, fb;
        memcpy(&a, pa, 2);
        memcpy(&b, pb, 2);
        fa = dt == RP_DTYPE_FLOAT16 ? ref_to_f32(f, a) : ref_bf16_to_f32(a);
        fb = dt == RP_DTYPE_FLOAT16 ? ref_to_f32(f, b) : ref_bf16_to_f32(b);
        r = ref_from_f32(f, f32_from(ref_f32_op(op, f32_bits(fa), f32_bits(fb))));
        memcpy(out, &r, 2);
        break;
    }
    case RP_DTYPE_FLOAT32: {
        uint32_t a, b, r;
        memcpy(&a, pa, 4);
        memcpy(&b, pb, 4);
        r = ref_f32_op(op, a, b);
        memcpy(out, &r, 4);
        break;
    }
    case RP_DTYPE_FLOAT64: {
        uint64_t a, b, r;
        memcpy(&a, pa, 8);
        memcpy(&b, pb, 8);
        r = ref_f64_op(op, a, b);
        memcpy(out, &r, 8);
        break;
    }
    default:
        fail_msg("bad dtype %d", (int)dt);
    }
}

/* ---- input generation ---------------------------------------------------- */

static const uint32_t special32[] = {
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, /* zeros, infinities */
    0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FA12345, /* NaNs, incl. signalling */
    0x00000001, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, /* subnormals, min/max */
    0x477FF000, 0x33000000, 0x3F800000, 0xBF800000, /* f16 edges, +-1 */
};

static const uint64_t special64[] = {
    0x0000000000000000ull, 0x8000000000000000ull, 0x7FF0000000000000ull,
    0xFFF0000000000000ull, 0x7FF8000000000000ull, 0xFFF8000000000001ull,
    0x7FF0000000000001ull, 0x0000000000000001ull, 0x800FFFFFFFFFFFFFull,
    0x7FEFFFFFFFFFFFFFull, 0x3FF0000000000000ull, 0xBFF0000000000000ull,
};

static const uint16_t special16[] = {
    0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE55, /* f16 specials */
    0x0001, 0x83FF, 0x0400, 0x7BFF, 0x3C00,                 /* subnormal..max */
    0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0080, 0x7F7F,         /* bf16 specials */
};

/* Fill n elements of dtype dt: mostly ordinary values (so that whole
 * vectors take the common path) with specials and raw random bits mixed
 * in (so that others take the rare paths). */
static void gen(rp_dtype_t dt, void *buf, size_t n)
{
    unsigned char *p = buf;

    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rng();
        unsigned pick = (unsigned)(r % 100);
        switch (dt) {
        case RP_DTYPE_UINT8: {
            uint8_t v = (uint8_t)(r >> 8);
            if (pick < 10)
                v = (pick & 1) ? 0xFF : 0;
            memcpy(p + i, &v, 1);
            break;
        }
        case RP_DTYPE_INT32: {
            static const int32_t ext[] = {INT32_MIN, INT32_MAX, -1, 0, 1, 65536};
            int32_t v = (int32_t)(uint32_t)(r >> 16);
            if (pick < 15)
                v = ext[pick % 6];
            else if (pick < 60)
                v = (int32_t)(r >> 40) % 1000;
            memcpy(p + 4 * i, &v, 4);
            break;
        }
        case RP_DTYPE_INT64: {
            static const int64_t ext[] = {INT64_MIN, INT64_MAX, -1, 0, 1, 4294967296LL};
            int64_t v = (int64_t)(r ^ (test_rng() << 1));
            if (pick < 15)
                v = ext[pick % 6];
            else if (pick < 60)
                v = (int64_t)(r >> 40) % 100000 - 50000;
            memcpy(p + 8 * i, &v, 8);
            break;
        }
        case RP_DTYPE_FLOAT16:
        case RP_DTYPE_BFLOAT16: {
            const struct fmt16 *f = dt == RP_DTYPE_FLOAT16 ? &F16 : &BF16;
            uint16_t v;
            if (pick < 3)
                v = (uint16_t)((r & 1) << 15); /* +-0 */
            else if (pick < 6)
                v = special16[(r >> 8) % (sizeof special16 / sizeof special16[0])];
            else if (pick < 20)
                v = (uint16_t)(r >> 24);
            else
                v = ref_from_f32(f, (float)((double)((int64_t)(r >> 32) % 200001 - 100000) /
                                            1024.0));
            memcpy(p + 2 * i, &v, 2);
            break;
        }
        case RP_DTYPE_FLOAT32: {
            uint32_t v;
            if (pick < 3)
                v = (uint32_t)(r & 1) << 31; /* +-0 */
            else if (pick < 6)
                v = special32[(r >> 8) % (sizeof special32 / sizeof special32[0])];
            else if (pick < 20)
                v = (uint32_t)(r >> 16);
            else
                v = f32_bits((float)((double)((int64_t)(r >> 32) % 2000001 - 1000000) / 977.0));
            memcpy(p + 4 * i, &v, 4);
            break;
        }
        case RP_DTYPE_FLOAT64: {
            uint64_t v;
            if (pick < 3)
                v = (uint64_t)(r & 1) << 63; /* +-0 */
            else if (pick < 6)
                v = special64[(r >> 8) % (sizeof special64 / sizeof special64[0])];
            else if (pick < 20)
                v = r ^ (test_rng() >> 3);
            else
                v = f64_bits((double)((int64_t)(r >> 32) % 2000001 - 1000000) / 977.0);
            memcpy(p + 8 * i, &v, 8);
            break;
        }
        default:
            fail_msg("bad dtype");
        }
    }
}

/* Fill a and b, then make some b[i] equal to a[i] or, for floats, to a[i]
 * with the sign flipped: equal operands and +0/-0 pairs are where MIN/MAX
 * rules live, and independent random values almost never produce them. */
static void gen_pair(rp_dtype_t dt, void *a, void *b, size_t n)
{
    size_t esz = esize(dt);
    unsigned char *pa = a, *pb = b;

    gen(dt, a, n);
    gen(dt, b, n);
    for (size_t i = 0; i < n; i++) {
        unsigned pick = (unsigned)(test_rng() % 100);
        if (pick < 10) {
            memcpy(pb + i * esz, pa + i * esz, esz);
        } else if (pick < 20 && dt != RP_DTYPE_UINT8 && dt != RP_DTYPE_INT32 &&
                   dt != RP_DTYPE_INT64) {
            /* Little-endian: the sign bit is in the last byte. */
            memcpy(pb + i * esz, pa + i * esz, esz);
            pb[i * esz + esz - 1] ^= 0x80;
        }
    }
}

/* ---- buffers with canaries -------------------------------------------------
 * Each test buffer sits at a chosen byte offset inside a larger allocation
 * whose other bytes hold a known pattern, so an out-of-bounds write or a
 * write past count is caught. */

#define CANARY 0xA5
#define SLACK 64

struct tbuf {
    unsigned char *base;
    unsigned char *p;
    size_t off, len, total;
};

static void tbuf_init(struct tbuf *b, size_t len, size_t off)
{
    b->total = len + off + SLACK;
    b->base = malloc(b->total);
    assert_non_null(b->base);
    memset(b->base, CANARY, b->total);
    b->off = off;
    b->len = len;
    b->p = b->base + off;
}

/* Offset (relative to b->p) of the first clobbered byte outside the
 * buffer, or 0 if none (offset 0 is inside the buffer, or the buffer is
 * empty and then a clobber at 0 is reported as 1 byte in). */
static ptrdiff_t tbuf_clobbered(const struct tbuf *b)
{
    for (size_t i = 0; i < b->total; i++) {
        if (i >= b->off && i < b->off + b->len)
            continue;
        if (b->base[i] != CANARY)
            return (ptrdiff_t)i - (ptrdiff_t)b->off + (i == b->off ? 1 : 0);
    }
    return 0;
}

static void tbuf_check_canary(const struct tbuf *b, const char *what)
{
    ptrdiff_t at = tbuf_clobbered(b);

    if (at != 0)
        fail_msg("%s: byte at %td outside the buffer was overwritten", what, at);
}

static void tbuf_free(struct tbuf *b)
{
    free(b->base);
    b->base = b->p = NULL;
}

/* Compare n elements; report the first difference with its bits. */
static void check_elems(const char *ctx, size_t esz, const void *got, const void *want, size_t n)
{
    const unsigned char *g = got, *w = want;

    for (size_t i = 0; i < n; i++) {
        if (memcmp(g + i * esz, w + i * esz, esz) != 0) {
            uint64_t gv = 0, wv = 0;
            memcpy(&gv, g + i * esz, esz); /* little-endian display */
            memcpy(&wv, w + i * esz, esz);
            fail_msg("%s: element %zu: got 0x%0*llx, want 0x%0*llx", ctx, i,
                     (int)(2 * esz), (unsigned long long)gv,
                     (int)(2 * esz), (unsigned long long)wv);
        }
    }
}

/* ---- tests: names and validity ------------------------------------------- */

static void test_dtype_names_sizes(void **state)
{
    (void)state;
    assert_int_equal(rp_dtype_size(RP_DTYPE_UINT8), 1);
    assert_int_equal(rp_dtype_size(RP_DTYPE_INT32), 4);
    assert_int_equal(rp_dtype_size(RP_DTYPE_INT64), 8);
    assert_int_equal(rp_dtype_size(RP_DTYPE_FLOAT16), 2);
    assert_int_equal(rp_dtype_size(RP_DTYPE_BFLOAT16), 2);
    assert_int_equal(rp_dtype_size(RP_DTYPE_FLOAT32), 4);
    assert_int_equal(rp_dtype_size(RP_DTYPE_FLOAT64), 8);
    assert_int_equal(rp_dtype_size(RP_DTYPE_COUNT), 0);
    assert_int_equal(rp_dtype_size((rp_dtype_t)-1), 0);

    assert_string_equal(rp_dtype_name(RP_DTYPE_UINT8), "uint8");
    assert_string_equal(rp_dtype_name(RP_DTYPE_INT32), "int32");
    assert_string_equal(rp_dtype_name(RP_DTYPE_INT64), "int64");
    assert_string_equal(rp_dtype_name(RP_DTYPE_FLOAT16), "float16");
    assert_string_equal(rp_dtype_name(RP_DTYPE_BFLOAT16), "bfloat16");
    assert_string_equal(rp_dtype_name(RP_DTYPE_FLOAT32), "float32");
    assert_string_equal(rp_dtype_name(RP_DTYPE_FLOAT64), "float64");
    assert_string_equal(rp_dtype_name(RP_DTYPE_COUNT), "invalid");
    assert_string_equal(rp_dtype_name((rp_dtype_t)-3), "invalid");

    assert_string_equal(rp_op_name(RP_OP_SUM), "sum");
    assert_string_equal(rp_op_name(RP_OP_PROD), "prod");
    assert_string_equal(rp_op_name(RP_OP_MIN), "min");
    assert_string_equal(rp_op_name(RP_OP_MAX), "max");
    assert_string_equal(rp_op_name(RP_OP_AVG), "avg");
    assert_string_equal(rp_op_name(RP_OP_COUNT), "invalid");
    assert_string_equal(rp_op_name((rp_op_t)-1), "invalid");
}

static void test_supported(void **state)
{
    (void)state;
    for (int d = 0; d < RP_DTYPE_COUNT; d++)
        for (int o = 0; o < RP_OP_COUNT; o++)
            assert_true(rp__reduce_supported((rp_dtype_t)d, (rp_op_t)o));
    assert_false(rp__reduce_supported(RP_DTYPE_COUNT, RP_OP_SUM));
    assert_false(rp__reduce_supported(RP_DTYPE_FLOAT32, RP_OP_COUNT));
    assert_false(rp__reduce_supported((rp_dtype_t)-1, RP_OP_SUM));
    assert_false(rp__reduce_supported(RP_DTYPE_INT32, (rp_op_t)-1));
}

static void test_isa_selection(void **state)
{
    (void)state;
    assert_true(rp__reduce_set_isa(RP__REDUCE_ISA_GENERIC));
    assert_string_equal(rp__reduce_isa_name(), "generic");
    if (rp__reduce_set_isa(RP__REDUCE_ISA_AVX2))
        assert_string_equal(rp__reduce_isa_name(), "avx2-f16c");
    else
        assert_string_equal(rp__reduce_isa_name(), "generic"); /* unchanged */
    assert_false(rp__reduce_set_isa((rp__reduce_isa_t)99));
    assert_true(rp__reduce_set_isa(RP__REDUCE_ISA_AUTO));
    assert_non_null(rp__reduce_isa_name());
}

/* ---- tests: the binary kernels against the reference ---------------------- */

enum mode { M_INPLACE, M_OUT, M_ALIAS_A, M_ALIAS_B, M_SELF, M_COUNT };
static const char *const mode_names[] = {"inplace", "out-of-place", "dst==a", "dst==b",
                                         "dst==a==b"};

/* Run one (dtype, op, count, offsets, mode) case and compare with the
 * reference; a and b hold count elements each (aligned scratch). */
static void run_binop_case(rp_dtype_t dt, rp_op_t op, size_t n, size_t off_d,
                           size_t off_s, enum mode m, const unsigned char *a,
                           const unsigned char *b, unsigned char *want)
{
    size_t esz = esize(dt), len = n * esz;
    struct tbuf bd, bs;
    char ctx[160];

    snprintf(ctx, sizeof ctx, "%s %s %s n=%zu off=%zu/%zu [%s]", rp__reduce_isa_name(),
             rp_dtype_name(dt), rp_op_name(op), n, off_d, off_s, mode_names[m]);

    /* Expected result, element by element. */
    for (size_t i = 0; i < n; i++) {
        const unsigned char *x = a + i * esz;
        const unsigned char *y = (m == M_SELF) ? x : b + i * esz;
        ref_elem(dt, op, want + i * esz, x, y);
    }

    tbuf_init(&bd, len, off_d);
    tbuf_init(&bs, len, off_s);
    memcpy(bd.p, a, len);
    memcpy(bs.p, b, len);

    switch (m) {
    case M_INPLACE:
        rp__reduce_inplace(dt, op, bd.p, bs.p, n);
        break;
    case M_OUT: {
        struct tbuf bo;
        tbuf_init(&bo, len, (off_d + off_s) % 8);
        rp__reduce(dt, op, bo.p, bd.p, bs.p, n);
        check_elems(ctx, esz, bo.p, want, n);
        tbuf_check_canary(&bo, ctx);
        /* Inputs must be left alone. */
        check_elems(ctx, esz, bd.p, a, n);
        tbuf_free(&bo);
        memcpy(bd.p, want, len); /* so the common check below passes */
        break;
    }
    case M_ALIAS_A:
        rp__reduce(dt, op, bd.p, bd.p, bs.p, n);
        break;
    case M_ALIAS_B:
        /* dst is b: the result lands in the second operand's buffer. */
        rp__reduce(dt, op, bs.p, bd.p, bs.p, n);
        check_elems(ctx, esz, bs.p, want, n);
        check_elems(ctx, esz, bd.p, a, n);
        memcpy(bs.p, b, len);
        memcpy(bd.p, want, len);
        break;
    case M_SELF:
        rp__reduce(dt, op, bd.p, bd.p, bd.p, n);
        break;
    default:
        fail();
    }
    check_elems(ctx, esz, bd.p, want, n);
    check_elems(ctx, esz, bs.p, b, n); /* src untouched */
    tbuf_check_canary(&bd, ctx);
    tbuf_check_canary(&bs, ctx);
    tbuf_free(&bd);
    tbuf_free(&bs);
}

static void test_binop_all(void **state)
{
    unsigned char *a = malloc(MAXN * 8), *b = malloc(MAXN * 8), *want = malloc(MAXN * 8);

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(want);
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        for (int d = 0; d < RP_DTYPE_COUNT; d++) {
            rp_dtype_t dt = (rp_dtype_t)d;
            size_t esz = esize(dt);
            /* Aligned, one element off, and an odd byte offset (for uint8
             * the element offset is already 1 byte). */
            size_t offs[3] = {0, esz, esz == 1 ? 3 : esz + 1};
            for (int o = 0; o < RP_OP_COUNT; o++) {
                for (size_t c = 0; c < NCOUNTS; c++) {
                    size_t n = counts[c];
                    test_rng_seed(1000003u * (uint64_t)(d + 1) + 7919u * (uint64_t)(o + 1) + n);
                    gen_pair(dt, a, b, n);
                    for (size_t oi = 0; oi < 3; oi++)
                        for (int m = 0; m < M_COUNT; m++)
                            run_binop_case(dt, (rp_op_t)o, n, offs[oi], offs[(oi + 1) % 3],
                                           (enum mode)m, a, b, want);
                }
            }
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(a);
    free(b);
    free(want);
}

/* count == 0 must not touch memory, so NULL is acceptable. */
static void test_count_zero(void **state)
{
    unsigned char buf[16];

    (void)state;
    memset(buf, 0x5A, sizeof buf);
    for (int d = 0; d < RP_DTYPE_COUNT; d++) {
        for (int o = 0; o < RP_OP_COUNT; o++) {
            rp__reduce_inplace((rp_dtype_t)d, (rp_op_t)o, NULL, NULL, 0);
            rp__reduce((rp_dtype_t)d, (rp_op_t)o, NULL, NULL, NULL, 0);
            rp__reduce_inplace((rp_dtype_t)d, (rp_op_t)o, buf, buf + 8, 0);
        }
        rp__reduce_scale((rp_dtype_t)d, NULL, 0, 4);
    }
    rp__reduce_acc_f32(RP_OP_SUM, NULL, NULL, RP_DTYPE_FLOAT16, 0);
    rp__f32_to_f16(NULL, NULL, 0);
    rp__f16_to_f32(NULL, NULL, 0);
    rp__f32_to_bf16(NULL, NULL, 0);
    rp__bf16_to_f32(NULL, NULL, 0);
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0x5A);
}

/* Invalid enums are ignored rather than indexing out of the tables. */
static void test_invalid_args_ignored(void **state)
{
    float f[4] = {1, 2, 3, 4}, g[4] = {1, 1, 1, 1};

    (void)state;
    rp__reduce_inplace(RP_DTYPE_COUNT, RP_OP_SUM, f, g, 4);
    rp__reduce_inplace(RP_DTYPE_FLOAT32, RP_OP_COUNT, f, g, 4);
    rp__reduce_acc_f32(RP_OP_SUM, f, g, RP_DTYPE_INT32, 4);
    rp__reduce_acc_f32(RP_OP_COUNT, f, g, RP_DTYPE_FLOAT32, 4);
    rp__reduce_scale(RP_DTYPE_COUNT, f, 4, 2);
    assert_true(f[0] == 1 && f[1] == 2 && f[2] == 3 && f[3] == 4);
}

/* ---- tests: specific semantics ------------------------------------------- */

static void test_integer_wrap_and_sign(void **state)
{
    (void)state;
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        {
            int32_t d[6] = {INT32_MAX, INT32_MIN, 65536, -1, -1, 5};
            int32_t s[6] = {1, INT32_MIN, 65536, 0, 1, -7};
            rp__reduce_inplace(RP_DTYPE_INT32, RP_OP_SUM, d, s, 6);
            assert_int_equal(d[0], INT32_MIN);
            assert_int_equal(d[1], 0);
            assert_int_equal(d[2], 131072);
            assert_int_equal(d[3], -1);
            assert_int_equal(d[4], 0);
            assert_int_equal(d[5], -2);
        }
        {
            int32_t d[3] = {65536, INT32_MIN, -3}, s[3] = {65536, -1, 7};
            rp__reduce_inplace(RP_DTYPE_INT32, RP_OP_PROD, d, s, 3);
            assert_int_equal(d[0], 0);
            assert_int_equal(d[1], INT32_MIN);
            assert_int_equal(d[2], -21);
        }
        {
            /* Signed compare: -1 < 0 (an unsigned compare would say no). */
            int32_t d[2] = {-1, 0}, s[2] = {0, -1};
            rp__reduce_inplace(RP_DTYPE_INT32, RP_OP_MIN, d, s, 2);
            assert_int_equal(d[0], -1);
            assert_int_equal(d[1], -1);
            rp__reduce_inplace(RP_DTYPE_INT32, RP_OP_MAX, d, s, 2);
            assert_int_equal(d[0], 0);
            assert_int_equal(d[1], -1);
        }
        {
            int64_t d[4] = {INT64_MAX, INT64_MIN, -5, INT64_MIN}, s[4] = {1, -1, 3, 0};
            rp__reduce_inplace(RP_DTYPE_INT64, RP_OP_SUM, d, s, 4);
            assert_true(d[0] == INT64_MIN);
            assert_true(d[1] == INT64_MAX);
            assert_true(d[2] == -2);
            assert_true(d[3] == INT64_MIN);
            int64_t p[2] = {INT64_MAX, 4294967296LL}, q[2] = {2, 4294967296LL};
            rp__reduce_inplace(RP_DTYPE_INT64, RP_OP_PROD, p, q, 2);
            assert_true(p[0] == -2);
            assert_true(p[1] == 0);
            int64_t x[1] = {-1}, y[1] = {1};
            rp__reduce_inplace(RP_DTYPE_INT64, RP_OP_MIN, x, y, 1);
            assert_true(x[0] == -1);
        }
        {
            /* Unsigned compare: 255 > 1 (a signed byte compare would say no). */
            uint8_t d[4] = {200, 16, 255, 1}, s[4] = {100, 16, 1, 255};
            uint8_t m[4];
            memcpy(m, d, 4);
            rp__reduce_inplace(RP_DTYPE_UINT8, RP_OP_SUM, d, s, 4);
            assert_int_equal(d[0], 44);
            assert_int_equal(d[1], 32);
            assert_int_equal(d[2], 0);
            memcpy(d, m, 4);
            rp__reduce_inplace(RP_DTYPE_UINT8, RP_OP_PROD, d, s, 4);
            assert_int_equal(d[1], 0);
            assert_int_equal(d[0], (200 * 100) & 0xFF);
            memcpy(d, m, 4);
            rp__reduce_inplace(RP_DTYPE_UINT8, RP_OP_MAX, d, s, 4);
            assert_int_equal(d[2], 255);
            assert_int_equal(d[3], 255);
            memcpy(d, m, 4);
            rp__reduce_inplace(RP_DTYPE_UINT8, RP_OP_MIN, d, s, 4);
            assert_int_equal(d[2], 1);
            assert_int_equal(d[3], 1);
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
}

/* Float NaN and signed-zero rules, with literal bit patterns. */
static void test_float_special_rules(void **state)
{
    (void)state;
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        {
            /* MIN: -0 wins either way round; NaN in either slot gives the
             * canonical NaN; ordinary values ordered. */
            uint32_t d[6] = {0x00000000, 0x80000000, 0x7FA00001,
                             0x3F800000, 0xFFC00000, 0xBF800000};
            uint32_t s[6] = {0x80000000, 0x00000000, 0x3F800000,
                             0xFF812345, 0x7FC00000, 0x3F800000};
            uint32_t mn[6], mx[6], sm[6];
            memcpy(mn, d, sizeof d);
            memcpy(mx, d, sizeof d);
            memcpy(sm, d, sizeof d);
            rp__reduce_inplace(RP_DTYPE_FLOAT32, RP_OP_MIN, mn, s, 6);
            rp__reduce_inplace(RP_DTYPE_FLOAT32, RP_OP_MAX, mx, s, 6);
            rp__reduce_inplace(RP_DTYPE_FLOAT32, RP_OP_SUM, sm, s, 6);
            assert_int_equal(mn[0], 0x80000000);
            assert_int_equal(mn[1], 0x80000000);
            assert_int_equal(mn[2], CANON32);
            assert_int_equal(mn[3], CANON32);
            assert_int_equal(mn[4], CANON32);
            assert_int_equal(mn[5], 0xBF800000);
            assert_int_equal(mx[0], 0x00000000);
            assert_int_equal(mx[1], 0x00000000);
            assert_int_equal(mx[2], CANON32);
            assert_int_equal(mx[3], CANON32);
            assert_int_equal(mx[4], CANON32);
            assert_int_equal(mx[5], 0x3F800000);
            /* SUM: NaN payloads and signs do not leak through; +0 + -0 = +0. */
            assert_int_equal(sm[0], 0x00000000);
            assert_int_equal(sm[2], CANON32);
            assert_int_equal(sm[3], CANON32);
            assert_int_equal(sm[4], CANON32);
            assert_int_equal(sm[5], 0x00000000);
        }
        {
            /* inf - inf and 0 * inf: x86's default NaN is negative; ours is not. */
            float d[2] = {INFINITY, 0.0f}, s[2] = {-INFINITY, INFINITY};
            uint32_t u[2];
            rp__reduce_inplace(RP_DTYPE_FLOAT32, RP_OP_SUM, d, s, 1);
            rp__reduce_inplace(RP_DTYPE_FLOAT32, RP_OP_PROD, d + 1, s + 1, 1);
            memcpy(u, d, sizeof u);
            assert_int_equal(u[0], CANON32);
            assert_int_equal(u[1], CANON32);
        }
        {
            uint64_t d[4] = {0x8000000000000000ull, 0x7FF0000000000001ull, 0,
                             0xFFF0000000000000ull};
            uint64_t s[4] = {0x0000000000000000ull, 0x3FF0000000000000ull,
                             0xFFF8000000000000ull, 0x7FF0000000000000ull};
            uint64_t mn[4], mx[4], sm[4];
            memcpy(mn, d, sizeof d);
            memcpy(mx, d, sizeof d);
            memcpy(sm, d, sizeof d);
            rp__reduce_inplace(RP_DTYPE_FLOAT64, RP_OP_MIN, mn, s, 4);
            rp__reduce_inplace(RP_DTYPE_FLOAT64, RP_OP_MAX, mx, s, 4);
            rp__reduce_inplace(RP_DTYPE_FLOAT64, RP_OP_SUM, sm, s, 4);
            assert_true(mn[0] == 0x8000000000000000ull);
            assert_true(mx[0] == 0);
            assert_true(mn[1] == CANON64 && mx[1] == CANON64);
            assert_true(mn[2] == CANON64 && mx[2] == CANON64);
            assert_true(mn[3] == 0xFFF0000000000000ull && mx[3] == 0x7FF0000000000000ull);
            assert_true(sm[3] == CANON64);
        }
        {
            /* fp16/bf16: same rules after widening, canonical NaN narrowed. */
            uint16_t d[4] = {0x0000, 0x7C01, 0x3C00, 0x7BFF};
            uint16_t s[4] = {0x8000, 0x3C00, 0xFE00, 0x7BFF};
            uint16_t mn[4], sm[4];
            memcpy(mn, d, sizeof d);
            memcpy(sm, d, sizeof d);
            rp__reduce_inplace(RP_DTYPE_FLOAT16, RP_OP_MIN, mn, s, 4);
            rp__reduce_inplace(RP_DTYPE_FLOAT16, RP_OP_SUM, sm, s, 4);
            assert_int_equal(mn[0], 0x8000);
            assert_int_equal(mn[1], 0x7E00);
            assert_int_equal(mn[2], 0x7E00);
            assert_int_equal(mn[3], 0x7BFF);
            assert_int_equal(sm[0], 0x0000);
            assert_int_equal(sm[1], 0x7E00);
            assert_int_equal(sm[3], 0x7C00); /* 65504 + 65504 overflows */

            uint16_t bd[3] = {0x7F81, 0x3F80, 0x8000}, bs[3] = {0x3F80, 0x3F81, 0x0000};
            rp__reduce_inplace(RP_DTYPE_BFLOAT16, RP_OP_MAX, bd, bs, 3);
            assert_int_equal(bd[0], 0x7FC0);
            assert_int_equal(bd[1], 0x3F81);
            assert_int_equal(bd[2], 0x0000);
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
}

/* fp16 SUM rounds once, to nearest-even, from the float32 sum. */
static void test_half_sum_rounding(void **state)
{
    (void)state;
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        /* 1 + 2^-11 is halfway between 1 and 1+2^-10: ties to even (1).
         * (1+2^-10) + 2^-11 is halfway between odd and even: up to 1+2^-9.
         * 2^-24 + 2^-24 = 2^-23: subnormal arithmetic is exact. */
        uint16_t d[3] = {0x3C00, 0x3C01, 0x0001}, s[3] = {0x1000, 0x1000, 0x0001};
        rp__reduce_inplace(RP_DTYPE_FLOAT16, RP_OP_SUM, d, s, 3);
        assert_int_equal(d[0], 0x3C00);
        assert_int_equal(d[1], 0x3C02);
        assert_int_equal(d[2], 0x0002);
        /* bf16: 1 + 2^-8 ties to even (1); 1+2^-7 + 2^-8 rounds up. */
        uint16_t bd[2] = {0x3F80, 0x3F81}, bs[2] = {0x3B80, 0x3B80};
        rp__reduce_inplace(RP_DTYPE_BFLOAT16, RP_OP_SUM, bd, bs, 2);
        assert_int_equal(bd[0], 0x3F80);
        assert_int_equal(bd[1], 0x3F82);
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
}

/* ---- tests: AVG scaling --------------------------------------------------- */

static void test_scale_known(void **state)
{
    (void)state;
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        {
            int32_t v[7] = {-7, 7, -8, INT32_MIN, INT32_MAX, 0, -1};
            rp__reduce_scale(RP_DTYPE_INT32, v, 7, 2);
            assert_int_equal(v[0], -3); /* toward zero, not -4 */
            assert_int_equal(v[1], 3);
            assert_int_equal(v[2], -4);
            assert_int_equal(v[3], INT32_MIN / 2);
            assert_int_equal(v[4], INT32_MAX / 2);
            assert_int_equal(v[5], 0);
            assert_int_equal(v[6], 0);
            int32_t w[3] = {INT32_MAX, INT32_MIN, -2147483646};
            rp__reduce_scale(RP_DTYPE_INT32, w, 3, 3);
            assert_int_equal(w[0], 715827882);
            assert_int_equal(w[1], -715827882);
            assert_int_equal(w[2], -715827882);
        }
        {
            int64_t v[4] = {INT64_MIN, INT64_MAX, -7, 9};
            rp__reduce_scale(RP_DTYPE_INT64, v, 4, 3);
            assert_true(v[0] == INT64_MIN / 3);
            assert_true(v[1] == INT64_MAX / 3);
            assert_true(v[2] == -2);
            assert_true(v[3] == 3);
        }
        {
            uint8_t v[3] = {255, 3, 4};
            rp__reduce_scale(RP_DTYPE_UINT8, v, 3, 4);
            assert_int_equal(v[0], 63);
            assert_int_equal(v[1], 0);
            assert_int_equal(v[2], 1);
        }
        {
            /* A true division: 1/3 correctly rounded, not 1 * (1/3). */
            float f[3] = {1.0f, 10.0f, -0.0f};
            double g[2] = {1.0, 10.0};
            volatile float three = 3.0f;
            volatile double threed = 3.0;
            rp__reduce_scale(RP_DTYPE_FLOAT32, f, 3, 3);
            rp__reduce_scale(RP_DTYPE_FLOAT64, g, 2, 3);
            assert_int_equal(f32_bits(f[0]), f32_bits(1.0f / three));
            assert_int_equal(f32_bits(f[1]), f32_bits(10.0f / three));
            assert_int_equal(f32_bits(f[2]), 0x80000000);
            assert_true(f64_bits(g[0]) == f64_bits(1.0 / threed));
            assert_true(f64_bits(g[1]) == f64_bits(10.0 / threed));
        }
        {
            /* fp16: 1/3 computed in float then rounded once: 0x3555. */
            uint16_t h[2] = {0x3C00, 0x7C01};
            rp__reduce_scale(RP_DTYPE_FLOAT16, h, 2, 3);
            assert_int_equal(h[0], 0x3555);
            assert_int_equal(h[1], 0x7E00); /* NaN -> canonical */
            uint16_t bh[1] = {0x3F80};
            rp__reduce_scale(RP_DTYPE_BFLOAT16, bh, 1, 3);
            assert_int_equal(bh[0], 0x3EAB);
        }
        {
            /* nranks <= 1 leaves data as is. */
            int32_t v[2] = {7, -7};
            rp__reduce_scale(RP_DTYPE_INT32, v, 2, 1);
            rp__reduce_scale(RP_DTYPE_INT32, v, 2, 0);
            rp__reduce_scale(RP_DTYPE_INT32, v, 2, -4);
            assert_int_equal(v[0], 7);
            assert_int_equal(v[1], -7);
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
}

static void ref_scale_elem(rp_dtype_t dt, void *p, int n)
{
    switch (dt) {
    case RP_DTYPE_UINT8: {
        uint8_t v;
        memcpy(&v, p, 1);
        v = (uint8_t)(v / n);
        memcpy(p, &v, 1);
        break;
    }
    case RP_DTYPE_INT32: {
        int32_t v;
        memcpy(&v, p, 4);
        v /= n;
        memcpy(p, &v, 4);
        break;
    }
    case RP_DTYPE_INT64: {
        int64_t v;
        memcpy(&v, p, 8);
        v /= n;
        memcpy(p, &v, 8);
        break;
    }
    case RP_DTYPE_FLOAT16:
    case RP_DTYPE_BFLOAT16: {
        const struct fmt16 *f = dt == RP_DTYPE_FLOAT16 ? &F16 : &BF16;
        uint16_t v;
        float x;
        memcpy(&v, p, 2);
        x = (dt == RP_DTYPE_FLOAT16 ? ref_to_f32(f, v) : ref_bf16_to_f32(v)) / (float)n;
        v = ref_from_f32(f, isnan(x) ? f32_from(CANON32) : x);
        memcpy(p, &v, 2);
        break;
    }
    case RP_DTYPE_FLOAT32: {
        float v;
        memcpy(&v, p, 4);
        v /= (float)n;
        if (isnan(v))
            v = f32_from(CANON32);
        memcpy(p, &v, 4);
        break;
    }
    case RP_DTYPE_FLOAT64: {
        double v;
        memcpy(&v, p, 8);
        v /= (double)n;
        if (isnan(v))
            v = f64_from(CANON64);
        memcpy(p, &v, 8);
        break;
    }
    default:
        fail();
    }
}

static void test_scale_all(void **state)
{
    static const int nranks[] = {2, 3, 7, 64, 1000003};
    unsigned char *src = malloc(MAXN * 8), *want = malloc(MAXN * 8);

    (void)state;
    assert_non_null(src);
    assert_non_null(want);
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        for (int d = 0; d < RP_DTYPE_COUNT; d++) {
            rp_dtype_t dt = (rp_dtype_t)d;
            size_t esz = esize(dt);
            for (size_t c = 0; c < NCOUNTS; c++) {
                for (size_t r = 0; r < sizeof nranks / sizeof nranks[0]; r++) {
                    size_t n = counts[c], off = (c % 2) ? esz + 1 : 0;
                    struct tbuf b;
                    char ctx[128];
                    snprintf(ctx, sizeof ctx, "%s scale %s n=%zu nranks=%d off=%zu",
                             rp__reduce_isa_name(), rp_dtype_name(dt), n, nranks[r], off);
                    test_rng_seed(31u * n + (uint64_t)d);
                    gen(dt, src, n);
                    memcpy(want, src, n * esz);
                    for (size_t i = 0; i < n; i++)
                        ref_scale_elem(dt, want + i * esz, nranks[r]);
                    tbuf_init(&b, n * esz, off);
                    memcpy(b.p, src, n * esz);
                    rp__reduce_scale(dt, b.p, n, nranks[r]);
                    check_elems(ctx, esz, b.p, want, n);
                    tbuf_check_canary(&b, ctx);
                    tbuf_free(&b);
                }
            }
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(src);
    free(want);
}

/* ---- tests: mixed-precision accumulation ---------------------------------- */

static void test_acc_f32(void **state)
{
    static const rp_dtype_t srcs[] = {RP_DTYPE_FLOAT16, RP_DTYPE_BFLOAT16, RP_DTYPE_FLOAT32};
    unsigned char *src = malloc(MAXN * 4);
    float *acc = malloc(MAXN * sizeof(float)), *want = malloc(MAXN * sizeof(float));

    (void)state;
    assert_non_null(src);
    assert_non_null(acc);
    assert_non_null(want);
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        for (size_t si = 0; si < 3; si++) {
            rp_dtype_t st = srcs[si];
            size_t esz = esize(st);
            for (int o = 0; o < RP_OP_COUNT; o++) {
                for (size_t c = 0; c < NCOUNTS; c++) {
                    size_t n = counts[c], off = (c % 3 == 1) ? esz + 1 : (c % 3 == 2 ? esz : 0);
                    struct tbuf b;
                    char ctx[128];
                    snprintf(ctx, sizeof ctx, "%s acc_f32 %s %s n=%zu off=%zu",
                             rp__reduce_isa_name(), rp_dtype_name(st), rp_op_name((rp_op_t)o),
                             n, off);
                    test_rng_seed(77u * n + 5u * si + (uint64_t)o);
                    gen(RP_DTYPE_FLOAT32, acc, n);
                    gen(st, src, n);
                    for (size_t i = 0; i < n; i++) {
                        float x;
                        uint16_t h;
                        if (st == RP_DTYPE_FLOAT32) {
                            memcpy(&x, src + 4 * i, 4);
                        } else {
                            memcpy(&h, src + 2 * i, 2);
                            x = st == RP_DTYPE_FLOAT16 ? ref_to_f32(&F16, h) : ref_bf16_to_f32(h);
                        }
                        want[i] = f32_from(ref_f32_op((rp_op_t)o, f32_bits(acc[i]), f32_bits(x)));
                    }
                    tbuf_init(&b, n * esz, off);
                    memcpy(b.p, src, n * esz);
                    rp__reduce_acc_f32((rp_op_t)o, acc, b.p, st, n);
                    check_elems(ctx, 4, acc, want, n);
                    check_elems(ctx, esz, b.p, src, n);
                    tbuf_check_canary(&b, ctx);
                    tbuf_free(&b);
                }
            }
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(src);
    free(acc);
    free(want);
}

/* ---- tests: conversions ---------------------------------------------------- */

struct cvt_case {
    uint32_t f;
    uint16_t h;
};

/* float32 -> float16, hand-checked. */
static const struct cvt_case f2h_cases[] = {
    {0x00000000, 0x0000}, {0x80000000, 0x8000},   /* +-0 */
    {0x3F800000, 0x3C00}, {0xC0000000, 0xC000},   /* 1, -2 */
    {0x477FE000, 0x7BFF}, {0xC77FE000, 0xFBFF},   /* +-65504, max finite */
    {0x477FEFFF, 0x7BFF},                         /* just below the tie */
    {0x477FF000, 0x7C00},                         /* 65520: tie, rounds to even = inf */
    {0x47800000, 0x7C00}, {0x501502F9, 0x7C00},   /* 65536, 1e10: overflow */
    {0x7F800000, 0x7C00}, {0xFF800000, 0xFC00},   /* +-inf */
    {0x33800000, 0x0001},                         /* 2^-24, smallest subnormal */
    {0x33000000, 0x0000},                         /* 2^-25: tie, to even 0 */
    {0x33000001, 0x0001},                         /* just above the tie */
    {0xB3000000, 0x8000},                         /* -2^-25 -> -0 */
    {0x33C00000, 0x0002},                         /* 1.5 * 2^-24: tie, to even 2 */
    {0x34200000, 0x0002},                         /* 2.5 * 2^-24: tie, to even 2 */
    {0x387FC000, 0x03FF},                         /* largest subnormal */
    {0x387FE000, 0x0400},                         /* 1023.5 * 2^-24: tie, up to min normal */
    {0x38800000, 0x0400},                         /* 2^-14, smallest normal */
    {0x3F801000, 0x3C00},                         /* 1 + 2^-11: tie, to even */
    {0x3F803000, 0x3C02},                         /* 1 + 3*2^-11: tie, to even (up) */
    {0x3F801001, 0x3C01},                         /* just above the tie */
    {0x00000001, 0x0000}, {0x80000001, 0x8000},   /* float32 subnormals */
    {0x0DA24260, 0x0000},                         /* 1e-30 */
    {0x7FC00000, 0x7E00}, {0xFFC00000, 0xFE00},   /* quiet NaNs */
    {0x7F800001, 0x7E00},                         /* sNaN, payload below f16 */
    {0x7FA00000, 0x7F00},                         /* sNaN, payload kept, quieted */
    {0x7FFFFFFF, 0x7FFF},
};

/* float16 -> float32, hand-checked. */
static const struct cvt_case h2f_cases[] = {
    {0x00000000, 0x0000}, {0x80000000, 0x8000},
    {0x33800000, 0x0001}, {0xB3800000, 0x8001},
    {0x387FC000, 0x03FF}, {0x38800000, 0x0400},
    {0x477FE000, 0x7BFF}, {0x3F800000, 0x3C00}, {0xC0000000, 0xC000},
    {0x7F800000, 0x7C00}, {0xFF800000, 0xFC00},
    {0x7FC00000, 0x7E00}, {0x7FC02000, 0x7C01}, /* sNaN widened and quieted */
    {0xFFFFE000, 0xFFFF},
};

/* float32 -> bfloat16, hand-checked. */
static const struct cvt_case f2b_cases[] = {
    {0x00000000, 0x0000}, {0x80000000, 0x8000},
    {0x3F800000, 0x3F80}, {0xBF800000, 0xBF80},
    {0x3F808000, 0x3F80},                         /* tie, to even */
    {0x3F818000, 0x3F82},                         /* tie, to even (up) */
    {0x3F808001, 0x3F81}, {0x3F807FFF, 0x3F80},
    {0x7F7F7FFF, 0x7F7F},                         /* below the tie at max */
    {0x7F7F8000, 0x7F80},                         /* tie at max finite: to even = inf */
    {0x7F7FFFFF, 0x7F80}, {0xFF7FFFFF, 0xFF80},   /* FLT_MAX overflows */
    {0x7F800000, 0x7F80}, {0xFF800000, 0xFF80},
    {0x00000001, 0x0000}, {0x00008000, 0x0000},   /* subnormal tie, to even 0 */
    {0x00018000, 0x0002}, {0x00010000, 0x0001},   /* subnormals kept */
    {0x80010000, 0x8001},
    {0x7F800001, 0x7FC0}, {0xFF800001, 0xFFC0},   /* NaN with low payload stays NaN */
    {0x7FC00000, 0x7FC0}, {0x7FFFFFFF, 0x7FFF}, {0x7F810000, 0x7FC1},
};

static void test_conversion_known_bits(void **state)
{
    (void)state;
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        for (size_t i = 0; i < sizeof f2h_cases / sizeof f2h_cases[0]; i++) {
            float f = f32_from(f2h_cases[i].f);
            uint16_t h = 0xDEAD;
            rp__f32_to_f16(&h, &f, 1);
            if (h != f2h_cases[i].h)
                fail_msg("%s f32->f16 0x%08x: got 0x%04x want 0x%04x", rp__reduce_isa_name(),
                         f2h_cases[i].f, h, f2h_cases[i].h);
            /* The independent reference must agree with the table too. */
            assert_int_equal(ref_from_f32(&F16, f), f2h_cases[i].h);
        }
        for (size_t i = 0; i < sizeof h2f_cases / sizeof h2f_cases[0]; i++) {
            float f = 0;
            rp__f16_to_f32(&f, &h2f_cases[i].h, 1);
            if (f32_bits(f) != h2f_cases[i].f)
                fail_msg("%s f16->f32 0x%04x: got 0x%08x want 0x%08x", rp__reduce_isa_name(),
                         h2f_cases[i].h, f32_bits(f), h2f_cases[i].f);
            assert_int_equal(f32_bits(ref_to_f32(&F16, h2f_cases[i].h)), h2f_cases[i].f);
        }
        for (size_t i = 0; i < sizeof f2b_cases / sizeof f2b_cases[0]; i++) {
            float f = f32_from(f2b_cases[i].f);
            uint16_t h = 0xDEAD;
            rp__f32_to_bf16(&h, &f, 1);
            if (h != f2b_cases[i].h)
                fail_msg("%s f32->bf16 0x%08x: got 0x%04x want 0x%04x", rp__reduce_isa_name(),
                         f2b_cases[i].f, h, f2b_cases[i].h);
            assert_int_equal(ref_from_f32(&BF16, f), f2b_cases[i].h);
        }
        {
            /* bfloat16 widening is a plain shift, NaN bits included. */
            uint16_t h[4] = {0x0001, 0x7F81, 0xFF80, 0x3F80};
            float f[4];
            rp__bf16_to_f32(f, h, 4);
            assert_int_equal(f32_bits(f[0]), 0x00010000);
            assert_int_equal(f32_bits(f[1]), 0x7F810000);
            assert_int_equal(f32_bits(f[2]), 0xFF800000);
            assert_int_equal(f32_bits(f[3]), 0x3F800000);
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
}

/* Every 16-bit pattern: widening against the reference, and the round trip
 * through float32 returning the same pattern (NaNs come back quieted). */
static void test_conversion_all16(void **state)
{
    uint16_t *h = malloc(65536 * 2), *back = malloc(65536 * 2);
    float *f = malloc(65536 * sizeof(float));

    (void)state;
    assert_non_null(h);
    assert_non_null(back);
    assert_non_null(f);
    for (uint32_t i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        rp__f16_to_f32(f, h, 65536);
        rp__f32_to_f16(back, f, 65536);
        for (uint32_t i = 0; i < 65536; i++) {
            bool nan = (i & 0x7FFF) > 0x7C00;
            if (f32_bits(f[i]) != f32_bits(ref_to_f32(&F16, (uint16_t)i)))
                fail_msg("%s f16->f32 0x%04x: got 0x%08x", rp__reduce_isa_name(), i,
                         f32_bits(f[i]));
            if (back[i] != (nan ? (i | 0x0200) : i))
                fail_msg("%s f16 round trip 0x%04x: got 0x%04x", rp__reduce_isa_name(), i, back[i]);
        }
        /* The scalar helpers in half.h must match too. */
        for (uint32_t i = 0; i < 65536; i++) {
            float x = rp__f16_to_f32_1((uint16_t)i);
            if (f32_bits(x) != f32_bits(f[i]))
                fail_msg("half.h f16->f32 0x%04x: got 0x%08x", i, f32_bits(x));
            if (rp__f32_to_f16_1(x) != back[i])
                fail_msg("half.h f16 round trip 0x%04x", i);
        }
        rp__bf16_to_f32(f, h, 65536);
        rp__f32_to_bf16(back, f, 65536);
        for (uint32_t i = 0; i < 65536; i++) {
            float x = rp__bf16_to_f32_1((uint16_t)i);
            if (f32_bits(x) != f32_bits(f[i]) || rp__f32_to_bf16_1(x) != back[i])
                fail_msg("half.h bf16 0x%04x", i);
        }
        for (uint32_t i = 0; i < 65536; i++) {
            bool nan = (i & 0x7FFF) > 0x7F80;
            if (f32_bits(f[i]) != f32_bits(ref_bf16_to_f32((uint16_t)i)))
                fail_msg("%s bf16->f32 0x%04x: got 0x%08x", rp__reduce_isa_name(), i,
                         f32_bits(f[i]));
            if (back[i] != (nan ? (i | 0x0040) : i))
                fail_msg("%s bf16 round trip 0x%04x: got 0x%04x", rp__reduce_isa_name(), i,
                         back[i]);
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(h);
    free(back);
    free(f);
}

/* Narrowing on a dense sample of float32 patterns: a stride through all
 * 2^32, plus the three patterns around every rounding midpoint of both
 * formats (where the ties and near-ties are). Checked against the reference
 * and, where both variants exist, against each other. */
static void check_narrow_batch(const uint32_t *bits, size_t n, uint16_t *out16, float *tmp)
{
    for (size_t i = 0; i < n; i++)
        tmp[i] = f32_from(bits[i]);
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        rp__f32_to_f16(out16, tmp, n);
        for (size_t i = 0; i < n; i++)
            if (out16[i] != ref_from_f32(&F16, tmp[i]) || out16[i] != rp__f32_to_f16_1(tmp[i]))
                fail_msg("%s f32->f16 0x%08x: got 0x%04x want 0x%04x", rp__reduce_isa_name(),
                         bits[i], out16[i], ref_from_f32(&F16, tmp[i]));
        rp__f32_to_bf16(out16, tmp, n);
        for (size_t i = 0; i < n; i++)
            if (out16[i] != ref_from_f32(&BF16, tmp[i]) || out16[i] != rp__f32_to_bf16_1(tmp[i]))
                fail_msg("%s f32->bf16 0x%08x: got 0x%04x want 0x%04x", rp__reduce_isa_name(),
                         bits[i], out16[i], ref_from_f32(&BF16, tmp[i]));
    }
}

static void test_conversion_sweep32(void **state)
{
    enum { BATCH = 65536 };
    uint32_t *bits = malloc(BATCH * 4);
    uint16_t *out = malloc(BATCH * 2);
    float *tmp = malloc(BATCH * sizeof(float));
    size_t n = 0;

    (void)state;
    assert_non_null(bits);
    assert_non_null(out);
    assert_non_null(tmp);

#define PUSH(u)                                                               \
    do {                                                                      \
        bits[n++] = (u);                                                      \
        if (n == BATCH) {                                                     \
            check_narrow_batch(bits, n, out, tmp);                            \
            n = 0;                                                            \
        }                                                                     \
    } while (0)

    /* Stride is odd and not a power of two, so it hits every exponent and
     * low-bit pattern mix; ~1M values. */
    for (uint64_t u = 0; u < (1ull << 32); u += 4099)
        PUSH((uint32_t)u);
    /* float16 midpoints: between h and h+1, for every finite h >= 0 and
     * both signs. The midpoint is exact in float32. */
    for (uint32_t h = 0; h < 0x7C00; h++) {
        double mid = (ref16_mag(&F16, (uint16_t)h) + ref16_mag(&F16, (uint16_t)(h + 1))) / 2;
        uint32_t m = f32_bits((float)mid);
        for (uint32_t s = 0; s < 2; s++) {
            PUSH((m - 1) | (s << 31));
            PUSH(m | (s << 31));
            PUSH((m + 1) | (s << 31));
        }
    }
    /* bfloat16 midpoints: low half exactly 0x8000. */
    for (uint32_t hi = 0; hi < 65536; hi++) {
        PUSH((hi << 16) | 0x7FFF);
        PUSH((hi << 16) | 0x8000);
        PUSH((hi << 16) | 0x8001);
    }
    if (n)
        check_narrow_batch(bits, n, out, tmp);
#undef PUSH
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(bits);
    free(out);
    free(tmp);
}

/* Conversions at every test count, with the buffers shifted by an element,
 * must not write past count. */
static void test_conversion_counts(void **state)
{
    float *fsrc = malloc((MAXN + 1) * sizeof(float)), *fdst = malloc((MAXN + 2) * sizeof(float));
    uint16_t *hsrc = malloc((MAXN + 1) * 2), *hdst = malloc((MAXN + 2) * 2);

    (void)state;
    assert_non_null(fsrc);
    assert_non_null(fdst);
    assert_non_null(hsrc);
    assert_non_null(hdst);
    test_rng_seed(4242);
    gen(RP_DTYPE_FLOAT32, fsrc, MAXN + 1);
    gen(RP_DTYPE_FLOAT16, hsrc, MAXN + 1);
    for (size_t k = 0; k < NISAS; k++) {
        if (!use_isa(all_isas[k]))
            continue;
        for (size_t c = 0; c < NCOUNTS; c++) {
            size_t n = counts[c];
            for (size_t i = 0; i < MAXN + 2; i++)
                hdst[i] = 0xA5A5;
            rp__f32_to_f16(hdst + 1, fsrc + 1, n);
            assert_int_equal(hdst[0], 0xA5A5);
            assert_int_equal(hdst[n + 1], 0xA5A5);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(hdst[i + 1], ref_from_f32(&F16, fsrc[i + 1]));

            rp__f32_to_bf16(hdst + 1, fsrc + 1, n);
            assert_int_equal(hdst[n + 1], 0xA5A5);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(hdst[i + 1], ref_from_f32(&BF16, fsrc[i + 1]));

            for (size_t i = 0; i < MAXN + 2; i++)
                fdst[i] = -12345.0f;
            rp__f16_to_f32(fdst + 1, hsrc + 1, n);
            assert_true(fdst[0] == -12345.0f);
            assert_true(fdst[n + 1] == -12345.0f);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(f32_bits(fdst[i + 1]), f32_bits(ref_to_f32(&F16, hsrc[i + 1])));

            rp__bf16_to_f32(fdst + 1, hsrc + 1, n);
            assert_true(fdst[n + 1] == -12345.0f);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(f32_bits(fdst[i + 1]), f32_bits(ref_bf16_to_f32(hsrc[i + 1])));
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(fsrc);
    free(fdst);
    free(hsrc);
    free(hdst);
}

/* ---- tests: bit-identity across splits and variants ------------------------ */

/* One big call, element-by-element calls, and calls on random-sized
 * chunks must give the same bytes; and so must every variant. This is what
 * lets a ring split a buffer any way it likes. */
static void test_bit_identity(void **state)
{
    enum { N = 4099 };
    unsigned char *a = malloc(N * 8), *b = malloc(N * 8);
    unsigned char *whole = malloc(N * 8), *single = malloc(N * 8), *chunks = malloc(N * 8);
    unsigned char *first = malloc(N * 8);

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(whole);
    assert_non_null(single);
    assert_non_null(chunks);
    assert_non_null(first);
    for (int d = 0; d < RP_DTYPE_COUNT; d++) {
        rp_dtype_t dt = (rp_dtype_t)d;
        size_t esz = esize(dt);
        for (int o = 0; o < RP_OP_COUNT; o++) {
            bool have_first = false;
            test_rng_seed(99u + 13u * (uint64_t)d + (uint64_t)o);
            gen_pair(dt, a, b, N);
            for (size_t k = 0; k < NISAS; k++) {
                char ctx[96];
                if (!use_isa(all_isas[k]))
                    continue;
                snprintf(ctx, sizeof ctx, "%s %s %s", rp__reduce_isa_name(), rp_dtype_name(dt),
                         rp_op_name((rp_op_t)o));
                rp__reduce(dt, (rp_op_t)o, whole, a, b, N);
                for (size_t i = 0; i < N; i++)
                    rp__reduce(dt, (rp_op_t)o, single + i * esz, a + i * esz, b + i * esz, 1);
                for (size_t i = 0; i < N;) {
                    size_t len = 1 + (size_t)(test_rng() % 70);
                    if (len > N - i)
                        len = N - i;
                    rp__reduce(dt, (rp_op_t)o, chunks + i * esz, a + i * esz, b + i * esz, len);
                    i += len;
                }
                check_elems(ctx, esz, single, whole, N);
                check_elems(ctx, esz, chunks, whole, N);
                if (have_first) {
                    check_elems(ctx, esz, whole, first, N);
                } else {
                    memcpy(first, whole, N * esz);
                    have_first = true;
                }
            }
        }
    }
    rp__reduce_set_isa(RP__REDUCE_ISA_AUTO);
    free(a);
    free(b);
    free(whole);
    free(single);
    free(chunks);
    free(first);
}

/* Canaries must notice a stray write; otherwise the checks above prove
 * nothing about bounds. */
static void test_canary_self_check(void **state)
{
    struct tbuf b;

    (void)state;
    tbuf_init(&b, 8, 3);
    assert_int_equal(tbuf_clobbered(&b), 0);
    b.p[8] = 0; /* one past the end */
    assert_int_equal(tbuf_clobbered(&b), 8);
    b.p[8] = CANARY;
    b.p[-1] = 0; /* one before the start */
    assert_int_equal(tbuf_clobbered(&b), -1);
    tbuf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtype_names_sizes),
        cmocka_unit_test(test_supported),
        cmocka_unit_test(test_isa_selection),
        cmocka_unit_test(test_canary_self_check),
        cmocka_unit_test(test_count_zero),
        cmocka_unit_test(test_invalid_args_ignored),
        cmocka_unit_test(test_integer_wrap_and_sign),
        cmocka_unit_test(test_float_special_rules),
        cmocka_unit_test(test_half_sum_rounding),
        cmocka_unit_test(test_binop_all),
        cmocka_unit_test(test_scale_known),
        cmocka_unit_test(test_scale_all),
        cmocka_unit_test(test_acc_f32),
        cmocka_unit_test(test_conversion_known_bits),
        cmocka_unit_test(test_conversion_all16),
        cmocka_unit_test(test_conversion_sweep32),
        cmocka_unit_test(test_conversion_counts),
        cmocka_unit_test(test_bit_identity),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
