/*
 * Runtime settings. The SPANK plugin validates options at submit time and
 * exports the resolved values as RINGPOINT_* variables; the runtime reads
 * them back here with the same parsers, so a value that passed srun can
 * never be read differently by the tasks.
 */
#ifndef RP_CORE_SETTINGS_H
#define RP_CORE_SETTINGS_H

#include <stdint.h>

#include "ringpoint/status.h"

/* Used when neither the plugin nor the user set an interval. */
#define RP_DEFAULT_CKPT_INTERVAL_S (30 * 60)

/* Defaults of the collectives' settings (RINGPOINT_COLL_*, _ALLREDUCE_*). */
#define RP_DEFAULT_COLL_TIMEOUT_S   300
/* rd_max_bytes when RINGPOINT_ALLREDUCE_RD_MAX is unset: the communicator
 * picks from measurements (coll/comm.c). */
#define RP_RD_MAX_AUTO              UINT64_MAX
#define RP_DEFAULT_SEGMENT_BYTES    (128u * 1024)
#define RP_DEFAULT_WINDOW           4

typedef enum rp_coll_algo {
    RP_COLL_ALGO_AUTO = 0, /* by message size */
    RP_COLL_ALGO_RING = 1, /* reduce-scatter + allgather ring */
    RP_COLL_ALGO_RD   = 2  /* recursive doubling */
} rp_coll_algo_t;

/* Checkpoint engine defaults (RINGPOINT_CKPT_*). */
#define RP_DEFAULT_CKPT_DIR   "./ringpoint-ckpt"
#define RP_DEFAULT_CKPT_KEEP  2
#define RP_DEFAULT_CKPT_CHUNK (4u << 20)
#define RP_CKPT_DIR_LEN       4096

typedef struct rp_settings {
    uint64_t ckpt_interval_s; /* 0: checkpoint only on a signal */
    char ckpt_dir[RP_CKPT_DIR_LEN]; /* RINGPOINT_CKPT_DIR */
    uint64_t ckpt_every;      /* also every N steps; 0: off */
    uint64_t ckpt_keep;       /* complete checkpoints kept, >= 1 */
    uint64_t ckpt_chunk;      /* CRC chunk size, RINGPOINT_CKPT_CHUNK_SIZE */
    int ckpt_async;           /* 1: background writes (default) */
    int ckpt_signal;          /* early-warning signal (RINGPOINT_CKPT_SIGNAL) */
    uint64_t ckpt_requeue;    /* requeues allowed (RINGPOINT_CKPT_REQUEUE) */
    int ckpt_requeue_set;     /* RINGPOINT_CKPT_REQUEUE was given */
    uint64_t coll_timeout_s;  /* silence from a peer before failing; 0: never */
    int64_t coll_spin_us;     /* busy-poll before sleeping; -1: decide from the CPU count */
    int coll_oversubscribed;  /* 1/0: ranks outnumber cores or not; -1: count */
    rp_coll_algo_t allreduce_algo;
    uint64_t rd_max_bytes;    /* auto picks recursive doubling up to this;
                                 RP_RD_MAX_AUTO: by measurement */
    uint64_t segment_bytes;   /* pipelining unit of the ring and the chain */
    uint64_t window;          /* segments received ahead */
} rp_settings_t;

/* Defaults, then RINGPOINT_* from the environment. A malformed variable is
 * an error naming the variable and the accepted forms. */
rp_status_t rp__settings_load(rp_settings_t *cfg);

#endif /* RP_CORE_SETTINGS_H */
