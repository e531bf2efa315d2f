/*
 * Flag-only handlers for the stop signals.
 */
#include "config.h"

#include "signal/signal.h"
#include "ringpoint/ckpt.h"
#include "util/log.h"
#include "util/parse.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The first signal wins: a warning followed by SIGTERM is one stop. */
static volatile sig_atomic_t rp_signal_first;
/* Its arrival, for the stop budget; written once by the handler, read by
 * the application's thread (a lock-free 64-bit atomic, signal-safe). */
static int64_t rp_signal_when_ms;

static struct {
    int signo;
    bool installed;
    struct sigaction old;
} rp_signal_slots[2];
/* The process that installed the handlers: a child forked from it (a
 * DataLoader worker) has no stop to coordinate. */
static volatile pid_t rp_signal_owner;

static void rp_signal_handler(int signo)
{
    if (rp_signal_owner != 0 && getpid() != rp_signal_owner) {
        /* A child that the fork handler did not reach (fork.c): give the
         * signal its old meaning; it is delivered again on return. */
        rp__signal_reset_in_child();
        raise(signo);
        return;
    }
    (void)rp_request_stop(signo);
}

rp_status_t rp_request_stop(int signo)
{
    if (signo <= 0) {
        return RP_ERR_INVALID_ARG;
    }
    /* Only async-signal-safe work here: record and return
     * (clock_gettime is on POSIX's list of safe functions). */
    if (rp_signal_first == 0) {
        struct timespec ts;

        if (clock_gettime(CLOCK_REALTIME, &ts) == 0) {
            __atomic_store_n(&rp_signal_when_ms,
                             (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
                             __ATOMIC_RELAXED);
        }
        rp_signal_first = signo;
    }
    return RP_OK;
}

static const char *rp_signal_label(int signo)
{
    const char *name = rp__signal_name(signo);

    return name != NULL ? name : "?";
}

static rp_status_t rp_signal_take(unsigned slot, int signo)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = rp_signal_handler;
    sigemptyset(&sa.sa_mask);
    /* Restart interrupted system calls: the application's I/O should not
     * see EINTR because ringpoint listens for a signal. */
    sa.sa_flags = SA_RESTART;
    if (sigaction(signo, &sa, &rp_signal_slots[slot].old) != 0) {
        rp_error("cannot install a handler for signal %d (%s): %s", signo,
                 strsignal(signo), strerror(errno));
        return RP_ERR_INVALID_ARG;
    }
    if (rp_signal_slots[slot].old.sa_handler != SIG_DFL &&
        rp_signal_slots[slot].old.sa_handler != SIG_IGN &&
        rp_signal_slots[slot].old.sa_handler != rp_signal_handler) {
        rp_warn("SIG%s already had a handler (%p); ringpoint takes it over to "
                "checkpoint before stopping. Choose another signal with "
                "--ckpt-signal if the application needs this one",
                rp_signal_label(signo),
                (void *)(rp_signal_slots[slot].old.sa_flags & SA_SIGINFO
                             ? (void *)rp_signal_slots[slot].old.sa_sigaction
                             : (void *)rp_signal_slots[slot].old.sa_handler));
    } else if (rp_signal_slots[slot].old.sa_handler == SIG_IGN) {
        /* Ignored signals stay unhandled by an exec'd child anyway; a job
         * that ignores SIGTERM still wants its checkpoint on preemption. */
        rp_debug("SIG%s was ignored; ringpoint now handles it",
                 rp_signal_label(signo));
    }
    rp_signal_slots[slot].signo = signo;
    rp_signal_slots[slot].installed = true;
    rp_signal_owner = getpid();
    return RP_OK;
}

rp_status_t rp__signal_install(int warn_signo)
{
    rp_status_t status;

    rp__signal_restore();
    status = rp_signal_take(0, SIGTERM);
    if (status != RP_OK) {
        return status;
    }
    if (warn_signo != 0 && warn_signo != SIGTERM) {
        status = rp_signal_take(1, warn_signo);
        if (status != RP_OK) {
            rp__signal_restore();
            return status;
        }
    }
    return RP_OK;
}

void rp__signal_restore(void)
{
    unsigned i;

    for (i = 0; i < sizeof(rp_signal_slots) / sizeof(rp_signal_slots[0]); i++) {
        if (rp_signal_slots[i].installed) {
            sigaction(rp_signal_slots[i].signo, &rp_signal_slots[i].old, NULL);
            rp_signal_slots[i].installed = false;
        }
    }
}

/* After a stop signal Slurm may signal the task again while it is still
 * in rp_finalize: a cancellation or preemption sends SIGTERM to the step,
 * and srun, itself signalled, passes on another. With the default
 * disposition back (the engine restored it before rp_finalize's barrier),
 * that second SIGTERM killed a rank in the middle of the barrier: the
 * ranks still in it printed 'cannot connect to rank N: Endpoint timeout',
 * 'rank N (pid P on this host) has exited' or 'barrier: rank N failed'
 * after a committed stop, and the killed rank ended "Terminated" rather
 * than with its stop's exit code (6 chaos soak outputs; 1 of 60 runs of 8
 * ranks stopped by SIGTERM here). The process is about to exit
 * (RP_EXIT_STOPPED), and Slurm's SIGKILL after KillWait still ends one
 * that does not, so the flag-only handler stays. */
void rp__signal_release(void)
{
    if (rp_signal_first != 0) {
        rp_debug("a stop signal (SIG%s) was received: ringpoint's handlers "
                 "stay until the process exits",
                 rp_signal_label(rp_signal_first));
        return;
    }
    rp__signal_restore();
}

void rp__signal_reset_in_child(void)
{
    int saved = errno;

    rp__signal_restore(); /* sigaction only: async-signal-safe */
    rp_signal_first = 0;
    rp_signal_owner = 0;
    errno = saved;
}

int rp__signal_pending(void)
{
    return rp_signal_first;
}

int64_t rp__signal_time_ms(void)
{
    return rp_signal_first != 0
               ? __atomic_load_n(&rp_signal_when_ms, __ATOMIC_RELAXED)
               : 0;
}

void rp__signal_clear(void)
{
    rp_signal_first = 0;
    __atomic_store_n(&rp_signal_when_ms, 0, __ATOMIC_RELAXED);
}
