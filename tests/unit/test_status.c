/*
 * Status strings: every code has its own description, unknown values are
 * handled, and the numbering (ABI) does not drift.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "ringpoint/status.h"

static void test_codes_are_stable(void **state)
{
    (void)state;
    /* Logged numbers must mean the same thing in every release. */
    assert_int_equal(RP_OK, 0);
    assert_int_equal(RP_ERR_INVALID_ARG, -1);
    assert_int_equal(RP_ERR_BOOTSTRAP, -4);
    assert_int_equal(RP_ERR_PEER_FAILED, -7);
    assert_int_equal(RP_ERR_CORRUPT, -9);
    assert_int_equal(RP_ERR_STATE, -12);
    assert_int_equal(RP_ERR_MISMATCH, -13);
}

static void test_every_code_has_a_distinct_string(void **state)
{
    const char *seen[-RP_ERR_LAST];
    int code, j;

    (void)state;
    for (code = 0; code > RP_ERR_LAST; code--) {
        const char *s = rp_status_string((rp_status_t)code);

        assert_non_null(s);
        assert_true(strlen(s) > 0);
        assert_string_not_equal(s, "unknown status");
        for (j = 0; j < -code; j++) {
            assert_string_not_equal(s, seen[j]);
        }
        seen[-code] = s;
    }
}

static void test_unknown_codes(void **state)
{
    (void)state;
    assert_string_equal(rp_status_string(RP_ERR_LAST), "unknown status");
    assert_string_equal(rp_status_string((rp_status_t)-1000), "unknown status");
    assert_string_equal(rp_status_string((rp_status_t)5), "unknown status");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_codes_are_stable),
        cmocka_unit_test(test_every_code_has_a_distinct_string),
        cmocka_unit_test(test_unknown_codes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
