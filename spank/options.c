/*
 * Option callbacks, validation and the export of resolved values.
 *
 * Slurm calls an option's callback in the submitting process (srun, sbatch,
 * salloc: remote == 0) and again in slurmstepd with the forwarded text
 * (remote == 1), possibly more than once per process: callbacks only check
 * and store the text, last value wins. The submitting process is where a
 * clear error still reaches the user's terminal before anything is queued,
 * so everything is validated there; slurmstepd validates again, because the
 * environment can reach it by other routes (sbatch --export, a changed
 * plugstack.conf) and it is where --ckpt-dir is expanded.
 */
#include "config.h"

#include "spank/ckpt_dir.h"
#include "spank/options.h"
#include "util/parse.h"
#include "util/str.h"

#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

rp_spank_admin_t rp_spank_admin;

/* Where a setting is being resolved, and what --ckpt-dir expands with. */
typedef struct rp_resolve_ctx {
    bool remote;
    const char *base;        /* directory relative paths are taken against */
    rp_ckpt_dir_vars_t vars; /* valid when remote */
} rp_resolve_ctx_t;

/* Check @text and write the value exported to the tasks into @out. */
typedef rp_status_t (*rp_resolve_fn)(const rp_resolve_ctx_t *rc,
                                     const char *text, char *out, size_t len,
                                     char *why, size_t whylen);

typedef struct rp_setting {
    const char *option; /* without the leading "--"; NULL: none */
    const char *env;
    rp_resolve_fn resolve;
    bool set;           /* given on the command line */
    char text[RP_VALUE_MAX_LEN + 1];
} rp_setting_t;

static rp_status_t rp_resolve_interval(const rp_resolve_ctx_t *rc,
                                       const char *text, char *out,
                                       size_t len, char *why, size_t whylen)
{
    uint64_t seconds;

    (void)rc;
    if (rp__parse_duration(text, &seconds, why, whylen) != RP_OK ||
        rp__spank_admin_check_interval(&rp_spank_admin, seconds, why,
                                       whylen) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    snprintf(out, len, "%" PRIu64, seconds);
    return RP_OK;
}

static rp_status_t rp_resolve_dir(const rp_resolve_ctx_t *rc, const char *text,
                                  char *out, size_t len, char *why,
                                  size_t whylen)
{
    return rp__ckpt_dir_resolve(rc->base, text, rc->remote ? &rc->vars : NULL,
                                rp_spank_admin.allowed_roots, out, len, why,
                                whylen);
}

static rp_status_t rp_resolve_keep(const rp_resolve_ctx_t *rc,
                                   const char *text, char *out, size_t len,
                                   char *why, size_t whylen)
{
    uint64_t max = rp_spank_admin.max_keep != 0 ? rp_spank_admin.max_keep
                                                : RP_SPANK_KEEP_LIMIT;
    uint64_t keep;

    (void)rc;
    if (rp__parse_uint(text, 0, UINT64_MAX, &keep, why, whylen) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    if (keep == 0) {
        snprintf(why, whylen, "at least 1 checkpoint must be kept");
        return RP_ERR_INVALID_ARG;
    }
    if (keep > max) {
        snprintf(why, whylen, "%" PRIu64 " is above this site's maximum of %"
                 PRIu64 " checkpoints", keep, max);
        return RP_ERR_INVALID_ARG;
    }
    snprintf(out, len, "%" PRIu64, keep);
    return RP_OK;
}

static rp_status_t rp_resolve_requeue(const rp_resolve_ctx_t *rc,
                                      const char *text, char *out, size_t len,
                                      char *why, size_t whylen)
{
    uint64_t max = rp__spank_admin_max_requeues(&rp_spank_admin);
    uint64_t n;

    (void)rc;
    if (*text == '\0') { /* a bare --ckpt-requeue */
        n = max;
    } else if (rp__parse_uint(text, 0, UINT64_MAX, &n, why, whylen) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    if (n > max) {
        snprintf(why, whylen, "%" PRIu64 " is above this site's maximum of %"
                 PRIu64 " requeues%s", n, max,
                 rp_spank_admin.has_max_requeues
                     ? ""
                     : " (the default of max_requeues in plugstack.conf)");
        return RP_ERR_INVALID_ARG;
    }
    snprintf(out, len, "%" PRIu64, n);
    return RP_OK;
}

static rp_status_t rp_resolve_signal(const rp_resolve_ctx_t *rc,
                                     const char *text, char *out, size_t len,
                                     char *why, size_t whylen)
{
    int signo;

    (void)rc;
    if (rp__parse_signal(text, &signo, why, whylen) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    if (signo == SIGUSR1 && !rc->remote) {
        slurm_spank_log("ringpoint: warning: --ckpt-signal=%s: NCCL also "
                        "handles SIGUSR1; USR2 is the safe choice", text);
    }
    return rp__strlcpy(out, rp__signal_name(signo), len) ? RP_OK
                                                         : RP_ERR_INVALID_ARG;
}

/* RINGPOINT_CKPT_EVERY (no option): checkpoint every N steps. Checked
 * with the runtime's parser; under a site min_interval it is refused, as
 * a --ckpt-interval below it is: N steps can be any time. */
static rp_status_t rp_resolve_every(const rp_resolve_ctx_t *rc,
                                    const char *text, char *out, size_t len,
                                    char *why, size_t whylen)
{
    char min[32];
    uint64_t every;

    (void)rc;
    if (rp__parse_uint(text, 0, UINT64_MAX, &every, why, whylen) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    if (every != 0 && rp_spank_admin.min_interval_s != 0) {
        rp__format_duration(rp_spank_admin.min_interval_s, min, sizeof(min));
        snprintf(why, whylen, "checkpoints every %" PRIu64 " steps can come "
                 "more often than this site's minimum interval of %s; use "
                 "--ckpt-interval", every, min);
        return RP_ERR_INVALID_ARG;
    }
    snprintf(out, len, "%" PRIu64, every);
    return RP_OK;
}

enum { RP_SET_INTERVAL, RP_SET_DIR, RP_SET_KEEP, RP_SET_REQUEUE, RP_SET_SIGNAL,
       RP_SET_EVERY, RP_SET_COUNT };

static rp_setting_t rp_settings[RP_SET_COUNT] = {
    [RP_SET_INTERVAL] = {"ckpt-interval", "RINGPOINT_CKPT_INTERVAL", rp_resolve_interval, false, ""},
    [RP_SET_DIR]      = {"ckpt-dir",      "RINGPOINT_CKPT_DIR",      rp_resolve_dir,      false, ""},
    [RP_SET_KEEP]     = {"ckpt-keep",     "RINGPOINT_CKPT_KEEP",     rp_resolve_keep,     false, ""},
    [RP_SET_REQUEUE]  = {"ckpt-requeue",  "RINGPOINT_CKPT_REQUEUE",  rp_resolve_requeue,  false, ""},
    [RP_SET_SIGNAL]   = {"ckpt-signal",   "RINGPOINT_CKPT_SIGNAL",   rp_resolve_signal,   false, ""},
    [RP_SET_EVERY]    = {NULL,            "RINGPOINT_CKPT_EVERY",    rp_resolve_every,    false, ""},
};

/* The forms each setting accepts, appended to its errors. */
static const char *rp_setting_forms(int which)
{
    switch (which) {
    case RP_SET_INTERVAL: return RP_DURATION_FORMS;
    case RP_SET_DIR:      return RP_CKPT_DIR_FORMS;
    case RP_SET_KEEP:     return "a whole number of checkpoints, at least 1";
    case RP_SET_REQUEUE:  return "a whole number of requeues; 0 never requeues";
    case RP_SET_EVERY:    return "a whole number of steps; 0 is off";
    default:              return RP_SIGNAL_FORMS;
    }
}

/* Resolve in the submitting process. Relative paths are taken against the
 * directory that slurmstepd will see as SLURM_SUBMIT_DIR: the job's, for an
 * srun inside an allocation (whatever directory the batch script is in by
 * then), else the current directory, which becomes the new job's. */
static int rp_check_local(int which, const char *text, const char *source)
{
    rp_resolve_ctx_t rc = {.remote = false, .base = NULL};
    char cwd[PATH_MAX], out[PATH_MAX], why[PATH_MAX + 256] = "";
    const char *job_dir = getenv("SLURM_SUBMIT_DIR");

    if (spank_context() == S_CTX_LOCAL && getenv("SLURM_JOB_ID") != NULL &&
        job_dir != NULL && job_dir[0] == '/') {
        rc.base = job_dir;
    } else if (getcwd(cwd, sizeof(cwd)) != NULL) {
        rc.base = cwd;
    }
    if (rp_settings[which].resolve(&rc, text, out, sizeof(out), why,
                                   sizeof(why)) != RP_OK) {
        slurm_error("ringpoint: %s=%.200s: %s", source, text, why);
        if (strstr(why, "accepted") == NULL) {
            slurm_error("ringpoint: %s accepts %s", source,
                        rp_setting_forms(which));
        }
        return -1;
    }
    return 0;
}

/* Store a command-line value; validate it where the user can see errors. */
static int rp_option_set(int which, const char *optarg, int remote)
{
    char source[64];
    const char *text = optarg != NULL ? optarg : "";

    snprintf(source, sizeof(source), "--%s", rp_settings[which].option);
    if (!rp__strlcpy(rp_settings[which].text, text,
                     sizeof(rp_settings[which].text))) {
        slurm_error("ringpoint: %s: the value is longer than %d bytes",
                    source, RP_VALUE_MAX_LEN);
        return -1;
    }
    if (!remote && rp_check_local(which, text, source) != 0) {
        return -1;
    }
    rp_settings[which].set = true;
    return 0;
}

static int rp_opt_interval(int val, const char *optarg, int remote)
{
    (void)val;
    return rp_option_set(RP_SET_INTERVAL, optarg, remote);
}

static int rp_opt_dir(int val, const char *optarg, int remote)
{
    (void)val;
    return rp_option_set(RP_SET_DIR, optarg, remote);
}

static int rp_opt_keep(int val, const char *optarg, int remote)
{
    (void)val;
    return rp_option_set(RP_SET_KEEP, optarg, remote);
}

/*
 * --ckpt-requeue and --no-ckpt-requeue. Both on one command line contradict
 * each other and are refused. But sbatch and salloc hand their options to
 * every srun inside the job through the environment
 * (SLURM_SPANK__SLURM_SPANK_OPTION_ringpoint_<name>), and srun reads those
 * before its own command line (Slurm 22.05: _opt_env, then _opt_args), so
 * `sbatch --no-ckpt-requeue` with `srun --ckpt-requeue=1` inside reaches
 * srun as both: the srun's own one wins, as for every other option. srun
 * forwards both to slurmstepd, in no promised order; slurmstepd applies the
 * same rule with the step's environment (rp_requeue_settle).
 */
typedef struct rp_requeue_seen {
    const char *option;
    unsigned calls;
    bool own;     /* given on this command line, not inherited */
} rp_requeue_seen_t;

static rp_requeue_seen_t rp_seen_requeue = {"ckpt-requeue", 0, false};
static rp_requeue_seen_t rp_seen_no_requeue = {"no-ckpt-requeue", 0, false};

/* The environment name Slurm gives an inherited option: '-' becomes '_'. */
static void rp_option_env_name(const char *option, char *name, size_t len)
{
    size_t i;

    snprintf(name, len, "SLURM_SPANK__SLURM_SPANK_OPTION_ringpoint_%s", option);
    for (i = 0; name[i] != '\0'; i++) {
        if (name[i] == '-') {
            name[i] = '_';
        }
    }
}

static int rp_requeue_note(rp_requeue_seen_t *seen, rp_requeue_seen_t *other,
                           int remote)
{
    char name[128];

    seen->calls++;
    if (remote) {
        return 0;
    }
    rp_option_env_name(seen->option, name, sizeof(name));
    /* The first call of an inherited option is the environment's. */
    if (seen->calls > 1 || getenv(name) == NULL) {
        seen->own = true;
    }
    if (other->calls > 0 && seen->own == other->own) {
        slurm_error("ringpoint: --ckpt-requeue and --no-ckpt-requeue "
                    "contradict each other; give one");
        return -1;
    }
    return 0;
}

/* Slurm 22.05's sbatch writes a bare optional argument into the job's
 * environment as the text "(null)" (printf of a NULL), and every srun
 * inside hands that back as the value. */
static const char *rp_optional_arg(const char *optarg)
{
    return optarg == NULL || strcmp(optarg, "(null)") == 0 ? "" : optarg;
}

static int rp_opt_requeue(int val, const char *optarg, int remote)
{
    (void)val;
    if (rp_requeue_note(&rp_seen_requeue, &rp_seen_no_requeue, remote) != 0) {
        return -1;
    }
    return rp_option_set(RP_SET_REQUEUE, rp_optional_arg(optarg), remote);
}

static int rp_opt_no_requeue(int val, const char *optarg, int remote)
{
    (void)val;
    (void)optarg;
    if (rp_requeue_note(&rp_seen_no_requeue, &rp_seen_requeue, remote) != 0) {
        return -1;
    }
    /* In slurmstepd the winner is settled when the step's environment is
     * known; in srun the command line comes last, so the last one wins. */
    return remote ? 0 : rp_option_set(RP_SET_REQUEUE, "0", remote);
}

/* In slurmstepd: --no-ckpt-requeue wins unless the step's own
 * --ckpt-requeue overrides an inherited --no-ckpt-requeue. */
static void rp_requeue_settle(spank_t sp)
{
    rp_setting_t *s = &rp_settings[RP_SET_REQUEUE];
    char name[128], value[16];

    if (rp_seen_no_requeue.calls == 0) {
        return;
    }
    if (s->set) {
        rp_option_env_name(rp_seen_no_requeue.option, name, sizeof(name));
        if (spank_getenv(sp, name, value, sizeof(value)) !=
            ESPANK_ENV_NOEXIST) {
            rp_option_env_name(rp_seen_requeue.option, name, sizeof(name));
            if (spank_getenv(sp, name, value, sizeof(value)) ==
                ESPANK_ENV_NOEXIST) {
                return;
            }
        }
    }
    snprintf(s->text, sizeof(s->text), "0");
    s->set = true;
}

static int rp_opt_signal(int val, const char *optarg, int remote)
{
    (void)val;
    return rp_option_set(RP_SET_SIGNAL, optarg, remote);
}

static struct spank_option rp_spank_options[] = {
    {"ckpt-interval", "DURATION",
     "[ringpoint] Checkpoint every DURATION: seconds (900), 90s, 15m, 2h, 1d "
     "or [[D-]HH:]MM:SS; 0 checkpoints only on a signal.",
     1, 0, rp_opt_interval},
    {"ckpt-dir", "PATH",
     "[ringpoint] Keep checkpoints in PATH (stable across requeues; "
     "relative to the submit directory; %j %A %a %u %x expand).",
     1, 0, rp_opt_dir},
    {"ckpt-keep", "N",
     "[ringpoint] Keep the newest N complete checkpoints (the newest is "
     "never removed).",
     1, 0, rp_opt_keep},
    {"ckpt-requeue", "[MAX]",
     "[ringpoint] Requeue the job after a checkpoint taken for preemption "
     "or a time limit, at most MAX times (0: never).",
     2, 0, rp_opt_requeue},
    {"no-ckpt-requeue", NULL,
     "[ringpoint] Never requeue the job (same as --ckpt-requeue=0).",
     0, 0, rp_opt_no_requeue},
    {"ckpt-signal", "SIG",
     "[ringpoint] The early-warning signal asked for with sbatch "
     "--signal=SIG@TIME (default USR2; NCCL uses USR1).",
     1, 0, rp_opt_signal},
};

int rp__spank_options_register(spank_t sp)
{
    size_t i;

    for (i = 0; i < sizeof(rp_spank_options) / sizeof(rp_spank_options[0]);
         i++) {
        spank_err_t rc = spank_option_register(sp, &rp_spank_options[i]);

        if (rc != ESPANK_SUCCESS) {
            slurm_error("ringpoint: could not register --%s: %s",
                        rp_spank_options[i].name, spank_strerror(rc));
            return -1;
        }
    }
    return 0;
}

int rp__spank_options_check_env(void)
{
    int which, rc = 0;

    /* The command line wins over the environment, so only variables that
     * will be used need checking; the tasks would refuse a bad one too,
     * but only after the job had queued and started. */
    for (which = 0; which < RP_SET_COUNT; which++) {
        const char *value = getenv(rp_settings[which].env);

        if (!rp_settings[which].set && value != NULL &&
            rp_check_local(which, value, rp_settings[which].env) != 0) {
            rc = -1;
        }
    }
    return rc;
}

/* Fill what --ckpt-dir expands with from the job. */
static void rp_remote_ctx(spank_t sp, rp_resolve_ctx_t *rc, char *submit_dir,
                          size_t dirlen, char *user, size_t userlen,
                          char *name, size_t namelen)
{
    memset(rc, 0, sizeof(*rc));
    rc->remote = true;
    if (spank_getenv(sp, "SLURM_SUBMIT_DIR", submit_dir, (int)dirlen) ==
        ESPANK_SUCCESS) {
        rc->base = submit_dir;
    }
    if (spank_getenv(sp, "SLURM_JOB_USER", user, (int)userlen) ==
        ESPANK_SUCCESS) {
        rc->vars.user = user;
    }
    if (spank_getenv(sp, "SLURM_JOB_NAME", name, (int)namelen) ==
        ESPANK_SUCCESS) {
        rc->vars.job_name = name;
    }
    spank_get_item(sp, S_JOB_ID, &rc->vars.job_id);
    if (spank_get_item(sp, S_JOB_ARRAY_ID, &rc->vars.array_job_id) !=
        ESPANK_SUCCESS) {
        rc->vars.array_job_id = 0;
    }
    if (rc->vars.array_job_id != 0 &&
        spank_get_item(sp, S_JOB_ARRAY_TASK_ID, &rc->vars.array_task_id) !=
            ESPANK_SUCCESS) {
        rc->vars.array_task_id = 0;
    }
}

/* The site's default interval is exported beside RINGPOINT_CKPT_INTERVAL
 * under this name, so that the steps inside a batch job can tell the value
 * they inherit from a setting of the user's. */
#define RP_SITE_INTERVAL_ENV "RINGPOINT_SITE_INTERVAL"

static bool rp_spank_requested;

bool rp__spank_options_requested(void)
{
    return rp_spank_requested;
}

/* Is @text, the step's RINGPOINT_CKPT_INTERVAL, the site default that an
 * enclosing step exported? */
static bool rp_is_site_interval(spank_t sp, const char *text)
{
    char site[32];

    return spank_getenv(sp, RP_SITE_INTERVAL_ENV, site, sizeof(site)) ==
               ESPANK_SUCCESS &&
           strcmp(site, text) == 0;
}

/* RINGPOINT_PLUGIN_SET: the settings the plugin resolved from an option
 * or the site, for ringpoint-info --settings to tell them from the user's.
 * An inner step keeps what its enclosing step's plugin set, plus its own;
 * a step that set nothing gets nothing, so a plain step's environment
 * stays as Slurm made it. */
static void rp_plugin_set_export(spank_t sp, const char *mine)
{
    char list[1024] = "";
    size_t used;

    if (*mine == '\0') {
        return;
    }
    if (spank_getenv(sp, "RINGPOINT_PLUGIN_SET", list, sizeof(list)) !=
        ESPANK_SUCCESS) {
        list[0] = '\0';
    }
    used = strlen(list);
    snprintf(list + used, sizeof(list) - used, "%s%s", used > 0 ? "," : "",
             mine);
    (void)spank_setenv(sp, "RINGPOINT_PLUGIN_SET", list, 1);
}

int rp__spank_options_export(spank_t sp)
{
    static char env_text[RP_VALUE_MAX_LEN + 1], out[PATH_MAX],
        why[PATH_MAX + 256];
    char submit_dir[PATH_MAX], user[256], name[256], option[64];
    char plugin_set[512] = ""; /* RINGPOINT_PLUGIN_SET: see below */
    rp_resolve_ctx_t rc;
    int which;

    rp_remote_ctx(sp, &rc, submit_dir, sizeof(submit_dir), user, sizeof(user),
                  name, sizeof(name));
    rp_requeue_settle(sp);
    for (which = 0; which < RP_SET_COUNT; which++) {
        rp_setting_t *s = &rp_settings[which];
        const char *text = NULL, *source = NULL;
        bool site = false; /* the site's default, not the user's choice */
        spank_err_t err;

        if (s->set) {
            /* Named as the user typed it, as srun names it. */
            snprintf(option, sizeof(option), "--%s", s->option);
            text = s->text;
            source = option;
        } else if ((err = spank_getenv(sp, s->env, env_text,
                                       sizeof(env_text))) == ESPANK_SUCCESS) {
            text = env_text;
            source = s->env;
            site = which == RP_SET_INTERVAL && rp_is_site_interval(sp, text);
        } else if (err == ESPANK_NOSPACE) {
            /* Not unset: the runtime would read it. Same limit both sides. */
            slurm_error("ringpoint: %s: the value is longer than %d bytes",
                        s->env, RP_VALUE_MAX_LEN);
            return -1;
        } else if (which == RP_SET_INTERVAL &&
                   rp_spank_admin.has_default_interval) {
            snprintf(env_text, sizeof(env_text), "%" PRIu64,
                     rp_spank_admin.default_interval_s);
            text = env_text;
            source = "default_interval";
            site = true;
        } else {
            continue;
        }
        if (s->resolve(&rc, text, out, sizeof(out), why, sizeof(why)) !=
            RP_OK) {
            slurm_error("ringpoint: %s=%s: %s", source, text, why);
            return -1;
        }
        err = spank_setenv(sp, s->env, out, 1);
        if (err != ESPANK_SUCCESS) {
            slurm_error("ringpoint: could not set %s in the job environment: "
                        "%s", s->env, spank_strerror(err));
            return -1;
        }
        /* An option's or the site's value: the plugin's, not the user's,
         * as ringpoint-info --settings tells (core/settings_table.c). */
        if (s->set || site) {
            size_t used = strlen(plugin_set);

            snprintf(plugin_set + used, sizeof(plugin_set) - used, "%s%s",
                     used > 0 ? "," : "", s->env);
        }
        if (!site) {
            rp_spank_requested = true;
        } else if (spank_setenv(sp, RP_SITE_INTERVAL_ENV, out, 1) !=
                   ESPANK_SUCCESS) {
            slurm_error("ringpoint: could not set %s in the job environment",
                        RP_SITE_INTERVAL_ENV);
        }
    }
    rp_plugin_set_export(sp, plugin_set);
    return 0;
}
