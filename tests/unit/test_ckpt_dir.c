/*
 * --ckpt-dir: normalisation, site roots and expansion. These rules stand
 * between a user's string and the path a job writes to, so the escapes
 * (path traversal, roots with a shared prefix, names with '/') are tested
 * one by one.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "spank/ckpt_dir.h"

static void expect_normal(const char *base, const char *text, const char *want)
{
    char out[256], err[256] = "";

    if (rp__ckpt_dir_normalize(base, text, out, sizeof(out), err,
                               sizeof(err)) != RP_OK) {
        fail_msg("'%s' (base '%s') rejected: %s", text, base ? base : "", err);
    }
    assert_string_equal(out, want);
}

static void expect_bad(const char *base, const char *text, const char *why)
{
    char out[256], err[256] = "";

    assert_int_equal(rp__ckpt_dir_normalize(base, text, out, sizeof(out), err,
                                            sizeof(err)), RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, why));
}

static void test_normalize(void **state)
{
    (void)state;
    expect_normal("/home/u", "/scratch/ckpt", "/scratch/ckpt");
    expect_normal("/home/u", "ckpt", "/home/u/ckpt");
    expect_normal("/home/u/", "./ckpt/", "/home/u/ckpt");
    expect_normal("/home/u", "a//b/./c/..", "/home/u/a/b");
    expect_normal("/home/u", "../v/ckpt", "/home/v/ckpt");
    expect_normal(NULL, "/", "/");
    expect_normal(NULL, "/a/..", "/");
    expect_normal("/", "x", "/x");
    expect_normal("/home/u", "run-%j/%u_%x", "/home/u/run-%j/%u_%x");
}

static void test_normalize_rejects(void **state)
{
    char out[8], err[128];

    (void)state;
    expect_bad("/home/u", "", "empty");
    expect_bad("/home/u", "/a/../..", "above /");
    expect_bad("/", "../x", "above /");
    expect_bad("/home/u", "ck%q", "unknown escape '%q'");
    expect_bad("/home/u", "ck%", "unknown escape");
    expect_bad("/home/u", "100%%", "unknown escape");
    expect_bad("/home/u", "a\nb", "control character");
    expect_bad(NULL, "relative", "no absolute submit directory");
    expect_bad("relative-base", "relative", "no absolute submit directory");
    assert_int_equal(rp__ckpt_dir_normalize("/", "/abcdefghij", out,
                                            sizeof(out), err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "longer than 7"));
}

static void test_roots(void **state)
{
    char err[256];

    (void)state;
    assert_int_equal(rp__ckpt_dir_check_roots("/anything", NULL, err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/anything", "", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/anything", "/", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/scratch/x", "/home:/scratch", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/scratch", "/scratch/", err, sizeof(err)), RP_OK);
    assert_int_equal(rp__ckpt_dir_check_roots("/scratch/%u/c", "/scratch", err, sizeof(err)), RP_OK);
    /* A shared prefix is not a parent directory. */
    assert_int_equal(rp__ckpt_dir_check_roots("/scratchpad/x", "/scratch", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "outside this site's checkpoint roots"));
    /* An escape could expand to anything: it does not count as inside. */
    assert_int_equal(rp__ckpt_dir_check_roots("/scr%u/x", "/scratch", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_dir_check_roots("/%u", "/home", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_dir_check_roots("/etc", "/home:/scratch", err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
}

static void test_expand(void **state)
{
    rp_ckpt_dir_vars_t v = {.job_id = 42, .user = "alice", .job_name = "train"};
    char out[256], err[256];

    (void)state;
    assert_int_equal(rp__ckpt_dir_expand("/s/%u/%x-%j/%A_%a", &v, out,
                                         sizeof(out), err, sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/alice/train-42/42_0");
    /* Expanded values never carry a '%' that a second pass would read. */
    v.job_name = "100%j";
    assert_int_equal(rp__ckpt_dir_expand("/s/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/100_j");
    /* Nor a control character, which srun would refuse on reading the
     * exported path back (tests/fuzz/fuzz_ckpt_dir). */
    v.job_name = "a\001b";
    assert_int_equal(rp__ckpt_dir_expand("/s/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/a_b");
    v.job_name = "train";
    v.array_job_id = 40;
    v.array_task_id = 2;
    assert_int_equal(rp__ckpt_dir_expand("/s/%A_%a", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/40_2");
}

static void test_expand_cannot_escape(void **state)
{
    rp_ckpt_dir_vars_t v = {.job_id = 1, .user = "u", .job_name = "../../etc"};
    char out[256], err[256];

    (void)state;
    /* A job name is the user's free text: it must stay one component. */
    assert_int_equal(rp__ckpt_dir_expand("/s/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/_._.._etc");
    v.job_name = ".";
    assert_int_equal(rp__ckpt_dir_expand("/s/%x/c", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/_/c");
    v.job_name = "";
    v.user = NULL;
    assert_int_equal(rp__ckpt_dir_expand("/s/%u/%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/unknown/job");
    assert_int_equal(rp__ckpt_dir_expand("/s/%j/%j/%j", &v, out, 8, err,
                                         sizeof(err)), RP_ERR_INVALID_ARG);
}

/* Issue 15: "<root>/.%x" with the job name "." expanded to "<root>/..",
 * outside allowed_roots. A template never adds a directory level. */
static void test_expand_never_makes_dots(void **state)
{
    rp_ckpt_dir_vars_t v = {.job_id = 7, .user = ".", .job_name = "."};
    char out[256], err[256] = "";

    (void)state;
    assert_int_equal(rp__ckpt_dir_expand("/scratch/.%x/.%x/etc", &v, out,
                                         sizeof(out), err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "'..' component"));
    assert_int_equal(rp__ckpt_dir_expand("/s/.%u", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_ERR_INVALID_ARG);
    /* Relative templates are expanded before the submit directory is
     * joined: a leading expansion is a component start too. */
    v.job_name = "..";
    assert_int_equal(rp__ckpt_dir_expand("%x/c", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "_./c");
    /* Dots the user wrote are the user's: normalisation handles them. */
    assert_int_equal(rp__ckpt_dir_expand("a/../%j", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "a/../7");
    v.job_name = "x";
    assert_int_equal(rp__ckpt_dir_expand("/s/.%x", &v, out, sizeof(out), err,
                                         sizeof(err)), RP_OK);
    assert_string_equal(out, "/s/.x");
}

static rp_status_t resolve(const char *base, const char *text,
                           const rp_ckpt_dir_vars_t *v, const char *roots,
                           char *out, char *err)
{
    return rp__ckpt_dir_resolve(base, text, v, roots, out, 256, err, 256);
}

static void test_resolve(void **state)
{
    rp_ckpt_dir_vars_t v = {.job_id = 9, .user = "u", .job_name = "."};
    char out[256], err[256] = "";

    (void)state;
    /* The escape case of issue 15, both sides. */
    assert_int_equal(resolve("/h", "/scratch/.%x/.%x/etc", &v, "/scratch", out,
                             err), RP_ERR_INVALID_ARG);
    assert_int_equal(resolve("/h", "/scratch/.%x/x", NULL, "/scratch", out,
                             err), RP_OK);
    v.job_name = "t";
    assert_int_equal(resolve("/h", "ck/%x-%j", &v, NULL, out, err), RP_OK);
    assert_string_equal(out, "/h/ck/t-9");
    /* '%' in the submit directory is never expanded: a relative path there
     * is refused on both sides, the same way; an absolute one is fine. */
    assert_int_equal(resolve("/h/a%zb", "ck", NULL, NULL, out, err),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "contains '%'"));
    assert_int_equal(resolve("/h/a%zb", "ck", &v, NULL, out, err),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "contains '%'"));
    /* The same for a control character in the submit directory: the
     * resolved path would not read back (tests/fuzz/fuzz_ckpt_dir). */
    assert_int_equal(resolve("/h/a\001b", "ck", &v, NULL, out, err),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "control character"));
    assert_int_equal(resolve("/h/a\001b", "/s/ck", &v, NULL, out, err), RP_OK);
    assert_int_equal(resolve("/h/a%jb", "/s/%j", &v, NULL, out, err), RP_OK);
    assert_string_equal(out, "/s/9");
    /* An unknown escape fails in the submitting process already. */
    assert_int_equal(resolve("/h", "/s/%z", NULL, NULL, out, err),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "unknown escape '%z'"));
    /* Roots are checked after expansion and normalisation. */
    assert_int_equal(resolve("/h", "/scratch/%x/../../etc", &v, "/scratch",
                             out, err), RP_ERR_INVALID_ARG);
    assert_int_equal(resolve("/h", "/scratch/%x/../../etc", NULL, "/scratch",
                             out, err), RP_ERR_INVALID_ARG);
}

/* The submitting process and slurmstepd give one verdict: every text the
 * step accepts, srun accepted (srun cannot know the ids, so the step may
 * refuse more: a job name that makes "..").  */
static void test_resolve_sides_agree(void **state)
{
    static const char *const texts[] = {
        "ck", "ck/%j", "/scratch/%u/%x", "/scratch/.%x", "%x", "/scr%u",
        "/scratch/%x/..", "/scratch/%x/../..", "../%j", "/s/%z", "/s/%",
        "/scratch/a/../../scratch/%A_%a", "/scratch//./%x%x", ".%x/%u",
    };
    static const char *const names[] = {"t", ".", "..", "a/b", "%j", ""};
    static const char *const bases[] = {"/scratch/u", "/h", "/"};
    char out[256], err[256];
    size_t t, n, b;

    (void)state;
    for (t = 0; t < sizeof(texts) / sizeof(texts[0]); t++) {
        for (b = 0; b < sizeof(bases) / sizeof(bases[0]); b++) {
            rp_status_t local = resolve(bases[b], texts[t], NULL, "/scratch",
                                        out, err);

            for (n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
                rp_ckpt_dir_vars_t v = {.job_id = 3, .user = names[n],
                                        .job_name = names[n]};

                if (resolve(bases[b], texts[t], &v, "/scratch", out, err) ==
                    RP_OK) {
                    if (local != RP_OK) {
                        fail_msg("'%s' in '%s': step accepts (%s), srun "
                                 "refuses", texts[t], bases[b], out);
                    }
                    /* Resolved paths expand to themselves. */
                    assert_null(strchr(out, '%'));
                    assert_null(strstr(out, "/../"));
                    if (strncmp(out, "/scratch", 8) != 0) {
                        fail_msg("'%s' resolved outside the root: %s",
                                 texts[t], out);
                    }
                }
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize),
        cmocka_unit_test(test_normalize_rejects),
        cmocka_unit_test(test_roots),
        cmocka_unit_test(test_expand),
        cmocka_unit_test(test_expand_cannot_escape),
        cmocka_unit_test(test_expand_never_makes_dots),
        cmocka_unit_test(test_resolve),
        cmocka_unit_test(test_resolve_sides_agree),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
