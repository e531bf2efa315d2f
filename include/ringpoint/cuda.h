/**
 * @file ringpoint/cuda.h
 * @brief The GPU path: collectives and checkpoints on CUDA device memory.
 *
 * The collectives of ringpoint/coll.h and rp_region_register of
 * ringpoint/ckpt.h accept CUDA device memory as well as host memory; the
 * runtime tells them apart by asking the CUDA driver. Device buffers go
 * through NCCL, in a module (ringpoint-nccl.so) that libringpoint loads the
 * first time it sees device memory, so programs that never use a GPU never
 * load CUDA. All buffers of one call must be on the device, or all on the
 * host: a mix is RP_ERR_INVALID_ARG.
 *
 * On device buffers a collective is stream-ordered, as NCCL's are: it
 * returns once the operation is enqueued on the stream set with
 * @ref rp_cuda_set_stream (the legacy default stream until then), and its
 * result is ready when that stream reaches it. An error NCCL reports
 * asynchronously (a peer died) is returned by a later call. Results follow
 * NCCL's reduction order, not the host path's fixed one: they are not
 * bit-identical to host results for floating-point types. Every op and
 * dtype of ringpoint/types.h is supported (RP_OP_AVG is ncclAvg).
 *
 * Each task drives one GPU (@ref rp_cuda_device), chosen from Slurm's
 * binding: the task's own GPU under `--gpus-per-task` (Slurm narrows
 * CUDA_VISIBLE_DEVICES per task), else the local rank's among the GPUs the
 * node's tasks share; RINGPOINT_GPU_DEVICE=N overrides. Fewer GPUs than
 * tasks is an error that names the variables seen.
 *
 * Device checkpoint regions are copied to page-locked host staging on a
 * stream of the runtime's own, after the work enqueued on the application's
 * stream, at the safe point; restore copies back.
 *
 * Environment: RINGPOINT_GPU = `auto` (default), `on` (start the GPU path
 * in @ref rp_init and fail there if it cannot), `off` (device memory is an
 * error); RINGPOINT_GPU_MODULE, the module's path (default: the installed
 * one). Waits on the GPU give up after RINGPOINT_COLL_TIMEOUT and abort the
 * NCCL communicator (ncclCommAbort), so a dead peer never hangs a step.
 *
 * No CUDA type appears here: streams are passed as `void *`.
 */
#ifndef RINGPOINT_CUDA_H
#define RINGPOINT_CUDA_H

#include <ringpoint/api.h>
#include <ringpoint/context.h>
#include <ringpoint/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Enqueue the collectives on device buffers on @p stream.
 *
 * @param ctx     A context from @ref rp_init.
 * @param stream  A `cudaStream_t` of this task's device, or NULL for the
 *                legacy default stream. It must stay valid until it is
 *                replaced or the context is finalized.
 * @return RP_OK; RP_ERR_INVALID_ARG for a NULL context.
 */
RP_API rp_status_t rp_cuda_set_stream(rp_context_h ctx, void *stream);

/**
 * @brief The CUDA device this task drives, made current for the calling
 *        thread; allocate the buffers you pass to ringpoint there.
 *
 * Loads the GPU module and starts CUDA if that has not happened yet.
 * Not collective.
 *
 * @param ctx       A context from @ref rp_init.
 * @param device_p  The device ordinal (as cudaSetDevice takes it).
 * @return RP_OK; RP_ERR_NOT_SUPPORTED when the module, the CUDA driver or a
 *         GPU is missing; RP_ERR_INVALID_ARG when tasks and GPUs do not
 *         match (the log says which variables were seen).
 */
RP_API rp_status_t rp_cuda_device(rp_context_h ctx, int *device_p);

#ifdef __cplusplus
}
#endif

#endif /* RINGPOINT_CUDA_H */
