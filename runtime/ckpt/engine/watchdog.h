/*
 * A bound on the waits of a stop. A stop (or rp_finalize) waits for a
 * checkpoint write, and a file system that hangs (an NFS server gone, a
 * stalled burst buffer) holds the writing thread in write(2) or fsync(2),
 * where no collective timeout reaches it: the step sat there until Slurm's
 * SIGKILL, which ends it with nothing said and, at a time limit, not
 * requeued. The watchdog, armed with a limit, ends the process itself when
 * the wait outlives it: it names the directory and the checkpoint it gives
 * up, and exits RP_EXIT_STOPPED, as a stop without a checkpoint does, so
 * that the job is requeued and resumes from the previous checkpoint. That
 * one is intact: the abandoned write is in an in-flight directory, renamed
 * only once every rank wrote and agreed (commit.c), and the next start
 * removes it.
 *
 * The limit (rp__ckpt_watchdog_limit_ns): RINGPOINT_CKPT_TIMEOUT (a
 * duration: 90, 30s, 2m) when set; when the stop's deadline is certain
 * (time limit, warning signal: budget.h) the time left until SIGKILL less
 * a margin, so that the step ends with its message before it is killed;
 * the smaller of the two when both apply; otherwise none (an unknown
 * deadline is not guessed, as in budget.h).
 */
#ifndef RP_CKPT_WATCHDOG_H
#define RP_CKPT_WATCHDOG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ckpt/engine/budget.h"
#include "ringpoint/status.h"

typedef struct rp__ckpt_watchdog {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool started;   /* a thread runs: disarm joins it */
    bool done;      /* disarmed: the thread leaves */
    uint64_t limit_ns;
    char msg[1024]; /* logged when the limit passes */
} rp__ckpt_watchdog_t;

/* The limit of a stop's waits from RINGPOINT_CKPT_TIMEOUT (@env_ns, 0:
 * unset) and the stop's budget @b (NULL: none known); 0: no limit. */
uint64_t rp__ckpt_watchdog_limit_ns(uint64_t env_ns,
                                    const rp__stop_budget_t *b);

/* Watch a wait of up to @limit_ns (0: do nothing) for the checkpoint of
 * @step in @dir; @what says what waits ("stop at step 25"). The message
 * names no earlier step: one in flight may still commit while the stop
 * waits. A thread that cannot be started leaves the wait unbounded
 * (logged), as before. */
void rp__ckpt_watchdog_arm(rp__ckpt_watchdog_t *w, uint64_t limit_ns,
                           const char *what, const char *dir, uint64_t step);

/* The wait ended in time: stop watching. Safe on an unarmed watchdog. */
void rp__ckpt_watchdog_disarm(rp__ckpt_watchdog_t *w);

#endif /* RP_CKPT_WATCHDOG_H */
