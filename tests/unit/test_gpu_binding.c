/*
 * GPU binding from Slurm's variables (runtime/gpu/binding.c): which device
 * each task drives, and the errors when tasks and GPUs do not match. Pure
 * logic: the variables are made up, no GPU or CUDA is needed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "gpu/gpu.h"

/* A task @lr of @ls on its node that sees @visible devices. */
static rp__gpu_env_t env_of(int lr, int ls, int visible)
{
    rp__gpu_env_t e;

    memset(&e, 0, sizeof(e));
    e.local_rank = lr;
    e.local_size = ls;
    e.visible = visible;
    return e;
}

static rp_status_t resolve(const rp__gpu_env_t *e, rp__gpu_binding_t *b,
                           char *err)
{
    memset(b, 0, sizeof(*b));
    err[0] = '\0';
    return rp__gpu_bind_resolve(e, b, err, 256);
}

static void test_list_count(void **state)
{
    (void)state;
    assert_int_equal(rp__gpu_list_count(NULL), 0);
    assert_int_equal(rp__gpu_list_count(""), 0);
    assert_int_equal(rp__gpu_list_count("3"), 1);
    assert_int_equal(rp__gpu_list_count("0,1,2,3"), 4);
    assert_int_equal(rp__gpu_list_count("GPU-8f2a1c3e-aaaa,GPU-77b1"), 2);
    assert_int_equal(rp__gpu_list_count("0,,1"), -1);
    assert_int_equal(rp__gpu_list_count("0,1,"), -1);
    assert_int_equal(rp__gpu_list_count(",0"), -1);
    assert_int_equal(rp__gpu_list_count("0, 1"), -1);
}

/* srun --gpus-per-task=1: Slurm narrows CUDA_VISIBLE_DEVICES per task, so
 * every task sees one device (its own), whatever its local rank. */
static void test_gpus_per_task_each_task_its_own(void **state)
{
    const char *mine[4] = {"0", "1", "2", "3"};
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    for (int lr = 0; lr < 4; lr++) {
        rp__gpu_env_t e = env_of(lr, 4, 1);

        e.cuda_visible_devices = mine[lr];
        e.step_gpus = "0,1,2,3";
        e.gpus_per_task = "1";
        assert_int_equal(resolve(&e, &b, err), RP_OK);
        assert_int_equal(b.device, 0);
        assert_string_equal(b.physical, mine[lr]);
    }
}

/* --gpus-per-task=2: the task sees two, NCCL drives the first. */
static void test_two_gpus_per_task_first_one(void **state)
{
    rp__gpu_env_t e = env_of(1, 2, 2);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.cuda_visible_devices = "2,3";
    e.gpus_per_task = "2";
    assert_int_equal(resolve(&e, &b, err), RP_OK);
    assert_int_equal(b.device, 0);
    assert_string_equal(b.physical, "2");
    assert_non_null(strstr(b.how, "one GPU per rank"));
}

/* --gpus-per-node=4 --ntasks-per-node=4 (no per-task binding): the tasks
 * share the four; local rank i takes device i. */
static void test_shared_gpus_by_local_rank(void **state)
{
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    for (int lr = 0; lr < 4; lr++) {
        rp__gpu_env_t e = env_of(lr, 4, 4);

        e.cuda_visible_devices = "4,5,6,7";
        e.step_gpus = "4,5,6,7";
        assert_int_equal(resolve(&e, &b, err), RP_OK);
        assert_int_equal(b.device, lr);
        assert_int_equal(b.physical[0], '4' + lr);
    }
}

/* Nothing set at all (a node outside Slurm's GPU accounting): CUDA's count
 * decides, local rank picks. */
static void test_no_variables_local_rank(void **state)
{
    rp__gpu_env_t e = env_of(3, 8, 8);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    assert_int_equal(resolve(&e, &b, err), RP_OK);
    assert_int_equal(b.device, 3);
    assert_string_equal(b.physical, "3");
}

static void test_one_task_one_gpu(void **state)
{
    rp__gpu_env_t e = env_of(0, 1, 1);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    assert_int_equal(resolve(&e, &b, err), RP_OK);
    assert_int_equal(b.device, 0);
}

static void test_more_tasks_than_gpus(void **state)
{
    rp__gpu_env_t e = env_of(2, 4, 2);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.cuda_visible_devices = "0,1";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "4 tasks on this node share 2 visible GPUs"));
    assert_non_null(strstr(err, "--gpus-per-task=1"));
    assert_non_null(strstr(err, "CUDA_VISIBLE_DEVICES=0,1"));
}

/* mpirun -np 2 on a one-GPU node: nothing narrowed the devices per task,
 * so both tasks would drive device 0 (NCCL: "Duplicate GPU"). */
static void test_two_tasks_one_unnarrowed_gpu(void **state)
{
    rp__gpu_env_t e = env_of(1, 2, 1);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "2 tasks on this node share 1 visible GPU "));
    assert_non_null(strstr(err, "--gpus-per-task=1"));
}

/* srun --gpus=1 -n2: Slurm shows both tasks the step's one GPU. */
static void test_step_has_fewer_gpus_than_tasks(void **state)
{
    rp__gpu_env_t e = env_of(0, 2, 1);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.cuda_visible_devices = "0";
    e.step_gpus = "3";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "2 tasks on this node share 1 visible GPU "));
    /* Each task narrowed to its own (--gpus-per-task): still fine. */
    e.step_gpus = "3,5";
    assert_int_equal(resolve(&e, &b, err), RP_OK);
    assert_int_equal(b.device, 0);
}

static void test_no_gpu_visible(void **state)
{
    rp__gpu_env_t e = env_of(0, 1, 0);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.cuda_visible_devices = "";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "no GPU is visible"));
}

static void test_gpus_per_task_but_fewer_visible(void **state)
{
    rp__gpu_env_t e = env_of(0, 2, 1);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.gpus_per_task = "2";
    e.cuda_visible_devices = "5";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "--gpus-per-task=2 but this task sees 1 GPU "));
}

static void test_explicit_device(void **state)
{
    rp__gpu_env_t e = env_of(0, 4, 4);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.cuda_visible_devices = "0,1,2,3";
    e.device = "2";
    assert_int_equal(resolve(&e, &b, err), RP_OK);
    assert_int_equal(b.device, 2);
    assert_string_equal(b.physical, "2");
    /* Out of range, or not a number. */
    e.device = "4";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "RINGPOINT_GPU_DEVICE='4'"));
    e.device = "-1";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
}

static void test_malformed_variables(void **state)
{
    rp__gpu_env_t e = env_of(0, 1, 1);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    e.cuda_visible_devices = "0,,1";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "CUDA_VISIBLE_DEVICES"));
    e.cuda_visible_devices = NULL;
    e.job_gpus = "1,";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "SLURM_STEP_GPUS/SLURM_JOB_GPUS"));
    e.job_gpus = NULL;
    e.gpus_per_task = "0";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "SLURM_GPUS_PER_TASK"));
    e.gpus_per_task = "gpu:1";
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
}

static void test_bad_local_rank(void **state)
{
    rp__gpu_env_t e = env_of(2, 2, 4);
    rp__gpu_binding_t b;
    char err[256];

    (void)state;
    assert_int_equal(resolve(&e, &b, err), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "local rank 2 of 2"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_list_count),
        cmocka_unit_test(test_gpus_per_task_each_task_its_own),
        cmocka_unit_test(test_two_gpus_per_task_first_one),
        cmocka_unit_test(test_shared_gpus_by_local_rank),
        cmocka_unit_test(test_no_variables_local_rank),
        cmocka_unit_test(test_one_task_one_gpu),
        cmocka_unit_test(test_more_tasks_than_gpus),
        cmocka_unit_test(test_two_tasks_one_unnarrowed_gpu),
        cmocka_unit_test(test_step_has_fewer_gpus_than_tasks),
        cmocka_unit_test(test_no_gpu_visible),
        cmocka_unit_test(test_gpus_per_task_but_fewer_visible),
        cmocka_unit_test(test_explicit_device),
        cmocka_unit_test(test_malformed_variables),
        cmocka_unit_test(test_bad_local_rank),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
