/*
 * The stop budget: Slurm's limits against measured checkpoint times.
 */
#include "config.h"

#include "ckpt/engine/budget.h"
#include "util/log.h"
#include "util/parse.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Room for exiting, the plugin's requeue RPC and a slower write than the
 * slowest recent one. */
#define RP_BUDGET_MARGIN_MS 2000
#define RP_BUDGET_FACTOR    1.25

void rp__job_limits_load(const rp_settings_t *set, rp__job_limits_t *lim)
{
    memset(lim, 0, sizeof(*lim));
    lim->kill_wait_s = set->slurm_kill_wait_s;
    lim->grace_s = set->slurm_grace_s;
    lim->end_time_s = set->slurm_end_time_s;
}

void rp__stop_budget(const rp__job_limits_t *lim, int signo, int ckpt_signal,
                     int64_t sig_ms, int64_t now_ms, rp__stop_budget_t *b)
{
    int64_t at = sig_ms > 0 ? sig_ms : now_ms;
    int64_t kw = lim->kill_wait_s;

    memset(b, 0, sizeof(*b));
    b->left_ms = -1;
    if (signo == SIGTERM || signo != ckpt_signal) {
        if (kw < 0) {
            snprintf(b->why, sizeof(b->why), "KillWait unknown (no "
                     "RINGPOINT_SLURM_KILL_WAIT: not under the plugin)");
            return;
        }
        b->left_ms = at + kw * 1000 - now_ms;
        b->left_ms = b->left_ms > 0 ? b->left_ms : 0;
        /* Slurm sends SIGTERM at the time limit a little late, never
         * early: a SIGTERM at or after the end time is the time limit. */
        if (lim->end_time_s > 0 && at / 1000 >= lim->end_time_s - 1) {
            b->exact = true;
            snprintf(b->why, sizeof(b->why), "time limit reached; KillWait "
                     "%llds", (long long)kw);
        } else if (lim->grace_s > 0) {
            snprintf(b->why, sizeof(b->why), "KillWait %llds; a preemption "
                     "adds GraceTime %llds", (long long)kw,
                     (long long)lim->grace_s);
        } else {
            snprintf(b->why, sizeof(b->why), "KillWait %llds",
                     (long long)kw);
        }
        return;
    }
    /* The warning signal: the time limit is still ahead. */
    if (lim->end_time_s > 0) {
        b->left_ms = lim->end_time_s * 1000 + (kw > 0 ? kw : 0) * 1000 -
                     now_ms;
        b->left_ms = b->left_ms > 0 ? b->left_ms : 0;
        b->exact = true;
        snprintf(b->why, sizeof(b->why), "warning before the time limit: "
                 "%llds to the end time + KillWait %llds",
                 (long long)(lim->end_time_s - now_ms / 1000),
                 (long long)(kw > 0 ? kw : 0));
    } else {
        snprintf(b->why, sizeof(b->why), "warning signal without a known "
                 "end time");
    }
}

bool rp__stop_skip(const rp__stop_budget_t *b, uint64_t estimate_ns)
{
    double need_ms;

    if (!b->exact || b->left_ms < 0 || estimate_ns == 0) {
        return false;
    }
    need_ms = (double)estimate_ns / 1e6 * RP_BUDGET_FACTOR +
              RP_BUDGET_MARGIN_MS;
    return need_ms > (double)b->left_ms;
}

bool rp__job_limits_warn_no_srun(bool under_plugin, bool in_step,
                                 int ckpt_signal, char *msg, size_t len)
{
    const char *sig = rp__signal_name(ckpt_signal);

    if (!under_plugin || in_step) {
        return false;
    }
    snprintf(msg, len, "running in the batch script itself, not in an srun "
             "step: Slurm's warning signal reaches this program only as "
             "sbatch --signal=B:%s@TIME (without B: it goes to srun steps "
             "only); start it with srun to get the usual --signal=%s@TIME",
             sig != NULL ? sig : "USR2", sig != NULL ? sig : "USR2");
    return true;
}
