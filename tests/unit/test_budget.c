/*
 * The stop budget: which deadlines are certain, when a stop checkpoint is
 * skipped (only when it certainly cannot fit), and the warning about a
 * program that runs outside srun.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/engine/budget.h"
#include "ckpt/engine/watchdog.h"
#include "core/settings.h"

static rp__job_limits_t limits(int64_t kw, int64_t grace, int64_t end)
{
    rp__job_limits_t l = {.kill_wait_s = kw, .grace_s = grace,
                          .end_time_s = end};
    return l;
}

static void test_load_from_environment(void **state)
{
    static rp_settings_t set;
    rp__job_limits_t l;

    (void)state;
    setenv("RINGPOINT_SLURM_KILL_WAIT", "30", 1);
    setenv("RINGPOINT_SLURM_GRACE_TIME", "120", 1);
    setenv("RINGPOINT_SLURM_END_TIME", "junk", 1);
    /* Malformed: refused by rp_init, naming it. */
    assert_int_equal(rp__settings_load(&set), RP_ERR_INVALID_ARG);
    unsetenv("RINGPOINT_SLURM_END_TIME");
    assert_int_equal(rp__settings_load(&set), RP_OK);
    rp__job_limits_load(&set, &l);
    assert_int_equal(l.kill_wait_s, 30);
    assert_int_equal(l.grace_s, 120);
    assert_int_equal(l.end_time_s, -1); /* unset: unknown, not 0 */
    unsetenv("RINGPOINT_SLURM_KILL_WAIT");
    unsetenv("RINGPOINT_SLURM_GRACE_TIME");
    assert_int_equal(rp__settings_load(&set), RP_OK);
    rp__job_limits_load(&set, &l);
    assert_int_equal(l.kill_wait_s, -1);
}

static void test_sigterm_at_time_limit_is_exact(void **state)
{
    rp__job_limits_t l = limits(10, 30, 1000);
    rp__stop_budget_t b;

    (void)state;
    /* SIGTERM at 1002 s (Slurm is late, never early), now 1003 s. */
    rp__stop_budget(&l, SIGTERM, SIGUSR2, 1002000, 1003000, &b);
    assert_true(b.exact);
    assert_int_equal(b.left_ms, 9000);
    assert_non_null(strstr(b.why, "time limit"));
    /* 5 s of writing does not fit into 9 s with the margin... */
    assert_true(rp__stop_skip(&b, 6000000000ull));
    /* ...2 s does; and nothing measured yet means try. */
    assert_false(rp__stop_skip(&b, 2000000000ull));
    assert_false(rp__stop_skip(&b, 0));
}

static void test_sigterm_before_end_is_not_exact(void **state)
{
    rp__job_limits_t l = limits(10, 30, 5000);
    rp__stop_budget_t b;

    (void)state;
    /* Preemption (or requeue, scancel): GraceTime may add time, so a
     * checkpoint is always tried, however slow the last one was. */
    rp__stop_budget(&l, SIGTERM, SIGUSR2, 1000000, 1000000, &b);
    assert_false(b.exact);
    assert_int_equal(b.left_ms, 10000);
    assert_non_null(strstr(b.why, "GraceTime 30s"));
    assert_false(rp__stop_skip(&b, 60000000000ull));
    /* No end time at all. */
    l = limits(10, 0, 0);
    rp__stop_budget(&l, SIGTERM, SIGUSR2, 0, 1000000, &b);
    assert_false(b.exact);
    assert_non_null(strstr(b.why, "KillWait 10s"));
}

static void test_warning_signal_counts_to_end_plus_killwait(void **state)
{
    rp__job_limits_t l = limits(10, 0, 1120);
    rp__stop_budget_t b;

    (void)state;
    rp__stop_budget(&l, SIGUSR2, SIGUSR2, 1000000, 1001000, &b);
    assert_true(b.exact);
    assert_int_equal(b.left_ms, 129000);
    assert_false(rp__stop_skip(&b, 60000000000ull));
    assert_true(rp__stop_skip(&b, 120000000000ull));
    /* Unknown end time: unknown budget, never skipped. */
    l = limits(10, 0, -1);
    rp__stop_budget(&l, SIGUSR2, SIGUSR2, 1000000, 1001000, &b);
    assert_false(b.exact);
    assert_int_equal(b.left_ms, -1);
}

static void test_without_the_plugin_nothing_is_known(void **state)
{
    rp__job_limits_t l = limits(-1, -1, -1);
    rp__stop_budget_t b;

    (void)state;
    rp__stop_budget(&l, SIGTERM, SIGUSR2, 1000, 2000, &b);
    assert_int_equal(b.left_ms, -1);
    assert_false(rp__stop_skip(&b, 99000000000ull));
}

static void test_warning_outside_srun(void **state)
{
    char msg[512];

    (void)state;
    assert_false(rp__job_limits_warn_no_srun(true, true, SIGUSR2, msg, sizeof(msg)));
    assert_false(rp__job_limits_warn_no_srun(false, false, SIGUSR2, msg, sizeof(msg)));
    assert_true(rp__job_limits_warn_no_srun(true, false, SIGUSR2, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "--signal=B:USR2@TIME"));
    assert_non_null(strstr(msg, "srun"));
}

/* The bound of a stop's waits (watchdog.h): the time left less a margin
 * when the deadline is certain, RINGPOINT_CKPT_TIMEOUT when set (the
 * smaller of the two), nothing otherwise; a bad timeout is refused. */
static void test_watchdog_limit(void **state)
{
    rp__stop_budget_t b = {.left_ms = 30000, .exact = true};
    const uint64_t s = 1000000000ull;

    (void)state;
    assert_true(rp__ckpt_watchdog_limit_ns(0, &b) == 27 * s);
    b.left_ms = 6000;
    assert_true(rp__ckpt_watchdog_limit_ns(0, &b) == 5 * s);
    assert_true(rp__ckpt_watchdog_limit_ns(3 * s, &b) == 3 * s);
    assert_true(rp__ckpt_watchdog_limit_ns(9 * s, &b) == 5 * s);
    b.left_ms = 2500; /* the margin is at least 1 s */
    assert_true(rp__ckpt_watchdog_limit_ns(0, &b) == 3 * s / 2);
    b.left_ms = 1500; /* never below 1 s: SIGKILL ends it if sooner */
    assert_true(rp__ckpt_watchdog_limit_ns(0, &b) == s);
    b.left_ms = 0;
    assert_true(rp__ckpt_watchdog_limit_ns(0, &b) == s);
    b.exact = false; /* "at least": not guessed */
    b.left_ms = 30000;
    assert_true(rp__ckpt_watchdog_limit_ns(0, &b) == 0);
    assert_true(rp__ckpt_watchdog_limit_ns(4 * s, &b) == 4 * s);
    assert_true(rp__ckpt_watchdog_limit_ns(0, NULL) == 0);
    assert_true(rp__ckpt_watchdog_limit_ns(4 * s, NULL) == 4 * s);

    {
        static rp_settings_t set;

        unsetenv("RINGPOINT_CKPT_TIMEOUT");
        assert_int_equal(rp__settings_load(&set), RP_OK);
        assert_true(set.ckpt_timeout_s == 0);
        setenv("RINGPOINT_CKPT_TIMEOUT", "2m", 1);
        assert_int_equal(rp__settings_load(&set), RP_OK);
        assert_true(set.ckpt_timeout_s == 120);
        setenv("RINGPOINT_CKPT_TIMEOUT", "0", 1);
        assert_int_equal(rp__settings_load(&set), RP_ERR_INVALID_ARG);
        setenv("RINGPOINT_CKPT_TIMEOUT", "soon", 1);
        assert_int_equal(rp__settings_load(&set), RP_ERR_INVALID_ARG);
        unsetenv("RINGPOINT_CKPT_TIMEOUT");
    }
}

/* Armed and disarmed in time, the watchdog lets the process go on. */
static void test_watchdog_disarmed_in_time(void **state)
{
    rp__ckpt_watchdog_t w;

    (void)state;
    rp__ckpt_watchdog_arm(&w, 60ull * 1000000000ull, "test", "/nowhere", 1);
    assert_true(w.started);
    rp__ckpt_watchdog_disarm(&w);
    assert_false(w.started);
    rp__ckpt_watchdog_arm(&w, 0, "test", "/nowhere", 1); /* no limit */
    assert_false(w.started);
    rp__ckpt_watchdog_disarm(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_from_environment),
        cmocka_unit_test(test_sigterm_at_time_limit_is_exact),
        cmocka_unit_test(test_sigterm_before_end_is_not_exact),
        cmocka_unit_test(test_warning_signal_counts_to_end_plus_killwait),
        cmocka_unit_test(test_without_the_plugin_nothing_is_known),
        cmocka_unit_test(test_warning_outside_srun),
        cmocka_unit_test(test_watchdog_limit),
        cmocka_unit_test(test_watchdog_disarmed_in_time),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
