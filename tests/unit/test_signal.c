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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "signal/signal.h"
#include "util/log.h"

/* What rp__signal_install(SIGUSR2, @report) writes to stderr while installing, into @out:
 * stderr goes to a file for the call. */
static void install_capturing(bool report, char *out, size_t len)
{
    char path[] = "/tmp/test_signal.XXXXXX";
    int fd = mkstemp(path), saved = dup(STDERR_FILENO);
    ssize_t n;

    assert_true(fd >= 0 && saved >= 0);
    unlink(path);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    assert_int_equal(rp__signal_install(SIGUSR2, report), RP_OK);
    assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
    close(saved);
    n = pread(fd, out, len - 1, 0);
    close(fd);
    assert_true(n >= 0);
    out[n] = '\0';
}

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
    assert_int_equal(rp__signal_install(SIGUSR2, true), RP_OK);
    assert_int_equal(rp__signal_pending(), 0);
    raise(SIGTERM); /* would kill the test without the handler */
    assert_int_equal(rp__signal_pending(), SIGTERM);
    rp__signal_clear();
    assert_int_equal(rp__signal_pending(), 0);
}

static void test_first_signal_wins(void **state)
{
    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2, true), RP_OK);
    raise(SIGUSR2);
    raise(SIGTERM);
    assert_int_equal(rp__signal_pending(), SIGUSR2);
}

static void test_other_signals_untouched(void **state)
{
    struct sigaction sa;

    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2, true), RP_OK);
    assert_int_equal(sigaction(SIGUSR1, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_DFL);
}

static void test_takes_over_and_restores(void **state)
{
    struct sigaction sa;

    (void)state;
    signal(SIGUSR2, app_handler);
    app_handler_calls = 0;
    assert_int_equal(rp__signal_install(SIGUSR2, true), RP_OK);
    raise(SIGUSR2);
    assert_int_equal(rp__signal_pending(), SIGUSR2);
    assert_int_equal(app_handler_calls, 0);
    rp__signal_restore();
    assert_int_equal(sigaction(SIGUSR2, NULL, &sa), 0);
    assert_true(sa.sa_handler == app_handler);
    raise(SIGUSR2);
    assert_int_equal(app_handler_calls, 1);
}

/* The warning names the handler's owner, never an address, says the
 * handler is no longer called and how to keep it; once per job: a rank
 * that does not report writes nothing at the default level. */
static void test_takeover_warning_names_owner_once(void **state)
{
    char out[2048];

    (void)state;
    rp__log_set_level(RP_LOG_WARN);
    signal(SIGTERM, app_handler);
    install_capturing(true, out, sizeof(out));
    assert_non_null(strstr(out, "SIGTERM was handled by a function in "));
    assert_non_null(strstr(out, "test_signal"));
    assert_non_null(strstr(out, "does not call that handler"));
    assert_non_null(strstr(out, "rp_request_stop(SIGTERM)"));
    /* SIGTERM is not the warning signal --ckpt-signal chooses. */
    assert_null(strstr(out, "--ckpt-signal"));
    assert_null(strstr(out, "0x"));
    assert_int_equal(strchr(out, '\n') - out + 1, (long)strlen(out));
    rp__signal_restore();

    install_capturing(false, out, sizeof(out));
    assert_string_equal(out, "");
    rp__signal_restore();

    /* The warning signal's takeover may name --ckpt-signal. */
    signal(SIGTERM, SIG_DFL);
    signal(SIGUSR2, app_handler);
    install_capturing(true, out, sizeof(out));
    assert_non_null(strstr(out, "SIGUSR2 was handled by"));
    assert_non_null(strstr(out, "choose another warning signal with "
                                "--ckpt-signal"));
}

static void test_describe_names_an_exported_function(void **state)
{
    struct sigaction old;
    char who[512];

    (void)state;
    memset(&old, 0, sizeof(old));
    /* Only described, never installed: a function dladdr names exactly. */
    old.sa_handler = (void (*)(int))(void (*)(void))abort;
    assert_int_equal(rp__signal_describe(&old, who, sizeof(who)),
                     RP_SIGNAL_OWNER_C);
    assert_non_null(strstr(who, "abort() in "));
    assert_non_null(strstr(who, "libc"));
    /* A static function has no name of its own in the dynamic table:
     * the object, and no neighbour's name. */
    old.sa_handler = app_handler;
    assert_int_equal(rp__signal_describe(&old, who, sizeof(who)),
                     RP_SIGNAL_OWNER_C);
    assert_non_null(strstr(who, "a function in "));
    assert_null(strstr(who, "()"));
}

static void test_no_warning_signal(void **state)
{
    struct sigaction sa;

    (void)state;
    assert_int_equal(rp__signal_install(0, true), RP_OK);
    assert_int_equal(sigaction(SIGUSR2, NULL, &sa), 0);
    assert_true(sa.sa_handler == SIG_DFL);
    raise(SIGTERM);
    assert_int_equal(rp__signal_pending(), SIGTERM);
}

static void test_uncatchable_refused(void **state)
{
    (void)state;
    assert_int_equal(rp__signal_install(SIGKILL, true), RP_ERR_INVALID_ARG);
}

/* A child forked after install (a DataLoader worker) has no stop to take:
 * SIGTERM must end it as it would without ringpoint, and the parent is
 * not told. */
static void test_forked_child_dies_of_sigterm(void **state)
{
    pid_t pid;
    int st;

    (void)state;
    assert_int_equal(rp__signal_install(SIGUSR2, true), RP_OK);
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
        cmocka_unit_test_teardown(test_takeover_warning_names_owner_once, teardown),
        cmocka_unit_test_teardown(test_describe_names_an_exported_function, teardown),
        cmocka_unit_test_teardown(test_no_warning_signal, teardown),
        cmocka_unit_test_teardown(test_uncatchable_refused, teardown),
        cmocka_unit_test_teardown(test_forked_child_dies_of_sigterm, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
