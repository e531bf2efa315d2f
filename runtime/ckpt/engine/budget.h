/*
 * The time a stop has. When SIGTERM or the warning signal comes, rank 0
 * weighs what Slurm allows (KillWait, GraceTime, the end time: the plugin
 * exports them as RINGPOINT_SLURM_*, see spank/job_limits.h) against how
 * long its recent checkpoints took, logs that budget, and skips the stop
 * checkpoint only when the deadline is certain and the checkpoint cannot
 * fit: a job killed at its time limit ends TIMEOUT and is not requeued,
 * while one that exits RP_EXIT_STOPPED at once is, and resumes from its
 * last periodic checkpoint. Where the deadline is uncertain (a SIGTERM
 * from preemption may come with GraceTime) it always tries: a checkpoint
 * cut short by SIGKILL is never committed, so trying costs nothing.
 *
 * Pure functions of their inputs, for unit tests.
 */
#ifndef RP_CKPT_BUDGET_H
#define RP_CKPT_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/settings.h"

/* What the job's tasks know of its limits; -1 where unknown. */
typedef struct rp__job_limits {
    int64_t kill_wait_s;  /* RINGPOINT_SLURM_KILL_WAIT */
    int64_t grace_s;      /* RINGPOINT_SLURM_GRACE_TIME (0: none) */
    int64_t end_time_s;   /* RINGPOINT_SLURM_END_TIME, epoch (0: none) */
} rp__job_limits_t;

/* The job's limits from the settings (RINGPOINT_SLURM_*, which the plugin
 * exports; -1 where not under it). A malformed value is refused by
 * rp_init, which names it, rather than taken for unknown in silence: the
 * plugin never writes one, so it is a user's override gone wrong. */
void rp__job_limits_load(const rp_settings_t *set, rp__job_limits_t *lim);

typedef struct rp__stop_budget {
    int64_t left_ms; /* until SIGKILL, from now; -1 unknown */
    bool exact;      /* the deadline is certain (time limit, warning) */
    char why[200];   /* where it comes from, for the log */
} rp__stop_budget_t;

/* The budget of a stop by @signo that arrived at @sig_ms (epoch ms; 0:
 * not on this rank, take @now_ms), with @ckpt_signal the warning signal
 * ringpoint watches. */
void rp__stop_budget(const rp__job_limits_t *lim, int signo, int ckpt_signal,
                     int64_t sig_ms, int64_t now_ms, rp__stop_budget_t *b);

/* Skip the stop checkpoint? Only when the budget is exact and the
 * estimate (0: nothing measured yet) with a margin does not fit. */
bool rp__stop_skip(const rp__stop_budget_t *b, uint64_t estimate_ns);

/* A job's --signal warning goes to srun steps, or with B: to the batch
 * shell only; a program started by the batch script itself without srun
 * sees it only in the B: form. Slurm 22.05 does not tell
 * a job its --signal, so when the plugin describes the job
 * (@under_plugin) and this process runs outside an srun step (@in_step
 * false), write a warning into @msg and return true. */
bool rp__job_limits_warn_no_srun(bool under_plugin, bool in_step,
                                 int ckpt_signal, char *msg, size_t len);

#endif /* RP_CKPT_BUDGET_H */
