/*
 * Was this process meant to run alone? See launch.h.
 */
#include "config.h"

#include "bootstrap/launch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A positive count from @var, 0 when unset or not a number. */
static long rp_launch_count(rp__launch_env_fn env, const char *var)
{
    const char *v = env(var);
    char *end;
    long n;

    if (v == NULL || *v == '\0') {
        return 0;
    }
    n = strtol(v, &end, 10);
    return *end == '\0' && n > 0 ? n : 0;
}

/* Is this process a task of an srun step? Slurm sets SLURM_STEP_ID in a
 * step's tasks; the batch script has none, or (newer versions) the batch
 * step's id, and so has the shell of salloc's interactive step. Those
 * three are not steps that srun started. */
static int rp_launch_in_step(rp__launch_env_fn env)
{
    static const char *const not_steps[] = {
        "batch", "interactive", "extern",
        "4294967291", "4294967290", "4294967292"
    };
    const char *step = env("SLURM_STEP_ID");
    unsigned i;

    if (step == NULL) {
        step = env("SLURM_STEPID");
    }
    if (step == NULL || *step == '\0') {
        return 0;
    }
    for (i = 0; i < sizeof(not_steps) / sizeof(not_steps[0]); i++) {
        if (strcmp(step, not_steps[i]) == 0) {
            return 0;
        }
    }
    return 1;
}

void rp__launch_check(rp__launch_env_fn env, rp__launch_t *out)
{
    /* The launchers that count their processes in a variable of their
     * own: srun's step, Open MPI, a PMI-1/2 launcher, torchrun. */
    static const char *const sizes[] = {
        "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
        "WORLD_SIZE"
    };
    int launcher_said_one = 0;
    unsigned i;

    memset(out, 0, sizeof(*out));
    out->verdict = RP_LAUNCH_ALONE;
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        long n = rp_launch_count(env, sizes[i]);

        if (n > 1) {
            out->verdict = RP_LAUNCH_MANY_NO_PMIX;
            out->var = sizes[i];
            out->tasks = n;
            return;
        }
        launcher_said_one |= n == 1;
    }
    /* mpirun -np 1 or torchrun --nproc-per-node=1 inside an allocation:
     * that launcher, not the allocation, says how many there are. */
    if (launcher_said_one || env("SLURM_JOB_ID") == NULL ||
        rp_launch_in_step(env)) {
        return;
    }
    out->tasks = rp_launch_count(env, "SLURM_NTASKS");
    if (out->tasks == 0) {
        out->tasks = rp_launch_count(env, "SLURM_NPROCS");
    }
    out->nodes = rp_launch_count(env, "SLURM_JOB_NUM_NODES");
    if (out->nodes == 0) {
        out->nodes = rp_launch_count(env, "SLURM_NNODES");
    }
    if (out->tasks > 1 || out->nodes > 1) {
        out->verdict = RP_LAUNCH_OUTSIDE_STEP;
        out->job = env("SLURM_JOB_ID");
    }
}

void rp__launch_message(const rp__launch_t *l, char *buf, size_t len)
{
    char what[96];

    switch (l->verdict) {
    case RP_LAUNCH_MANY_NO_PMIX:
        snprintf(buf, len, "%s=%ld but no PMIx server was found, so each of "
                 "the %ld processes would run alone as rank 0 of 1%s; start "
                 "the tasks with 'srun --mpi=pmix' (or MpiDefault=pmix) or "
                 "with a PMIx-enabled mpirun", l->var, l->tasks, l->tasks,
                 strcmp(l->var, "WORLD_SIZE") == 0
                     ? " (ringpoint takes rank and size from PMIx, not from "
                       "torchrun's variables)"
                     : "");
        return;
    case RP_LAUNCH_OUTSIDE_STEP:
        if (l->tasks > 1 && l->nodes > 1) {
            snprintf(what, sizeof(what), "has %ld tasks on %ld nodes",
                     l->tasks, l->nodes);
        } else if (l->tasks > 1) {
            snprintf(what, sizeof(what), "has %ld tasks", l->tasks);
        } else {
            snprintf(what, sizeof(what), "spans %ld nodes", l->nodes);
        }
        snprintf(buf, len, "this process was started without srun: Slurm "
                 "job %s %s, and this process would run alone as rank 0 of "
                 "1. Start it with 'srun --mpi=pmix PROGRAM' (in a batch "
                 "script: on the line that runs it); to run one process "
                 "alone on purpose, set RINGPOINT_ALLOW_SINGLE=1",
                 l->job != NULL ? l->job : "?", what);
        return;
    case RP_LAUNCH_ALONE:
        break;
    }
    snprintf(buf, len, "running alone as rank 0 of 1");
}
