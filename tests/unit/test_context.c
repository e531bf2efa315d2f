/*
 * rp_init without a process manager: rank 0 of 1, the settings read from
 * RINGPOINT_*, and a malformed setting refused before anything starts.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include <ringpoint.h>
#include "core/settings.h"

static int setup(void **state)
{
    (void)state;
    /* Tests run under srun/mpirun in CI must not join that job. */
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_RANK");
    unsetenv("RINGPOINT_CKPT_INTERVAL");
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unsetenv("WORLD_SIZE");
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_STEP_ID");
    unsetenv("SLURM_STEPID");
    unsetenv("RINGPOINT_ALLOW_SINGLE");
    return 0;
}

static void test_single_process_identity(void **state)
{
    rp_context_attr_t attr;
    rp_context_h ctx = NULL;

    (void)state;
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    assert_non_null(ctx);
    memset(&attr, 0x5a, sizeof(attr));
    attr.field_mask = ~0ULL;
    assert_int_equal(rp_context_query(ctx, &attr), RP_OK);
    assert_int_equal(attr.rank, 0);
    assert_int_equal(attr.size, 1);
    assert_int_equal(attr.local_rank, 0);
    assert_int_equal(attr.local_size, 1);
    assert_int_equal(attr.node_count, 1);
    assert_string_equal(attr.bootstrap, "single");
    assert_int_equal(attr.left_rank, 0);
    assert_int_equal(attr.right_rank, 0);
    assert_string_equal(attr.left_node, attr.node_name);
    assert_int_equal(attr.ckpt_interval_s, RP_DEFAULT_CKPT_INTERVAL_S);
    rp_finalize(ctx);
}

static void test_query_writes_only_requested_fields(void **state)
{
    rp_context_attr_t attr;
    rp_context_h ctx = NULL;

    (void)state;
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    memset(&attr, 0, sizeof(attr));
    attr.size = -42;
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK;
    attr.rank = -1;
    assert_int_equal(rp_context_query(ctx, &attr), RP_OK);
    assert_int_equal(attr.rank, 0);
    assert_int_equal(attr.size, -42);
    assert_int_equal(rp_context_query(ctx, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_context_query(NULL, &attr), RP_ERR_INVALID_ARG);
    rp_finalize(ctx);
}

static void test_interval_from_environment(void **state)
{
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_CKPT_INTERVAL};
    rp_context_h ctx = NULL;

    (void)state;
    setenv("RINGPOINT_CKPT_INTERVAL", "600", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    assert_int_equal(rp_context_query(ctx, &attr), RP_OK);
    assert_int_equal(attr.ckpt_interval_s, 600);
    rp_finalize(ctx);

    /* Set by hand rather than by the plugin, units are accepted too. */
    setenv("RINGPOINT_CKPT_INTERVAL", "1h", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    assert_int_equal(rp_context_query(ctx, &attr), RP_OK);
    assert_int_equal(attr.ckpt_interval_s, 3600);
    rp_finalize(ctx);
    unsetenv("RINGPOINT_CKPT_INTERVAL");
}

static void test_malformed_setting_fails_init(void **state)
{
    rp_context_h ctx = NULL;

    (void)state;
    setenv("RINGPOINT_CKPT_INTERVAL", "banana", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_ERR_INVALID_ARG);
    assert_null(ctx);
    unsetenv("RINGPOINT_CKPT_INTERVAL");
    setenv("RINGPOINT_COLL_OVERSUBSCRIBED", "yes", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_ERR_INVALID_ARG);
    assert_null(ctx);
    setenv("RINGPOINT_COLL_OVERSUBSCRIBED", "auto", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    rp_finalize(ctx);
    ctx = NULL;
    unsetenv("RINGPOINT_COLL_OVERSUBSCRIBED");
    assert_int_equal(rp_init(NULL, NULL), RP_ERR_INVALID_ARG);
}

static void test_force_single_ignores_pmix(void **state)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_BOOTSTRAP};
    rp_context_h ctx = NULL;

    (void)state;
    /* A bogus server address would make PMIx_Init fail if it were used. */
    setenv("PMIX_NAMESPACE", "no-such-namespace", 1);
    setenv("PMIX_RANK", "0", 1);
    assert_int_equal(rp_init(&params, &ctx), RP_OK);
    assert_int_equal(rp_context_query(ctx, &attr), RP_OK);
    assert_string_equal(attr.bootstrap, "single");
    rp_finalize(ctx);
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_RANK");
}

static void test_many_tasks_without_pmix_is_an_error(void **state)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;

    (void)state;
    /* srun --mpi=none -n4: four tasks, no PMIx. Each must not run as the
     * only rank. A single task of a step is fine. */
    setenv("SLURM_STEP_NUM_TASKS", "4", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_ERR_BOOTSTRAP);
    assert_null(ctx);
    /* ...unless the caller explicitly asked for a single process. */
    assert_int_equal(rp_init(&params, &ctx), RP_OK);
    rp_finalize(ctx);
    setenv("SLURM_STEP_NUM_TASKS", "1", 1);
    ctx = NULL;
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    rp_finalize(ctx);
    unsetenv("SLURM_STEP_NUM_TASKS");
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    ctx = NULL;
    assert_int_equal(rp_init(NULL, &ctx), RP_ERR_BOOTSTRAP);
    unsetenv("OMPI_COMM_WORLD_SIZE");
}

static void test_batch_script_without_srun_is_refused(void **state)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    char why[512] = "stale";
    rp_init_params_t with_error = {.field_mask = RP_INIT_FIELD_ERROR,
                                   .error = why, .error_len = sizeof(why)};
    rp_context_h ctx = NULL;

    (void)state;
    /* The batch script of sbatch -N2 -n3 runs the program itself. */
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_NTASKS", "3", 1);
    setenv("SLURM_JOB_NUM_NODES", "2", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_ERR_BOOTSTRAP);
    assert_null(ctx);
    /* One process meant to run alone says so: a flag, or the setting. */
    assert_int_equal(rp_init(&params, &ctx), RP_OK);
    rp_finalize(ctx);
    ctx = NULL;
    setenv("RINGPOINT_ALLOW_SINGLE", "1", 1);
    assert_int_equal(rp_init(NULL, &ctx), RP_OK);
    rp_finalize(ctx);
    ctx = NULL;
    setenv("RINGPOINT_ALLOW_SINGLE", "0", 1);
    /* The reason comes back to a caller that asks (Python's exception). */
    assert_int_equal(rp_init(&with_error, &ctx), RP_ERR_BOOTSTRAP);
    assert_non_null(strstr(why, "started without srun: Slurm job 4242 has 3 "
                                "tasks on 2 nodes"));
    assert_non_null(strstr(why, "srun --mpi=pmix"));
    assert_null(strstr(why, "ringpoint: error:"));
    /* A task of an srun step of one task is where it should be; the
     * error text of a success is empty. */
    setenv("SLURM_STEP_ID", "0", 1);
    assert_int_equal(rp_init(&with_error, &ctx), RP_OK);
    assert_string_equal(why, "");
    rp_finalize(ctx);
    unsetenv("RINGPOINT_ALLOW_SINGLE");
    unsetenv("SLURM_STEP_ID");
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_NTASKS");
    unsetenv("SLURM_JOB_NUM_NODES");
}

static void test_version(void **state)
{
    (void)state;
    assert_string_equal(rp_version(), RP_VERSION_STRING);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_single_process_identity, setup),
        cmocka_unit_test_setup(test_query_writes_only_requested_fields, setup),
        cmocka_unit_test_setup(test_interval_from_environment, setup),
        cmocka_unit_test_setup(test_malformed_setting_fails_init, setup),
        cmocka_unit_test_setup(test_force_single_ignores_pmix, setup),
        cmocka_unit_test_setup(test_many_tasks_without_pmix_is_an_error, setup),
        cmocka_unit_test_setup(test_batch_script_without_srun_is_refused, setup),
        cmocka_unit_test(test_version),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
