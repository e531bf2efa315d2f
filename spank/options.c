/*
 * Option callbacks and the export of resolved values to the tasks.
 *
 * Slurm calls an option's callback once in the submitting process (srun,
 * sbatch, salloc: remote == 0) and again in slurmstepd with the forwarded
 * value (remote == 1), and may call it more than once per process; every
 * callback therefore just overwrites the state, last value wins.
 */
#include "config.h"

#include "spank/options.h"
#include "util/parse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

rp_spank_state_t rp_spank_state;

static int rp_opt_ckpt_interval(int val, const char *optarg, int remote)
{
    char why[256];
    uint64_t seconds;

    (void)val;
    if (rp__parse_duration(optarg, &seconds, why, sizeof(why)) != RP_OK ||
        rp__spank_admin_check_interval(&rp_spank_state.admin, seconds, why,
                                       sizeof(why)) != RP_OK) {
        slurm_error("ringpoint: --ckpt-interval=%s: %s", optarg ? optarg : "",
                    why);
        (void)remote;
        return -1;
    }
    rp_spank_state.interval_set = true;
    rp_spank_state.interval_s = seconds;
    return 0;
}

static struct spank_option rp_spank_options[] = {
    {
        "ckpt-interval", "DURATION",
        "[ringpoint] Checkpoint every DURATION: seconds (900), 90s, 15m, 2h, "
        "1d or [[D-]HH:]MM:SS; 0 checkpoints only on a signal. Tasks see "
        "RINGPOINT_CKPT_INTERVAL (seconds).",
        1, 0, rp_opt_ckpt_interval
    },
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
    const char *value;
    char why[256];
    uint64_t seconds;

    /* The command line wins over the environment, so only an unused
     * variable needs checking here; the tasks would refuse it later, but
     * only after the job had queued and started. */
    value = getenv("RINGPOINT_CKPT_INTERVAL");
    if (!rp_spank_state.interval_set && value != NULL &&
        (rp__parse_duration(value, &seconds, why, sizeof(why)) != RP_OK ||
         rp__spank_admin_check_interval(&rp_spank_state.admin, seconds, why,
                                        sizeof(why)) != RP_OK)) {
        slurm_error("ringpoint: RINGPOINT_CKPT_INTERVAL=%s: %s", value, why);
        return -1;
    }
    return 0;
}

static int rp_spank_setenv_u64(spank_t sp, const char *name, uint64_t value,
                               int overwrite)
{
    char buf[32];
    spank_err_t rc;

    snprintf(buf, sizeof(buf), "%" PRIu64, value);
    rc = spank_setenv(sp, name, buf, overwrite);
    if (rc != ESPANK_SUCCESS && rc != ESPANK_ENV_EXISTS) {
        slurm_error("ringpoint: could not set %s in the job environment: %s",
                    name, spank_strerror(rc));
        return -1;
    }
    return 0;
}

int rp__spank_options_export(spank_t sp)
{
    if (rp_spank_state.interval_set) {
        return rp_spank_setenv_u64(sp, "RINGPOINT_CKPT_INTERVAL",
                                   rp_spank_state.interval_s, 1);
    }
    /* The site default yields to a value the user exported himself. */
    if (rp_spank_state.admin.has_default_interval) {
        return rp_spank_setenv_u64(sp, "RINGPOINT_CKPT_INTERVAL",
                                   rp_spank_state.admin.default_interval_s, 0);
    }
    return 0;
}
