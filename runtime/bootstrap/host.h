/*
 * What the bootstrap implementations share about this host: its node's
 * name and whether another rank of the job runs on it. Below bootstrap.c
 * and the implementations alike, so that bootstrap.c calls the
 * implementations and they never call back into it.
 */
#ifndef RP_BOOTSTRAP_HOST_H
#define RP_BOOTSTRAP_HOST_H

#include <stddef.h>

/* Whether another rank of the job runs on this host, as the bootstrap
 * learnt it from facts (PMIx's ranks of this node, the host names the
 * ranks traded). The transport picks its rendezvous threshold by it: to a
 * peer on this host UCX goes through shared memory (transport/ucx.c). */
typedef enum rp_host_share {
    RP_HOST_SHARE_UNKNOWN = 0, /* no facts (PMIx could not tell) */
    RP_HOST_SHARE_NO,
    RP_HOST_SHARE_YES,
} rp_host_share_t;

/* The facts, for rp__bootstrap_host_share. */
typedef struct rp_host_facts {
    int rank;
    int size;
    int local_size;           /* ranks on this node (PMIx), 0 unknown */
    const char *host;         /* gethostname() of this process */
    const char *node;         /* PMIx's name of this node, NULL unknown */
    const char *const *hosts; /* [size] every rank's host name as traded,
                               * NULL entries unknown; NULL: not traded */
} rp_host_facts_t;

/* Fill the node name from SLURMD_NODENAME, or else gethostname(). */
void rp__bootstrap_default_node_name(char *buf, size_t len);

/*
 * Decide from @f whether another rank of the job runs on this host, and
 * write why into @why. Pure (no I/O), for the unit tests. UNKNOWN when the
 * facts cannot tell: the caller keeps its own fallback.
 */
rp_host_share_t rp__bootstrap_host_share(const rp_host_facts_t *f, char *why,
                                         size_t len);

#endif /* RP_BOOTSTRAP_HOST_H */
