/*
 * The requeue decision and the call to slurmctld.
 */
#include "config.h"

/* Only the constant: the plugin links none of the runtime. */
#include "ringpoint/ckpt.h"
#include "spank/admin.h"
#include "spank/options.h"
#include "spank/requeue.h"
#include "util/parse.h"

#include <inttypes.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

static bool rp_task_stopped;
static bool rp_task_failed;

void rp__spank_requeue_task_exit(spank_t sp)
{
    int status = 0;

    if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) != ESPANK_SUCCESS) {
        return;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == RP_EXIT_STOPPED) {
        rp_task_stopped = true;
    } else if ((WIFEXITED(status) && WEXITSTATUS(status) != 0) ||
               WIFSIGNALED(status)) {
        rp_task_failed = true;
    }
}

/* Requeues allowed: the job's RINGPOINT_CKPT_REQUEUE, else the site's
 * max_requeues, else the default. */
static uint64_t rp_requeue_max(spank_t sp)
{
    char text[32];
    uint64_t max;

    if (spank_getenv(sp, "RINGPOINT_CKPT_REQUEUE", text, sizeof(text)) ==
            ESPANK_SUCCESS &&
        rp__parse_uint(text, 0, UINT32_MAX, &max, NULL, 0) == RP_OK) {
        return max;
    }
    return rp_spank_admin.has_max_requeues ? rp_spank_admin.max_requeues
                                           : RP_SPANK_DEFAULT_REQUEUES;
}

/* A limit that ends a job is an error (slurmstepd copies errors to the
 * job's output where it still can); the rest is slurmd's log. */
static void rp_requeue_say(uint32_t job_id, rp_requeue_verdict_t v,
                           const char *why)
{
    if (v == RP_REQUEUE_NO_LIMIT) {
        slurm_error("ringpoint: job %" PRIu32 ": %s", job_id, why);
    } else {
        slurm_info("ringpoint: job %" PRIu32 ": %s", job_id, why);
    }
}

void rp__spank_requeue_step_exit(spank_t sp)
{
    job_info_msg_t *msg = NULL;
    rp_job_view_t view;
    uint32_t job_id = 0, node_id = 1, step_id = 0, flags;
    rp_requeue_verdict_t verdict;
    bool failed;
    char why[320];
    int rc;

    /* A stop wins over failures of other tasks: every rank committed
     * before any of them exited RP_EXIT_STOPPED. The batch script's own
     * failure is not the training's: srun steps inside it report theirs; and
 * only steps that use ringpoint are requeued for failing. */
    failed = !rp_task_stopped && rp_task_failed &&
             rp_spank_admin.requeue_failed && rp__spank_options_exported() &&
             spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS &&
             step_id != SLURM_BATCH_SCRIPT;
    /* One node asks, once. */
    if ((!rp_task_stopped && !failed) ||
        rp_spank_admin.requeue_how == RP_SPANK_REQUEUE_OFF ||
        spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS ||
        node_id != 0 ||
        spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) {
        return;
    }
    if (slurm_load_job(&msg, job_id, SHOW_DETAIL) != SLURM_SUCCESS ||
        msg == NULL || msg->record_count < 1) {
        slurm_error("ringpoint: job %" PRIu32 " %s, but its state could not "
                    "be read to requeue it: %s", job_id,
                    failed ? "failed" : "stopped at a checkpoint",
                    slurm_strerror(slurm_get_errno()));
        if (msg != NULL) {
            slurm_free_job_info_msg(msg);
        }
        return;
    }
    view.cancelled = (msg->job_array[0].job_state & JOB_STATE_BASE) ==
                     JOB_CANCELLED;
    view.pending = (msg->job_array[0].job_state & JOB_STATE_BASE) ==
                   JOB_PENDING;
    view.requeuing = (msg->job_array[0].job_state & JOB_REQUEUE) != 0;
    view.requeuable = msg->job_array[0].batch_flag != 0 &&
                      msg->job_array[0].requeue != 0;
    view.failed = failed;
    view.restarts = msg->job_array[0].restart_cnt;
    slurm_free_job_info_msg(msg);

    verdict = rp__requeue_decide(&view, rp_requeue_max(sp), why, sizeof(why));
    if (verdict != RP_REQUEUE) {
        rp_requeue_say(job_id, verdict, why);
        return;
    }
    flags = rp_spank_admin.requeue_how == RP_SPANK_REQUEUE_HOLD
                ? JOB_REQUEUE_HOLD
                : 0;
    rc = slurm_requeue(job_id, flags);
    if (rc != SLURM_SUCCESS) {
        slurm_error("ringpoint: job %" PRIu32 " %s but could not be "
                    "requeued: %s", job_id,
                    failed ? "failed" : "stopped at a checkpoint",
                    slurm_strerror(slurm_get_errno()));
        return;
    }
    if (flags != 0) {
        size_t len = strlen(why);

        snprintf(why + len, sizeof(why) - len, ", held by the site's policy: "
                 "'scontrol release %" PRIu32 "' starts it", job_id);
    }
    rp_requeue_say(job_id, verdict, why);
}
