/*
 * Internal logging. Every message goes to stderr with a "ringpoint[rank]:"
 * prefix so that lines from many tasks interleaved by srun stay attributable.
 * Errors are logged where they are first detected; callers that only pass a
 * status upward do not log again.
 */
#ifndef RP_UTIL_LOG_H
#define RP_UTIL_LOG_H

#include <stdarg.h>
#include <stddef.h>

typedef enum rp_log_level {
    RP_LOG_ERROR = 0,
    RP_LOG_WARN  = 1,
    RP_LOG_INFO  = 2,
    RP_LOG_DEBUG = 3
} rp_log_level_t;

/* Current threshold; messages above it are dropped. Read once from
 * RINGPOINT_LOG_LEVEL (error|warn|info|debug or 0-3) on first use: the one
 * RINGPOINT_* variable read outside the runtime's settings table, because
 * the plugin and the tools log before any rp_init (and util/ includes
 * nothing above it). A malformed value reads as warn here; rp_init checks
 * it against the table, refuses it, and sets the level it read. */
rp_log_level_t rp__log_level(void);

/* Override the threshold (tests, tools with -v). */
void rp__log_set_level(rp_log_level_t level);

/* Set the rank shown in the prefix; -1 (the default) shows none. */
void rp__log_set_rank(int rank);

/* Keep, besides writing it, the first error this thread logs from now on
 * in @buf (@len bytes, NUL-terminated, without the "ringpoint: error: "
 * prefix), for a caller that hands it on (rp_init's error text); @buf is
 * emptied now. A NULL @buf (or @len 0) ends the capture. */
void rp__log_capture(char *buf, size_t len);

void rp__log(rp_log_level_t level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void rp__vlog(rp_log_level_t level, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#define rp_error(...) rp__log(RP_LOG_ERROR, __VA_ARGS__)
#define rp_warn(...)  rp__log(RP_LOG_WARN, __VA_ARGS__)
#define rp_info(...)                                                    \
    do {                                                                \
        if (rp__log_level() >= RP_LOG_INFO)                             \
            rp__log(RP_LOG_INFO, __VA_ARGS__);                          \
    } while (0)
#define rp_debug(...)                                                   \
    do {                                                                \
        if (rp__log_level() >= RP_LOG_DEBUG)                            \
            rp__log(RP_LOG_DEBUG, __VA_ARGS__);                         \
    } while (0)

#endif /* RP_UTIL_LOG_H */
