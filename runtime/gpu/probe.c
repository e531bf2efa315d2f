/*
 * Is a pointer device memory? Asked of the CUDA driver the application
 * already loaded (libcuda.so.1, opened with RTLD_NOLOAD so it is never
 * loaded by us): device memory cannot exist in a process without it, so
 * "no driver" means "host memory" and the host path costs one flag test.
 * This works before and without the GPU module, which lets a task that
 * has no module installed get a clear error instead of a crash when it
 * hands ringpoint a device buffer.
 *
 * The driver API is reached by name with its documented numeric values
 * (cuda.h: CU_POINTER_ATTRIBUTE_MEMORY_TYPE = 2, CU_MEMORYTYPE_DEVICE = 2,
 * CUDA_SUCCESS = 0), so no CUDA header is needed to build libringpoint.
 */
#include "config.h"

#include "gpu/gpu.h"

#include <dlfcn.h>
#include <link.h>
#include <stdatomic.h>

#define RP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define RP_CU_MEMORYTYPE_DEVICE 2

typedef int (*rp_cu_ptr_attr_fn)(void *data, int attribute,
                                 unsigned long long ptr);

static _Atomic(rp_cu_ptr_attr_fn) rp_pr_fn;
/* dl_iterate_phdr's count of objects ever loaded, when the driver was last
 * found missing: asking dlopen again is worth it only once it changed.
 * (dlopen with RTLD_NOLOAD still searches the library path, a series of
 * failed openat calls that every host collective would pay.) */
static _Atomic unsigned long long rp_pr_adds_seen = ~0ull;

static int rp_pr_adds_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    *(unsigned long long *)arg = info->dlpi_adds;
    return 1; /* the counter is the same in every entry: stop at the first */
}

static rp_cu_ptr_attr_fn rp_pr_driver(void)
{
    rp_cu_ptr_attr_fn fn = atomic_load_explicit(&rp_pr_fn,
                                                memory_order_acquire);
    void *h;

    if (fn != NULL) {
        return fn;
    }
    /* Asked again until the driver shows up (an application may start
     * CUDA after rp_init), but only when a library was loaded since the
     * last time it was missing. */
    {
        unsigned long long adds = 0;

        dl_iterate_phdr(rp_pr_adds_cb, &adds);
        if (adds == atomic_load_explicit(&rp_pr_adds_seen,
                                         memory_order_relaxed)) {
            return NULL;
        }
        h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD | RTLD_LOCAL);
        if (h == NULL) {
            atomic_store_explicit(&rp_pr_adds_seen, adds,
                                  memory_order_relaxed);
            return NULL;
        }
    }
    *(void **)&fn = dlsym(h, "cuPointerGetAttribute");
    if (fn != NULL) {
        atomic_store_explicit(&rp_pr_fn, fn, memory_order_release);
    }
    /* The reference is kept: the application holds the driver anyway. */
    return fn;
}

bool rp__gpu_probe_driver(void)
{
    return rp_pr_driver() != NULL;
}

bool rp__gpu_probe_is_device(const void *p)
{
    rp_cu_ptr_attr_fn fn;
    unsigned int type = 0;

    if (p == NULL) {
        return false;
    }
    fn = rp_pr_driver();
    if (fn == NULL) {
        return false;
    }
    /* Host memory CUDA never saw answers an error: host. */
    return fn(&type, RP_CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
              (unsigned long long)(uintptr_t)p) == 0 &&
           type == RP_CU_MEMORYTYPE_DEVICE;
}
