/*
 * The GPU path, seen from libringpoint. libringpoint never links CUDA or
 * NCCL: they live in a loadable module (runtime/nccl/, installed as
 * $(pkglibdir)/ringpoint-nccl.so) that is dlopen'ed the first time a task
 * hands ringpoint device memory, or at rp_init with RINGPOINT_GPU=on. So
 * the library and the SPANK plugin run on nodes without a GPU or CUDA, and
 * the host path never pays for the GPU one.
 *
 *   gpu.h      this interface: the module's ops table (no CUDA types)
 *   loader.c   finding and opening the module, checking its ABI
 *   probe.c    "is this pointer device memory?" without the module
 *   binding.c  which GPU a task uses, from Slurm's variables (pure logic)
 *   uid.c      the NCCL unique id from rank 0 through the PMIx exchange
 *   gpu.c      the per-context state: lazy communicator, dispatch
 *
 * Streams, communicators and events cross this interface as opaque
 * pointers; element types and operations as ringpoint's own enums.
 */
#ifndef RP_GPU_GPU_H
#define RP_GPU_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ringpoint/types.h"

/* Bumped whenever rp__gpu_ops_t changes; a module of another ABI is
 * refused with a message rather than called through a wrong table. */
#define RP_GPU_ABI 2

/* The one symbol the module exports: const rp__gpu_ops_t *SYMBOL(const
 * rp__gpu_host_t *). */
#define RP_GPU_MODULE_SYMBOL "rp_gpu_module_v1"
#define RP_GPU_MODULE_NAME   "ringpoint-nccl.so"

/* NCCL_UNIQUE_ID_BYTES; checked against nccl.h when the module builds. */
#define RP_GPU_UID_BYTES 128

/* Devices described by info(), at most. */
#define RP_GPU_INFO_MAX 16

/* What libringpoint lends the module: it cannot call libringpoint's hidden
 * internals, and two loggers would interleave badly. */
typedef struct rp__gpu_host {
    void (*log)(int level, const char *fmt, ...)
        __attribute__((format(printf, 2, 3))); /* level: rp_log_level_t */
} rp__gpu_host_t;

typedef struct rp__gpu_devinfo {
    char name[96];
    char pci_bus_id[32];
    uint64_t mem_bytes;
    int cc_major, cc_minor;
} rp__gpu_devinfo_t;

typedef struct rp__gpu_info {
    int ndev;                  /* visible to this task */
    int driver_version;        /* cudaDriverGetVersion: 13000 = 13.0 */
    int runtime_version;       /* cudaRuntimeGetVersion */
    int nccl_version;          /* ncclGetVersion: 22809 = 2.28.9 */
    rp__gpu_devinfo_t dev[RP_GPU_INFO_MAX];
} rp__gpu_info_t;

/* One NCCL communicator with its bookkeeping; the module's. */
typedef struct rp__gpu_comm rp__gpu_comm_t;

typedef struct rp__gpu_ops {
    uint32_t abi;  /* RP_GPU_ABI */
    const char *name;

    /* Start CUDA in this process and count the visible devices. A missing
     * driver or no device: RP_ERR_NOT_SUPPORTED with @why filled. */
    rp_status_t (*probe)(int *ndev, char *why, size_t whylen);
    /* Versions and devices (probe first). */
    void (*info)(rp__gpu_info_t *info);
    /* 1 if @p is device (or managed) memory, 0 host, and the CUDA device
     * ordinal it lives on in *@device_p. */
    int (*mem_kind)(const void *p, int *device_p);
    /* Make @device current for this thread. */
    rp_status_t (*bind)(int device);

    /* The communicator: rank 0 makes the id, every rank joins with it.
     * Non-blocking NCCL underneath; waits give up after @timeout_ms
     * (0: never) and abort the communicator. */
    rp_status_t (*unique_id)(void *uid /* RP_GPU_UID_BYTES */);
    rp_status_t (*comm_create)(const void *uid, int rank, int size,
                               int timeout_ms, rp__gpu_comm_t **comm_p);
    /* Drain with the timeout, then destroy; abort when it does not drain
     * or the communicator failed. */
    void (*comm_destroy)(rp__gpu_comm_t *comm);
    /* Abort now (a peer failed on the host path, or a stop cannot wait). */
    void (*comm_abort)(rp__gpu_comm_t *comm);

    /* Collectives, enqueued on @stream (NULL: the legacy default stream).
     * They return once enqueued; an error NCCL reported asynchronously
     * for earlier work is returned by the next call. */
    rp_status_t (*allreduce)(rp__gpu_comm_t *comm, const void *send,
                             void *recv, size_t count, rp_dtype_t dtype,
                             rp_op_t op, void *stream);
    rp_status_t (*broadcast)(rp__gpu_comm_t *comm, void *buf, size_t bytes,
                             int root, void *stream);
    rp_status_t (*allgather)(rp__gpu_comm_t *comm, const void *send,
                             void *recv, size_t bytes, void *stream);
    /* Everything between group_start and group_end is one launch. */
    rp_status_t (*group_start)(rp__gpu_comm_t *comm);
    rp_status_t (*group_end)(rp__gpu_comm_t *comm);
    /* Wait until @stream has run all work enqueued so far, polling NCCL's
     * asynchronous errors; past @timeout_ms the communicator is aborted
     * (which releases kernels stuck on a dead peer) and RP_ERR_TIMEOUT
     * returned. @comm may be NULL (no NCCL work to watch). */
    rp_status_t (*stream_wait)(rp__gpu_comm_t *comm, void *stream,
                               int timeout_ms);
    /* Non-blocking requests: an event recorded on @stream after the
     * operation; event_wait as stream_wait, or with !@block a single
     * query (RP_ERR_BUSY: not reached yet). */
    rp_status_t (*event_record)(void *stream, void **event_p);
    rp_status_t (*event_wait)(rp__gpu_comm_t *comm, void *event,
                              int timeout_ms, bool block);
    void (*event_destroy)(void *event);

    /* Staging for checkpoints: page-locked host memory, a private copy
     * stream, and copies ordered after the application's stream. */
    void *(*host_alloc)(size_t bytes);
    void (*host_free)(void *p);
    rp_status_t (*stream_create)(void **stream_p);
    void (*stream_destroy)(void *stream);
    /* @copy waits for the work enqueued on @after so far. */
    rp_status_t (*stream_order)(void *copy, void *after);
    /* cudaMemcpyAsync with the direction taken from the pointers. */
    rp_status_t (*copy_async)(void *dst, const void *src, size_t bytes,
                              void *stream);

    /* Device memory, for the test program and the benchmark (which must
     * not link CUDA themselves). */
    rp_status_t (*dev_alloc)(size_t bytes, void **p);
    void (*dev_free)(void *p);
    /* cudaMemsetAsync: @bytes of @p set to @byte, in @stream's order
     * (ABI 2). */
    rp_status_t (*dev_memset)(void *p, int byte, size_t bytes, void *stream);
} rp__gpu_ops_t;

typedef const rp__gpu_ops_t *(*rp__gpu_module_fn)(const rp__gpu_host_t *host);

/* ---- loader.c ---- */

/* Open the module once per process (thread-safe): the path given to
 * rp__gpu_module_set_path if any, else $(pkglibdir)/ringpoint-nccl.so.
 * NULL with @why filled when it is absent, fails to load (no libcudart, no
 * libnccl), or has another ABI; the outcome is remembered. */
const rp__gpu_ops_t *rp__gpu_module(char *why, size_t whylen);

/* The module to open: @path (RINGPOINT_GPU_MODULE, which rp_init passes
 * on from the settings table); NULL or "": the installed one. No effect
 * once the module was opened. Not thread-safe: call before the first
 * rp__gpu_module. */
void rp__gpu_module_set_path(const char *path);

/* The module's path as it would be opened. */
const char *rp__gpu_module_path(void);

/* ---- probe.c ---- */

/* Device memory by the CUDA driver already in this process, without
 * loading anything: false whenever libcuda is not loaded (then no device
 * memory can exist). Cheap enough for every collective call. */
bool rp__gpu_probe_is_device(const void *p);
/* Is the CUDA driver loaded in this process? If not, no buffer of a call
 * can be device memory: one look at the loader for the whole call instead
 * of one per buffer (a grouped allreduce has two per tensor). */
bool rp__gpu_probe_driver(void);

/* ---- binding.c ---- */

/* What decides a task's GPU; strings may be NULL (unset). */
typedef struct rp__gpu_env {
    const char *cuda_visible_devices; /* CUDA_VISIBLE_DEVICES */
    const char *step_gpus;            /* SLURM_STEP_GPUS */
    const char *job_gpus;             /* SLURM_JOB_GPUS */
    const char *gpus_per_task;        /* SLURM_GPUS_PER_TASK */
    const char *device;               /* RINGPOINT_GPU_DEVICE: explicit */
    int local_rank, local_size;       /* from the bootstrap */
    int visible;                      /* devices CUDA shows this task */
} rp__gpu_env_t;

typedef struct rp__gpu_binding {
    int device;       /* CUDA ordinal among the visible devices */
    char physical[32]; /* the CUDA_VISIBLE_DEVICES entry, or the ordinal */
    char how[160];     /* why this one, for ringpoint-info and the log */
} rp__gpu_binding_t;

/* Fill @env from the environment and @device (RINGPOINT_GPU_DEVICE as the
 * settings hold it; "" or NULL: unset). Visible and local rank/size are
 * the caller's. */
void rp__gpu_env_read(rp__gpu_env_t *env, const char *device);

/* Choose the task's GPU. RP_ERR_INVALID_ARG with the reason in @err when
 * tasks and GPUs do not match (no GPU visible, more tasks on the node
 * than GPUs they share, a malformed variable). Pure: no CUDA, no env. */
rp_status_t rp__gpu_bind_resolve(const rp__gpu_env_t *env,
                                 rp__gpu_binding_t *out, char *err,
                                 size_t errlen);

/* Entries in a CUDA_VISIBLE_DEVICES / SLURM_*_GPUS list ("0,1,3",
 * "GPU-uuid,..."), 0 for empty, -1 if malformed. */
int rp__gpu_list_count(const char *list);

/* ---- uid.c ---- */

struct rp_bootstrap;

/* The id's exchange key for communicator generation @gen. */
void rp__gpu_uid_key(unsigned bs_gen, unsigned gen, char *buf, size_t len);

/* Collective over the bootstrap: rank 0 publishes @uid (@len bytes), every
 * rank fences and reads rank 0's bytes into @uid. A length that differs
 * is a bootstrap error. */
rp_status_t rp__gpu_uid_exchange(struct rp_bootstrap *bs, unsigned gen,
                                 void *uid, size_t len);

#endif /* RP_GPU_GPU_H */
