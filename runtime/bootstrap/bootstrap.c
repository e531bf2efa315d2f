/*
 * Chooses the bootstrap implementation and owns the object's lifetime.
 */
#include "config.h"

#include "bootstrap/bootstrap.h"
#include "bootstrap/launch.h"
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

static const char *rp_bootstrap_getenv(const char *name)
{
    return getenv(name);
}

/*
 * Without PMIx the process would be rank 0 of 1: refuse that when a
 * launcher evidently started several tasks (each would believe it is
 * alone, and they would overwrite one another's checkpoints), and when
 * the process runs in a Slurm allocation of several tasks without srun
 * (it would train alone for hours, unnoticed), unless the settings allow
 * the latter on purpose (a small script beside the job's steps).
 */
static rp_status_t rp_bootstrap_check_alone(const rp__bootstrap_settings_t *set)
{
    rp__launch_t l;
    char msg[512];

    rp__launch_check(rp_bootstrap_getenv, &l);
    if (l.verdict == RP_LAUNCH_ALONE) {
        return RP_OK;
    }
    rp__launch_message(&l, msg, sizeof(msg));
    if (l.verdict == RP_LAUNCH_OUTSIDE_STEP && set->allow_single) {
        rp_info("bootstrap: RINGPOINT_ALLOW_SINGLE=1: running alone as rank "
                "0 of 1 in Slurm job %s", l.job);
        return RP_OK;
    }
    rp_error("bootstrap: %s", msg);
    return RP_ERR_BOOTSTRAP;
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
        status = force_single ? RP_OK
                              : rp_bootstrap_check_alone(set != NULL ? set
                                                                     : &defaults);
        if (status == RP_OK) {
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
