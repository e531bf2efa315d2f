/*
 * The checkpoint engine: what a context knows about the application's
 * registered state, and the coordinated checkpoint built on the format
 * layer and the collectives.
 *
 * runtime/ckpt/ by folder, each file's functions in its own header:
 *   format/   the on-disk format and its durable file steps: CRC32C,
 *             names and stripes (layout.c), the shard header, the
 *             manifest (model, grammar, encoder, parser), careful file
 *             I/O, the shard writer (shardio.c) and its payload cursor,
 *             the helper thread (worker.c)
 *   catalog/  judging and listing a directory's checkpoints: verdicts,
 *             the validator, the catalog, retention (catalog.h)
 *   engine/   this struct (engine.c: the safe point, the state machine),
 *             the registered regions, the checkpoint root (root.c),
 *             device staging, the stop budget and watchdog, the public
 *             functions (api.c)
 *   write/    the two-phase commit, async staging and its writer, the
 *             snapshot copy's threads (pcopy.c), the one-process writer
 *             of tests and tools (write_local.c)
 *   read/     restore on any world size, with fall-back on bad CRCs
 *             (reader_int.h says which file does what), and find
 * format/ and catalog/ never include engine/, write/ or read/: the
 * ringpoint-ckpt tool uses them without a context.
 *
 * Threads: only the application's thread runs collectives. The writer
 * thread of async mode writes and fsyncs this rank's shard and nothing
 * else; the agreement, CRC gather and manifest commit of that checkpoint
 * run on the application's thread at a later safe point (the next
 * rp_step that finds every rank's write finished, a stop, rp_checkpoint,
 * or rp_finalize), because two threads must never run collectives on one
 * communicator.
 */
#ifndef RP_CKPT_ENGINE_H
#define RP_CKPT_ENGINE_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/ckpt.h"
#include "ckpt/engine/budget.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"
#include "ckpt/write/pcopy.h"
#include "ckpt/format/shardio.h"
#include "ckpt/format/worker.h"
#include "util/log.h"

/* Regions of each kind are laid out in registration order, each starting
 * on a multiple of this (cache-line aligned copies; the gaps are zero). */
#define RP_CKPT_REGION_ALIGN 64u

/* Committed checkpoints whose durations estimate the next one. */
#define RP_CKPT_RECENT 4

/* "<root>/<checkpoint name>" for messages; the root is at most 4095. */
#define RP_CKPT_LABEL_MAX (4096 + RP_CKPT_NAME_MAX + 2)

typedef struct rp__ckpt_reg {
    char name[RP_CKPT_REGION_NAME_MAX + 1];
    rp__ckpt_region_kind_t kind;
    void *addr;
    uint64_t size;
    uint64_t offset; /* in the stream or in the per-rank section */
    bool device;     /* GPU memory, staged through ckpt/engine/devstage.h */
} rp__ckpt_reg_t;

/* One checkpoint between begin and finish. */
typedef struct rp__ckpt_pending {
    bool active;
    uint64_t step;
    /* The region table as it was at begin: the manifest, the other ranks'
     * chunk counts and the figures are built from this copy, so the
     * application may change its table while the write is in flight. */
    rp__ckpt_region_t *layout;
    uint32_t nlayout;
    uint64_t stream_len, per_rank_len;
    char inflight[RP_CKPT_NAME_MAX];
    char committed[RP_CKPT_NAME_MAX];
    uint8_t ckpt_id[RP_CKPT_ID_SIZE];
    uint64_t created_ns;
    int cfd;                  /* the in-flight directory, every rank */
    uint64_t stripe_off, stripe_len, payload_len;
    uint32_t nchunks;
    /* The agreement buffer: per rank an ok flag, a chunk count and maxn
     * CRC slots (commit.c); this rank's CRCs are written into its slot. */
    int32_t *agree;
    uint32_t maxn;
    uint32_t *crcs;           /* this rank's chunk CRCs, inside @agree */
    rp_status_t write_status; /* this rank's shard write */
    rp__ckpt_write_stats_t wstats;
    uint64_t t_begin_ns;
    bool postponed;           /* a checkpoint was put off for this write */
} rp__ckpt_pending_t;

/* Figures of the last checkpoint and restore, for ringpoint-ckpt bench. */
typedef struct rp__ckpt_stats {
    uint64_t bytes_total;     /* payload bytes of all shards */
    uint64_t stall_ns;        /* time the last checkpointing rp_step /
                                 rp_checkpoint held the caller */
    uint64_t write_ns;        /* this rank's shard write, fsync included */
    uint64_t commit_ns;       /* agreement + gather + manifest + rename */
    uint64_t total_ns;        /* begin to durable commit */
    uint64_t restore_ns;
    uint64_t restore_bytes;   /* replicated + per-rank bytes restored */
    uint64_t staging_bytes;   /* host memory held for staging, peak */
    bool direct;              /* O_DIRECT was used */
    /* Phases, this rank, last checkpoint / restore (ringpoint-ckpt bench
     * prints them beside the raw device figures): */
    uint64_t snap_ns;         /* async: snapshot copy + CRC into staging */
    uint64_t stage_ns;        /* device regions: GPU -> pinned staging */
    uint64_t fill_ns;         /* sync: copy + CRC into the bounce buffers */
    uint64_t pwrite_ns;       /* time in pwrite of the payload */
    uint64_t fsync_ns;        /* the shard's fsync */
    uint64_t vote_ns;         /* commit: the vote, waiting for the slowest
                                 rank's write included */
    uint64_t manifest_ns;     /* commit, rank 0: manifest write + fsync */
    uint64_t rename_ns;       /* commit, rank 0: dir fsync, rename, fsync */
    uint64_t outcome_ns;      /* commit: the collective with rank 0's
                                 result */
    uint64_t begin_ns;        /* begin: rank 0's mkdir, the broadcast */
    uint64_t prune_ns;        /* rank 0: retention after the commit (on a
                                 helper thread, off the stall) */
    uint64_t rd_read_ns;      /* restore: reading this rank's stripe */
    uint64_t rd_crc_ns;       /* restore: CRC checks not hidden in a copy */
    uint64_t rd_gather_ns;    /* restore: the allgather rounds */
    uint64_t rd_scatter_ns;   /* restore: copies into the regions */
    uint64_t rd_wait_ns;      /* restore: the verdict, waiting for the
                                 slowest rank's reads included */
} rp__ckpt_stats_t;

typedef struct rp__ckpt_engine {
    struct rp_context *ctx;
    uint32_t rank, size;

    rp__ckpt_reg_t *regs;
    uint32_t nregs, cap;
    uint64_t stream_len, per_rank_len;
    /* The table was checked across ranks since its last change (a new,
     * removed or resized region; an address change needs no check). */
    bool checked;
    bool clock_started; /* the interval clock runs (first collective use) */
    uint64_t layout_gen; /* bumped at every change of the layout */

    /* settings (from the context's) */
    char dir[4096];
    uint64_t interval_s, every, keep, chunk_size;
    bool async;
    rp__ckpt_fault_t fault;
    uint32_t fault_rank;
    uint64_t fault_step;

    int rootfd;     /* the checkpoint root, once it exists */
    bool cleaned;   /* leftovers removed (rank 0) */
    bool have_step;
    uint64_t last_step;
    uint64_t last_ckpt_ns; /* rank 0's clock, for the interval */

    volatile sig_atomic_t stop_requested;
    bool stopped;   /* a stop checkpoint was committed and reported */

    rp__ckpt_pending_t pend;

    /* async mode */
    unsigned char *staging;
    size_t staging_len;
    rp__ckpt_worker_t writer; /* writes the staged shard (async.c) */
    bool writer_up;
    /* The snapshot's segments until the writer has checksummed staging
     * (and copied in the device bytes that still sit in the pinned
     * staging of the device regions) before writing (async.c). */
    rp__ckpt_seg_t *defer_segs;
    size_t defer_nsegs;
    /* The snapshot copy's threads (pcopy.h): how many it may use, and
     * the pool, made at the first snapshot that has bytes to share. */
    unsigned copy_threads;
    rp__ckpt_pcopy_t *pcopy;
    bool pcopy_tried;

    rp__ckpt_stats_t stats;

    /* rank 0: retention after a commit runs on this thread (root.c) */
    rp__ckpt_worker_t pruner;
    bool prune_up;

    struct rp__ckpt_devstage *dev; /* device regions' staging; NULL: none */

    /* the stop budget (rank 0 decides) */
    rp__job_limits_t limits;
    uint64_t ckpt_timeout_ns; /* RINGPOINT_CKPT_TIMEOUT (watchdog.h); 0 */
    uint64_t recent_ns[RP_CKPT_RECENT]; /* begin to commit, newest last */
    unsigned nrecent;
    bool have_ckpt_step; /* the newest committed (or restored) checkpoint */
    uint64_t ckpt_step;
} rp__ckpt_engine_t;

/* The engine of @ctx into *@e_p, created on first use. Not RP_OK (logged
 * where it failed) when out of memory or when the stop signals cannot be
 * watched; the settings it uses were checked by rp_init. */
rp_status_t rp__ckpt_engine_get(struct rp_context *ctx,
                                rp__ckpt_engine_t **e_p);

/* Finish any checkpoint in flight (collective), stop the writer thread,
 * free everything. Called by rp_finalize before the collectives go. */
void rp__ckpt_engine_destroy(struct rp_context *ctx);

/* Ask for a stop: the next rp_step on every rank takes a checkpoint and
 * reports stop. Async-signal-safe (sets a sig_atomic_t). */
void rp__ckpt_request_stop(struct rp_context *ctx);

/* The safe point of rp_step: decide collectively whether to checkpoint
 * (interval, every-N, stop), finish a background write that is done,
 * take the checkpoint. */
rp_status_t rp__ckpt_step(rp__ckpt_engine_t *e, uint64_t step,
                          rp_step_result_t *result);
/* rp_checkpoint: a checkpoint of @step now, waited for until durable. */
rp_status_t rp__ckpt_checkpoint_now(rp__ckpt_engine_t *e, uint64_t step);
/* Copy of the figures, for the benchmark. */
void rp__ckpt_get_stats(struct rp_context *ctx, rp__ckpt_stats_t *st);

#endif /* RP_CKPT_ENGINE_H */
