/*
 * The unit tests' random data: xorshift64, deterministic, so that a failing
 * case reproduces from the same seed. Each test program has its own stream
 * (a static state per program); one that wants other data than the default
 * seeds it once in main().
 */
#ifndef RP_TEST_RNG_H
#define RP_TEST_RNG_H

#include <stddef.h>
#include <stdint.h>

static uint64_t test_rng_state = 0x9E3779B97F4A7C15ull;

/* Start the stream over from @seed (0 would stay 0: taken as 1). */
static inline void test_rng_seed(uint64_t seed)
{
    test_rng_state = seed != 0 ? seed : 1;
}

static inline uint64_t test_rng(void)
{
    uint64_t x = test_rng_state;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    test_rng_state = x;
    return x;
}

/* @len random bytes at @buf. */
static inline void test_fill(void *buf, size_t len)
{
    unsigned char *p = buf;
    size_t i;

    for (i = 0; i < len; i++) {
        p[i] = (unsigned char)test_rng();
    }
}

#endif /* RP_TEST_RNG_H */
