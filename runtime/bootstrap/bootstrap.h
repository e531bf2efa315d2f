/*
 * Bootstrap: who am I, how many are we, and a key-value exchange to trade
 * addresses before any transport exists. Two implementations behind one ops
 * table: PMIx (srun --mpi=pmix, mpirun, prterun) and a single process for
 * programs started without a process manager.
 */
#ifndef RP_BOOTSTRAP_H
#define RP_BOOTSTRAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "bootstrap/host.h"

#define RP_BOOTSTRAP_NAME_MAX 64

typedef struct rp_bootstrap rp_bootstrap_t;

typedef struct rp_bootstrap_ops {
    const char *name;
    /* Publish @len bytes under @key for every other rank to read. */
    rp_status_t (*put)(rp_bootstrap_t *bs, const char *key, const void *data,
                       size_t len);
    /* Make earlier puts visible and wait for every rank to do the same. */
    rp_status_t (*fence)(rp_bootstrap_t *bs);
    /* Read what @rank published under @key into a malloc'd buffer. */
    rp_status_t (*get)(rp_bootstrap_t *bs, int rank, const char *key,
                       void **data_p, size_t *len_p);
    void (*finalize)(rp_bootstrap_t *bs);
} rp_bootstrap_ops_t;

struct rp_bootstrap {
    const rp_bootstrap_ops_t *ops;
    int rank;
    int size;
    int local_rank;
    int local_size;
    int node_id;
    int node_count;
    /* The Slurm node name where known (several slurmd may share one host),
     * otherwise the host name. */
    char node_name[RP_BOOTSTRAP_NAME_MAX];
    /* Job identity: Slurm job id, else the PMIx namespace, else "local". */
    char job_id[RP_BOOTSTRAP_NAME_MAX];
    /* How many bootstraps of this kind this process started before this
     * one (rp_init after rp_finalize). Keys published through it carry the
     * number: the process manager keeps what an earlier context published,
     * and a peer must never read that stale copy. Ranks that call rp_init
     * equally often agree on it. */
    unsigned generation;
    /* Another rank on this host? With the reason, for the debug log. */
    rp_host_share_t host_share;
    char host_share_why[160];
    void *impl;
};

/* The bootstrap's settings, filled in by rp_init from the settings table
 * (bootstrap/ does not read the environment for RINGPOINT_*). */
typedef struct rp__bootstrap_settings {
    uint64_t timeout_s; /* RINGPOINT_BOOTSTRAP_TIMEOUT, >= 1 */
    bool pmix_collect;  /* RINGPOINT_PMIX_COLLECT=1 */
    bool allow_single;  /* RINGPOINT_ALLOW_SINGLE=1 (launch.h) */
} rp__bootstrap_settings_t;

/* The defaults (the settings table's), for callers without settings
 * (@set NULL below). */
#define RP_BOOTSTRAP_TIMEOUT_DEFAULT_S 120
#define RP_BOOTSTRAP_SETTINGS_DEFAULT \
    {.timeout_s = RP_BOOTSTRAP_TIMEOUT_DEFAULT_S, .pmix_collect = false, \
     .allow_single = false}

/*
 * Pick and start a bootstrap: PMIx when the environment shows a PMIx server
 * (unless @force_single), else a single process, once launch.h's check
 * finds that nothing meant this process to be one of several. A PMIx server that is
 * present but fails is an error, never a silent fallback: N processes each
 * believing they are rank 0 of 1 would overwrite one another's checkpoints.
 * @set: the settings; NULL for the defaults.
 */
rp_status_t rp__bootstrap_init(bool force_single,
                               const rp__bootstrap_settings_t *set,
                               rp_bootstrap_t **bs_p);

/* Finalize and free; NULL is ignored. */
void rp__bootstrap_finalize(rp_bootstrap_t *bs);

/* Implementations. */
rp_status_t rp__bootstrap_single_init(rp_bootstrap_t *bs);
#ifdef HAVE_PMIX
rp_status_t rp__bootstrap_pmix_init(rp_bootstrap_t *bs,
                                    const rp__bootstrap_settings_t *set);
#endif

#endif /* RP_BOOTSTRAP_H */
