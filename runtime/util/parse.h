/*
 * Parsers for user-supplied values. Shared by the SPANK plugin (which runs
 * inside srun/sbatch and slurmstepd) and the runtime, so that the value
 * accepted at submit time is exactly the value the tasks read back. No
 * allocation, no locale dependence, no global state.
 */
#ifndef RP_UTIL_PARSE_H
#define RP_UTIL_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* The longest value any RINGPOINT_* setting may have, in bytes. The plugin
 * in srun, the plugin in slurmstepd and the runtime apply this one limit
 * (the parsers below refuse longer text), so a value cannot be refused on
 * one side and read on another (a number padded with thousands of leading
 * zeros is still a number to a lenient parser). */
#define RP_VALUE_MAX_LEN 4095

/* Longest duration accepted: 366 days. A checkpoint interval beyond a year
 * is a typo, and the bound keeps every sum far from overflow. */
#define RP_DURATION_MAX_S (366ULL * 24 * 3600)

/* The accepted forms, worded for error messages and --help. */
#define RP_DURATION_FORMS                                                   \
    "seconds (900), a number with a unit s, m, h or d (90s, 15m, 2h, 1d), " \
    "or Slurm's [[D-]HH:]MM:SS (10:00, 1:30:00, 1-00:00:00)"

/*
 * Parse a duration into seconds. Accepted: "N" (seconds), "N" followed by
 * one of s/m/h/d, "MM:SS", "HH:MM:SS" and "D-HH:MM:SS" where every field but
 * the first is below 60 (24 for hours after a day count). Leading/trailing
 * spaces, signs, fractions, empty fields and values above RP_DURATION_MAX_S
 * are rejected. On error, a reason is written to @err (if not NULL) and
 * *seconds_p is left untouched.
 */
rp_status_t rp__parse_duration(const char *text, uint64_t *seconds_p,
                               char *err, size_t errlen);

/*
 * Parse a decimal unsigned integer in [min, max]. Same strictness as
 * rp__parse_duration: digits only, no sign, no spaces, no trailing text.
 */
rp_status_t rp__parse_uint(const char *text, uint64_t min, uint64_t max,
                           uint64_t *value_p, char *err, size_t errlen);

/* The signals a job may ask to be warned with, for messages. */
#define RP_SIGNAL_FORMS                                                     \
    "a catchable signal name or number: USR2 (default), USR1, TERM, INT, " \
    "HUP, QUIT, ALRM, URG, XCPU, VTALRM, PROF, WINCH, or with SIG prefix"

/*
 * Parse a warning-signal name ("USR2", "SIGUSR2", "usr2") or number ("12").
 * Signals that cannot be caught (KILL, STOP) or that mean a crash (SEGV,
 * BUS, ...) are refused: a checkpoint cannot be taken on them.
 */
rp_status_t rp__parse_signal(const char *text, int *signo_p, char *err,
                             size_t errlen);

/* Canonical name without the SIG prefix ("USR2"), or NULL if the signal is
 * not one rp__parse_signal accepts. */
const char *rp__signal_name(int signo);

/* Format seconds compactly for humans: "0s", "45s", "15m", "1h30m", "2d". */
void rp__format_duration(uint64_t seconds, char *buf, size_t len);

#endif /* RP_UTIL_PARSE_H */
