/*
 * Finding and opening the GPU module. It is opened at most once per
 * process, and a failure is remembered with its reason, so a task without
 * CUDA pays one failed dlopen at the first device pointer, not one per
 * call, and every later error can say why.
 */
#include "config.h"

#include "gpu/gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/str.h"

#ifndef RP_PKGLIBDIR
#define RP_PKGLIBDIR "/usr/local/lib/ringpoint"
#endif

static pthread_once_t rp_ld_once = PTHREAD_ONCE_INIT;
static const rp__gpu_ops_t *rp_ld_ops;
static char rp_ld_why[512];

static void rp_ld_log(int level, const char *fmt, ...)
{
    va_list ap;

    if (level > (int)rp__log_level()) {
        return;
    }
    va_start(ap, fmt);
    rp__vlog((rp_log_level_t)level, fmt, ap);
    va_end(ap);
}

static const rp__gpu_host_t rp_ld_host = {.log = rp_ld_log};

/* RINGPOINT_GPU_MODULE as rp_init read it; "": the installed one. */
static char rp_ld_path[4096];

void rp__gpu_module_set_path(const char *path)
{
    snprintf(rp_ld_path, sizeof(rp_ld_path), "%s", path != NULL ? path : "");
}

const char *rp__gpu_module_path(void)
{
    return rp_ld_path[0] != '\0' ? rp_ld_path
                                  : RP_PKGLIBDIR "/" RP_GPU_MODULE_NAME;
}

static void rp_ld_open(void)
{
    const char *path = rp__gpu_module_path();
    const rp__gpu_ops_t *ops;
    rp__gpu_module_fn entry;
    void *h;

    /* RTLD_LOCAL: CUDA's and NCCL's symbols stay out of the application's
     * namespace (it may bring its own NCCL, e.g. PyTorch's). */
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();

        snprintf(rp_ld_why, sizeof(rp_ld_why), "the GPU module %.200s "
                 "cannot be loaded: %s", path,
                 e != NULL ? e : "unknown error");
        return;
    }
    *(void **)&entry = dlsym(h, RP_GPU_MODULE_SYMBOL);
    ops = entry != NULL ? entry(&rp_ld_host) : NULL;
    if (ops == NULL || ops->abi != RP_GPU_ABI) {
        snprintf(rp_ld_why, sizeof(rp_ld_why), "%.200s is not a ringpoint GPU "
                 "module of this version (ABI %u expected, %s)", path,
                 RP_GPU_ABI, ops == NULL ? "no entry point" : "other ABI");
        (void)dlclose(h);
        return;
    }
    /* Never closed: NCCL keeps threads that run its code. */
    rp_ld_ops = ops;
    rp_debug("GPU module %s loaded (%s)", path, ops->name);
}

const rp__gpu_ops_t *rp__gpu_module(char *why, size_t whylen)
{
    (void)pthread_once(&rp_ld_once, rp_ld_open);
    if (rp_ld_ops == NULL && why != NULL) {
        rp__strlcpy(why, rp_ld_why, whylen);
    }
    return rp_ld_ops;
}
