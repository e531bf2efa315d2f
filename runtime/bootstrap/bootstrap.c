/*
 * Chooses the bootstrap implementation and owns the object's lifetime.
 */
#include "config.h"

#include "bootstrap/bootstrap.h"
#include "util/log.h"
#include "util/str.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void rp__bootstrap_default_node_name(char *buf, size_t len)
{
    /* Under Slurm several slurmd may run on one host (and they do in the
     * test cluster): the node name, not the host name, identifies a node. */
    const char *slurm_node = getenv("SLURMD_NODENAME");

    if (len == 0) {
        return;
    }
    if (slurm_node != NULL && *slurm_node != '\0') {
        rp__strlcpy(buf, slurm_node, len);
        return;
    }
    if (gethostname(buf, len) != 0) {
        rp__strlcpy(buf, "unknown", len);
    }
    buf[len - 1] = '\0';
}

/* node001 names the host node001.cluster: the names up to their first
 * dot agree. */
static bool rp_bootstrap_short_name_eq(const char *a, const char *b)
{
    size_t la = strcspn(a, "."), lb = strcspn(b, ".");

    return la == lb && la > 0 && strncmp(a, b, la) == 0;
}

rp_host_share_t rp__bootstrap_host_share(const rp_host_facts_t *f, char *why,
                                         size_t len)
{
    bool unknown = false;
    int r;

    if (f->size <= 1) {
        snprintf(why, len, "alone in the job");
        return RP_HOST_SHARE_NO;
    }
    if (f->local_size > 1) {
        snprintf(why, len, "%d ranks on this node (PMIx)", f->local_size);
        return RP_HOST_SHARE_YES;
    }
    /* One rank on this node, but several Slurm nodes may be one machine
     * (slurmd -N): only the host names tell. */
    if (f->hosts != NULL && f->host != NULL) {
        for (r = 0; r < f->size; r++) {
            if (r == f->rank) {
                continue;
            }
            if (f->hosts[r] == NULL) {
                unknown = true;
            } else if (strcmp(f->hosts[r], f->host) == 0) {
                snprintf(why, len, "rank %d of another node runs on this "
                         "host (%s) too (host names traded through PMIx)",
                         r, f->host);
                return RP_HOST_SHARE_YES;
            }
        }
        if (!unknown) {
            snprintf(why, len, "no other rank on this host (%s) (host names "
                     "traded through PMIx)", f->host);
            return RP_HOST_SHARE_NO;
        }
    }
    /* A node named after its host (as PMIx launchers other than Slurm
     * name them, and most Slurm sites): the other nodes are other hosts. */
    if (f->node != NULL && f->host != NULL &&
        rp_bootstrap_short_name_eq(f->node, f->host)) {
        snprintf(why, len, "one rank on this node, which PMIx names after "
                 "its host (%s)", f->host);
        return RP_HOST_SHARE_NO;
    }
    snprintf(why, len, "PMIx told neither the ranks' host names nor a node "
             "named after this host");
    return RP_HOST_SHARE_UNKNOWN;
}

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
