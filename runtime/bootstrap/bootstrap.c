/*
 * Chooses the bootstrap implementation and owns the object's lifetime.
 */
#include "config.h"

#include "bootstrap/bootstrap.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool rp_bootstrap_pmix_present(void)
{
    /* A PMIx client library finds its server through these variables;
     * without them PMIx_Init would start a singleton, which is exactly
     * the single-process case handled natively below. */
    return getenv("PMIX_NAMESPACE") != NULL && getenv("PMIX_RANK") != NULL;
}

/*
 * Without PMIx, refuse to run as rank 0 of 1 when a launcher evidently
 * started several tasks: each would believe it is alone, and they would
 * overwrite one another's checkpoints. Returns the task count seen, or 1.
 */
static long rp_bootstrap_launcher_tasks(const char **var_p)
{
    static const char *const vars[] = {
        "SLURM_STEP_NUM_TASKS", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE"
    };
    unsigned i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *value = getenv(vars[i]);
        long n = value != NULL ? strtol(value, NULL, 10) : 0;

        if (n > 1) {
            *var_p = vars[i];
            return n;
        }
    }
    return 1;
}

rp_status_t rp__bootstrap_init(bool force_single,
                               const rp__bootstrap_settings_t *set,
                               rp_bootstrap_t **bs_p)
{
    static const rp__bootstrap_settings_t defaults =
        RP_BOOTSTRAP_SETTINGS_DEFAULT;

    rp_bootstrap_t *bs;
    rp_status_t status;

    bs = calloc(1, sizeof(*bs));
    if (bs == NULL) {
        rp_error("bootstrap: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    if (!force_single && rp_bootstrap_pmix_present()) {
#ifdef HAVE_PMIX
        status = rp__bootstrap_pmix_init(bs, set != NULL ? set : &defaults);
#else
        rp_error("bootstrap: PMIX_NAMESPACE is set but ringpoint was built "
                 "without PMIx support; rebuild with --with-pmix");
        status = RP_ERR_NOT_SUPPORTED;
#endif
    } else {
        const char *var = NULL;
        long ntasks = force_single ? 1 : rp_bootstrap_launcher_tasks(&var);

        if (ntasks > 1) {
            rp_error("bootstrap: %s=%ld but no PMIx server was found; start "
                     "the tasks with 'srun --mpi=pmix' (or MpiDefault=pmix) "
                     "or with a PMIx-enabled mpirun", var, ntasks);
            status = RP_ERR_BOOTSTRAP;
        } else {
            status = rp__bootstrap_single_init(bs);
        }
    }
    if (status != RP_OK) {
        goto err_free;
    }
    *bs_p = bs;
    return RP_OK;

err_free:
    free(bs);
    return status;
}

void rp__bootstrap_finalize(rp_bootstrap_t *bs)
{
    if (bs == NULL) {
        return;
    }
    bs->ops->finalize(bs);
    free(bs);
}
