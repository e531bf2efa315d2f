/*
 * Requeue after a stop. A task that stopped at a committed checkpoint
 * exits with RP_EXIT_STOPPED; when a step ends with such a task, the
 * plugin (in slurmstepd, on the step's first node) asks slurmctld to
 * requeue the job — unless it was cancelled, cannot be requeued, or has
 * used up its --ckpt-requeue allowance. With the site's requeue_failed=yes
 * a step that failed (a task crashed or was killed, a peer was lost) is
 * requeued too, from the same allowance, so a job that crashes at start
 * every time stops at MAX instead of looping. The site's requeue= says how
 * (auto, hold, off).
 *
 * Why here and not in the job: a preempted job whose tasks exit during
 * GraceTime ends COMPLETED, not requeued (checked on Slurm 22.05); and
 * scontrol is often missing inside containers (pyxis #129). The RPC goes
 * from slurmstepd, through the libslurm that already runs it.
 */
#ifndef RP_SPANK_REQUEUE_H
#define RP_SPANK_REQUEUE_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the decision needs to know about the job. */
typedef struct rp_job_view {
    bool cancelled;  /* scancel'd: never bring it back */
    bool requeuing;  /* already being requeued (scontrol requeue, Slurm) */
    bool requeuable; /* batch job submitted with --requeue (or the default) */
    bool pending;    /* requeued already (back in the queue) */
    bool failed;     /* the step failed rather than stopped at a checkpoint */
    uint32_t restarts;
} rp_job_view_t;

typedef enum rp_requeue_verdict {
    RP_REQUEUE = 0,
    RP_REQUEUE_NO_CANCELLED,
    RP_REQUEUE_NO_ALREADY,
    RP_REQUEUE_NO_NOT_REQUEUABLE,
    RP_REQUEUE_NO_LIMIT,
    RP_REQUEUE_NO_PENDING
} rp_requeue_verdict_t;

/* Decide, and say why in @why. @max: requeues allowed (0: never). */
rp_requeue_verdict_t rp__requeue_decide(const rp_job_view_t *job, uint64_t max,
                                        char *why, size_t whylen);

struct rp_spank_admin;

/* Requeues allowed: the job's RINGPOINT_CKPT_REQUEUE (@job_text, NULL if
 * unset or unreadable), else the site's max_requeues, else the default;
 * never above the site's maximum. The value was checked when the step
 * started; the step's end, where the decision is made, does not rely on
 * that check alone. */
uint64_t rp__requeue_max(const char *job_text,
                         const struct rp_spank_admin *admin);

/* slurm_spank_user_init, in slurmstepd, for a ringpoint step only: open the
 * step's marker pipe (util/step_marker.h) on the step's first node. */
void rp__spank_requeue_step_init(spank_t sp);

/* slurm_spank_task_init, in each task before it executes: hand it the
 * marker pipe's write end. */
void rp__spank_requeue_task_init(spank_t sp);

/* slurm_spank_task_exit: note a task that exited RP_EXIT_STOPPED. */
void rp__spank_requeue_task_exit(spank_t sp);

/* slurm_spank_exit: requeue the job if a task of this step stopped through
 * ringpoint's stop protocol (it exited RP_EXIT_STOPPED and the marker came)
 * or, with requeue_failed, a step that asked for ringpoint failed. */
void rp__spank_requeue_step_exit(spank_t sp);

#endif /* RP_SPANK_REQUEUE_H */
