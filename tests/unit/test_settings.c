/*
 * The settings table (runtime/core/settings_table.c): every entry, by
 * iterating the table itself, refuses a malformed value at rp_init with
 * RP_ERR_INVALID_ARG and a message that names the variable; so a variable
 * added to the table is covered here without a word.
 */
#define _GNU_SOURCE /* memfd_create */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <ringpoint.h>
#include "core/settings.h"
#include "util/parse.h"

static void unset_all(void)
{
    for (size_t i = 0; i < rp__settings_count(); i++) {
        rp_setting_info_t info;

        rp__settings_info(i, &info);
        unsetenv(info.name);
    }
    unsetenv("RINGPOINT_PLUGIN_SET");
    unsetenv("RINGPOINT_SITE_INTERVAL");
}

static int setup(void **state)
{
    (void)state;
    /* Tests run under srun/mpirun in CI must not join that job. */
    unsetenv("PMIX_NAMESPACE");
    unsetenv("PMIX_RANK");
    unsetenv("SLURM_STEP_NUM_TASKS");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("PMI_SIZE");
    unset_all();
    return 0;
}

/* rp_init of a single process with @name=@value alone; its status, and
 * what it wrote to stderr into @log. */
static rp_status_t init_with(const char *name, const char *value, char *log,
                             size_t len)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;
    rp_status_t st;
    int fd = memfd_create("settings-log", 0), saved;
    ssize_t n;

    assert_true(fd >= 0);
    setenv(name, value, 1);
    fflush(stderr);
    saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fd, 2) == 2);
    st = rp_init(&params, &ctx);
    dup2(saved, 2);
    close(saved);
    unsetenv(name);
    n = pread(fd, log, len - 1, 0);
    log[n > 0 ? n : 0] = '\0';
    close(fd);
    if (st == RP_OK) {
        rp_finalize(ctx);
    }
    return st;
}

/* A value no entry of type @type accepts; NULL where any short value is
 * acceptable (a path, free text, a flag): those are refused only when
 * longer than RP_VALUE_MAX_LEN, which every entry is tried with. */
static const char *malformed(const char *type)
{
    if (strcmp(type, "number") == 0) return "12x";
    if (strcmp(type, "duration") == 0) return "5 parsecs";
    if (strcmp(type, "word") == 0) return "no-such-word";
    if (strcmp(type, "signal") == 0) return "KILL";
    return NULL;
}

static void test_every_entry_refuses_a_malformed_value(void **state)
{
    static char log[16384];
    char *longval = malloc(RP_VALUE_MAX_LEN + 2);
    size_t tried = 0;

    (void)state;
    assert_non_null(longval);
    memset(longval, '7', RP_VALUE_MAX_LEN + 1);
    longval[RP_VALUE_MAX_LEN + 1] = '\0';
    assert_true(rp__settings_count() > 30);
    for (size_t i = 0; i < rp__settings_count(); i++) {
        rp_setting_info_t info;
        const char *bad;

        rp__settings_info(i, &info);
        assert_non_null(info.meaning);
        assert_non_null(info.forms);
        assert_non_null(info.def);
        assert_int_equal(strncmp(info.name, "RINGPOINT_", 10), 0);

        bad = malformed(info.type);
        if (bad != NULL) {
            if (init_with(info.name, bad, log, sizeof(log)) !=
                RP_ERR_INVALID_ARG) {
                fail_msg("%s='%s' was accepted", info.name, bad);
            }
            if (strstr(log, info.name) == NULL ||
                strstr(log, info.forms) == NULL) {
                fail_msg("%s='%s': the message names not the variable and "
                         "its forms: %s", info.name, bad, log);
            }
            tried++;
        }
        if (init_with(info.name, longval, log, sizeof(log)) !=
            RP_ERR_INVALID_ARG) {
            fail_msg("%s with %d bytes was accepted", info.name,
                     RP_VALUE_MAX_LEN + 1);
        }
        if (strstr(log, info.name) == NULL) {
            fail_msg("%s too long: the message does not name it: %s",
                     info.name, log);
        }
    }
    /* Most entries have a short malformed form too. */
    assert_true(tried * 4 > rp__settings_count() * 3);
    free(longval);
}

static void test_defaults_and_sources(void **state)
{
    rp_settings_t *cfg = malloc(sizeof(*cfg));
    char value[RP_SETTING_PATH_LEN + 128]; /* a default may name a path */
    size_t i;

    (void)state;
    assert_non_null(cfg);
    unset_all();
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    for (i = 0; i < rp__settings_count(); i++) {
        assert_int_equal(cfg->source[i], RP_SETTING_DEFAULT);
    }
    assert_int_equal(cfg->coll_timeout_s, RP_DEFAULT_COLL_TIMEOUT_S);
    assert_string_equal(cfg->ckpt_dir, RP_DEFAULT_CKPT_DIR);
    assert_int_equal(cfg->slurm_kill_wait_s, -1);
    assert_int_equal(cfg->coll_oversubscribed, -1);
    assert_true(cfg->coll_shm && cfg->coll_cma);
    assert_false(rp__settings_given(cfg, "RINGPOINT_COLL_SEGMENT"));

    /* The user's, the plugin's by its marker, the job's limits. */
    setenv("RINGPOINT_COLL_SEGMENT", "4096", 1);
    setenv("RINGPOINT_CKPT_KEEP", "3", 1);
    setenv("RINGPOINT_PLUGIN_SET", "RINGPOINT_CKPT_DIR,RINGPOINT_CKPT_KEEP", 1);
    setenv("RINGPOINT_SLURM_KILL_WAIT", "30", 1);
    setenv("RINGPOINT_CKPT_INTERVAL", "600", 1);
    setenv("RINGPOINT_SITE_INTERVAL", "600", 1);
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    for (i = 0; i < rp__settings_count(); i++) {
        rp_setting_info_t info;

        rp__settings_info(i, &info);
        rp__settings_value(cfg, i, value, sizeof(value));
        if (strcmp(info.name, "RINGPOINT_COLL_SEGMENT") == 0) {
            assert_int_equal(cfg->source[i], RP_SETTING_ENV);
            assert_string_equal(value, "4096");
        } else if (strcmp(info.name, "RINGPOINT_CKPT_KEEP") == 0 ||
                   strcmp(info.name, "RINGPOINT_SLURM_KILL_WAIT") == 0 ||
                   strcmp(info.name, "RINGPOINT_CKPT_INTERVAL") == 0) {
            assert_int_equal(cfg->source[i], RP_SETTING_PLUGIN);
        } else {
            assert_int_equal(cfg->source[i], RP_SETTING_DEFAULT);
            assert_string_equal(value, info.def);
        }
    }
    assert_int_equal(cfg->segment_bytes, 4096);
    assert_int_equal(cfg->ckpt_keep, 3);
    assert_int_equal(cfg->slurm_kill_wait_s, 30);
    assert_true(rp__settings_given(cfg, "RINGPOINT_COLL_SEGMENT"));
    unset_all();
    free(cfg);
}

/* Checks that are not one variable's form alone. */
static void test_cross_checks(void **state)
{
    rp_settings_t *cfg = malloc(sizeof(*cfg));

    (void)state;
    assert_non_null(cfg);
    unset_all();
    setenv("RINGPOINT_CKPT_CHUNK_SIZE", "6144", 1); /* not 4 KiB-aligned */
    assert_int_equal(rp__settings_load(cfg), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_CKPT_CHUNK_SIZE", "8192", 1);
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    setenv("RINGPOINT_CKPT_TIMEOUT", "0", 1); /* at least 1 s */
    assert_int_equal(rp__settings_load(cfg), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_CKPT_TIMEOUT", "", 1); /* empty: unset, as ever */
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    assert_int_equal(cfg->ckpt_timeout_s, 0);
    setenv("RINGPOINT_PEER_TIMEOUT", "1m", 1);
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    assert_int_equal(cfg->peer_timeout_s, 60);
    setenv("RINGPOINT_PEER_TIMEOUT", "0", 1); /* the pings off */
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    assert_int_equal(cfg->peer_timeout_s, 0);
    unsetenv("RINGPOINT_PEER_TIMEOUT");
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    assert_int_equal(cfg->peer_timeout_s, 20);
    setenv("RINGPOINT_LOG_LEVEL", "DEBUG", 1); /* words of any case */
    assert_int_equal(rp__settings_load(cfg), RP_OK);
    assert_int_equal(cfg->log_level, 3);
    unset_all();
    free(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_entry_refuses_a_malformed_value),
        cmocka_unit_test(test_defaults_and_sources),
        cmocka_unit_test(test_cross_checks),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
