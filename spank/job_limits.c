/*
 * The job's deadlines, from slurmctld, for the runtime.
 */
#include "config.h"

#include "spank/job_limits.h"

#include <inttypes.h>
#include <slurm/slurm.h>
#include <stdio.h>
#include <string.h>

static void rp_limits_set(spank_t sp, const char *name, const char *value)
{
    spank_err_t err = spank_setenv(sp, name, value, 1);

    if (err != ESPANK_SUCCESS) {
        slurm_error("ringpoint: could not set %s: %s", name,
                    spank_strerror(err));
    }
}

static void rp_limits_set_u64(spank_t sp, const char *name, uint64_t value)
{
    char text[32];

    snprintf(text, sizeof(text), "%" PRIu64, value);
    rp_limits_set(sp, name, text);
}

/* The GraceTime of partition @name (the job's first one), 0 if none. */
static uint32_t rp_limits_grace(const char *name)
{
    partition_info_msg_t *parts = NULL;
    uint32_t grace = 0, i;
    size_t len;

    if (name == NULL) {
        return 0;
    }
    /* A job may list several partitions; it runs in the first one named
     * here only if it is the one it started in, but all of a site's
     * partitions that preempt usually share one GraceTime. */
    len = strcspn(name, ",");
    if (slurm_load_partitions(0, &parts, SHOW_ALL) != SLURM_SUCCESS) {
        slurm_info("ringpoint: partitions not readable (%s); the runtime "
                   "will not know the preemption grace time",
                   slurm_strerror(slurm_get_errno()));
        return 0;
    }
    for (i = 0; i < parts->record_count; i++) {
        const char *p = parts->partition_array[i].name;

        if (p != NULL && strlen(p) == len && strncmp(p, name, len) == 0) {
            grace = parts->partition_array[i].grace_time;
            break;
        }
    }
    slurm_free_partition_info_msg(parts);
    return grace;
}

void rp__spank_job_limits_export(spank_t sp)
{
    slurm_conf_t *conf = NULL;
    job_info_msg_t *msg = NULL;
    uint32_t job_id = 0, node_id = 1;
    const slurm_job_info_t *job;

    if (spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS ||
        node_id != 0 ||
        spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS) {
        return;
    }
    if (slurm_load_ctl_conf(0, &conf) == SLURM_SUCCESS && conf != NULL) {
        rp_limits_set_u64(sp, "RINGPOINT_SLURM_KILL_WAIT", conf->kill_wait);
        slurm_free_ctl_conf(conf);
    } else {
        slurm_info("ringpoint: configuration not readable (%s); the runtime "
                   "will not know KillWait",
                   slurm_strerror(slurm_get_errno()));
    }
    if (slurm_load_job(&msg, job_id, SHOW_DETAIL) != SLURM_SUCCESS ||
        msg == NULL || msg->record_count < 1) {
        slurm_info("ringpoint: job %" PRIu32 " not readable (%s); the "
                   "runtime will not know its time limit", job_id,
                   slurm_strerror(slurm_get_errno()));
        if (msg != NULL) {
            slurm_free_job_info_msg(msg);
        }
        return;
    }
    job = &msg->job_array[0];
    rp_limits_set_u64(sp, "RINGPOINT_SLURM_GRACE_TIME",
                      rp_limits_grace(job->partition));
    /* An unlimited job has an end time far in the future; 0 says none. */
    rp_limits_set_u64(sp, "RINGPOINT_SLURM_END_TIME",
                      job->time_limit == INFINITE || job->time_limit == NO_VAL ||
                              job->end_time <= 0
                          ? 0
                          : (uint64_t)job->end_time);
    slurm_free_job_info_msg(msg);
}
