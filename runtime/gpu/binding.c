/*
 * Which GPU a task drives, from what Slurm (or the user) set. NCCL wants
 * one rank per GPU, so the only question is which of the visible devices
 * is this task's, and whether there are enough of them:
 *
 *  1. RINGPOINT_GPU_DEVICE=N names it (an ordinal among the visible ones).
 *  2. Slurm bound GPUs to the task (--gpus-per-task, --gpu-bind): the task
 *     sees exactly its own (CUDA_VISIBLE_DEVICES is rewritten per task),
 *     so it takes the first. One visible device is the same case.
 *  3. Otherwise the tasks of a node share the visible devices: local rank
 *     i takes device i, and more tasks than devices is an error.
 *
 * No CUDA here and no getenv outside rp__gpu_env_read (and there only
 * Slurm's and CUDA's variables: RINGPOINT_GPU_DEVICE comes from the
 * settings table), so every rule is unit-tested with made-up variables
 * (tests/unit/test_gpu_binding.c).
 */
#include "config.h"

#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"
#include "util/str.h"

void rp__gpu_env_read(rp__gpu_env_t *env, const char *device)
{
    env->cuda_visible_devices = getenv("CUDA_VISIBLE_DEVICES");
    env->step_gpus = getenv("SLURM_STEP_GPUS");
    env->job_gpus = getenv("SLURM_JOB_GPUS");
    env->gpus_per_task = getenv("SLURM_GPUS_PER_TASK");
    env->device = device != NULL && *device != '\0' ? device : NULL;
}

int rp__gpu_list_count(const char *list)
{
    int n = 0;
    bool item = false;

    if (list == NULL || *list == '\0') {
        return 0;
    }
    for (const char *p = list; *p != '\0'; p++) {
        unsigned char c = (unsigned char)*p;

        if (c == ',') {
            if (!item) {
                return -1; /* empty entry */
            }
            item = false;
        } else if (c <= ' ' || c > '~') {
            return -1;
        } else if (!item) {
            item = true;
            n++;
        }
    }
    return item ? n : -1; /* a trailing comma is malformed too */
}

/* Entry @idx of a comma-separated list into @buf (truncated). */
static void rp_bind_entry(const char *list, int idx, char *buf, size_t len)
{
    const char *p = list;
    size_t n;

    for (int i = 0; i < idx && p != NULL; i++) {
        p = strchr(p, ',');
        p = p != NULL ? p + 1 : NULL;
    }
    if (p == NULL) {
        snprintf(buf, len, "%d", idx);
        return;
    }
    n = strcspn(p, ",");
    snprintf(buf, len, "%.*s", (int)(n < len ? n : len - 1), p);
}

/* "CUDA_VISIBLE_DEVICES=0,1 SLURM_STEP_GPUS=0,1": what the task was given,
 * for messages. */
static void rp_bind_given(const rp__gpu_env_t *env, char *buf, size_t len)
{
    snprintf(buf, len, "CUDA_VISIBLE_DEVICES=%.40s SLURM_STEP_GPUS=%.40s "
             "SLURM_GPUS_PER_TASK=%.16s",
             env->cuda_visible_devices != NULL ? env->cuda_visible_devices
                                               : "(unset)",
             env->step_gpus != NULL ? env->step_gpus
             : env->job_gpus != NULL ? env->job_gpus : "(unset)",
             env->gpus_per_task != NULL ? env->gpus_per_task : "(unset)");
}

static void rp_bind_set(const rp__gpu_env_t *env, int device, const char *how,
                        rp__gpu_binding_t *out)
{
    out->device = device;
    if (env->cuda_visible_devices != NULL &&
        rp__gpu_list_count(env->cuda_visible_devices) > device) {
        rp_bind_entry(env->cuda_visible_devices, device, out->physical,
                      sizeof(out->physical));
    } else {
        snprintf(out->physical, sizeof(out->physical), "%d", device);
    }
    rp__strlcpy(out->how, how, sizeof(out->how));
}

rp_status_t rp__gpu_bind_resolve(const rp__gpu_env_t *env,
                                 rp__gpu_binding_t *out, char *err,
                                 size_t errlen)
{
    char given[160], how[160];
    uint64_t v, per_task = 0;
    int listed, slurm_listed = -1;
    const char *slurm = env->step_gpus != NULL ? env->step_gpus
                                               : env->job_gpus;

    rp_bind_given(env, given, sizeof(given));
    listed = rp__gpu_list_count(env->cuda_visible_devices);
    if (listed < 0) {
        snprintf(err, errlen, "CUDA_VISIBLE_DEVICES='%.60s' is malformed "
                 "(a comma-separated list of GPU indices or UUIDs)",
                 env->cuda_visible_devices);
        return RP_ERR_INVALID_ARG;
    }
    if (slurm != NULL) {
        slurm_listed = rp__gpu_list_count(slurm);
        if (slurm_listed < 0) {
            snprintf(err, errlen, "SLURM_STEP_GPUS/SLURM_JOB_GPUS='%.60s' is "
                     "malformed", slurm);
            return RP_ERR_INVALID_ARG;
        }
    }
    if (env->gpus_per_task != NULL &&
        rp__parse_uint(env->gpus_per_task, 1, 1024, &per_task, NULL, 0) !=
            RP_OK) {
        snprintf(err, errlen, "SLURM_GPUS_PER_TASK='%.30s' is not a number of "
                 "GPUs (1 or more)", env->gpus_per_task);
        return RP_ERR_INVALID_ARG;
    }
    if (env->local_size < 1 || env->local_rank < 0 ||
        env->local_rank >= env->local_size) {
        snprintf(err, errlen, "local rank %d of %d is not a task of this node",
                 env->local_rank, env->local_size);
        return RP_ERR_INVALID_ARG;
    }
    if (env->visible <= 0) {
        snprintf(err, errlen, "no GPU is visible to this task (%s): ask Slurm "
                 "for GPUs (--gpus-per-task=1) or unset RINGPOINT_GPU", given);
        return RP_ERR_INVALID_ARG;
    }
    if (env->device != NULL) {
        if (rp__parse_uint(env->device, 0, (uint64_t)env->visible - 1, &v,
                           NULL, 0) != RP_OK) {
            snprintf(err, errlen, "RINGPOINT_GPU_DEVICE='%.30s' is not one of "
                     "the %d visible devices (0..%d)", env->device,
                     env->visible, env->visible - 1);
            return RP_ERR_INVALID_ARG;
        }
        snprintf(how, sizeof(how), "RINGPOINT_GPU_DEVICE=%d of %d visible",
                 (int)v, env->visible);
        rp_bind_set(env, (int)v, how, out);
        return RP_OK;
    }
    if (per_task > 0 && (uint64_t)env->visible < per_task) {
        snprintf(err, errlen, "--gpus-per-task=%llu but this task sees %d GPU%s "
                 "(%s)", (unsigned long long)per_task, env->visible,
                 env->visible == 1 ? "" : "s", given);
        return RP_ERR_INVALID_ARG;
    }
    /* One visible GPU is the task's own only if something narrowed the
     * devices per task. With nothing narrowed (CUDA_VISIBLE_DEVICES unset,
     * as under mpirun), or a step given fewer GPUs on this node than it
     * has tasks (srun --gpus=1 -n2), the tasks would share a GPU, which
     * NCCL refuses only when the communicator is made ("Duplicate GPU"):
     * say so here, naming the variables, rather than leave the tasks to
     * fail at their first collective with NCCL's error. */
    if (per_task == 0 && env->visible < env->local_size &&
        (env->cuda_visible_devices == NULL ||
         (slurm_listed >= 0 && slurm_listed < env->local_size))) {
        goto err_shared;
    }
    if (env->visible == 1 || (per_task > 0 && (uint64_t)env->visible == per_task)) {
        /* The task's own devices; NCCL drives one per rank. */
        snprintf(how, sizeof(how), "%s of the task's own %d (Slurm binding%s)",
                 "the first", env->visible,
                 per_task > 1 ? "; one GPU per rank is used" : "");
        rp_bind_set(env, 0, how, out);
        return RP_OK;
    }
    if (env->visible < env->local_size) {
        goto err_shared;
    }
    snprintf(how, sizeof(how), "local rank %d of %d on %d shared GPUs",
             env->local_rank, env->local_size, env->visible);
    rp_bind_set(env, env->local_rank, how, out);
    return RP_OK;

err_shared:
    snprintf(err, errlen, "%d tasks on this node share %d visible GPU%s "
             "(%s): NCCL needs one GPU per task; ask for "
             "--gpus-per-task=1, or at most %d tasks per node",
             env->local_size, env->visible, env->visible == 1 ? "" : "s",
             given, env->visible);
    return RP_ERR_INVALID_ARG;
}
