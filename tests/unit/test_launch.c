/*
 * Was a process without PMIx meant to run alone? The environments of the
 * places one starts: a batch script that forgot srun, an salloc shell, an
 * srun step with and without PMIx, mpirun and torchrun, a laptop. Each
 * environment is a table handed to the check, so no test touches the
 * process's own.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/launch.h"

/* The environment of the current case: NAME=VALUE strings, NULL-ended. */
static const char *const *cur_env;

static const char *table_env(const char *name)
{
    size_t n = strlen(name);
    const char *const *e;

    for (e = cur_env; *e != NULL; e++) {
        if (strncmp(*e, name, n) == 0 && (*e)[n] == '=') {
            return *e + n + 1;
        }
    }
    return NULL;
}

static rp__launch_t check(const char *const *env)
{
    rp__launch_t l;

    cur_env = env;
    rp__launch_check(table_env, &l);
    return l;
}

/* What sbatch -N2 -n3 gives the batch script (Slurm 22.05: no step id). */
#define BATCH_N2_N3 "SLURM_JOB_ID=4242", "SLURM_JOBID=4242", \
    "SLURM_NTASKS=3", "SLURM_NPROCS=3", "SLURM_JOB_NUM_NODES=2", \
    "SLURM_NNODES=2", "ENVIRONMENT=BATCH"

static void test_batch_script_without_srun_is_outside_step(void **state)
{
    static const char *const env[] = {BATCH_N2_N3, NULL};
    rp__launch_t l = check(env);
    char msg[512];

    (void)state;
    assert_int_equal(l.verdict, RP_LAUNCH_OUTSIDE_STEP);
    assert_int_equal(l.tasks, 3);
    assert_int_equal(l.nodes, 2);
    assert_string_equal(l.job, "4242");
    rp__launch_message(&l, msg, sizeof(msg));
    assert_non_null(strstr(msg, "started without srun"));
    assert_non_null(strstr(msg, "Slurm job 4242 has 3 tasks on 2 nodes"));
    assert_non_null(strstr(msg, "rank 0 of 1"));
    assert_non_null(strstr(msg, "srun --mpi=pmix"));
    assert_non_null(strstr(msg, "RINGPOINT_ALLOW_SINGLE=1"));
}

static void test_newer_slurm_batch_step_id_is_no_step(void **state)
{
    static const char *const named[] = {BATCH_N2_N3, "SLURM_STEP_ID=batch",
                                        NULL};
    static const char *const numbered[] = {BATCH_N2_N3,
                                           "SLURM_STEPID=4294967291", NULL};
    static const char *const interactive[] = {
        "SLURM_JOB_ID=7", "SLURM_NTASKS=4", "SLURM_STEP_ID=interactive", NULL};

    (void)state;
    assert_int_equal(check(named).verdict, RP_LAUNCH_OUTSIDE_STEP);
    assert_int_equal(check(numbered).verdict, RP_LAUNCH_OUTSIDE_STEP);
    assert_int_equal(check(interactive).verdict, RP_LAUNCH_OUTSIDE_STEP);
}

static void test_salloc_shell_counts_nodes_without_ntasks(void **state)
{
    /* salloc -N2 without -n: no task count, two nodes. */
    static const char *const env[] = {"SLURM_JOB_ID=9", "SLURM_NNODES=2",
                                      NULL};
    rp__launch_t l = check(env);
    char msg[512];

    (void)state;
    assert_int_equal(l.verdict, RP_LAUNCH_OUTSIDE_STEP);
    assert_int_equal(l.tasks, 0);
    rp__launch_message(&l, msg, sizeof(msg));
    assert_non_null(strstr(msg, "Slurm job 9 spans 2 nodes"));
}

static void test_one_task_job_runs_alone(void **state)
{
    /* sbatch -n1 -c8: the batch script is the job's one task. */
    static const char *const env[] = {"SLURM_JOB_ID=5", "SLURM_NTASKS=1",
                                      "SLURM_JOB_NUM_NODES=1", NULL};
    static const char *const bare[] = {"SLURM_JOB_ID=5", NULL};

    (void)state;
    assert_int_equal(check(env).verdict, RP_LAUNCH_ALONE);
    assert_int_equal(check(bare).verdict, RP_LAUNCH_ALONE);
}

static void test_srun_step_of_one_task_runs_alone(void **state)
{
    /* srun -n1 python prep.py inside the 3-task allocation: srun sets the
     * step's own counts. */
    static const char *const env[] = {
        "SLURM_JOB_ID=4242", "SLURM_NTASKS=1", "SLURM_JOB_NUM_NODES=2",
        "SLURM_STEP_ID=0", "SLURM_STEPID=0", "SLURM_STEP_NUM_TASKS=1",
        NULL};

    (void)state;
    assert_int_equal(check(env).verdict, RP_LAUNCH_ALONE);
}

static void test_srun_step_without_pmix_is_many(void **state)
{
    static const char *const env[] = {
        "SLURM_JOB_ID=4242", "SLURM_NTASKS=3", "SLURM_STEP_ID=1",
        "SLURM_STEP_NUM_TASKS=3", NULL};
    rp__launch_t l = check(env);
    char msg[512];

    (void)state;
    assert_int_equal(l.verdict, RP_LAUNCH_MANY_NO_PMIX);
    assert_string_equal(l.var, "SLURM_STEP_NUM_TASKS");
    assert_int_equal(l.tasks, 3);
    rp__launch_message(&l, msg, sizeof(msg));
    assert_non_null(strstr(msg, "SLURM_STEP_NUM_TASKS=3"));
    assert_non_null(strstr(msg, "--mpi=pmix"));
}

static void test_other_launchers_decide_the_count(void **state)
{
    /* mpirun -np 1 or torchrun with one worker, in the batch script of a
     * 3-task job: that launcher asked for one process. */
    static const char *const ompi1[] = {BATCH_N2_N3,
                                        "OMPI_COMM_WORLD_SIZE=1", NULL};
    static const char *const torch1[] = {BATCH_N2_N3, "WORLD_SIZE=1",
                                         "RANK=0", NULL};
    /* torchrun with 4 workers and no PMIx: 4 processes alone. */
    static const char *const torch4[] = {BATCH_N2_N3, "WORLD_SIZE=4",
                                         "RANK=2", NULL};
    static const char *const ompi2[] = {"OMPI_COMM_WORLD_SIZE=2", NULL};
    rp__launch_t l;
    char msg[512];

    (void)state;
    assert_int_equal(check(ompi1).verdict, RP_LAUNCH_ALONE);
    assert_int_equal(check(torch1).verdict, RP_LAUNCH_ALONE);
    assert_int_equal(check(ompi2).verdict, RP_LAUNCH_MANY_NO_PMIX);
    l = check(torch4);
    assert_int_equal(l.verdict, RP_LAUNCH_MANY_NO_PMIX);
    rp__launch_message(&l, msg, sizeof(msg));
    assert_non_null(strstr(msg, "WORLD_SIZE=4"));
    assert_non_null(strstr(msg, "torchrun"));
}

static void test_outside_slurm_runs_alone(void **state)
{
    static const char *const none[] = {NULL};
    /* A stray count without a job id is not an allocation. */
    static const char *const stray[] = {"SLURM_NTASKS=8", NULL};
    /* Garbage counts count for nothing. */
    static const char *const junk[] = {"SLURM_JOB_ID=3", "SLURM_NTASKS=3x",
                                       "SLURM_NNODES=-2", NULL};

    (void)state;
    assert_int_equal(check(none).verdict, RP_LAUNCH_ALONE);
    assert_int_equal(check(stray).verdict, RP_LAUNCH_ALONE);
    assert_int_equal(check(junk).verdict, RP_LAUNCH_ALONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_script_without_srun_is_outside_step),
        cmocka_unit_test(test_newer_slurm_batch_step_id_is_no_step),
        cmocka_unit_test(test_salloc_shell_counts_nodes_without_ntasks),
        cmocka_unit_test(test_one_task_job_runs_alone),
        cmocka_unit_test(test_srun_step_of_one_task_runs_alone),
        cmocka_unit_test(test_srun_step_without_pmix_is_many),
        cmocka_unit_test(test_other_launchers_decide_the_count),
        cmocka_unit_test(test_outside_slurm_runs_alone),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
