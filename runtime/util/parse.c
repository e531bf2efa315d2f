/*
 * Strict parsers for values typed by users on the srun/sbatch command line or
 * set in the environment. Strict on purpose: "15 m", "1.5h" or "-1" are far
 * more likely typos than intentions, and a checkpoint interval silently read
 * as something else costs hours of lost training.
 */
#include "util/parse.h"
#include "util/str.h"

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/*
 * Read a run of decimal digits at *pp, advancing it. Fails on no digits or
 * a value above @limit (checked before multiplying, so never overflows).
 */
static bool rp_parse_digits(const char **pp, uint64_t limit, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v = 0;

    if (*p < '0' || *p > '9') {
        return false;
    }
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (v > (limit - d) / 10) {
            return false;
        }
        v = v * 10 + d;
        p++;
    }
    *pp = p;
    *out = v;
    return true;
}

/* The user's text in a message: at most this many bytes of it, so that
 * a long bad value cannot push the accepted forms out of a caller's
 * buffer (found by tests/fuzz/fuzz_parse). */
#define RP_QUOTE_MAX 64
#define RP_QUOTE(text) RP_QUOTE_MAX, (text), \
    strlen(text) > RP_QUOTE_MAX ? "..." : ""

/* Refuse text longer than RP_VALUE_MAX_LEN, without reading past it. */
static bool rp_parse_too_long(const char *text, char *err, size_t errlen)
{
    if (strnlen(text, RP_VALUE_MAX_LEN + 1) > RP_VALUE_MAX_LEN) {
        rp__errbuf(err, errlen, "the value is longer than %d bytes",
                   RP_VALUE_MAX_LEN);
        return true;
    }
    return false;
}

rp_status_t rp__parse_uint(const char *text, uint64_t min, uint64_t max,
                           uint64_t *value_p, char *err, size_t errlen)
{
    const char *p = text;
    uint64_t v;

    if (text == NULL || *text == '\0') {
        rp__errbuf(err, errlen, "empty value (expected a whole number)");
        return RP_ERR_INVALID_ARG;
    }
    if (rp_parse_too_long(text, err, errlen)) {
        return RP_ERR_INVALID_ARG;
    }
    if (!rp_parse_digits(&p, UINT64_MAX, &v) || *p != '\0') {
        rp__errbuf(err, errlen, "'%.*s%s' is not a whole number",
                   RP_QUOTE(text));
        return RP_ERR_INVALID_ARG;
    }
    if (v < min || v > max) {
        rp__errbuf(err, errlen, "%llu is out of range [%llu, %llu]",
                      (unsigned long long)v, (unsigned long long)min,
                      (unsigned long long)max);
        return RP_ERR_INVALID_ARG;
    }
    *value_p = v;
    return RP_OK;
}

/* "[[D-]HH:]MM:SS"; p points at the start, the first ':' is known to exist. */
static bool rp_parse_clock(const char *p, uint64_t *seconds)
{
    uint64_t fields[4];
    unsigned nfields = 0;
    uint64_t days = 0, total;
    bool has_days = false;
    const char *dash = strchr(p, '-');

    if (dash != NULL) {
        if (!rp_parse_digits(&p, RP_DURATION_MAX_S, &days) || p != dash) {
            return false;
        }
        has_days = true;
        p++;
    }
    for (;;) {
        if (nfields == 3 || !rp_parse_digits(&p, RP_DURATION_MAX_S,
                                             &fields[nfields])) {
            return false;
        }
        nfields++;
        if (*p == '\0') {
            break;
        }
        if (*p++ != ':') {
            return false;
        }
    }
    /* With a day count Slurm requires the hours field; without one, MM:SS
     * or HH:MM:SS. A lone number is handled by the caller (as seconds). */
    if (has_days ? nfields != 3 : nfields < 2) {
        return false;
    }
    /* Every field after the first is a clock digit pair: bounded. */
    if (fields[nfields - 1] >= 60) {
        return false;
    }
    if (nfields == 3 && fields[1] >= 60) {
        return false;
    }
    if (has_days && fields[0] >= 24) {
        return false;
    }
    if (nfields == 3) {
        total = fields[0] * 3600 + fields[1] * 60 + fields[2];
    } else {
        total = fields[0] * 60 + fields[1];
    }
    if (days > RP_DURATION_MAX_S / 86400 ||
        total > RP_DURATION_MAX_S - days * 86400) {
        return false;
    }
    *seconds = total + days * 86400;
    return true;
}

rp_status_t rp__parse_duration(const char *text, uint64_t *seconds_p,
                               char *err, size_t errlen)
{
    const char *p = text;
    uint64_t v, unit = 1;

    if (text == NULL || *text == '\0') {
        rp__errbuf(err, errlen, "empty duration (accepted: %s)",
                      RP_DURATION_FORMS);
        return RP_ERR_INVALID_ARG;
    }
    if (rp_parse_too_long(text, err, errlen)) {
        return RP_ERR_INVALID_ARG;
    }
    if (strchr(text, ':') != NULL) {
        if (!rp_parse_clock(text, &v)) {
            goto err_form;
        }
        *seconds_p = v;
        return RP_OK;
    }
    if (!rp_parse_digits(&p, UINT64_MAX, &v)) {
        goto err_form;
    }
    switch (*p) {
    case '\0':             break;
    case 's': unit = 1;     p++; break;
    case 'm': unit = 60;    p++; break;
    case 'h': unit = 3600;  p++; break;
    case 'd': unit = 86400; p++; break;
    default: goto err_form;
    }
    if (*p != '\0') {
        goto err_form;
    }
    if (v > RP_DURATION_MAX_S / unit) {
        rp__errbuf(err, errlen, "'%.*s%s' is longer than the maximum of 366 "
                   "days", RP_QUOTE(text));
        return RP_ERR_INVALID_ARG;
    }
    *seconds_p = v * unit;
    return RP_OK;

err_form:
    rp__errbuf(err, errlen, "'%.*s%s' is not a duration (accepted: %s)",
               RP_QUOTE(text), RP_DURATION_FORMS);
    return RP_ERR_INVALID_ARG;
}

void rp__format_duration(uint64_t seconds, char *buf, size_t len)
{
    static const struct { uint64_t size; char unit; } units[] = {
        {86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}
    };
    size_t used = 0;
    unsigned i;

    if (len == 0) {
        return;
    }
    buf[0] = '\0';
    if (seconds == 0) {
        snprintf(buf, len, "0s");
        return;
    }
    for (i = 0; i < sizeof(units) / sizeof(units[0]) && used < len; i++) {
        uint64_t n = seconds / units[i].size;
        int w;

        if (n == 0) {
            continue;
        }
        seconds -= n * units[i].size;
        w = snprintf(buf + used, len - used, "%llu%c", (unsigned long long)n,
                     units[i].unit);
        if (w < 0) {
            return;
        }
        used += (size_t)w;
    }
}

/* Catchable signals that a job can reasonably be warned with. */
static const struct {
    int signo;
    const char *name;
} rp_signals[] = {
    {SIGHUP, "HUP"},   {SIGINT, "INT"},       {SIGQUIT, "QUIT"},
    {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"},     {SIGALRM, "ALRM"},
    {SIGTERM, "TERM"}, {SIGURG, "URG"},       {SIGXCPU, "XCPU"},
    {SIGVTALRM, "VTALRM"}, {SIGPROF, "PROF"}, {SIGWINCH, "WINCH"},
};

const char *rp__signal_name(int signo)
{
    size_t i;

    for (i = 0; i < sizeof(rp_signals) / sizeof(rp_signals[0]); i++) {
        if (rp_signals[i].signo == signo) {
            return rp_signals[i].name;
        }
    }
    return NULL;
}

rp_status_t rp__parse_signal(const char *text, int *signo_p, char *err,
                             size_t errlen)
{
    const char *name = text;
    uint64_t num;
    size_t i;

    if (text == NULL || *text == '\0') {
        rp__errbuf(err, errlen, "empty signal (accepted: %s)", RP_SIGNAL_FORMS);
        return RP_ERR_INVALID_ARG;
    }
    if (rp_parse_too_long(text, err, errlen)) {
        return RP_ERR_INVALID_ARG;
    }
    if (rp__parse_uint(text, 1, 64, &num, NULL, 0) == RP_OK) {
        if (rp__signal_name((int)num) != NULL) {
            *signo_p = (int)num;
            return RP_OK;
        }
    } else {
        if (strncasecmp(name, "SIG", 3) == 0) {
            name += 3;
        }
        for (i = 0; i < sizeof(rp_signals) / sizeof(rp_signals[0]); i++) {
            if (strcasecmp(name, rp_signals[i].name) == 0) {
                *signo_p = rp_signals[i].signo;
                return RP_OK;
            }
        }
    }
    if (strcasecmp(name, "KILL") == 0 || strcasecmp(name, "STOP") == 0 ||
        strcmp(text, "9") == 0 || strcmp(text, "19") == 0) {
        rp__errbuf(err, errlen, "'%.*s%s' cannot be caught, so no checkpoint "
                   "can be taken on it (accepted: %s)", RP_QUOTE(text),
                   RP_SIGNAL_FORMS);
    } else {
        rp__errbuf(err, errlen, "'%.*s%s' is not a usable signal (accepted: "
                   "%s)", RP_QUOTE(text), RP_SIGNAL_FORMS);
    }
    return RP_ERR_INVALID_ARG;
}
