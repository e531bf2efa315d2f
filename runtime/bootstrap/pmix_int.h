/*
 * Inside the PMIx bootstrap: what pmix.c (the exchange, the client) and
 * pmix_job.c (the job's layout) share.
 */
#ifndef RP_BOOTSTRAP_PMIX_INT_H
#define RP_BOOTSTRAP_PMIX_INT_H

#include <stdbool.h>

#include <pmix.h>

#include "bootstrap/bootstrap.h"

typedef struct rp_pmix {
    pmix_proc_t self;
    bool collect;
    int timeout_s; /* passed as PMIX_TIMEOUT so a dead peer cannot hang us */
} rp_pmix_t;

/* Fill @bs's rank, size, local rank and size, node id and count, node
 * name and job id. */
rp_status_t rp__pmix_identity(rp_bootstrap_t *bs, rp_pmix_t *p);

/* Fill @bs's host_share; may trade host names through @bs's own put and
 * fence, after which every fence of @p collects. */
rp_status_t rp__pmix_host_share(rp_bootstrap_t *bs, rp_pmix_t *p);

#endif /* RP_BOOTSTRAP_PMIX_INT_H */
