/*
 * When the plugin requeues a job that stopped at a checkpoint: never a
 * cancelled one (slurm_requeue would bring it back), never past the limit,
 * never twice.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "spank/admin.h"
#include "spank/requeue.h"

static rp_job_view_t preempted(void)
{
    rp_job_view_t v = {.cancelled = false, .requeuing = false,
                       .requeuable = true, .restarts = 0};
    return v;
}

static void test_preempted_job_is_requeued(void **state)
{
    rp_job_view_t v = preempted();
    char why[256];

    (void)state;
    assert_int_equal(rp__requeue_decide(&v, 3, why, sizeof(why)), RP_REQUEUE);
    assert_non_null(strstr(why, "requeue 1 of 3"));
    v.restarts = 2;
    assert_int_equal(rp__requeue_decide(&v, 3, why, sizeof(why)), RP_REQUEUE);
    assert_non_null(strstr(why, "requeue 3 of 3"));
}

static void test_limit(void **state)
{
    rp_job_view_t v = preempted();
    char why[256];

    (void)state;
    v.restarts = 3;
    assert_int_equal(rp__requeue_decide(&v, 3, why, sizeof(why)), RP_REQUEUE_NO_LIMIT);
    assert_non_null(strstr(why, "limit reached (3 of 3)"));
    v.restarts = 0;
    assert_int_equal(rp__requeue_decide(&v, 0, why, sizeof(why)), RP_REQUEUE_NO_LIMIT);
}

static void test_cancelled_never(void **state)
{
    rp_job_view_t v = preempted();
    char why[256];

    (void)state;
    v.cancelled = true;
    assert_int_equal(rp__requeue_decide(&v, 100, why, sizeof(why)),
                     RP_REQUEUE_NO_CANCELLED);
    assert_non_null(strstr(why, "cancelled"));
    /* Cancelled wins over everything else. */
    v.requeuing = true;
    assert_int_equal(rp__requeue_decide(&v, 100, why, sizeof(why)),
                     RP_REQUEUE_NO_CANCELLED);
}

static void test_already_and_not_requeuable(void **state)
{
    rp_job_view_t v = preempted();
    char why[256];

    (void)state;
    v.requeuing = true;
    assert_int_equal(rp__requeue_decide(&v, 3, why, sizeof(why)),
                     RP_REQUEUE_NO_ALREADY);
    v = preempted();
    v.requeuable = false;
    assert_int_equal(rp__requeue_decide(&v, 3, why, sizeof(why)),
                     RP_REQUEUE_NO_NOT_REQUEUABLE);
    assert_non_null(strstr(why, "--ckpt-dir"));
}

static void test_failures_share_the_limit(void **state)
{
    rp_job_view_t v = preempted();
    char why[320];

    (void)state;
    v.failed = true;
    assert_int_equal(rp__requeue_decide(&v, 2, why, sizeof(why)), RP_REQUEUE);
    assert_non_null(strstr(why, "after a failure (requeue 1 of 2)"));
    /* A job that crashes at start every time: stopped at MAX, and told
     * where to look. */
    v.restarts = 2;
    assert_int_equal(rp__requeue_decide(&v, 2, why, sizeof(why)),
                     RP_REQUEUE_NO_LIMIT);
    assert_non_null(strstr(why, "limit reached (2 of 2)"));
    assert_non_null(strstr(why, "failed again"));
    /* A cancelled job that then failed stays cancelled. */
    v.restarts = 0;
    v.cancelled = true;
    assert_int_equal(rp__requeue_decide(&v, 2, why, sizeof(why)),
                     RP_REQUEUE_NO_CANCELLED);
}

static void test_pending_job_not_requeued_again(void **state)
{
    rp_job_view_t v = preempted();
    char why[320];

    (void)state;
    v.pending = true;
    assert_int_equal(rp__requeue_decide(&v, 3, why, sizeof(why)),
                     RP_REQUEUE_NO_PENDING);
    assert_non_null(strstr(why, "queue already"));
}

/* The site's max_requeues holds at the step's end too, whatever
 * RINGPOINT_CKPT_REQUEUE the job's environment holds by then. */
static void test_max_clamped_to_site(void **state)
{
    rp_spank_admin_t site = {0};

    (void)state;
    /* No max_requeues in plugstack.conf: the admin guide's default, 3, is
     * the ceiling as well as the default. */
    assert_int_equal(rp__requeue_max(NULL, &site), 3);
    assert_int_equal(rp__requeue_max("2", &site), 2);
    assert_int_equal(rp__requeue_max("7", &site), 3);
    assert_int_equal(rp__requeue_max("99999999", &site), 3);
    assert_int_equal(rp__requeue_max("junk", &site), 3);
    site.has_max_requeues = true;
    site.max_requeues = 2;
    assert_int_equal(rp__requeue_max(NULL, &site), 2);
    assert_int_equal(rp__requeue_max("1", &site), 1);
    assert_int_equal(rp__requeue_max("5", &site), 2);
    assert_int_equal(rp__requeue_max("0", &site), 0);
    site.max_requeues = 0;
    assert_int_equal(rp__requeue_max("3", &site), 0);
    /* A site may allow longer chains than the default. */
    site.max_requeues = 50;
    assert_int_equal(rp__requeue_max("20", &site), 20);
    assert_int_equal(rp__requeue_max(NULL, &site), 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_preempted_job_is_requeued),
        cmocka_unit_test(test_limit),
        cmocka_unit_test(test_cancelled_never),
        cmocka_unit_test(test_already_and_not_requeuable),
        cmocka_unit_test(test_failures_share_the_limit),
        cmocka_unit_test(test_pending_job_not_requeued_again),
        cmocka_unit_test(test_max_clamped_to_site),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
