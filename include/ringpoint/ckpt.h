/**
 * @file ringpoint/ckpt.h
 * @brief Registered state, the safe point, and coordinated checkpoints.
 *
 * The application registers its state, calls @ref rp_restore after
 * @ref rp_init, and calls @ref rp_step at the end of every training step.
 * State that moves or grows (a tensor's new storage, optimizer state made
 * after the first step) is followed with @ref rp_region_update,
 * @ref rp_region_register and @ref rp_region_unregister between safe
 * points; @ref rp_ckpt_find and @ref rp_restore_step let a caller look at
 * a checkpoint's table before registering and restore exactly that one.
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
 *   (default), 0 writes before rp_step returns;
 * - RINGPOINT_CKPT_TIMEOUT: the longest a stop, or rp_finalize with a write
 *   in flight, waits for a checkpoint write (any --ckpt-interval form;
 *   default: no limit but the time left before Slurm's SIGKILL, less a
 *   tenth). Past it the process logs which checkpoint and directory hung
 *   and exits RP_EXIT_STOPPED; the previous complete checkpoint is
 *   untouched and the next start removes the unfinished one;
 * - RINGPOINT_CKPT_COPY_THREADS: threads that copy an async snapshot into
 *   staging (1 to 64; default: the cores this rank does not share, those
 *   of its CPU binding, or the node's divided by its ranks, at most 8).
 *   The time rp_step holds the training loop for an async checkpoint is
 *   that copy; with no spare core the application's thread copies alone.
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

/** Longest region name, in bytes (without the NUL). */
#define RP_REGION_NAME_MAX 128

/**
 * @brief Register @p size bytes at @p addr as part of the state.
 *
 * Call on every rank, in the same order, with the same names, kinds and
 * sizes. Regions may be registered at any time between safe points, also
 * after the first checkpoint or restore: the layout of the next checkpoint
 * then includes the new region (regions of each kind in registration
 * order), and the next collective call (@ref rp_step, @ref rp_checkpoint,
 * @ref rp_restore, @ref rp_restore_step) checks again that every rank has
 * the same table. The memory must stay valid until the region is
 * unregistered, pointed elsewhere (@ref rp_region_update) or
 * @ref rp_finalize; its contents are read at each checkpoint and
 * overwritten by a restore.
 *
 * @param name  1 to @ref RP_REGION_NAME_MAX printable characters without
 *              spaces, unique.
 * @return RP_OK; RP_ERR_INVALID_ARG for a bad name, a duplicate, or a
 *         NULL address with a non-zero size; RP_ERR_NOT_SUPPORTED for GPU
 *         memory where the GPU path does not work.
 */
RP_API rp_status_t rp_region_register(rp_context_h ctx, const char *name,
                                      void *addr, size_t size,
                                      rp_region_kind_t kind);

/**
 * @brief Point registered region @p name at new memory and/or a new size.
 *
 * Local (no communication); call between safe points, on every rank alike
 * when the size changes. Also while a background write is in flight: the
 * checkpoint being written keeps the table and bytes of its snapshot. An
 * address-only change takes effect at the next checkpoint and needs no
 * check across ranks; a size change re-lays out the offsets and the table
 * is checked across ranks again at the next collective call (the interval
 * clock is not reset). Its kind stays. A region in GPU memory may move to
 * other GPU memory of any size; host memory cannot become GPU memory or
 * back (unregister and register it instead), except from or to size 0.
 *
 * @return RP_OK; RP_ERR_NOT_FOUND if @p name is not registered;
 *         RP_ERR_INVALID_ARG for a NULL address with a non-zero size, a
 *         change between host and GPU memory, or a state too large;
 *         RP_ERR_NOT_SUPPORTED for GPU memory where the GPU path does not
 *         work.
 */
RP_API rp_status_t rp_region_update(rp_context_h ctx, const char *name,
                                    void *addr, size_t size);

/**
 * @brief Drop registered region @p name from the state.
 *
 * Local; call on every rank alike. The offsets of the regions after it are
 * laid out again and the table is checked across ranks at the next
 * collective call. A checkpoint in flight still contains it.
 *
 * @return RP_OK; RP_ERR_NOT_FOUND if @p name is not registered.
 */
RP_API rp_status_t rp_region_unregister(rp_context_h ctx, const char *name);

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
 * @brief Load exactly the checkpoint of @p step into the registered
 *        regions: @ref rp_restore without the fall-back.
 *
 * Collective. The caller decides what to do when the checkpoint cannot be
 * used (typically: @ref rp_ckpt_find with @p before_step = @p step, then
 * register that table and try again). Nothing in the application's memory
 * changes unless RP_OK is returned.
 *
 * @param step    The checkpoint's step (as in @ref rp_ckpt_desc_t::step).
 * @param names   Regions to restore, or NULL for all registered regions.
 * @param nnames  Number of entries in @p names.
 * @param info    Filled in on success, info->restored = 1 (may be NULL);
 *                zeroed otherwise.
 * @return RP_OK; RP_ERR_NOT_FOUND (every rank) if the directory holds no
 *         checkpoint of @p step; RP_ERR_CORRUPT (every rank) if it holds
 *         one that is unusable: incomplete or corrupt on some rank (a
 *         missing or damaged file, a bad shard header or chunk CRC;
 *         logged naming the file, as ringpoint-ckpt verify words it);
 *         RP_ERR_INVALID_ARG as for
 *         @ref rp_restore; RP_ERR_BUSY while a checkpoint is being
 *         written; RP_ERR_IO, RP_ERR_PEER_FAILED.
 */
RP_API rp_status_t rp_restore_step(rp_context_h ctx, uint64_t step,
                                   const char *const names[], size_t nnames,
                                   rp_restore_info_t *info);

/** One region of a checkpoint's table (@ref rp_ckpt_find). */
typedef struct rp_ckpt_region_desc {
    char name[RP_REGION_NAME_MAX + 1]; /**< NUL-terminated. */
    rp_region_kind_t kind;             /**< As registered by its writer. */
    uint64_t size;                     /**< Bytes. */
} rp_ckpt_region_desc_t;

/** A complete checkpoint and its region table (@ref rp_ckpt_find). */
typedef struct rp_ckpt_desc {
    uint64_t step;                  /**< Step it was taken at. */
    uint32_t world_size;            /**< Ranks of the job that wrote it. */
    size_t nregions;                /**< Entries in @ref regions. */
    rp_ckpt_region_desc_t *regions; /**< Its table, in the writer's
                                         registration order; owned by the
                                         library (@ref rp_ckpt_desc_free). */
    char path[4096];                /**< Its directory. */
} rp_ckpt_desc_t;

/**
 * @brief Describe the newest complete checkpoint older than @p before_step.
 *
 * Collective. Rank 0 chooses as @ref rp_restore would (leftovers of
 * interrupted writes removed, the newest checkpoint whose manifest reads
 * and verifies) among the checkpoints whose step is less than
 * @p before_step, and every rank receives the same description. Its
 * shards are checked when it is read, every rank checking its share: a
 * checkpoint with a missing or damaged shard is found here and then
 * refused by @ref rp_restore_step with RP_ERR_CORRUPT (ask again with its
 * step as @p before_step). The
 * registered table is neither needed nor changed: use it to register
 * exactly the checkpoint's regions before @ref rp_restore_step. Walk to
 * older checkpoints by passing the step found as the next @p before_step.
 *
 * @param before_step  Only steps below it; UINT64_MAX: any step.
 * @param desc         Filled in on success; zeroed otherwise. Free with
 *                     @ref rp_ckpt_desc_free.
 * @return RP_OK; RP_ERR_NOT_FOUND (every rank, not logged as an error) if
 *         there is no such checkpoint; RP_ERR_INVALID_ARG (NULL @p desc),
 *         RP_ERR_NO_MEMORY, RP_ERR_IO, RP_ERR_PEER_FAILED.
 */
RP_API rp_status_t rp_ckpt_find(rp_context_h ctx, uint64_t before_step,
                                rp_ckpt_desc_t *desc);

/**
 * @brief Free what @ref rp_ckpt_find allocated in @p desc and zero it.
 *        NULL and zeroed descriptions are fine.
 */
RP_API void rp_ckpt_desc_free(rp_ckpt_desc_t *desc);

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
 *
 * Where the checkpoint of @p step is already being written in the
 * background (rp_step took it in async mode), this waits for that one's
 * commit instead of taking a second.
 */
RP_API rp_status_t rp_checkpoint(rp_context_h ctx, uint64_t step);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_CKPT_H */
