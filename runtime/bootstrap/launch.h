/*
 * Was this process meant to run alone? Asked when no PMIx server is found
 * and the bootstrap would make the process rank 0 of 1: the launchers'
 * variables say whether several tasks were started (each would believe
 * itself alone and overwrite the others' checkpoints), or whether this
 * process runs in a Slurm allocation of several tasks without being one
 * of them (a batch script that forgot srun: it would train alone, for
 * hours, without a word).
 */
#ifndef RP_BOOTSTRAP_LAUNCH_H
#define RP_BOOTSTRAP_LAUNCH_H

#include <stddef.h>

typedef enum rp__launch_verdict {
    RP_LAUNCH_ALONE = 0,     /* nothing says otherwise: rank 0 of 1 */
    RP_LAUNCH_MANY_NO_PMIX,  /* a launcher started several tasks, no PMIx */
    RP_LAUNCH_OUTSIDE_STEP   /* in an allocation of several tasks, no step */
} rp__launch_verdict_t;

typedef struct rp__launch {
    rp__launch_verdict_t verdict;
    const char *var;  /* RP_LAUNCH_MANY_NO_PMIX: the variable that says so */
    long tasks;       /* the tasks that variable, or the job, counts; 0: unknown */
    long nodes;       /* RP_LAUNCH_OUTSIDE_STEP: the job's nodes; 0: unknown */
    const char *job;  /* RP_LAUNCH_OUTSIDE_STEP: SLURM_JOB_ID */
} rp__launch_t;

/* Reads the environment through @env (getenv, or a test's table); the
 * strings in *@out are @env's and live as long as they do. */
typedef const char *(*rp__launch_env_fn)(const char *name);

/*
 * The verdict for a process about to run as rank 0 of 1 without PMIx:
 *  - a launcher's size variable above 1 (srun's SLURM_STEP_NUM_TASKS,
 *    Open MPI's OMPI_COMM_WORLD_SIZE, PMI_SIZE, torchrun's WORLD_SIZE):
 *    MANY_NO_PMIX; equal to 1: that launcher asked for one process, ALONE;
 *  - else inside a Slurm job (SLURM_JOB_ID) but in no step (no
 *    SLURM_STEP_ID, or the batch step's), with SLURM_NTASKS (SLURM_NPROCS)
 *    or SLURM_JOB_NUM_NODES (SLURM_NNODES) above 1: OUTSIDE_STEP. That is
 *    the batch script itself, or an salloc shell;
 *  - else ALONE.
 */
void rp__launch_check(rp__launch_env_fn env, rp__launch_t *out);

/* The error for a verdict other than ALONE, one line into @buf: what is
 * wrong, with the counts, and the fix (the srun command, and for
 * OUTSIDE_STEP the setting that allows it on purpose). */
void rp__launch_message(const rp__launch_t *l, char *buf, size_t len);

#endif /* RP_BOOTSTRAP_LAUNCH_H */
