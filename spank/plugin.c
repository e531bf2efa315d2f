/*
 * The SPANK entry points. This file alone defines slurm_spank_* and
 * dispatches on the context, so what runs in srun/sbatch (as the user),
 * in slurmstepd (partly as root) and in slurmd is visible in one place.
 *
 * Nothing here may crash the process it is loaded into, shell out, or
 * touch files: failures are reported with slurm_error and a -1 return.
 */
#include "config.h"

#include <slurm/spank.h>
#include <stdbool.h>
#include <string.h>

#include "spank/admin.h"
#include "spank/job_limits.h"
#include "spank/options.h"
#include "spank/requeue.h"

SPANK_PLUGIN(ringpoint, 1);

static bool rp_spank_has_options(spank_context_t ctx)
{
    return ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();
    char err[512];

    if (rp__spank_admin_parse(ac, av, &rp_spank_admin, err,
                              sizeof(err)) != RP_OK) {
        slurm_error("ringpoint: %s", err);
        return -1;
    }
    if (!rp_spank_has_options(ctx)) {
        return 0;
    }
    return rp__spank_options_register(sp);
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    spank_context_t ctx = spank_context();

    (void)sp;
    (void)ac;
    (void)av;
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR) {
        return rp__spank_options_check_env();
    }
    return 0;
}

/* A step refused in slurmstepd. The refusal is made in each task, before
 * it executes anything, rather than in user_init: a batch step whose
 * user_init fails is a launch failure, and slurmctld drains the node for
 * it ("batch job complete failure"), so one user's bad value would take
 * nodes out of service. */
static bool rp_step_refused;

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE) {
        return 0;
    }
    if (rp__spank_options_export(sp) != 0) {
        rp_step_refused = true;
        return 0;
    }
    /* Only a ringpoint step (an option or a RINGPOINT_* setting of the
     * user's) gets the job's limits and the stop marker: any other step
     * keeps its environment and its fds as Slurm made them, and its exit
     * 75 means nothing to the plugin. */
    if (rp__spank_options_requested()) {
        rp__spank_job_limits_export(sp);
        rp__spank_requeue_step_init(sp);
    }
    return 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() != S_CTX_REMOTE) {
        return 0;
    }
    if (rp_step_refused) {
        slurm_error("ringpoint: the step was refused (see the error above); "
                    "no task runs");
        return -1;
    }
    rp__spank_requeue_task_init(sp);
    return 0;
}

int slurm_spank_task_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE) {
        rp__spank_requeue_task_exit(sp);
    }
    return 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
    (void)ac;
    (void)av;
    if (spank_context() == S_CTX_REMOTE) {
        rp__spank_requeue_step_exit(sp);
    }
    return 0;
}
