/*
 * What every fuzz target shares: the entry point libFuzzer calls, a
 * property check that aborts with the property's name (so libFuzzer saves
 * the input as a crash), and a reader that takes typed values off the
 * front of the input for the targets that build structured cases.
 *
 * Each target asserts what its code promises (a round trip, the same
 * verdict on both sides, a limit held), not only that it does not crash:
 * a parser that accepts what it should refuse crashes nothing.
 */
#ifndef RP_TESTS_FUZZ_H
#define RP_TESTS_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken property is a finding: say which, then abort so that libFuzzer
 * (or the replay driver) reports the input. */
#define FUZZ_CHECK(cond, ...)                                               \
    do {                                                                    \
        if (!(cond)) {                                                      \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__,       \
                    __LINE__, #cond);                                       \
            fprintf(stderr, __VA_ARGS__);                                   \
            fputc('\n', stderr);                                            \
            abort();                                                        \
        }                                                                   \
    } while (0)

/* Typed values taken off the input, zeros once it runs out. */
typedef struct fuzz_in {
    const uint8_t *p;
    size_t left;
} fuzz_in_t;

static inline uint8_t fuzz_u8(fuzz_in_t *in)
{
    uint8_t v = 0;

    if (in->left > 0) {
        v = *in->p++;
        in->left--;
    }
    return v;
}

static inline uint32_t fuzz_u32(fuzz_in_t *in)
{
    uint32_t v = 0;

    for (int i = 0; i < 4; i++) {
        v |= (uint32_t)fuzz_u8(in) << (8 * i);
    }
    return v;
}

static inline uint64_t fuzz_u64(fuzz_in_t *in)
{
    uint64_t lo = fuzz_u32(in);

    return lo | (uint64_t)fuzz_u32(in) << 32;
}

/* A NUL-terminated string of the bytes up to the next NUL (or the end),
 * at most @max bytes; malloc'd, never NULL unless out of memory. */
static inline char *fuzz_str(fuzz_in_t *in, size_t max)
{
    const uint8_t *nul = memchr(in->p, 0, in->left);
    size_t n = nul != NULL ? (size_t)(nul - in->p) : in->left;
    char *s;

    if (n > max) {
        n = max;
    }
    s = malloc(n + 1);
    if (s == NULL) {
        return NULL;
    }
    memcpy(s, in->p, n);
    s[n] = '\0';
    in->p += n;
    in->left -= n;
    if (in->left > 0 && *in->p == 0) {
        in->p++;
        in->left--;
    }
    return s;
}

/* The library's logging goes to stderr; a target that drives it through
 * thousands of bad inputs a second silences it around the call (set
 * RP_FUZZ_VERBOSE=1 to see it when replaying one input). */
int fuzz_quiet_begin(void);
void fuzz_quiet_end(int saved);

/* What was logged between fuzz_capture_begin and _end, NUL-terminated in
 * @buf (truncated to @len). */
int fuzz_capture_begin(void);
void fuzz_capture_end(int saved, char *buf, size_t len);

#endif /* RP_TESTS_FUZZ_H */
