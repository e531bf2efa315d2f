/*
 * Flag-only handlers for the stop signals.
 */
#include "config.h"

#include "signal/signal.h"
#include "ringpoint/ckpt.h"
#include "util/log.h"
#include "util/parse.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
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

/* The handler's function, whichever of the two members it was set by. */
static void *rp_signal_fn(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) ? (void *)sa->sa_sigaction
                                       : (void *)sa->sa_handler;
}

/* The basename of @path. */
static const char *rp_signal_base(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash != NULL ? slash + 1 : path;
}

rp__signal_owner_t rp__signal_describe(const struct sigaction *old, char *buf,
                                       size_t len)
{
    void *fn = rp_signal_fn(old);
    const char *base;
    Dl_info info;

    memset(&info, 0, sizeof(info));
    if (dladdr(fn, &info) == 0 || info.dli_fname == NULL ||
        info.dli_fname[0] == '\0') {
        snprintf(buf, len, "the application");
        return RP_SIGNAL_OWNER_C;
    }
    base = rp_signal_base(info.dli_fname);
    /* CPython's own C handler (static in the interpreter, or in
     * libpython): what signal.signal() installs for a Python function. */
    if (strncmp(base, "python", 6) == 0 || strncmp(base, "libpython", 9) == 0) {
        snprintf(buf, len, "a Python handler (set with signal.signal(); "
                 "the interpreter is %s)", info.dli_fname);
        return RP_SIGNAL_OWNER_PYTHON;
    }
    /* A name only when it is the function's own: dladdr gives the nearest
     * exported symbol below, which for a static function is another's. */
    if (info.dli_sname != NULL && info.dli_saddr == fn) {
        snprintf(buf, len, "%s() in %s", info.dli_sname, info.dli_fname);
    } else {
        snprintf(buf, len, "a function in %s", info.dli_fname);
    }
    return RP_SIGNAL_OWNER_C;
}

/* Say who had @signo and what becomes of it: once per job (the rank that
 * @report), the other ranks only in their debug log. A Python handler is
 * the Python package's to report, since it chains it (checkpoint.py). */
static void rp_signal_report_owner(int signo, const struct sigaction *old,
                                   bool report)
{
    char who[512];
    rp__signal_owner_t owner = rp__signal_describe(old, who, sizeof(who));
    const char *name = rp_signal_label(signo);

    if (owner == RP_SIGNAL_OWNER_PYTHON) {
        rp_debug("SIG%s was handled by %s: ringpoint takes it over; "
                 "ringpoint.torch.Checkpoint.step() puts that handler back, "
                 "after ringpoint's record of the stop", name, who);
        return;
    }
    if (!report) {
        rp_debug("SIG%s was handled by %s; ringpoint takes it over (rank 0 "
                 "says so)",
                 name, who);
        return;
    }
    rp_warn("SIG%s was handled by %s; ringpoint takes SIG%s over to "
            "checkpoint before "
            "stopping and does not call that handler: to keep it, install it "
            "after the first rp_region_register() and call "
            "rp_request_stop(SIG%s) from it%s", name, who, name, name,
            signo == SIGTERM ? ""
                             : ", or choose another warning signal with "
                               "--ckpt-signal");
}

static rp_status_t rp_signal_take(unsigned slot, int signo, bool report)
{
    struct sigaction sa;
    const struct sigaction *old = &rp_signal_slots[slot].old;

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
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN &&
        old->sa_handler != rp_signal_handler) {
        rp_signal_report_owner(signo, old, report);
    } else if (old->sa_handler == SIG_IGN) {
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

rp_status_t rp__signal_install(int warn_signo, bool report)
{
    rp_status_t status;

    rp__signal_restore();
    status = rp_signal_take(0, SIGTERM, report);
    if (status != RP_OK) {
        return status;
    }
    if (warn_signo != 0 && warn_signo != SIGTERM) {
        status = rp_signal_take(1, warn_signo, report);
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
