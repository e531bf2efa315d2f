/**
 * @file ringpoint/subcomm.h
 * @brief Sub-communicators: collectives among a subset of the job's ranks.
 *
 * Tensor-, pipeline- and data-parallel groups (Horovod's process sets,
 * torch.distributed.new_group) need collectives among some of the ranks.
 * @ref rp_comm_split and @ref rp_comm_create_group make a new
 * @ref rp_context_h over a subset of an existing one; every collective of
 * ringpoint/coll.h (blocking and non-blocking, with @ref rp_test and
 * @ref rp_wait) takes it unchanged, and @ref rp_context_query reports the
 * rank and size within it (and, with RP_CONTEXT_ATTR_FIELD_PARENT, the rank
 * in the context it was made from and in the job).
 *
 * Rules:
 * - Creating one is collective over every rank of the parent context,
 *   including the ranks that end up in no sub-communicator.
 * - A sub-communicator may be split again.
 * - Checkpoints belong to the job: rp_region_*, rp_restore*, rp_step,
 *   rp_checkpoint and rp_ckpt_find refuse a sub-communicator's context
 *   (RP_ERR_INVALID_ARG).
 * - Host buffers only: a device buffer is refused (RP_ERR_NOT_SUPPORTED);
 *   the NCCL path serves the job's context. rp_cuda_set_stream and
 *   rp_cuda_device on a sub-communicator act on the job's GPU path.
 * - Free a sub-communicator with @ref rp_comm_free (not rp_finalize, which
 *   refuses one). Freeing a context frees the sub-communicators made from
 *   it, and rp_finalize on the job's context frees all that are left: their
 *   handles are invalid afterwards.
 * - Non-blocking collectives of the job and of all its sub-communicators run
 *   in one queue, in the order the calls were made: ranks that issue calls
 *   on different communicators in the same order never deadlock.
 */
#ifndef RINGPOINT_SUBCOMM_H
#define RINGPOINT_SUBCOMM_H

#include <ringpoint/api.h>
#include <ringpoint/context.h>
#include <ringpoint/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The color of a rank that joins no sub-communicator in @ref rp_comm_split. */
#define RP_UNDEFINED (-32766)

/**
 * @brief Split @p ctx into sub-communicators by color. Collective over all
 *        ranks of @p ctx.
 *
 * The ranks that pass the same @p color form one sub-communicator, ranked
 * by @p key, ties broken by their rank in @p ctx (MPI_Comm_split).
 *
 * @param ctx    The job's context or a sub-communicator.
 * @param color  0 or more, or @ref RP_UNDEFINED to join none.
 * @param key    Orders the ranks within the new sub-communicator.
 * @param sub_p  On success the new context, or NULL for RP_UNDEFINED.
 * @return RP_OK; RP_ERR_INVALID_ARG on every rank when any rank passed a
 *         negative color other than RP_UNDEFINED (the message names it);
 *         RP_ERR_NO_MEMORY when more than 1024 sub-communicators that
 *         share a rank are live; or the error of the collective.
 */
RP_API rp_status_t rp_comm_split(rp_context_h ctx, int color, int key,
                                 rp_context_h *sub_p);

/**
 * @brief A sub-communicator of the ranks @p ranks[0..n) of @p ctx, in that
 *        order. Collective over all ranks of @p ctx.
 *
 * Every rank passes the same list; members get the new context, the others
 * NULL.
 *
 * @return RP_OK; on every rank, RP_ERR_INVALID_ARG when some rank's list is
 *         empty, holds a rank twice or one outside 0..size-1, and
 *         RP_ERR_MISMATCH when the ranks passed different lists (the
 *         message names the list and the rank).
 */
RP_API rp_status_t rp_comm_create_group(rp_context_h ctx, const int *ranks,
                                        int n, rp_context_h *sub_p);

/**
 * @brief Free a sub-communicator and those made from it. Local.
 *
 * Waits for the non-blocking collectives still queued (the job's
 * included); requests of @p sub not yet waited for are complete after it
 * and rp_test / rp_wait still release them. NULL is ignored; the job's
 * context is refused (free it with rp_finalize).
 */
RP_API void rp_comm_free(rp_context_h sub);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_SUBCOMM_H */
