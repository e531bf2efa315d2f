/*
 * The value parsers every side shares (runtime/util/parse.c): durations,
 * whole numbers, signals. The first input byte picks the parser and, for
 * whole numbers, the bounds; the rest is the text.
 *
 * Properties:
 *  - the verdict and value equal those of an independent reading of the
 *    documented grammar (written here from parse.h, not from parse.c);
 *  - an accepted value is within its documented limits, text longer than
 *    RP_VALUE_MAX_LEN is refused whatever it says;
 *  - a refusal leaves the output untouched and says why;
 *  - rp__format_duration's text reads back to the same seconds; a signal's
 *    canonical name reads back to the same signal.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "util/parse.h"

#include <ctype.h>
#include <strings.h>

/* A run of decimal digits as a value, or UINT64_MAX + "too big" when it
 * does not fit in @limit. Returns the number of digits (0: none). */
static size_t ref_digits(const char *s, uint64_t limit, uint64_t *v,
                         bool *big)
{
    size_t n = 0;
    unsigned __int128 acc = 0;

    *big = false;
    while (isdigit((unsigned char)s[n])) {
        if (!*big) {
            acc = acc * 10 + (unsigned)(s[n] - '0');
            if (acc > limit) {
                *big = true;
            }
        }
        n++;
    }
    *v = *big ? UINT64_MAX : (uint64_t)acc;
    return n;
}

/* The grammar of parse.h, read independently. */
static bool ref_duration(const char *text, uint64_t *out)
{
    const uint64_t max = RP_DURATION_MAX_S;
    uint64_t f[4], v;
    size_t n, nf = 0;
    bool big, days = false;
    const char *p = text;

    if (strlen(text) == 0 || strlen(text) > RP_VALUE_MAX_LEN) {
        return false;
    }
    if (strchr(text, ':') == NULL) {
        static const struct { char c; uint64_t mult; } units[] = {
            {'s', 1}, {'m', 60}, {'h', 3600}, {'d', 86400}};
        uint64_t mult = 1;

        n = ref_digits(p, UINT64_MAX, &v, &big);
        if (n == 0 || big) {
            return false;
        }
        p += n;
        if (*p != '\0') {
            size_t u;

            for (u = 0; u < 4 && units[u].c != *p; u++) {
            }
            if (u == 4 || p[1] != '\0') {
                return false;
            }
            mult = units[u].mult;
        }
        if (v > max / mult) {
            return false;
        }
        *out = v * mult;
        return true;
    }
    /* [[D-]HH:]MM:SS: fields split on '-' (once, first) and ':' */
    n = ref_digits(p, max, &v, &big);
    if (n > 0 && p[n] == '-') {
        if (big) {
            return false;
        }
        days = true;
        f[nf++] = v;
        p += n + 1;
    }
    for (;;) {
        n = ref_digits(p, max, &v, &big);
        if (n == 0 || big || nf == 4) {
            return false;
        }
        f[nf++] = v;
        p += n;
        if (*p == '\0') {
            break;
        }
        if (*p != ':') {
            return false;
        }
        p++;
    }
    if (days) {
        /* D-HH:MM:SS */
        if (nf != 4 || f[1] >= 24 || f[2] >= 60 || f[3] >= 60) {
            return false;
        }
        if (f[0] > max / 86400) {
            return false;
        }
        v = f[0] * 86400 + f[1] * 3600 + f[2] * 60 + f[3];
    } else if (nf == 3) {
        if (f[1] >= 60 || f[2] >= 60) {
            return false;
        }
        v = f[0] * 3600 + f[1] * 60 + f[2];
    } else if (nf == 2) {
        if (f[1] >= 60) {
            return false;
        }
        v = f[0] * 60 + f[1];
    } else {
        return false;
    }
    if (v > max) {
        return false;
    }
    *out = v;
    return true;
}

static void check_duration(const char *text)
{
    uint64_t got = 0xdeadbeef, want = 0, again = 0;
    char err[512] = "", fmt[64];
    rp_status_t st = rp__parse_duration(text, &got, err, sizeof(err));
    bool ok = ref_duration(text, &want);

    FUZZ_CHECK((st == RP_OK) == ok, "'%.80s': parser %s, grammar %s", text,
               st == RP_OK ? "accepts" : "refuses", ok ? "accepts" : "refuses");
    if (st != RP_OK) {
        FUZZ_CHECK(got == 0xdeadbeef, "a refusal wrote the output");
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
        return;
    }
    FUZZ_CHECK(got == want, "'%.80s': %llu, grammar says %llu", text,
               (unsigned long long)got, (unsigned long long)want);
    FUZZ_CHECK(got <= RP_DURATION_MAX_S, "%llu over the maximum",
               (unsigned long long)got);
    /* The compact form for messages ("1h30m") is for humans, not the
     * grammar; its terms add up to the value, and a single term reads
     * back. */
    rp__format_duration(got, fmt, sizeof(fmt));
    again = 0;
    for (const char *p = fmt; *p != '\0';) {
        char *end;
        uint64_t n = strtoull(p, &end, 10);

        FUZZ_CHECK(end != p && strchr("smhd", *end) != NULL && *end != '\0',
                   "'%s' for %llu", fmt, (unsigned long long)got);
        again += n * (*end == 's' ? 1 : *end == 'm' ? 60 : *end == 'h' ? 3600
                                                                      : 86400);
        p = end + 1;
    }
    FUZZ_CHECK(again == got, "%llu formats as '%s'", (unsigned long long)got,
               fmt);
    if (strlen(fmt) == strspn(fmt, "0123456789") + 1) {
        FUZZ_CHECK(rp__parse_duration(fmt, &again, NULL, 0) == RP_OK &&
                       again == got,
                   "'%s' does not read back as %llu", fmt,
                   (unsigned long long)got);
    }
}

static void check_uint(const char *text, uint64_t min, uint64_t max)
{
    uint64_t got = 0xdeadbeef, want = 0;
    char err[512] = "";
    rp_status_t st = rp__parse_uint(text, min, max, &got, err, sizeof(err));
    size_t len = strlen(text), n;
    bool big, ok;

    n = ref_digits(text, UINT64_MAX, &want, &big);
    ok = len > 0 && len <= RP_VALUE_MAX_LEN && n == len && !big &&
         want >= min && want <= max;
    FUZZ_CHECK((st == RP_OK) == ok, "'%.80s' in [%llu, %llu]: parser %s",
               text, (unsigned long long)min, (unsigned long long)max,
               st == RP_OK ? "accepts" : "refuses");
    if (st == RP_OK) {
        FUZZ_CHECK(got == want, "'%.80s' read as %llu", text,
                   (unsigned long long)got);
    } else {
        FUZZ_CHECK(got == 0xdeadbeef, "a refusal wrote the output");
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
    }
}

static void check_signal(const char *text)
{
    int signo = -12345, again = -1;
    char err[1024] = "", sig[64];
    rp_status_t st = rp__parse_signal(text, &signo, err, sizeof(err));
    const char *name;

    if (st != RP_OK) {
        FUZZ_CHECK(signo == -12345, "a refusal wrote the output");
        FUZZ_CHECK(strstr(err, "accepted") != NULL ||
                       (strlen(text) > RP_VALUE_MAX_LEN &&
                        strstr(err, "longer than") != NULL),
                   "the refusal of '%.80s' does not list the accepted forms",
                   text);
        return;
    }
    FUZZ_CHECK(strlen(text) <= RP_VALUE_MAX_LEN, "over-long text accepted");
    name = rp__signal_name(signo);
    FUZZ_CHECK(name != NULL, "'%.80s' accepted as %d, which has no name",
               text, signo);
    FUZZ_CHECK(rp__parse_signal(name, &again, NULL, 0) == RP_OK &&
                   again == signo,
               "'%s' does not read back as %d", name, signo);
    snprintf(sig, sizeof(sig), "sig%s", name);
    FUZZ_CHECK(rp__parse_signal(sig, &again, NULL, 0) == RP_OK &&
                   again == signo,
               "'%s' does not read back as %d", sig, signo);
    /* A name, with or without SIG in any case, or the number itself. */
    FUZZ_CHECK(strcasecmp(text, name) == 0 ||
                   (strncasecmp(text, "SIG", 3) == 0 &&
                    strcasecmp(text + 3, name) == 0) ||
                   (isdigit((unsigned char)text[0]) &&
                    (uint64_t)signo == strtoull(text, NULL, 10)),
               "'%.80s' accepted as %s", text, name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    uint8_t which = fuzz_u8(&in);
    uint64_t a, b;
    char *text;

    switch (which % 3) {
    case 0:
        text = fuzz_str(&in, 2 * RP_VALUE_MAX_LEN);
        check_duration(text);
        break;
    case 1: {
        /* Bounds from the input, or the ones the callers use. */
        static const uint64_t bounds[][2] = {
            {0, UINT64_MAX}, {1, 1000000}, {4096, 1ULL << 30}, {0, 1},
            {1, 64}, {0, 1000}};

        if (which & 0x80) {
            a = fuzz_u64(&in);
            b = fuzz_u64(&in);
        } else {
            a = bounds[(which >> 2) % 6][0];
            b = bounds[(which >> 2) % 6][1];
        }
        text = fuzz_str(&in, 2 * RP_VALUE_MAX_LEN);
        check_uint(text, a, b);
        break;
    }
    default:
        text = fuzz_str(&in, 2 * RP_VALUE_MAX_LEN);
        check_signal(text);
        break;
    }
    free(text);
    return 0;
}
