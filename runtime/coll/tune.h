/*
 * The tuning table: the collectives' switch points as measured on this
 * machine and layout by `ringpoint-bench --tune`, in a small versioned
 * text file the runtime reads at rp_init:
 *
 *     # any comment
 *     ringpoint-coll-tune 1
 *     allreduce_rd_max 8192    recursive doubling up to this many bytes
 *     shm_max 131072           the node's segment's slots up to this,
 *                              single-copy reads above (one node)
 *     hier_max 1048576         the hierarchy (auto) up to this (nodes)
 *
 * Each key at most once, any subset, values in bytes (digits only). The
 * file is RINGPOINT_COLL_TUNE_FILE, else SYSCONFDIR/ringpoint/
 * coll-tune.conf if it exists; RINGPOINT_COLL_TUNE_FILE=none (or empty)
 * reads none. An environment variable of a switch point
 * (RINGPOINT_ALLREDUCE_RD_MAX, RINGPOINT_COLL_SHM_MAX; RINGPOINT_COLL_HIER
 * 0 or 1) wins over the table. A file that cannot be read, of another
 * version, or with a line that is not `key value` of the keys above is
 * refused as a whole with a warning naming the file and line, and the
 * built-in switch points stay.
 *
 * The switch points decide the algorithm, and so the reduction order:
 * every rank must use the same. Rank 0 reads the file and sends what it
 * found to the others (one broadcast at init), so a table present on one
 * node only cannot split a job.
 */
#ifndef RP_COLL_TUNE_H
#define RP_COLL_TUNE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

struct rp_comm;

#define RP_TUNE_MAGIC   "ringpoint-coll-tune"
#define RP_TUNE_VERSION 1
/* The default file under the installation's sysconfdir. */
#define RP_TUNE_DEFAULT_NAME "ringpoint/coll-tune.conf"

/* What a table holds; a key that is absent is UINT64_MAX. */
typedef struct rp__tune {
    uint64_t rd_max;
    uint64_t shm_max;
    uint64_t hier_max;
} rp__tune_t;

/* Parse @path into @t. RP_OK with *@t filled (absent keys UINT64_MAX), or
 * an error with the reason, "file:line: what", in @err. */
rp_status_t rp__tune_read(const char *path, rp__tune_t *t, char *err,
                          size_t errlen);

/* Write @t to @path (through a temporary file and a rename) with
 * @comment as a leading comment line. */
rp_status_t rp__tune_write(const char *path, const rp__tune_t *t,
                           const char *comment);

/* The file to read: @given (RINGPOINT_COLL_TUNE_FILE; NULL when unset;
 * "none" or "" for no table), else the default if it exists; NULL for
 * none. */
const char *rp__tune_path(const char *given);

/* At rp__comm_create, before the shared segment and the hierarchy: rank
 * 0 reads the table (@given as for rp__tune_path), every rank applies it
 * where no environment variable set the switch point (@rd_env, @shm_env).
 * A collective. */
rp_status_t rp__tune_setup(struct rp_comm *c, bool rd_env, bool shm_env,
                           const char *given);

#endif /* RP_COLL_TUNE_H */
