/*
 * The plugin's options end to end, as one value travels: srun (or sbatch)
 * checks it, slurmstepd checks it again and exports the resolved value,
 * the runtime in the tasks reads that back, and every srun inside the job
 * inherits it. spank/options.c is compiled into this program (included
 * below, so its per-process state can be reset between inputs) against
 * stand-ins for the few SPANK calls it makes; the parsers and rules are
 * the real ones. The input: up to 3 plugstack.conf words (the site), the
 * setting, whether it comes as an option or as its RINGPOINT_* variable,
 * the value, and the job's name.
 *
 * Properties:
 *  - srun and slurmstepd give the same verdict on every value (for
 *    --ckpt-dir: slurmstepd never accepts what srun refused, except a
 *    root that only an expansion reaches; it may refuse more, knowing the
 *    job's names);
 *  - a refusal names the option or variable;
 *  - what slurmstepd exports, the runtime (rp__settings_load) accepts and
 *    reads as the same value, within the site's limits;
 *  - the exported value, inherited by an srun and a slurmstepd inside the
 *    job, is accepted and exported unchanged;
 *  - a value srun accepts from the environment, the runtime reads the same
 *    way from the raw text (one parser, one length limit: issue 15).
 */
#include "config.h"

#include "fuzz/fuzz.h"

#include <stdarg.h>

/* The plugin's option code itself, statics and all. */
#include "spank/options.c"

#include "core/settings.h"

/* ---- stand-ins for the SPANK calls options.c makes */

#define JOB_ENV_MAX 32

static struct {
    char *name[JOB_ENV_MAX];
    char *value[JOB_ENV_MAX];
    unsigned n;
} job_env;

static char messages[16384];

static void job_env_clear(void)
{
    for (unsigned i = 0; i < job_env.n; i++) {
        free(job_env.name[i]);
        free(job_env.value[i]);
    }
    job_env.n = 0;
}

static const char *job_env_get(const char *name)
{
    for (unsigned i = 0; i < job_env.n; i++) {
        if (strcmp(job_env.name[i], name) == 0) {
            return job_env.value[i];
        }
    }
    return NULL;
}

static void job_env_set(const char *name, const char *value)
{
    for (unsigned i = 0; i < job_env.n; i++) {
        if (strcmp(job_env.name[i], name) == 0) {
            free(job_env.value[i]);
            job_env.value[i] = strdup(value);
            return;
        }
    }
    if (job_env.n == JOB_ENV_MAX) {
        abort();
    }
    job_env.name[job_env.n] = strdup(name);
    job_env.value[job_env.n++] = strdup(value);
}

spank_err_t spank_getenv(spank_t sp, const char *var, char *buf, int len)
{
    const char *v = job_env_get(var);

    (void)sp;
    if (v == NULL) {
        return ESPANK_ENV_NOEXIST;
    }
    if (strlen(v) >= (size_t)len) {
        return ESPANK_NOSPACE; /* as slurmstepd's: the value does not fit */
    }
    strcpy(buf, v);
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val,
                         int overwrite)
{
    (void)sp;
    if (!overwrite && job_env_get(var) != NULL) {
        return ESPANK_ENV_EXISTS;
    }
    job_env_set(var, val);
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    va_list ap;
    uint32_t *p;

    (void)sp;
    va_start(ap, item);
    p = va_arg(ap, uint32_t *);
    va_end(ap);
    if (item == S_JOB_ID) {
        *p = 4242;
        return ESPANK_SUCCESS;
    }
    return ESPANK_ERROR; /* not an array job */
}

spank_context_t spank_context(void)
{
    return S_CTX_LOCAL;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    (void)sp;
    (void)opt;
    return ESPANK_SUCCESS;
}

const char *spank_strerror(spank_err_t err)
{
    (void)err;
    return "spank error";
}

static void note(const char *fmt, va_list ap)
{
    size_t used = strlen(messages);

    if (used + 2 < sizeof(messages)) {
        vsnprintf(messages + used, sizeof(messages) - used - 1, fmt, ap);
        strcat(messages, "\n");
    }
}

void slurm_error(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    note(fmt, ap);
    va_end(ap);
}

void slurm_spank_log(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    note(fmt, ap);
    va_end(ap);
}

/* ---- the harness */

#define BASE "/home/u/run"

static void reset(const rp_spank_admin_t *admin)
{
    for (int i = 0; i < RP_SET_COUNT; i++) {
        rp_settings[i].set = false;
        rp_settings[i].text[0] = '\0';
    }
    rp_seen_requeue.calls = 0;
    rp_seen_requeue.own = false;
    rp_seen_no_requeue.calls = 0;
    rp_seen_no_requeue.own = false;
    rp_spank_requested = false;
    rp_spank_admin = *admin;
    messages[0] = '\0';
    for (int i = 0; i < RP_SET_COUNT; i++) {
        unsetenv(rp_settings[i].env);
    }
    unsetenv(RP_SITE_INTERVAL_ENV);
    unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_ringpoint_ckpt_requeue");
    unsetenv("SLURM_SPANK__SLURM_SPANK_OPTION_ringpoint_no_ckpt_requeue");
    /* srun inside the job: relative paths against the job's directory,
     * as slurmstepd takes them. */
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_SUBMIT_DIR", BASE, 1);
    job_env_clear();
}

/* The option callback of setting @which. */
static spank_opt_cb_f option_cb(int which)
{
    for (size_t i = 0; i < sizeof(rp_spank_options) / sizeof(rp_spank_options[0]);
         i++) {
        if (rp_settings[which].option != NULL &&
            strcmp(rp_spank_options[i].name, rp_settings[which].option) == 0) {
            return rp_spank_options[i].cb;
        }
    }
    return NULL;
}

static bool names_source(int which, bool as_option)
{
    char opt[64];

    if (!as_option) {
        return strstr(messages, rp_settings[which].env) != NULL;
    }
    snprintf(opt, sizeof(opt), "--%s", rp_settings[which].option);
    return strstr(messages, opt) != NULL;
}

/* srun: the value as an option or from the environment. */
static bool srun_side(const rp_spank_admin_t *admin, int which,
                      bool as_option, const char *text)
{
    bool ok;

    reset(admin);
    if (as_option) {
        ok = option_cb(which)(0, text, 0) == 0;
        ok = ok && rp__spank_options_check_env() == 0;
    } else {
        setenv(rp_settings[which].env, text, 1);
        ok = rp__spank_options_check_env() == 0;
    }
    if (!ok) {
        FUZZ_CHECK(names_source(which, as_option),
                   "srun's refusal does not name the setting: %s", messages);
    }
    return ok;
}

/* slurmstepd: the forwarded option or the job's environment; the job's
 * exported environment is left in job_env. */
static bool stepd_side(const rp_spank_admin_t *admin, int which,
                       bool as_option, const char *text, const char *name)
{
    bool ok;

    reset(admin);
    job_env_set("SLURM_SUBMIT_DIR", BASE);
    job_env_set("SLURM_JOB_USER", "u");
    job_env_set("SLURM_JOB_NAME", name);
    if (as_option) {
        if (option_cb(which)(0, text, 1) != 0) {
            return false;
        }
    } else {
        job_env_set(rp_settings[which].env, text);
    }
    ok = rp__spank_options_export((spank_t)1) == 0;
    if (!ok) {
        FUZZ_CHECK(names_source(which, as_option) ||
                       strstr(messages, "default_interval") != NULL,
                   "slurmstepd's refusal does not name the setting: %s",
                   messages);
    }
    return ok;
}

/* The runtime reads the exported environment. */
static void check_runtime(const rp_spank_admin_t *admin)
{
    rp_settings_t cfg;
    uint64_t v;
    int signo;
    const char *x;
    int saved;
    rp_status_t st;

    for (int i = 0; i < RP_SET_COUNT; i++) {
        x = job_env_get(rp_settings[i].env);
        if (x != NULL) {
            setenv(rp_settings[i].env, x, 1);
        } else {
            unsetenv(rp_settings[i].env);
        }
    }
    saved = fuzz_quiet_begin();
    st = rp__settings_load(&cfg);
    fuzz_quiet_end(saved);
    FUZZ_CHECK(st == RP_OK, "the runtime refuses what slurmstepd exported");
    if ((x = job_env_get("RINGPOINT_CKPT_INTERVAL")) != NULL) {
        FUZZ_CHECK(rp__parse_duration(x, &v, NULL, 0) == RP_OK &&
                       v == cfg.ckpt_interval_s,
                   "interval '%s' read as %llu", x,
                   (unsigned long long)cfg.ckpt_interval_s);
        FUZZ_CHECK(v == 0 || v >= admin->min_interval_s,
                   "interval %llu below the site's minimum",
                   (unsigned long long)v);
    }
    if ((x = job_env_get("RINGPOINT_CKPT_DIR")) != NULL) {
        FUZZ_CHECK(strcmp(x, cfg.ckpt_dir) == 0, "dir '%s' read as '%s'", x,
                   cfg.ckpt_dir);
        FUZZ_CHECK(rp__ckpt_dir_check_roots(x, admin->allowed_roots, NULL,
                                            0) == RP_OK,
                   "dir '%s' outside the roots", x);
    }
    if ((x = job_env_get("RINGPOINT_CKPT_KEEP")) != NULL) {
        FUZZ_CHECK(rp__parse_uint(x, 1, UINT64_MAX, &v, NULL, 0) == RP_OK &&
                       v == cfg.ckpt_keep,
                   "keep '%s'", x);
        FUZZ_CHECK(admin->max_keep == 0 || v <= admin->max_keep,
                   "keep %llu over the site's maximum", (unsigned long long)v);
    }
    if ((x = job_env_get("RINGPOINT_CKPT_REQUEUE")) != NULL) {
        FUZZ_CHECK(rp__parse_uint(x, 0, UINT64_MAX, &v, NULL, 0) == RP_OK &&
                       v == cfg.ckpt_requeue && cfg.ckpt_requeue_set,
                   "requeue '%s'", x);
        FUZZ_CHECK(v <= rp__spank_admin_max_requeues(admin),
                   "requeue %llu over the site's maximum",
                   (unsigned long long)v);
    }
    if ((x = job_env_get("RINGPOINT_CKPT_SIGNAL")) != NULL) {
        FUZZ_CHECK(rp__parse_signal(x, &signo, NULL, 0) == RP_OK &&
                       signo == cfg.ckpt_signal,
                   "signal '%s'", x);
    }
    if ((x = job_env_get("RINGPOINT_CKPT_EVERY")) != NULL) {
        FUZZ_CHECK(rp__parse_uint(x, 0, UINT64_MAX, &v, NULL, 0) == RP_OK &&
                       v == cfg.ckpt_every,
                   "every '%s'", x);
        FUZZ_CHECK(v == 0 || admin->min_interval_s == 0,
                   "every %llu steps under a site minimum interval",
                   (unsigned long long)v);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    char *words[3] = {NULL, NULL, NULL}, *text, *name, *exported;
    rp_spank_admin_t admin, none;
    int nwords = fuzz_u8(&in) % 4, which, saved;
    uint8_t form;
    bool as_option, srun_ok, stepd_ok;

    for (int i = 0; i < nwords; i++) {
        words[i] = fuzz_str(&in, 200);
    }
    if (rp__spank_admin_parse(nwords, words, &admin, NULL, 0) != RP_OK) {
        rp__spank_admin_parse(0, words, &admin, NULL, 0);
    }
    memset(&none, 0, sizeof(none));
    which = fuzz_u8(&in) % RP_SET_COUNT;
    form = fuzz_u8(&in);
    as_option = (form & 1) && rp_settings[which].option != NULL;
    text = fuzz_str(&in, RP_VALUE_MAX_LEN + 8);
    name = fuzz_str(&in, 64);

    srun_ok = srun_side(&admin, which, as_option, text);
    stepd_ok = stepd_side(&admin, which, as_option, text, name);
    if (which == RP_SET_DIR) {
        char out[PATH_MAX];

        FUZZ_CHECK(!stepd_ok || srun_ok ||
                       (strchr(text, '%') != NULL &&
                        rp__ckpt_dir_resolve(BASE, text, NULL, NULL, out,
                                             sizeof(out), NULL, 0) == RP_OK),
                   "--ckpt-dir '%.200s': slurmstepd accepts, srun refused",
                   text);
    } else {
        FUZZ_CHECK(srun_ok == stepd_ok, "%s '%.200s': srun %s, slurmstepd %s",
                   rp_settings[which].env, text,
                   srun_ok ? "accepts" : "refuses",
                   stepd_ok ? "accepts" : "refuses");
    }
    if (!stepd_ok) {
        goto out;
    }
    check_runtime(&admin);
    /* Inherited by the steps inside the job. */
    exported = job_env_get(rp_settings[which].env) != NULL
                   ? strdup(job_env_get(rp_settings[which].env))
                   : NULL;
    if (exported != NULL) {
        FUZZ_CHECK(srun_side(&admin, which, false, exported),
                   "an srun inside the job refuses the inherited %s='%.200s'",
                   rp_settings[which].env, exported);
        FUZZ_CHECK(stepd_side(&admin, which, false, exported, name) &&
                       strcmp(job_env_get(rp_settings[which].env),
                              exported) == 0,
                   "a step inside the job exports %s='%.200s' as '%.200s'",
                   rp_settings[which].env, exported,
                   job_env_get(rp_settings[which].env));
        free(exported);
    }
    /* The raw text, set by the user for the tasks: the runtime's own
     * verdict and value match the plugin's (without site limits). */
    /* (An empty RINGPOINT_CKPT_REQUEUE is a bare --ckpt-requeue to the
     * plugin, which exports the number it stands for; the runtime, which
     * has no site default to give it, refuses it when it comes raw.) */
    if (which != RP_SET_DIR && !as_option && text[0] != '\0' &&
        srun_side(&none, which, false, text)) {
        rp_settings_t cfg;
        rp_status_t st;

        setenv(rp_settings[which].env, text, 1);
        saved = fuzz_quiet_begin();
        st = rp__settings_load(&cfg);
        fuzz_quiet_end(saved);
        FUZZ_CHECK(st == RP_OK, "the runtime refuses %s='%.200s', which "
                   "srun accepts", rp_settings[which].env, text);
    }
out:
    unsetenv(rp_settings[which].env);
    for (int i = 0; i < nwords; i++) {
        free(words[i]);
    }
    free(text);
    free(name);
    return 0;
}
