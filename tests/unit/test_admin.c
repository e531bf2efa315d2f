/*
 * The plugin's plugstack.conf settings: parsing and the bounds they put on
 * users' options.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "spank/admin.h"

static rp_status_t parse(int argc, char *const argv[], rp_spank_admin_t *a,
                         char *err, size_t len)
{
    memset(err, 0, len);
    return rp__spank_admin_parse(argc, argv, a, err, len);
}

static void test_no_arguments(void **state)
{
    rp_spank_admin_t a;
    char err[256];

    (void)state;
    memset(&a, 0xff, sizeof(a));
    assert_int_equal(parse(0, NULL, &a, err, sizeof(err)), RP_OK);
    assert_false(a.has_default_interval);
    assert_int_equal(a.min_interval_s, 0);
}

static void test_known_keys(void **state)
{
    char *argv[] = {"default_interval=30m", "min_interval=5:00"};
    rp_spank_admin_t a;
    char err[256];

    (void)state;
    assert_int_equal(parse(2, argv, &a, err, sizeof(err)), RP_OK);
    assert_true(a.has_default_interval);
    assert_int_equal(a.default_interval_s, 1800);
    assert_int_equal(a.min_interval_s, 300);
}

static void test_unknown_key_is_an_error(void **state)
{
    char *argv[] = {"default_interval=30m", "min_intervall=5m"};
    rp_spank_admin_t a;
    char err[256];

    (void)state;
    assert_int_equal(parse(2, argv, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "min_intervall"));
    assert_non_null(strstr(err, "default_interval, min_interval, max_keep"));
}

static void test_malformed_arguments(void **state)
{
    char *no_eq[] = {"default_interval"};
    char *no_key[] = {"=5m"};
    char *bad_value[] = {"min_interval=soon"};
    char *prefix[] = {"default_interval_x=5m"};
    rp_spank_admin_t a;
    char err[512];

    (void)state;
    assert_int_equal(parse(1, no_eq, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "key=value"));
    assert_int_equal(parse(1, no_key, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_int_equal(parse(1, bad_value, &a, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "min_interval"));
    assert_non_null(strstr(err, "'soon'"));
    assert_int_equal(parse(1, prefix, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
}

static void test_interval_bounds(void **state)
{
    char *argv[] = {"min_interval=5m"};
    rp_spank_admin_t a;
    char err[256];

    (void)state;
    assert_int_equal(parse(1, argv, &a, err, sizeof(err)), RP_OK);
    assert_int_equal(rp__spank_admin_check_interval(&a, 300, err, sizeof(err)),
                     RP_OK);
    assert_int_equal(rp__spank_admin_check_interval(&a, 3600, err, sizeof(err)),
                     RP_OK);
    /* Only on a signal is always allowed. */
    assert_int_equal(rp__spank_admin_check_interval(&a, 0, err, sizeof(err)),
                     RP_OK);
    assert_int_equal(rp__spank_admin_check_interval(&a, 299, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "4m59s"));
    assert_non_null(strstr(err, "5m"));
}

static void test_default_must_respect_minimum(void **state)
{
    char *argv[] = {"min_interval=10m", "default_interval=1m"};
    rp_spank_admin_t a;
    char err[256];

    (void)state;
    assert_int_equal(parse(2, argv, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "default_interval"));
}

static void test_keep_requeue_roots(void **state)
{
    char *argv[] = {"max_keep=5", "max_requeues=0", "allowed_roots=/scratch:/home/"};
    char *bad_keep[] = {"max_keep=0"};
    char *bad_requeues[] = {"max_requeues=many"};
    char *bad_roots[][1] = {{"allowed_roots=scratch"}, {"allowed_roots=/s/%u"},
                            {"allowed_roots=/s/../etc"}, {"allowed_roots="},
                            {"allowed_roots=/a::/b"}};
    rp_spank_admin_t a;
    char err[256];
    size_t i;

    (void)state;
    /* Without the key, the ceiling is the admin guide's default. */
    assert_int_equal(parse(0, argv, &a, err, sizeof(err)), RP_OK);
    assert_false(a.has_max_requeues);
    assert_int_equal(rp__spank_admin_max_requeues(&a), 3);
    assert_int_equal(parse(3, argv, &a, err, sizeof(err)), RP_OK);
    assert_int_equal(rp__spank_admin_max_requeues(&a), 0);
    assert_int_equal(a.max_keep, 5);
    assert_true(a.has_max_requeues);
    assert_int_equal(a.max_requeues, 0);
    assert_string_equal(a.allowed_roots, "/scratch:/home/");
    assert_int_equal(parse(1, bad_keep, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "max_keep"));
    assert_int_equal(parse(1, bad_requeues, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "max_requeues"));
    for (i = 0; i < sizeof(bad_roots) / sizeof(bad_roots[0]); i++) {
        if (parse(1, bad_roots[i], &a, err, sizeof(err)) == RP_OK) {
            fail_msg("accepted %s", bad_roots[i][0]);
        }
        assert_non_null(strstr(err, "allowed_roots"));
    }
}

static void test_requeue_how_and_failed(void **state)
{
    char *argv[] = {"requeue=hold", "requeue_failed=yes"};
    char *off[] = {"requeue=off", "requeue_failed=no"};
    char *bad_how[] = {"requeue=sometimes"};
    char *bad_failed[] = {"requeue_failed=maybe"};
    rp_spank_admin_t a;
    char err[512];

    (void)state;
    assert_int_equal(parse(0, NULL, &a, err, sizeof(err)), RP_OK);
    assert_int_equal(a.requeue_how, RP_SPANK_REQUEUE_AUTO);
    assert_false(a.requeue_failed);
    assert_int_equal(parse(2, argv, &a, err, sizeof(err)), RP_OK);
    assert_int_equal(a.requeue_how, RP_SPANK_REQUEUE_HOLD);
    assert_true(a.requeue_failed);
    assert_int_equal(parse(2, off, &a, err, sizeof(err)), RP_OK);
    assert_int_equal(a.requeue_how, RP_SPANK_REQUEUE_OFF);
    assert_false(a.requeue_failed);
    assert_int_equal(parse(1, bad_how, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "requeue"));
    assert_non_null(strstr(err, "auto, hold or off"));
    assert_int_equal(parse(1, bad_failed, &a, err, sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "requeue_failed"));
    assert_non_null(strstr(err, "yes or no"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_arguments),
        cmocka_unit_test(test_known_keys),
        cmocka_unit_test(test_unknown_key_is_an_error),
        cmocka_unit_test(test_malformed_arguments),
        cmocka_unit_test(test_interval_bounds),
        cmocka_unit_test(test_default_must_respect_minimum),
        cmocka_unit_test(test_keep_requeue_roots),
        cmocka_unit_test(test_requeue_how_and_failed),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
