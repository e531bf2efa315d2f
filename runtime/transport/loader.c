/*
 * Finding and opening the UCX module (module.h), once per process; a
 * failure is remembered with its reason.
 *
 * UCX's configuration files. UCX 1.13 reads ucx.conf files once per
 * process, in libucs's constructor, so when the module is dlopen'ed: from
 * its system directory, from ../etc beside libucs, from $HOME, from
 * $UCX_CONFIG_DIR, and last from the current working directory, each
 * overriding the ones before it (environment variables override them
 * all). No variable turns the working directory's file off. A user who
 * starts a job in a directory another user can write to would take that
 * user's settings (UCX_LOG_FILE truncates any file the user may write).
 * So the module is opened from a helper thread that has a working
 * directory of its own (unshare(CLONE_FS)), "/": the constructor reads
 * "/ucx.conf", which only the administrator can write, in place of the
 * caller's "./ucx.conf", and no other thread of the process sees its
 * working directory change. The other files stay: UCX_CONFIG_DIR names a
 * directory on purpose. RINGPOINT_UCX_CONFIG_CWD=1 opens the module in
 * place, working directory and all, for a user who wants UCX's own
 * behaviour. Where the thread cannot have a directory of its own, a
 * ./ucx.conf is refused rather than read.
 *
 * If the application loaded UCX itself before (its own MPI, say), UCX has
 * read its files already, with the application's working directory, and
 * nothing here can change that.
 */
#include "config.h"

#include "transport/liveness.h"
#include "transport/module.h"
#include "util/log.h"
#include "util/str.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RP_PKGLIBDIR
#define RP_PKGLIBDIR "/usr/local/lib/ringpoint"
#endif

static pthread_once_t rp_tl_once = PTHREAD_ONCE_INIT;
static const rp__transport_module_t *rp_tl_module;
static char rp_tl_why[PATH_MAX + 1024];
/* The first caller's settings, copied: rp_tl_open runs under
 * pthread_once, which passes nothing. */
static pthread_mutex_t rp_tl_set_lock = PTHREAD_MUTEX_INITIALIZER;
static bool rp_tl_set_taken;
static char rp_tl_module_given[PATH_MAX];
static rp__transport_settings_t rp_tl_set;

static void rp_tl_vlog(int level, const char *fmt, va_list ap)
{
    if (level <= (int)rp__log_level()) {
        rp__vlog((rp_log_level_t)level, fmt, ap);
    }
}

static int rp_tl_log_level(void)
{
    return (int)rp__log_level();
}

static const rp__transport_host_t rp_tl_host = {
    .abi = RP_TRANSPORT_ABI,
    .transport_size = sizeof(rp_transport_t),
    .bootstrap_size = sizeof(rp_bootstrap_t),
    .vlog = rp_tl_vlog,
    .log_level = rp_tl_log_level,
    .status_string = rp_status_string,
    .live_create = rp__live_create,
    .live_watch = rp__live_watch,
    .live_lost = rp__live_lost,
    .live_addr_str = rp__live_addr_str,
    .live_destroy = rp__live_destroy,
};

#ifdef RP_ABS_BUILDDIR
/* Whether this code runs from the build tree it was built in (make check,
 * the Python tests with RINGPOINT_LIBRARY): the object holding it, the
 * library or a tool linking the core, lies under RP_ABS_BUILDDIR. An
 * installed library never looks into a build tree. */
static bool rp_tl_in_build_tree(void)
{
    char real[PATH_MAX];
    size_t n = strlen(RP_ABS_BUILDDIR);
    Dl_info info;

    if (dladdr((void *)rp__transport_module_path, &info) == 0 ||
        info.dli_fname == NULL || realpath(info.dli_fname, real) == NULL) {
        /* The main program, named as it was started: ask the kernel. */
        if (realpath("/proc/self/exe", real) == NULL) {
            return false;
        }
    }
    return strncmp(real, RP_ABS_BUILDDIR, n) == 0 && real[n] == '/';
}
#endif

void rp__transport_module_path(const char *given, char *buf, size_t len)
{
    if (given != NULL && *given != '\0') {
        rp__strlcpy(buf, given, len);
        return;
    }
#ifdef RP_ABS_BUILDDIR
    if (rp_tl_in_build_tree()) {
        snprintf(buf, len, "%s", RP_ABS_BUILDDIR "/runtime/transport/.libs/"
                 RP_UCX_MODULE_NAME);
        return;
    }
#endif
    snprintf(buf, len, "%s", RP_PKGLIBDIR "/" RP_UCX_MODULE_NAME);
}

typedef struct rp_tl_open {
    const char *path;
    void *handle;
    int unshare_errno; /* 0: opened from "/" */
    char why[512];
} rp_tl_open_t;

/* The helper thread: a working directory of its own, "/", then dlopen.
 * dlerror() is per thread, so the reason is taken here. */
static void *rp_tl_open_thread(void *arg)
{
    rp_tl_open_t *o = arg;
    const char *e;

    if (unshare(CLONE_FS) != 0 || chdir("/") != 0) {
        o->unshare_errno = errno != 0 ? errno : EINVAL;
        return NULL;
    }
    o->handle = dlopen(o->path, RTLD_NOW | RTLD_LOCAL);
    if (o->handle == NULL) {
        e = dlerror();
        rp__strlcpy(o->why, e != NULL ? e : "unknown error", sizeof(o->why));
    }
    return NULL;
}

static void rp_tl_open_here(rp_tl_open_t *o)
{
    const char *e;

    o->handle = dlopen(o->path, RTLD_NOW | RTLD_LOCAL);
    if (o->handle == NULL) {
        e = dlerror();
        rp__strlcpy(o->why, e != NULL ? e : "unknown error", sizeof(o->why));
    }
}

/* Open @o->path from a thread whose working directory is "/". Signals are
 * blocked in it, so no handler of the application ever runs there. False
 * when no such thread could be had (o->unshare_errno, or a failed
 * pthread_create). */
static bool rp_tl_open_from_root(rp_tl_open_t *o)
{
    sigset_t all, old;
    pthread_t t;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&t, NULL, rp_tl_open_thread, o);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        o->unshare_errno = rc;
        return false;
    }
    (void)pthread_join(t, NULL);
    return o->unshare_errno == 0;
}

/* dlopen @o->path without letting UCX read ./ucx.conf, unless asked to
 * (@cwd_ok: RINGPOINT_UCX_CONFIG_CWD=1). */
static void rp_tl_dlopen(rp_tl_open_t *o, bool cwd_ok)
{
    struct stat st;

    if (cwd_ok) {
        rp_debug("transport: RINGPOINT_UCX_CONFIG_CWD=1: UCX may read "
                 "./ucx.conf");
        rp_tl_open_here(o);
        return;
    }
    if (rp_tl_open_from_root(o)) {
        return;
    }
    if (stat("ucx.conf", &st) == 0) {
        snprintf(o->why, sizeof(o->why), "the working directory holds a "
                 "ucx.conf, which UCX would read, and it cannot be kept from "
                 "it here (no working directory of its own for the loading "
                 "thread: %s); start elsewhere, or set "
                 "RINGPOINT_UCX_CONFIG_CWD=1 to let UCX read it",
                 strerror(o->unshare_errno));
        return;
    }
    rp_tl_open_here(o);
}

static void rp_tl_open(void)
{
    char path[PATH_MAX], real[PATH_MAX];
    const rp__transport_module_t *mod;
    rp__transport_module_fn entry;
    rp_tl_open_t o;
    void *ucs;

    rp__transport_module_path(rp_tl_set.ucx_module, path, sizeof(path));
    memset(&o, 0, sizeof(o));
    /* Absolute: the helper thread opens it from "/". */
    o.path = realpath(path, real) != NULL ? real : path;
    ucs = dlopen("libucs.so.0", RTLD_LAZY | RTLD_NOLOAD);
    if (ucs != NULL) {
        rp_debug("transport: UCX was loaded before ringpoint's module: it "
                 "read its configuration files then");
        (void)dlclose(ucs);
    }
    rp_tl_dlopen(&o, rp_tl_set.ucx_config_cwd);
    if (o.handle == NULL) {
        snprintf(rp_tl_why, sizeof(rp_tl_why), "the UCX transport module %s "
                 "cannot be loaded: %s", path, o.why);
        return;
    }
    *(void **)&entry = dlsym(o.handle, RP_TRANSPORT_MODULE_SYMBOL);
    mod = entry != NULL ? entry(&rp_tl_host) : NULL;
    if (mod == NULL || mod->abi != RP_TRANSPORT_ABI) {
        snprintf(rp_tl_why, sizeof(rp_tl_why), "%s is not a ringpoint "
                 "transport module of this version (ABI %u expected, %s)",
                 path, RP_TRANSPORT_ABI,
                 entry == NULL ? "no entry point" : "other ABI");
        (void)dlclose(o.handle);
        return;
    }
    /* Never closed: UCX keeps threads that run its code. */
    rp_tl_module = mod;
    rp_debug("transport: module %s loaded (%s, UCX %s)", path, mod->name,
             mod->version);
}

const rp__transport_module_t *
rp__transport_module(const rp__transport_settings_t *set, char *why,
                     size_t whylen)
{
    /* The first caller's settings say where from and how; the module is
     * opened once per process. */
    pthread_mutex_lock(&rp_tl_set_lock);
    if (!rp_tl_set_taken) {
        rp__strlcpy(rp_tl_module_given,
                    set != NULL && set->ucx_module != NULL ? set->ucx_module
                                                           : "",
                    sizeof(rp_tl_module_given));
        rp_tl_set.ucx_module = rp_tl_module_given;
        rp_tl_set.ucx_config_cwd = set != NULL && set->ucx_config_cwd;
        rp_tl_set_taken = true;
    }
    pthread_mutex_unlock(&rp_tl_set_lock);
    (void)pthread_once(&rp_tl_once, rp_tl_open);
    if (rp_tl_module == NULL && why != NULL) {
        rp__strlcpy(why, rp_tl_why, whylen);
    }
    return rp_tl_module;
}
