/*
 * The requeue decision and the call to slurmctld.
 */
#include "config.h"

/* Only the constant: the plugin links none of the runtime. */
#include "ringpoint/ckpt.h"
#include "util/step_marker.h"
#include "spank/admin.h"
#include "spank/options.h"
#include "spank/requeue.h"
#include "util/parse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static bool rp_task_stopped;
static bool rp_task_failed;

/* The step's marker pipe; -1: none (not a ringpoint step, not the first
 * node, requeue=off, or pipe2 failed: then no stop is requeued, which is
 * the safe side). */
static int rp_marker_fd[2] = {-1, -1};

void rp__spank_requeue_step_init(spank_t sp)
{
    uint32_t node_id = 1;

    if (rp_spank_admin.requeue_how == RP_SPANK_REQUEUE_OFF ||
        spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS ||
        node_id != 0) {
        return;
    }
    if (pipe2(rp_marker_fd, O_CLOEXEC | O_NONBLOCK) != 0) {
        slurm_error("ringpoint: no marker pipe (%s): a stop of this step "
                    "will not be requeued by the plugin", strerror(errno));
        rp_marker_fd[0] = rp_marker_fd[1] = -1;
    }
}

void rp__spank_requeue_task_init(spank_t sp)
{
    struct stat st;
    char value[64];

    /* A value inherited from an enclosing step must not name an fd that
     * means something else here (the runtime checks the inode too). */
    if (rp_marker_fd[1] < 0 || fstat(rp_marker_fd[1], &st) != 0) {
        spank_unsetenv(sp, RP_STEP_MARKER_ENV);
        return;
    }
    /* This is the task's own process, just before it executes: open
     * across exec here only; slurmstepd keeps it close-on-exec. */
    if (fcntl(rp_marker_fd[1], F_SETFD, 0) != 0) {
        spank_unsetenv(sp, RP_STEP_MARKER_ENV);
        return;
    }
    snprintf(value, sizeof(value), "%d:%llu", rp_marker_fd[1],
             (unsigned long long)st.st_ino);
    spank_setenv(sp, RP_STEP_MARKER_ENV, value, 1);
}

/* Did a task of this step say it stopped? Reads what is in the pipe
 * (bounded: the user's code could write anything into it) and closes it. */
static bool rp_marker_seen(void)
{
    static const char want[] = RP_STEP_MARKER_STOP;
    const size_t keep = sizeof(want) - 2; /* a record cut by a read */
    char buf[4096 + sizeof(want)];
    size_t have = 0;
    bool seen = false;
    int rounds;

    if (rp_marker_fd[0] < 0) {
        return false;
    }
    for (rounds = 0; rounds < 16 && !seen; rounds++) {
        ssize_t n = read(rp_marker_fd[0], buf + have, sizeof(buf) - have);

        if (n <= 0) {
            break;
        }
        have += (size_t)n;
        seen = memmem(buf, have, want, sizeof(want) - 1) != NULL;
        if (have > keep) {
            memmove(buf, buf + have - keep, keep);
            have = keep;
        }
    }
    close(rp_marker_fd[0]);
    close(rp_marker_fd[1]);
    rp_marker_fd[0] = rp_marker_fd[1] = -1;
    return seen;
}

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

/* Requeues allowed, from the job's RINGPOINT_CKPT_REQUEUE and the site. */
static uint64_t rp_requeue_max(spank_t sp)
{
    char text[32];

    return rp__requeue_max(spank_getenv(sp, "RINGPOINT_CKPT_REQUEUE", text,
                                        sizeof(text)) == ESPANK_SUCCESS
                               ? text
                               : NULL,
                           &rp_spank_admin);
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
    bool had_pipe = rp_marker_fd[0] >= 0;
    bool marked = rp_marker_seen();
    bool failed, stopped;
    char why[320];
    int rc;

    /* Exit 75 is a stop only with the runtime's word for it: many programs
     * exit EX_TEMPFAIL without ever having checkpointed anything. */
    stopped = rp_task_stopped && marked;
    if (rp_task_stopped && !marked && had_pipe) {
        slurm_info("ringpoint: a task exited %d without a ringpoint stop in "
                   "this step; not requeued for it", RP_EXIT_STOPPED);
    }
    /* A stop wins over failures of other tasks: every rank committed
     * before any of them exited RP_EXIT_STOPPED. The batch script's own
     * failure is not the training's: srun steps inside it report theirs;
     * and only steps that asked for ringpoint (options or RINGPOINT_*
     * settings of the user's, not a site default alone) are requeued for
     * failing. */
    failed = !stopped && rp_task_failed &&
             rp_spank_admin.requeue_failed && rp__spank_options_requested() &&
             spank_get_item(sp, S_JOB_STEPID, &step_id) == ESPANK_SUCCESS &&
             step_id != SLURM_BATCH_SCRIPT;
    /* One node asks, once. */
    if ((!stopped && !failed) ||
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
