/*
 * Internal logging: one line per message on stderr, prefixed with the
 * component and the rank so interleaved output from many tasks stays
 * attributable. Deliberately no locking beyond a single write(2) per line:
 * a line written in one call is not torn by other threads or tasks.
 */
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static int rp_log_threshold = -1; /* -1: not read from the environment yet */
static int rp_log_rank      = -1;

/* This thread's capture (rp__log_capture): where the first error goes. */
static __thread struct {
    char *buf;
    size_t len;
    int taken;
} rp_log_cap;

void rp__log_capture(char *buf, size_t len)
{
    rp_log_cap.buf = len > 0 ? buf : NULL;
    rp_log_cap.len = len;
    rp_log_cap.taken = 0;
    if (rp_log_cap.buf != NULL) {
        rp_log_cap.buf[0] = '\0';
    }
}

/* The first error of a capture, without the prefix or the newline. */
static void rp_log_keep(rp_log_level_t level, const char *msg, size_t n)
{
    if (level != RP_LOG_ERROR || rp_log_cap.buf == NULL || rp_log_cap.taken) {
        return;
    }
    if (n >= rp_log_cap.len) {
        n = rp_log_cap.len - 1;
    }
    memcpy(rp_log_cap.buf, msg, n);
    rp_log_cap.buf[n] = '\0';
    rp_log_cap.taken = 1;
}

static rp_log_level_t rp_log_parse_env(void)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    const char *value = getenv("RINGPOINT_LOG_LEVEL");
    unsigned i;

    if (value == NULL || *value == '\0') {
        return RP_LOG_WARN;
    }
    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcasecmp(value, names[i]) == 0 ||
            (value[0] == (char)('0' + i) && value[1] == '\0')) {
            return (rp_log_level_t)i;
        }
    }
    return RP_LOG_WARN;
}

rp_log_level_t rp__log_level(void)
{
    if (rp_log_threshold < 0) {
        rp_log_threshold = (int)rp_log_parse_env();
    }
    return (rp_log_level_t)rp_log_threshold;
}

void rp__log_set_level(rp_log_level_t level)
{
    rp_log_threshold = (int)level;
}

void rp__log_set_rank(int rank)
{
    rp_log_rank = rank;
}

void rp__vlog(rp_log_level_t level, const char *fmt, va_list ap)
{
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    char line[1024];
    int n, m, prefix;

    if ((int)level > (int)rp__log_level()) {
        return;
    }
    if (rp_log_rank >= 0) {
        n = snprintf(line, sizeof(line), "ringpoint[%d]: %s: ", rp_log_rank,
                     tags[level]);
    } else {
        n = snprintf(line, sizeof(line), "ringpoint: %s: ", tags[level]);
    }
    if (n < 0 || (size_t)n >= sizeof(line)) {
        return;
    }
    prefix = n;
    m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    if (m < 0) {
        return;
    }
    n += m;
    /* Truncated messages keep their newline so lines never run together. */
    if ((size_t)n >= sizeof(line) - 1) {
        n = (int)sizeof(line) - 2;
    }
    rp_log_keep(level, line + prefix, (size_t)(n - prefix));
    line[n++] = '\n';
    /* Best effort: there is nowhere to report a failed log write. */
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        return;
    }
}

void rp__log(rp_log_level_t level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rp__vlog(level, fmt, ap);
    va_end(ap);
}
