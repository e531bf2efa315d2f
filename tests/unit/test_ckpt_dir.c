/*
 * --ckpt-dir: normalisation, site roots and expansion. These rules stand
 * between a user's string and the path a job writes to, so the escapes
 * (path traversal, roots with a shared prefix, names with '/') are tested
 * one by one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "spank/ckpt_dir.h"

static void expect_normal(const char *base, const char *text, const char *want)
{
    char out[256], err[256] = "";

    if (rp__ckpt_dir_normalize(base, text, out, sizeof(out), err,
                               sizeof(err)) != RP_OK) {
        fail_msg("'%s' (base '%s') rejected: %s", text, base ? base : "", err);
    }
    assert_string_equal(out, want);
}

static void expect_bad(const char *base, const char *text, const char *why)
{
    char out[256], err[256] = "";

    assert_int_equal(rp__ckpt_dir_normalize(base, text, out, sizeof(out), err,
                                            sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, why));
}

static void test_normalize(void **state)
{
    (void)state;
    expect_normal("/home/u", "/scratch/ckpt", "/scratch/ckpt");
    expect_normal("/home/u", "ckpt", "/home/u/ckpt");
    expect_normal("/home/u/", "./ckpt/", "/home/u/ckpt");
    expect_normal("/home/u", "a//b/./c/..", "/home/u/a/b");
    expect_normal("/home/u", "../v/ckpt", "/home/v/ckpt");
    expect_normal(NULL, "/", "/");
    expect_normal(NULL, "/a/..", "/");
    expect_normal("/", "x", "/x");
    expect_normal("/home/u", "run-%j/%u_%x", "/home/u/run-%j/%u_%x");
}

static void test_normalize_rejects(void **state)
{
    char out[8], err[128];

    (void)state;
    expect_bad("/home/u", "", "empty");
    expect_bad("/home/u", "/a/../..", "above /");
    expect_bad("/", "../x", "above /");
    expect_bad("/home/u", "ck%q", "unknown escape '%q'");
    expect_bad("/home/u", "ck%", "unknown escape");
    expect_bad("/home/u", "100%%", "unknown escape");
    expect_bad("/home/u", "a\nb", "control character");
    expect_bad(NULL, "relative", "no absolute submit directory");
    expect_bad("relative-base", "relative", "no absolute submit directory");
    assert_int_equal(rp__ckpt_dir_normalize("/", "/abcdefghij", out,
                                            sizeof(out), err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "longer than 7"));
}

static void test_roots(void **state)
{
    char err[256];

    (void)state;
    assert_int_equal(rp__ckpt_dir_check_roots("/anything", NULL, err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/anything", "", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/anything", "/", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/scratch/x", "/home:/scratch", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/scratch", "/scratch/", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/scratch/%u/c", "/scratch", err, sizeof(err)), RP_OK);
    /* A shared prefix is not a parent directory. */
    assert_int_equal(rp__ckpt_dir_check_roots("/scratchpad/x", "/scratch", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "outside this site's checkpoint roots"));
    /* An escape could expand to anything: it does not count as inside. */
    assert_int_equal(rp__ckpt_dir_check_roots("/scr%u/x", "/scratch", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_dir_check_roots("/%u", "/home", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_dir_check_roots("/etc", "/home:/scratch", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
}

static void test_expand(void **state)
{
    rp_ckpt_dir_vars_t v = {.job_id = 42, .user = "alice", .job_name = "train"};
    char out[256], err[256];

    (void)state;
    assert_int_equal(rp__ckpt_dir_expand("/s/%u/%x-%j/%A_%a", &v, out,
                                         sizeof(out), err, sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/alice/train-42/42_0");
    /* Expanded values never carry a '%' that a second pass would read. */
    v.job_name = "100%j";
    assert_int_equal(rp__ckpt_dir_expand("/s/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/100_j");
    v.job_name = "train";
    v.array_job_id = 40;
    v.array_task_id = 2;
    assert_int_equal(rp__ckpt_dir_expand("/s/%A_%a", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/40_2");
}

static void test_expand_cannot_escape(void **state)
{
    rp_ckpt_dir_vars_t v = {.job_id = 1, .user = "u", .job_name = "../../etc"};
    char out[256], err[256];

    (void)state;
    /* A job name is the user's free text: it must stay one component. */
    assert_int_equal(rp__ckpt_dir_expand("/s/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/_._.._etc");
    v.job_name = ".";
    assert_int_equal(rp__ckpt_dir_expand("/s/%x/c", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/_/c");
    v.job_name = "";
    v.user = NULL;
    assert_int_equal(rp__ckpt_dir_expand("/s/%u/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/unknown/job");
    assert_int_equal(rp__ckpt_dir_expand("/s/%j/%j/%j", &v, out, 8, err,
                                         sizeof(err)), RP_ERR_INVALID_ARG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_normalize_rejects),
        cmocka_unit_test(test_roots),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_expand_cannot_escape),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
