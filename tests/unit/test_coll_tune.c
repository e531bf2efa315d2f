/*
 * The tuning table's file (coll/tune.h): what ringpoint-bench --tune
 * writes reads back the same; every malformed or foreign file is refused
 * as a whole, naming the file and the line, and leaves no key set.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "coll/tune.h"

static char g_path[64];

static int setup(void **state)
{
    int fd;

    (void)state;
    strcpy(g_path, "/tmp/rp-tune-test.XXXXXX");
    fd = mkstemp(g_path);
    if (fd < 0) {
        return -1;
    }
    close(fd);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(g_path);
    return 0;
}

static void put(const char *text)
{
    FILE *f = fopen(g_path, "w");

    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* @text is refused with a reason that contains @want. */
static void expect_refused(const char *text, const char *want)
{
    rp__tune_t t;
    char err[512] = "";

    put(text);
    assert_int_not_equal(rp__tune_read(g_path, &t, err, sizeof(err)), RP_OK);
    if (strstr(err, want) == NULL || strstr(err, g_path) == NULL) {
        fail_msg("refused with '%s', expected the file and '%s'", err, want);
    }
    assert_true(t.rd_max == UINT64_MAX && t.shm_max == UINT64_MAX &&
                t.hier_max == UINT64_MAX);
}

static void test_tune_round_trip(void **state)
{
    rp__tune_t w = {8192, 131072, UINT64_MAX}, r;
    char err[512] = "";

    (void)state;
    assert_int_equal(rp__tune_write(g_path, &w, "a test"), RP_OK);
    assert_int_equal(rp__tune_read(g_path, &r, err, sizeof(err)), RP_OK);
    assert_true(r.rd_max == 8192 && r.shm_max == 131072 &&
                r.hier_max == UINT64_MAX);
}

static void test_tune_comments_blanks_subset(void **state)
{
    rp__tune_t t;
    char err[512] = "";

    (void)state;
    put("# made by hand\n\n  ringpoint-coll-tune 1  # the format\n"
        "\thier_max 65536\n\n");
    assert_int_equal(rp__tune_read(g_path, &t, err, sizeof(err)), RP_OK);
    assert_true(t.hier_max == 65536 && t.rd_max == UINT64_MAX &&
                t.shm_max == UINT64_MAX);
}

static void test_tune_refused(void **state)
{
    (void)state;
    expect_refused("", "empty");
    expect_refused("# nothing\n", "empty");
    expect_refused("allreduce_rd_max 8192\n", ":1: expected 'ringpoint-coll-tune 1'");
    expect_refused("ringpoint-coll-tune 2\nshm_max 1\n", ":1: version 2");
    expect_refused("ringpoint-coll-tune 1 extra\n", ":1: expected");
    expect_refused("ringpoint-coll-tune 1\nshm_max 4096\nbogus 3\n",
                   ":3: unknown key 'bogus'");
    expect_refused("ringpoint-coll-tune 1\nshm_max\n", ":2: expected 'shm_max BYTES'");
    expect_refused("ringpoint-coll-tune 1\nshm_max 4 K\n", ":2: expected 'shm_max BYTES'");
    expect_refused("ringpoint-coll-tune 1\nshm_max -4\n", ":2: shm_max '-4'");
    expect_refused("ringpoint-coll-tune 1\nshm_max 64K\n", ":2: shm_max '64K'");
    expect_refused("ringpoint-coll-tune 1\nhier_max 99999999999999999999\n",
                   ":2: hier_max");
    expect_refused("ringpoint-coll-tune 1\nshm_max 1\n\nshm_max 2\n",
                   ":4: shm_max given twice");
}

static void test_tune_missing_file(void **state)
{
    rp__tune_t t;
    char err[512] = "";

    (void)state;
    unlink(g_path);
    assert_int_equal(rp__tune_read(g_path, &t, err, sizeof(err)), RP_ERR_IO);
    assert_non_null(strstr(err, g_path));
}

static void test_tune_path_from_environment(void **state)
{
    (void)state;
    /* RINGPOINT_COLL_TUNE_FILE as the settings table hands it on. */
    assert_string_equal(rp__tune_path("/some/where"), "/some/where");
    assert_null(rp__tune_path("none"));
    assert_null(rp__tune_path(""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_tune_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tune_comments_blanks_subset,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(test_tune_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tune_missing_file, setup,
                                        teardown),
        cmocka_unit_test(test_tune_path_from_environment),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
