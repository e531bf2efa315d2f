/*
 * --ckpt-dir (spank/ckpt_dir.c): normalisation, % expansion, site roots,
 * and the one rule both sides apply. The input is NUL-separated fields:
 * the user's text, the submit directory, the user and job names, the
 * site's roots, then the job ids.
 *
 * Properties:
 *  - an expansion never adds or removes a path component, never makes a
 *    "." or ".." component the template did not have, and leaves no '%';
 *  - a normalised path is absolute and canonical (no "//", ".", "..", no
 *    trailing '/'), and normalising it again changes nothing;
 *  - what slurmstepd accepts (with the job's names and ids) srun accepted
 *    (without them), unless a root names a directory that only an
 *    expansion can produce;
 *  - what slurmstepd exports is inside the roots and, read back as a
 *    template by an srun or a slurmstepd inside the job (from any
 *    directory), resolves to itself;
 *  - every refusal says why.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "spank/admin.h"
#include "spank/ckpt_dir.h"

#include <limits.h>

static size_t count_char(const char *s, char c)
{
    size_t n = 0;

    for (; *s != '\0'; s++) {
        n += *s == c;
    }
    return n;
}

/* Component @i (0-based, split on '/') of @s into @buf. */
static void component(const char *s, size_t i, char *buf, size_t len)
{
    const char *end;

    while (i > 0) {
        s = strchr(s, '/') + 1;
        i--;
    }
    end = strchrnul(s, '/');
    snprintf(buf, len, "%.*s", (int)(end - s), s);
}

static bool is_dots(const char *c)
{
    return strcmp(c, ".") == 0 || strcmp(c, "..") == 0;
}

static void check_canonical(const char *path)
{
    FUZZ_CHECK(path[0] == '/', "'%.200s' is not absolute", path);
    FUZZ_CHECK(strstr(path, "//") == NULL, "'%.200s' has //", path);
    FUZZ_CHECK(strstr(path, "/./") == NULL && strstr(path, "/../") == NULL,
               "'%.200s' has a dot component", path);
    if (strcmp(path, "/") != 0) {
        size_t n = strlen(path);

        FUZZ_CHECK(path[n - 1] != '/', "'%.200s' ends in /", path);
        FUZZ_CHECK(!(n >= 2 && strcmp(path + n - 2, "/.") == 0) &&
                       !(n >= 3 && strcmp(path + n - 3, "/..") == 0),
                   "'%.200s' ends in a dot component", path);
    }
    for (const char *p = path; *p != '\0'; p++) {
        FUZZ_CHECK((unsigned char)*p >= 0x20 && *p != 0x7f,
                   "'%.200s' has a control character", path);
    }
}

static void check_expand(const char *text, const rp_ckpt_dir_vars_t *vars)
{
    char out[RP_CKPT_DIR_MAX + 1], err[1024] = "", a[RP_CKPT_DIR_MAX + 1],
        b[RP_CKPT_DIR_MAX + 1];
    size_t n;

    if (rp__ckpt_dir_expand(text, vars, out, sizeof(out), err, sizeof(err)) !=
        RP_OK) {
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
        return;
    }
    FUZZ_CHECK(strchr(out, '%') == NULL, "'%.200s' expanded to '%.200s'",
               text, out);
    n = count_char(text, '/');
    FUZZ_CHECK(count_char(out, '/') == n,
               "'%.200s' (%zu components) expanded to '%.200s'", text, n + 1,
               out);
    for (size_t i = 0; i <= n; i++) {
        component(text, i, a, sizeof(a));
        component(out, i, b, sizeof(b));
        FUZZ_CHECK(!is_dots(b) || strcmp(a, b) == 0,
                   "component %zu '%s' of '%.200s' expanded to '%s'", i, a,
                   text, b);
    }
}

/* srun cannot know what an escape expands to, so it checks the roots on
 * the unexpanded path: a root that names an expansion's result ("/s/42"
 * for "/s/%j") is accepted only in slurmstepd. The one difference allowed:
 * srun refused on the roots alone, and the text has an escape. */
static bool roots_match_expansion(const char *base, const char *text)
{
    char out[PATH_MAX];

    return strchr(text, '%') != NULL &&
           rp__ckpt_dir_resolve(base, text, NULL, NULL, out, sizeof(out), NULL,
                                0) == RP_OK;
}

static void check_resolve(const char *base, const char *text,
                          const rp_ckpt_dir_vars_t *vars, const char *roots)
{
    char srun[PATH_MAX], stepd[PATH_MAX], again[PATH_MAX], err[PATH_MAX + 256];
    bool srun_ok, stepd_ok;

    err[0] = '\0';
    srun_ok = rp__ckpt_dir_resolve(base, text, NULL, roots, srun, sizeof(srun),
                                   err, sizeof(err)) == RP_OK;
    FUZZ_CHECK(srun_ok || err[0] != '\0', "a refusal without a reason");
    err[0] = '\0';
    stepd_ok = rp__ckpt_dir_resolve(base, text, vars, roots, stepd,
                                    sizeof(stepd), err, sizeof(err)) == RP_OK;
    FUZZ_CHECK(stepd_ok || err[0] != '\0', "a refusal without a reason");
    if (srun_ok) {
        check_canonical(srun);
    }
    if (!stepd_ok) {
        return;
    }
    FUZZ_CHECK(srun_ok || roots_match_expansion(base, text),
               "slurmstepd accepts '%.200s' (base '%.200s', roots '%.200s') "
               "as '%.200s', srun refused it", text, base, roots, stepd);
    check_canonical(stepd);
    FUZZ_CHECK(strchr(stepd, '%') == NULL, "'%.200s' resolved to '%.200s'",
               text, stepd);
    FUZZ_CHECK(rp__ckpt_dir_check_roots(stepd, roots, NULL, 0) == RP_OK,
               "'%.200s' is outside '%.200s'", stepd, roots);
    /* Read back inside the job: by an srun (no expansion) and by the
     * slurmstepd of a step, from another directory. */
    FUZZ_CHECK(rp__ckpt_dir_resolve("/elsewhere", stepd, NULL, roots, again,
                                    sizeof(again), err, sizeof(err)) ==
                       RP_OK &&
                   strcmp(again, stepd) == 0,
               "srun reads '%.200s' back as '%.200s' (%s)", stepd, again, err);
    FUZZ_CHECK(rp__ckpt_dir_resolve(base, stepd, vars, roots, again,
                                    sizeof(again), err, sizeof(err)) ==
                       RP_OK &&
                   strcmp(again, stepd) == 0,
               "slurmstepd reads '%.200s' back as '%.200s' (%s)", stepd,
               again, err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    char *text = fuzz_str(&in, RP_CKPT_DIR_MAX + 8);
    char *base = fuzz_str(&in, 512);
    char *user = fuzz_str(&in, 64);
    char *name = fuzz_str(&in, 256);
    char *roots = fuzz_str(&in, 512);
    rp_ckpt_dir_vars_t vars = {
        .job_id = fuzz_u32(&in),
        .array_job_id = fuzz_u32(&in),
        .array_task_id = fuzz_u32(&in),
        .user = user,
        .job_name = name,
    };
    char norm[PATH_MAX], again[PATH_MAX], err[PATH_MAX + 256] = "";
    rp_spank_admin_t admin;
    char *arg;

    /* Roots as the site could set them: what allowed_roots= accepts. */
    if (asprintf(&arg, "allowed_roots=%s", roots) < 0) {
        abort();
    }
    if (rp__spank_admin_parse(1, &arg, &admin, NULL, 0) != RP_OK) {
        admin.allowed_roots[0] = '\0';
    }
    free(arg);

    if (rp__ckpt_dir_normalize(base, text, norm, sizeof(norm), err,
                               sizeof(err)) == RP_OK) {
        check_canonical(norm);
        FUZZ_CHECK(rp__ckpt_dir_normalize(NULL, norm, again, sizeof(again),
                                          NULL, 0) == RP_OK &&
                       strcmp(norm, again) == 0,
                   "'%.200s' normalises to '%.200s'", norm, again);
    } else {
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
    }
    check_expand(text, &vars);
    check_resolve(base, text, &vars, admin.allowed_roots);
    free(roots);
    free(name);
    free(user);
    free(base);
    free(text);
    return 0;
}
