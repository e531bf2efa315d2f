/*
 * The requeue decision and the call to slurmctld.
 */
#include "config.h"

/* Only the constant: the plugin links none of the runtime. */
#include "ringpoint/ckpt.h"
#include "spank/options.h"
#include "spank/requeue.h"
#include "util/parse.h"

#include <inttypes.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <sys/wait.h>

static bool rp_task_stopped;

void rp__spank_requeue_task_exit(spank_t sp)
{
    int status = 0;

    if (spank_get_item(sp, S_TASK_EXIT_STATUS, &status) == ESPANK_SUCCESS &&
        WIFEXITED(status) && WEXITSTATUS(status) == RP_EXIT_STOPPED) {
        rp_task_stopped = true;
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

void rp__spank_requeue_step_exit(spank_t sp)
{
    job_info_msg_t *msg = NULL;
    rp_job_view_t view;
    uint32_t job_id = 0, node_id = 1;
    char why[256];
    int rc;

    /* One node asks, once; every rank committed before any exited. */
    if (!rp_task_stopped ||
        spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS ||
        node_id != 0 ||
        spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) {
        return;
    }
    if (slurm_load_job(&msg, job_id, SHOW_DETAIL) != SLURM_SUCCESS ||
        msg == NULL || msg->record_count < 1) {
        slurm_error("ringpoint: job %" PRIu32 " stopped at a checkpoint, but "
                    "its state could not be read to requeue it: %s", job_id,
                    slurm_strerror(slurm_get_errno()));
        if (msg != NULL) {
            slurm_free_job_info_msg(msg);
        }
        return;
    }
    view.cancelled = (msg->job_array[0].job_state & JOB_STATE_BASE) ==
                     JOB_CANCELLED;
    view.requeuing = (msg->job_array[0].job_state & JOB_REQUEUE) != 0;
    view.requeuable = msg->job_array[0].batch_flag != 0 &&
                      msg->job_array[0].requeue != 0;
    view.restarts = msg->job_array[0].restart_cnt;
    slurm_free_job_info_msg(msg);

    if (rp__requeue_decide(&view, rp_requeue_max(sp), why, sizeof(why)) !=
        RP_REQUEUE) {
        slurm_info("ringpoint: job %" PRIu32 ": %s", job_id, why);
        return;
    }
    rc = slurm_requeue(job_id, 0);
    if (rc != SLURM_SUCCESS) {
        slurm_error("ringpoint: job %" PRIu32 " stopped at a checkpoint but "
                    "could not be requeued: %s", job_id,
                    slurm_strerror(slurm_get_errno()));
        return;
    }
    slurm_info("ringpoint: job %" PRIu32 ": %s", job_id, why);
}
