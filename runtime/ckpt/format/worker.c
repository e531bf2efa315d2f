/*
 * The checkpoint's helper thread: one job at a time, in the order posted
 * (worker.h).
 */
#include "config.h"

#include "ckpt/format/worker.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

static void *rp_worker_main(void *arg)
{
    rp__ckpt_worker_t *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->quit && !w->busy) {
            pthread_cond_wait(&w->cv, &w->mu);
        }
        if (!w->busy) {
            break; /* quit, nothing posted */
        }
        pthread_mutex_unlock(&w->mu);
        w->fn(w->arg);
        pthread_mutex_lock(&w->mu);
        w->busy = false;
        pthread_cond_broadcast(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

bool rp__ckpt_worker_start(rp__ckpt_worker_t *w)
{
    int err;

    memset(w, 0, sizeof(*w));
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    err = pthread_create(&w->th, NULL, rp_worker_main, w);
    if (err != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        errno = err;
        return false;
    }
    return true;
}

bool rp__ckpt_worker_busy(rp__ckpt_worker_t *w)
{
    bool busy;

    pthread_mutex_lock(&w->mu);
    busy = w->busy;
    pthread_mutex_unlock(&w->mu);
    return busy;
}

void rp__ckpt_worker_wait(rp__ckpt_worker_t *w)
{
    pthread_mutex_lock(&w->mu);
    while (w->busy) {
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

void rp__ckpt_worker_post(rp__ckpt_worker_t *w, void (*fn)(void *),
                          void *arg)
{
    rp__ckpt_worker_wait(w);
    pthread_mutex_lock(&w->mu);
    w->fn = fn;
    w->arg = arg;
    w->busy = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void rp__ckpt_worker_stop(rp__ckpt_worker_t *w)
{
    rp__ckpt_worker_wait(w);
    pthread_mutex_lock(&w->mu);
    w->quit = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
}
