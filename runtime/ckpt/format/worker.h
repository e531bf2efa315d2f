/*
 * The checkpoint's helper thread (worker.c): one job at a time, in the
 * order posted; posting waits for the job in flight, so a caller that
 * fills one buffer while the worker handles the other gets double
 * buffering with no queue to size. The helper threads of runtime/ckpt/
 * that run jobs handed to them are these: the async writer (async.c),
 * the snapshot copy's threads (pcopy.c), retention after a commit
 * (root.c) and the restore's reads (reader_shard.c). Two threads are not,
 * on purpose: the sync shard writer's ring (shardio.c) lets its writer
 * take the next filled buffer by itself, without a hand-over that would
 * wait for two thread wake-ups per buffer; the stop watchdog (watchdog.c)
 * runs no job, it waits for a deadline.
 */
#ifndef RP_CKPT_WORKER_H
#define RP_CKPT_WORKER_H

#include <pthread.h>
#include <stdbool.h>

/* A helper thread that runs one job at a time, in the order posted. A
 * job's results live in its @arg; read them after rp__ckpt_worker_wait. */
typedef struct rp__ckpt_worker {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void (*fn)(void *);
    void *arg;
    bool busy; /* posted and not finished */
    bool quit;
} rp__ckpt_worker_t;

/* False when no thread could be made (errno says why): the caller does
 * the work itself. */
bool rp__ckpt_worker_start(rp__ckpt_worker_t *w);
/* Run @fn(@arg) on the worker, after the job in flight (waited for). */
void rp__ckpt_worker_post(rp__ckpt_worker_t *w, void (*fn)(void *),
                          void *arg);
/* Is a job posted and not finished? Does not wait. */
bool rp__ckpt_worker_busy(rp__ckpt_worker_t *w);
/* Wait until the job in flight, if any, is done. */
void rp__ckpt_worker_wait(rp__ckpt_worker_t *w);
/* Wait, then end the thread. */
void rp__ckpt_worker_stop(rp__ckpt_worker_t *w);

#endif /* RP_CKPT_WORKER_H */
