/*
 * Stop signals. The handlers only record that a signal came (Lightning
 * #21406: a checkpoint written inside a handler sometimes never finished);
 * the ranks then agree on the step to stop at, at their next safe point,
 * through a collective (Lightning #20806: ranks that saw SIGTERM at
 * different times deadlocked).
 *
 * Two signals are watched: SIGTERM (what Slurm sends at preemption, at the
 * time limit and on scancel) and the early-warning signal the job asked
 * for with sbatch --signal (RINGPOINT_CKPT_SIGNAL, default USR2).
 */
#ifndef RP_SIGNAL_H
#define RP_SIGNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/*
 * Install the handlers for SIGTERM and @warn_signo (0: none besides
 * SIGTERM). A signal that already has a handler is taken over, with a
 * warning naming its owner (never an address) and saying that it is no
 * longer called, so that it is never unclear who owns the signal: from
 * the process that @report (rank 0: once per job); the others write it to
 * their debug log. A Python handler is left to the Python package to
 * report, which puts it back behind ringpoint's record of the stop.
 * Process-wide; a second call replaces the first.
 */
rp_status_t rp__signal_install(int warn_signo, bool report);

typedef enum rp__signal_owner {
    RP_SIGNAL_OWNER_C = 0,  /* a function of the program or a library */
    RP_SIGNAL_OWNER_PYTHON  /* the interpreter's: a Python function */
} rp__signal_owner_t;

struct sigaction;

/* Who installed the handler of @old, in words for a message (a function
 * name and its object where dladdr knows them exactly, else the object),
 * into @buf; and whether it is the Python interpreter's. */
rp__signal_owner_t rp__signal_describe(const struct sigaction *old, char *buf,
                                       size_t len);

/* Put back the handlers found by rp__signal_install. */
void rp__signal_restore(void);

/* The end of rp_finalize: put the handlers back, unless a stop signal was
 * received; then they stay until the process exits (see signal.c). */
void rp__signal_release(void);

/* In a child forked after install (no stop of its own to take): put back
 * the dispositions found at install and forget a recorded signal.
 * Async-signal-safe (the fork handler and the stop handler call it). */
void rp__signal_reset_in_child(void);

/* The first stop signal received since install (or since the last
 * rp__signal_clear), or 0. Safe to call from any thread. */
int rp__signal_pending(void);

/* When the signal rp__signal_pending reports arrived: CLOCK_REALTIME in
 * milliseconds (comparable with Slurm's end time), 0 if none. */
int64_t rp__signal_time_ms(void);

/* Forget a received signal (tests; a job that decides to go on). */
void rp__signal_clear(void);

#endif /* RP_SIGNAL_H */
