/*
 * Duration and integer parsing: every accepted form, every rejected one.
 * These parsers decide at submit time what the tasks will read, so each
 * rejected form here is a job that fails fast instead of misbehaving late.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <string.h>

#include "util/parse.h"

static void expect_duration(const char *text, uint64_t seconds)
{
    uint64_t got = 12345;
    char err[256] = "";

    if (rp__parse_duration(text, &got, err, sizeof(err)) != RP_OK) {
        fail_msg("'%s' was rejected: %s", text, err);
    }
    if (got != seconds) {
        fail_msg("'%s' parsed as %llu, expected %llu", text,
                 (unsigned long long)got, (unsigned long long)seconds);
    }
}

static void expect_rejected(const char *text)
{
    uint64_t got = 777;
    char err[256] = "";

    if (rp__parse_duration(text, &got, err, sizeof(err)) == RP_OK) {
        fail_msg("'%s' was accepted as %llu", text, (unsigned long long)got);
    }
    assert_int_equal(got, 777); /* untouched on error */
    assert_true(strlen(err) > 0);
}

static void test_duration_plain_seconds(void **state)
{
    (void)state;
    expect_duration("0", 0);
    expect_duration("1", 1);
    expect_duration("900", 900);
    expect_duration("0000", 0);
    expect_duration("31622400", 31622400); /* exactly 366 days */
}

static void test_duration_units(void **state)
{
    (void)state;
    expect_duration("0s", 0);
    expect_duration("90s", 90);
    expect_duration("15m", 900);
    expect_duration("0m", 0);
    expect_duration("2h", 7200);
    expect_duration("1d", 86400);
    expect_duration("366d", 366ULL * 86400);
    expect_duration("8784h", 8784ULL * 3600);
}

static void test_duration_slurm_clock(void **state)
{
    (void)state;
    expect_duration("10:00", 600);
    expect_duration("0:30", 30);
    expect_duration("00:00", 0);
    expect_duration("90:00", 5400);        /* leading field unbounded */
    expect_duration("1:30:00", 5400);
    expect_duration("01:02:03", 3723);
    expect_duration("48:00:00", 172800);
    expect_duration("1-00:00:00", 86400);
    expect_duration("2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
    expect_duration("366-00:00:00", 366ULL * 86400);
}

static void test_duration_rejected(void **state)
{
    static const char *const bad[] = {
        "", "banana", "15 m", " 15m", "15m ", "-5", "+5", "1.5h", "1e3",
        "15M", "15min", "m", "s15", "15ms", "15mm", "0x10", "10:", ":10",
        "10::00", "1:2:3:4", "10:60", "1:60:00", "1:00:60", "1-", "1-10",
        "1-10:00", "1-24:00:00", "-1:00:00", "1--1:00:00", "a:00",
        "367d", "8785h", "31622401", "99999999999999999999",
        "18446744073709551616", "366-00:00:01", "9999999-00:00:00",
        "1:00:00x", "１０", "10s\n",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        expect_rejected(bad[i]);
    }
}

static void test_duration_error_names_forms(void **state)
{
    uint64_t v;
    char err[512];

    (void)state;
    assert_int_equal(rp__parse_duration("banana", &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "'banana'"));
    assert_non_null(strstr(err, "15m"));
    assert_non_null(strstr(err, "HH:]MM:SS"));
    /* NULL error buffers are allowed. */
    assert_int_equal(rp__parse_duration("x", &v, NULL, 0), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__parse_duration(NULL, &v, NULL, 0), RP_ERR_INVALID_ARG);
}

static void test_uint(void **state)
{
    uint64_t v = 0;
    char err[128];

    (void)state;
    assert_int_equal(rp__parse_uint("42", 0, 100, &v, err, sizeof(err)), RP_OK);
    assert_int_equal(v, 42);
    assert_int_equal(rp__parse_uint("0", 0, 0, &v, err, sizeof(err)), RP_OK);
    assert_int_equal(v, 0);
    assert_int_equal(rp__parse_uint("18446744073709551615", 0, UINT64_MAX, &v,
                                    err, sizeof(err)), RP_OK);
    assert_true(v == UINT64_MAX);
    assert_int_equal(rp__parse_uint("101", 0, 100, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "out of range"));
    assert_int_equal(rp__parse_uint("2", 3, 5, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__parse_uint("18446744073709551616", 0, UINT64_MAX, &v,
                                    err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__parse_uint("-1", 0, 100, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__parse_uint("", 0, 100, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__parse_uint("4 ", 0, 100, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
}

static void test_format_duration(void **state)
{
    static const struct { uint64_t s; const char *text; } cases[] = {
        {0, "0s"}, {45, "45s"}, {60, "1m"}, {900, "15m"}, {5400, "1h30m"},
        {86400, "1d"}, {90061, "1d1h1m1s"},
    };
    char buf[32];
    size_t i;
    uint64_t back;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rp__format_duration(cases[i].s, buf, sizeof(buf));
        assert_string_equal(buf, cases[i].text);
    }
    /* A short buffer truncates but stays terminated. */
    rp__format_duration(90061, buf, 4);
    assert_int_equal(strlen(buf), 3);
    /* Single-unit output parses back to the same value. */
    rp__format_duration(900, buf, sizeof(buf));
    assert_int_equal(rp__parse_duration(buf, &back, NULL, 0), RP_OK);
    assert_int_equal(back, 900);
}

static void test_signal(void **state)
{
    static const struct { const char *text; int signo; } good[] = {
        {"USR2", SIGUSR2}, {"usr2", SIGUSR2}, {"SIGUSR2", SIGUSR2},
        {"sigterm", SIGTERM}, {"USR1", SIGUSR1}, {"12", SIGUSR2},
        {"15", SIGTERM}, {"URG", SIGURG}, {"XCPU", SIGXCPU},
    };
    static const char *const bad[] = {
        "", "KILL", "SIGKILL", "9", "STOP", "19", "SEGV", "11", "0", "65",
        "USR3", "SIG", "USR2 ", " USR2", "-12", "B:USR2",
    };
    char err[512];
    size_t i;
    int signo;

    (void)state;
    for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        signo = -1;
        if (rp__parse_signal(good[i].text, &signo, err, sizeof(err)) != RP_OK) {
            fail_msg("'%s' rejected: %s", good[i].text, err);
        }
        assert_int_equal(signo, good[i].signo);
        assert_non_null(rp__signal_name(signo));
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        signo = -1;
        if (rp__parse_signal(bad[i], &signo, err, sizeof(err)) == RP_OK) {
            fail_msg("'%s' accepted as %d", bad[i], signo);
        }
        assert_int_equal(signo, -1);
        assert_non_null(strstr(err, "USR2"));
    }
    assert_int_equal(rp__parse_signal("KILL", &signo, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "cannot be caught"));
    assert_string_equal(rp__signal_name(SIGUSR2), "USR2");
    assert_null(rp__signal_name(SIGKILL));
}

/* Issue 15: 4100 leading zeros and a 1 were read as 1 by the runtime while
 * slurmstepd treated the variable as unset. One limit, in the parsers both
 * sides use: RP_VALUE_MAX_LEN bytes is the longest value read. */
static void test_value_length_limit(void **state)
{
    static char text[RP_VALUE_MAX_LEN + 2];
    char err[128] = "";
    uint64_t v = 0;
    int signo;

    (void)state;
    memset(text, '0', RP_VALUE_MAX_LEN - 1);
    text[RP_VALUE_MAX_LEN - 1] = '1';
    text[RP_VALUE_MAX_LEN] = '\0';
    assert_int_equal(rp__parse_uint(text, 0, 10, &v, err, sizeof(err)), RP_OK);
    assert_int_equal(v, 1);
    assert_int_equal(rp__parse_duration(text, &v, err, sizeof(err)), RP_OK);
    assert_int_equal(v, 1);
    memset(text, '0', RP_VALUE_MAX_LEN);
    text[RP_VALUE_MAX_LEN] = '1';
    text[RP_VALUE_MAX_LEN + 1] = '\0';
    assert_int_equal(rp__parse_uint(text, 0, 10, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "longer than 4095 bytes"));
    assert_int_equal(rp__parse_duration(text, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "longer than 4095 bytes"));
    assert_int_equal(rp__parse_signal(text, &signo, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "longer than 4095 bytes"));
}

/* A long bad value is quoted short, so the accepted forms still fit in
 * the callers' message buffers (tests/fuzz/fuzz_parse: 1228 zeros as a
 * signal left no room for them in 1 KiB). */
static void test_long_value_quoted_short(void **state)
{
    static char text[1229];
    char err[512] = "";
    uint64_t v;
    int signo;

    (void)state;
    memset(text, '0', sizeof(text) - 1);
    assert_int_equal(rp__parse_signal(text, &signo, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "...' is not a usable signal (accepted: "));
    text[5] = 'x';
    assert_int_equal(rp__parse_duration(text, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "...' is not a duration (accepted: "));
    assert_int_equal(rp__parse_uint(text, 0, 10, &v, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_true(strlen(err) < 100);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_duration_plain_seconds),
        cmocka_unit_test(test_duration_units),
        cmocka_unit_test(test_duration_slurm_clock),
        cmocka_unit_test(test_duration_rejected),
        cmocka_unit_test(test_duration_error_names_forms),
        cmocka_unit_test(test_uint),
        cmocka_unit_test(test_format_duration),
        cmocka_unit_test(test_signal),
        cmocka_unit_test(test_value_length_limit),
        cmocka_unit_test(test_long_value_quoted_short),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
