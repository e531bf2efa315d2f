/*
 * The NCCL module's entry point and its CUDA side: starting CUDA, the
 * devices, pointer queries, and the copies of checkpoint staging. The
 * communicator and the collectives are in comm.c.
 */
#include "config.h"

#include "nccl/nccl_int.h"

#include <stdio.h>
#include <string.h>

const rp__gpu_host_t *rp__nc_host;

rp_status_t rp__nc_cuda_fail(const char *what, cudaError_t err)
{
    rp_nc_error("GPU: %s: %s (%s)", what, cudaGetErrorString(err),
                cudaGetErrorName(err));
    return err == cudaErrorMemoryAllocation ? RP_ERR_NO_MEMORY
                                            : RP_ERR_TRANSPORT;
}

static rp_status_t rp_nc_probe(int *ndev, char *why, size_t whylen)
{
    cudaError_t err = cudaGetDeviceCount(ndev);

    if (err != cudaSuccess) {
        /* No driver, a driver older than this CUDA, no device: each says
         * so in its own words. */
        snprintf(why, whylen, "no CUDA device: %s (%s)",
                 cudaGetErrorString(err), cudaGetErrorName(err));
        (void)cudaGetLastError();
        *ndev = 0;
        return RP_ERR_NOT_SUPPORTED;
    }
    if (*ndev == 0) {
        snprintf(why, whylen, "no CUDA device: none visible");
        return RP_ERR_NOT_SUPPORTED;
    }
    return RP_OK;
}

static void rp_nc_info(rp__gpu_info_t *info)
{
    memset(info, 0, sizeof(*info));
    (void)cudaDriverGetVersion(&info->driver_version);
    (void)cudaRuntimeGetVersion(&info->runtime_version);
    (void)ncclGetVersion(&info->nccl_version);
    if (cudaGetDeviceCount(&info->ndev) != cudaSuccess) {
        info->ndev = 0;
        (void)cudaGetLastError();
    }
    for (int i = 0; i < info->ndev && i < RP_GPU_INFO_MAX; i++) {
        rp__gpu_devinfo_t *d = &info->dev[i];
        struct cudaDeviceProp prop;

        if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) {
            continue;
        }
        snprintf(d->name, sizeof(d->name), "%.95s", prop.name);
        d->mem_bytes = prop.totalGlobalMem;
        d->cc_major = prop.major;
        d->cc_minor = prop.minor;
        (void)cudaDeviceGetPCIBusId(d->pci_bus_id, (int)sizeof(d->pci_bus_id),
                                    i);
    }
}

static int rp_nc_mem_kind(const void *p, int *device_p)
{
    struct cudaPointerAttributes a;

    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged) {
        *device_p = a.device;
        return 1;
    }
    return 0;
}

static rp_status_t rp_nc_bind(int device)
{
    RP_NC_CUDA("cudaSetDevice", cudaSetDevice(device));
    return RP_OK;
}

static void *rp_nc_host_alloc(size_t bytes)
{
    void *p = NULL;

    /* Portable: the copy stream may be used from another thread. */
    if (cudaHostAlloc(&p, bytes > 0 ? bytes : 1, cudaHostAllocPortable) !=
        cudaSuccess) {
        (void)rp__nc_cuda_fail("cudaHostAlloc", cudaGetLastError());
        return NULL;
    }
    return p;
}

static void rp_nc_host_free(void *p)
{
    if (p != NULL) {
        (void)cudaFreeHost(p);
    }
}

static rp_status_t rp_nc_stream_create(void **stream_p)
{
    cudaStream_t s;

    /* Non-blocking: the copies must not serialise with the legacy default
     * stream the application may be computing on. */
    RP_NC_CUDA("cudaStreamCreateWithFlags",
               cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream_p = s;
    return RP_OK;
}

static void rp_nc_stream_destroy(void *stream)
{
    if (stream != NULL) {
        (void)cudaStreamDestroy((cudaStream_t)stream);
    }
}

static rp_status_t rp_nc_stream_order(void *copy, void *after)
{
    cudaEvent_t ev;
    rp_status_t rc = RP_OK;

    RP_NC_CUDA("cudaEventCreateWithFlags",
               cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    if (cudaEventRecord(ev, (cudaStream_t)after) != cudaSuccess ||
        cudaStreamWaitEvent((cudaStream_t)copy, ev, 0) != cudaSuccess) {
        rc = rp__nc_cuda_fail("ordering the copy stream", cudaGetLastError());
    }
    /* Safe once the wait is enqueued: CUDA keeps what it needs. */
    (void)cudaEventDestroy(ev);
    return rc;
}

static rp_status_t rp_nc_copy_async(void *dst, const void *src, size_t bytes,
                                    void *stream)
{
    RP_NC_CUDA("cudaMemcpyAsync",
               cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                               (cudaStream_t)stream));
    return RP_OK;
}

static rp_status_t rp_nc_dev_alloc(size_t bytes, void **p)
{
    RP_NC_CUDA("cudaMalloc", cudaMalloc(p, bytes > 0 ? bytes : 1));
    return RP_OK;
}

static void rp_nc_dev_free(void *p)
{
    if (p != NULL) {
        (void)cudaFree(p);
    }
}

static rp_status_t rp_nc_dev_memset(void *p, int byte, size_t bytes,
                                    void *stream)
{
    RP_NC_CUDA("cudaMemsetAsync",
               cudaMemsetAsync(p, byte, bytes, (cudaStream_t)stream));
    return RP_OK;
}

_Static_assert(sizeof(ncclUniqueId) == RP_GPU_UID_BYTES,
               "RP_GPU_UID_BYTES must be NCCL_UNIQUE_ID_BYTES");

static const rp__gpu_ops_t rp_nc_ops = {
    .abi = RP_GPU_ABI,
    .name = "nccl",
    .probe = rp_nc_probe,
    .info = rp_nc_info,
    .mem_kind = rp_nc_mem_kind,
    .bind = rp_nc_bind,
    .unique_id = rp__nc_unique_id,
    .comm_create = rp__nc_comm_create,
    .comm_destroy = rp__nc_comm_destroy,
    .comm_abort = rp__nc_comm_abort,
    .allreduce = rp__nc_allreduce,
    .broadcast = rp__nc_broadcast,
    .allgather = rp__nc_allgather,
    .group_start = rp__nc_group_start,
    .group_end = rp__nc_group_end,
    .stream_wait = rp__nc_stream_wait,
    .event_record = rp__nc_event_record,
    .event_wait = rp__nc_event_wait,
    .event_destroy = rp__nc_event_destroy,
    .host_alloc = rp_nc_host_alloc,
    .host_free = rp_nc_host_free,
    .stream_create = rp_nc_stream_create,
    .stream_destroy = rp_nc_stream_destroy,
    .stream_order = rp_nc_stream_order,
    .copy_async = rp_nc_copy_async,
    .dev_alloc = rp_nc_dev_alloc,
    .dev_free = rp_nc_dev_free,
    .dev_memset = rp_nc_dev_memset,
};

/* The one exported symbol (the module is built with hidden visibility). */
__attribute__((visibility("default")))
const rp__gpu_ops_t *rp_gpu_module_v1(const rp__gpu_host_t *host);

const rp__gpu_ops_t *rp_gpu_module_v1(const rp__gpu_host_t *host)
{
    rp__nc_host = host;
    return &rp_nc_ops;
}
