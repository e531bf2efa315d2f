/*
 * The bound on a stop's waits (watchdog.h).
 */
#include "config.h"

#include "ckpt/engine/watchdog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ringpoint/ckpt.h"
#include "util/deadline.h"
#include "util/log.h"
#include "util/parse.h"

/* What the margin before SIGKILL keeps back: a tenth of the time left, at
 * least this, so that the message and the exit come first. */
#define RP_WD_MARGIN_MS 1000
/* The shortest limit. A stop with almost no time left still settles the
 * write in flight and agrees with the others that there is no time for its
 * own checkpoint (engine.c), which takes a collective round or two and
 * can be slow on a loaded node: a shorter limit ended such stops with a
 * false 'file system hangs'. If
 * SIGKILL comes first, it ends the step as it would have anyway. */
#define RP_WD_MIN_MS 1000

uint64_t rp__ckpt_watchdog_limit_ns(uint64_t env_ns,
                                    const rp__stop_budget_t *b)
{
    uint64_t budget_ns = 0;

    if (b != NULL && b->exact && b->left_ms >= 0) {
        int64_t margin = b->left_ms / 10 > RP_WD_MARGIN_MS ? b->left_ms / 10
                                                           : RP_WD_MARGIN_MS;
        int64_t ms = b->left_ms - margin;

        if (ms < RP_WD_MIN_MS) {
            ms = RP_WD_MIN_MS;
        }
        budget_ns = (uint64_t)ms * 1000000ull;
    }
    if (env_ns > 0 && (budget_ns == 0 || env_ns < budget_ns)) {
        return env_ns;
    }
    return budget_ns;
}

static void *rp_wd_main(void *arg)
{
    rp__ckpt_watchdog_t *w = arg;
    struct timespec ts = rp__deadline_after(w->limit_ns);
    int rc = 0;

    pthread_mutex_lock(&w->mu);
    while (!w->done && rc != ETIMEDOUT) {
        rc = pthread_cond_timedwait(&w->cv, &w->mu, &ts);
    }
    if (!w->done) {
        /* The writing thread may sit in the kernel for good: only ending
         * the process gets the step out before SIGKILL. */
        rp_error("%s", w->msg);
        _exit(RP_EXIT_STOPPED);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

void rp__ckpt_watchdog_arm(rp__ckpt_watchdog_t *w, uint64_t limit_ns,
                           const char *what, const char *dir, uint64_t step)
{
    int err;

    memset(w, 0, sizeof(*w));
    if (limit_ns == 0) {
        return;
    }
    w->limit_ns = limit_ns;
    snprintf(w->msg, sizeof(w->msg),
             "%s: the checkpoint of step %llu in %s did not finish within "
             "%.1f s (RINGPOINT_CKPT_TIMEOUT or the time left before "
             "SIGKILL): its file system hangs or is too slow. Exiting now "
             "without it (exit %d); the job resumes from the last "
             "checkpoint committed before it, which this one did not touch",
             what, (unsigned long long)step, dir, (double)limit_ns / 1e9,
             RP_EXIT_STOPPED);
    pthread_mutex_init(&w->mu, NULL);
    rp__cond_init_monotonic(&w->cv);
    err = pthread_create(&w->thread, NULL, rp_wd_main, w);
    if (err != 0) {
        rp_warn("%s: cannot watch the checkpoint write (%s): it is not "
                "bounded", what, strerror(err));
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        return;
    }
    w->started = true;
}

void rp__ckpt_watchdog_disarm(rp__ckpt_watchdog_t *w)
{
    if (!w->started) {
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    w->started = false;
}
