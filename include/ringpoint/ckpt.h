/**
 * @file ringpoint/ckpt.h
 * @brief Registered state, the safe point, and coordinated checkpoints.
 *
 * The application registers its state once, calls @ref rp_restore after
 * @ref rp_init, and calls @ref rp_step at the end of every training step.
 * The runtime decides with all ranks when a checkpoint is due, so every rank
 * checkpoints the same step, and a checkpoint counts only once every rank's
 * shard is durable and rank 0 has committed the manifest.
 *
 * Settings (exported by the SPANK plugin, or set by hand):
 * - RINGPOINT_CKPT_DIR: where checkpoints live (default: ./ringpoint-ckpt);
 * - RINGPOINT_CKPT_INTERVAL: seconds (or any --ckpt-interval form) between
 *   periodic checkpoints; 0 checkpoints only when a stop is requested;
 * - RINGPOINT_CKPT_EVERY: also checkpoint every N steps (default 0: off);
 * - RINGPOINT_CKPT_KEEP: complete checkpoints kept (default 2; the newest
 *   complete one is never removed);
 * - RINGPOINT_CKPT_ASYNC: 1 writes in the background after a snapshot
 *   (default), 0 writes before rp_step returns.
 */
#ifndef RINGPOINT_CKPT_H
#define RINGPOINT_CKPT_H

#include <stddef.h>
#include <stdint.h>
#include <ringpoint/api.h>
#include <ringpoint/context.h>
#include <ringpoint/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** How a region is stored. Values are ABI and never renumbered. */
typedef enum rp_region_kind {
    /** Identical on every rank (model, optimizer state, step counter):
     *  stored once, striped across all ranks' shards, and restored on
     *  any number of ranks. */
    RP_REGION_REPLICATED = 0,
    /** Different on every rank (RNG state, data cursor): each rank's shard
     *  holds its own copy, restored only to the same rank of a job of the
     *  same size. */
    RP_REGION_PER_RANK = 1
} rp_region_kind_t;

/**
 * @brief Register @p size bytes at @p addr as part of the state.
 *
 * Call on every rank, in the same order, with the same names, kinds and
 * (for replicated regions) sizes, before the first @ref rp_restore or
 * @ref rp_step. The memory must stay valid until @ref rp_finalize; its
 * contents are read at each checkpoint and overwritten by a restore.
 *
 * @param name  1 to 128 printable characters without spaces, unique.
 * @return RP_OK; RP_ERR_INVALID_ARG for a bad name, a duplicate, or a
 *         NULL address with a non-zero size; RP_ERR_STATE after the first
 *         checkpoint or restore.
 */
RP_API rp_status_t rp_region_register(rp_context_h ctx, const char *name,
                                      void *addr, size_t size,
                                      rp_region_kind_t kind);

/** What @ref rp_restore found. */
typedef struct rp_restore_info {
    int restored;          /**< 1: state was loaded; 0: no complete checkpoint, start fresh. */
    uint64_t step;         /**< Step of the checkpoint loaded. */
    double age_s;          /**< Seconds between its commit and this restore. */
    uint32_t world_size;   /**< Ranks of the job that wrote it. */
    char path[4096];       /**< Its directory. */
} rp_restore_info_t;

/**
 * @brief Load the newest complete checkpoint into the registered regions.
 *
 * Collective. Rank 0 picks the newest checkpoint whose manifest verifies;
 * every rank verifies the chunks it reads, and if any rank finds a bad CRC
 * all ranks fall back to the next older complete checkpoint (the failure is
 * logged naming the file and chunk). Leftovers of interrupted writes are
 * removed first.
 *
 * @param names   Regions to restore, or NULL for all registered regions
 *                (model and optimizer can be restored independently).
 * @param nnames  Number of entries in @p names.
 * @param info    Filled in on success (may be NULL).
 * @return RP_OK whether or not a checkpoint was found (see info->restored);
 *         RP_ERR_INVALID_ARG if a registered region does not match the
 *         checkpoint (name, kind, size) or per-rank regions are asked for
 *         from a job of another size; RP_ERR_IO, RP_ERR_PEER_FAILED.
 */
RP_API rp_status_t rp_restore(rp_context_h ctx, const char *const names[],
                              size_t nnames, rp_restore_info_t *info);

/**
 * @brief Exit status for a task that stopped after @ref rp_step reported
 *        a stop (75, EX_TEMPFAIL: "try again later").
 *
 * The checkpoint of the stop step is committed when rp_step reports the
 * stop. A task that then exits with this status tells the ringpoint SPANK
 * plugin that the job may be requeued to resume from it (unless the job
 * was cancelled, or has used up its --ckpt-requeue allowance).
 */
#define RP_EXIT_STOPPED 75

/**
 * @brief Ask for a stop as if signal @p signo had arrived: the next
 *        @ref rp_step of every rank checkpoints and reports the stop.
 *
 * For a handler of the application's own that replaced ringpoint's (a
 * Python `signal.signal(SIGTERM, ...)` does, silently) and wants the
 * coordinated stop to happen all the same: call this from it. Only the
 * first request counts until the stop is taken. Async-signal-safe; needs no
 * context.
 * @param signo  The signal to report as the reason (SIGTERM, SIGUSR2...).
 * @return RP_OK; RP_ERR_INVALID_ARG for a signo <= 0.
 */
RP_API rp_status_t rp_request_stop(int signo);

/** What @ref rp_step decided. */
typedef struct rp_step_result {
    int checkpointed; /**< A checkpoint of this step was taken (committed, or
                           snapshotted and being written in the background). */
    int stop;         /**< A stop was requested (signal, preemption, time
                           limit): the checkpoint of this step is durable and
                           every rank must leave the training loop now. */
} rp_step_result_t;

/**
 * @brief The safe point: call once at the end of every step, on every rank.
 *
 * Collective and cheap when nothing is due (one small allreduce). All ranks
 * agree whether a checkpoint is due (interval elapsed, every-N-steps, a stop
 * requested on any rank) and take it for the same @p step. A background
 * write that failed is reported here, at the next safe point.
 *
 * @param step    The step just completed; strictly increasing.
 * @param result  Filled in on success (may be NULL).
 */
RP_API rp_status_t rp_step(rp_context_h ctx, uint64_t step,
                           rp_step_result_t *result);

/**
 * @brief Take a checkpoint of @p step now (collective), and wait until it
 *        is committed.
 */
RP_API rp_status_t rp_checkpoint(rp_context_h ctx, uint64_t step);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_CKPT_H */
