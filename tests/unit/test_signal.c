/*
 * The stop-signal handlers: they record the first signal and nothing else,
 * take over (and give back) existing handlers, and leave other signals
 * alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "signal/signal.h"

static volatile sig_atomic_t app_handler_calls;

static void app_handler(int signo)
{
    (void)signo;
    app_handler_calls++;
}

static int teardown(void **state)
{
    (void)state;
    rp__signal_restore();
    rp__signal_clear();
    signal(SIGTERM, SIG_DFL);
    signal(SIGUSR2, SIG_DFL);
    signal(SIGUSR1, SIG_DFL);
    return 0;
}

static void test_records_sigterm(void **state)
{
    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2), RP_OK);
    assert_int_equal(rp__signal_pending(), 0);
    raise(SIGTERM); /* would kill the test without the handler */
    assert_int_equal(rp__signal_pending(), SIGTERM);
    rp__signal_clear();
    assert_int_equal(rp__signal_pending(), 0);
}

static void test_first_signal_wins(void **state)
{
    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2), RP_OK);
    raise(SIGUSR2);
    raise(SIGTERM);
    assert_int_equal(rp__signal_pending(), SIGUSR2);
}

static void test_other_signals_untouched(void **state)
{
    struct sigaction sa;

    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2), RP_OK);
    assert_int_equal(sigaction(SIGUSR1, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_DFL);
}

static void test_takes_over_and_restores(void **state)
{
    struct sigaction sa;

    (void)state;
    signal(SIGUSR2, app_handler);
    app_handler_calls = 0;
    assert_int_equal(rp__signal_install(SIGUSR2), RP_OK);
    raise(SIGUSR2);
    assert_int_equal(rp__signal_pending(), SIGUSR2);
    assert_int_equal(app_handler_calls, 0);
    rp__signal_restore();
    assert_int_equal(sigaction(SIGUSR2, NULL, &sa), 0);
    assert_true(sa.sa_handler == app_handler);
    raise(SIGUSR2);
    assert_int_equal(app_handler_calls, 1);
}

static void test_no_warning_signal(void **state)
{
    struct sigaction sa;

    (void)state;
    assert_int_equal(rp__signal_install(0), RP_OK);
    assert_int_equal(sigaction(SIGUSR2, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_DFL);
    raise(SIGTERM);
    assert_int_equal(rp__signal_pending(), SIGTERM);
}

static void test_uncatchable_refused(void **state)
{
    (void)state;
    assert_int_equal(rp__signal_install(SIGKILL), RP_ERR_INVALID_ARG);
}

/* A child forked after install (a DataLoader worker) has no stop to take:
 * SIGTERM must end it as it would without ringpoint, and the parent is
 * not told. */
static void test_forked_child_dies_of_sigterm(void **state)
{
    pid_t pid;
    int st;

    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2), RP_OK);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        raise(SIGTERM);
        _exit(0); /* the handler only noted it: the old behaviour */
    }
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGTERM);
    assert_int_equal(rp__signal_pending(), 0);
    raise(SIGTERM); /* the parent still takes it as a stop */
    assert_int_equal(rp__signal_pending(), SIGTERM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_records_sigterm, teardown),
        cmocka_unit_test_teardown(test_first_signal_wins, teardown),
        cmocka_unit_test_teardown(test_other_signals_untouched, teardown),
        cmocka_unit_test_teardown(test_takes_over_and_restores, teardown),
        cmocka_unit_test_teardown(test_no_warning_signal, teardown),
        cmocka_unit_test_teardown(test_uncatchable_refused, teardown),
        cmocka_unit_test_teardown(test_forked_child_dies_of_sigterm, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
