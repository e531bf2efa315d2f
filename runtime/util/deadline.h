/*
 * Waits with a deadline on the monotonic clock: a condition variable that
 * measures time against CLOCK_MONOTONIC (a wall-clock step must not shorten
 * or stretch a timeout) and the deadline @ns from now on that clock. Used
 * where a wait must not outlast a bound: the stop watchdog, the bootstrap's
 * fetches from peers.
 */
#ifndef RP_UTIL_DEADLINE_H
#define RP_UTIL_DEADLINE_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* pthread_cond_init with CLOCK_MONOTONIC for its timed waits. */
static inline void rp__cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t ca;

    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* The CLOCK_MONOTONIC time @ns from now, for pthread_cond_timedwait. */
static inline struct timespec rp__deadline_after(uint64_t ns)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += (time_t)(ns / 1000000000ull);
    ts.tv_nsec += (long)(ns % 1000000000ull);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

#endif
