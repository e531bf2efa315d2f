/*
 * This host among the job's: the node's name, and whether another rank
 * runs here (see host.h).
 */
#include "config.h"

#include "bootstrap/host.h"
#include "util/str.h"

#include <stdbool.h>
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
