/*
 * The UCX transport as a loadable module (runtime/transport/ucx_*.c,
 * installed as $(pkglibdir)/ringpoint-ucx.so), dlopen'ed by
 * rp__transport_create the first time a job of several ranks creates a
 * transport (loader.c). libringpoint itself never links UCX, so whatever
 * loads the library without communicating (import ringpoint, the offline
 * commands of ringpoint-ckpt, load_state_dict) never runs UCX's start-up
 * code, which reads ucx.conf files, the working directory's among them.
 *
 * The module cannot call libringpoint's hidden internals: it gets what it
 * needs through the host table handed to its one exported function, and
 * gives back a table holding its create function. The structures of
 * transport.h and bootstrap.h cross between the two as they are, so they
 * are part of this ABI.
 */
#ifndef RP_TRANSPORT_MODULE_H
#define RP_TRANSPORT_MODULE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "transport/liveness.h"
#include "transport/transport.h"

/* Bumped whenever the tables below, or the structures of transport.h and
 * bootstrap.h that cross into the module, change; a module of another ABI
 * is refused with a message rather than called through a wrong table. */
#define RP_TRANSPORT_ABI 1

/* The one symbol the module exports: const rp__transport_module_t
 * *SYMBOL(const rp__transport_host_t *). */
#define RP_TRANSPORT_MODULE_SYMBOL "rp_transport_module_v1"
#define RP_UCX_MODULE_NAME         "ringpoint-ucx.so"

/* What libringpoint lends the module: one logger (two would interleave
 * badly and disagree on the level), and the liveness prober of remote
 * hosts, which has no UCX in it and stays in the library. */
typedef struct rp__transport_host {
    uint32_t abi;             /* RP_TRANSPORT_ABI */
    size_t transport_size;    /* sizeof(rp_transport_t) */
    size_t bootstrap_size;    /* sizeof(rp_bootstrap_t) */
    void (*vlog)(int level, const char *fmt, va_list ap)
        __attribute__((format(printf, 2, 0))); /* level: rp_log_level_t */
    int (*log_level)(void);
    const char *(*status_string)(rp_status_t status);
    rp_status_t (*live_create)(int rank, int size, uint64_t timeout_s,
                               rp_live_card_t *card, rp_live_t **live_p);
    void (*live_watch)(rp_live_t *live, int peer, const rp_live_card_t *card);
    bool (*live_lost)(rp_live_t *live, int peer, uint64_t *silent_ms);
    void (*live_addr_str)(const rp_live_card_t *card, char *buf, size_t len);
    void (*live_destroy)(rp_live_t *live);
} rp__transport_host_t;

typedef struct rp__transport_module {
    uint32_t abi;             /* RP_TRANSPORT_ABI */
    const char *name;         /* "ucx" */
    const char *version;      /* of the UCX it was built against */
    /* Create a transport and publish its address through @bs (see
     * rp__transport_create); @set: the transport's settings, read by
     * rp_init from the settings table. */
    rp_status_t (*create)(rp_bootstrap_t *bs,
                          const rp__transport_settings_t *set,
                          rp_transport_t **tp_p);
} rp__transport_module_t;

typedef const rp__transport_module_t *(*rp__transport_module_fn)(
    const rp__transport_host_t *host);

/* The module's entry point (ucx_module.c), RP_TRANSPORT_MODULE_SYMBOL. */
__attribute__((visibility("default"))) const rp__transport_module_t *
rp_transport_module_v1(const rp__transport_host_t *host);

/* Open the UCX module once per process (thread-safe) and return its table;
 * NULL with @why filled (the path and the reason) when it cannot be. The
 * first call's @set (RINGPOINT_UCX_MODULE, RINGPOINT_UCX_CONFIG_CWD) says
 * where from and how. */
const rp__transport_module_t *
rp__transport_module(const rp__transport_settings_t *set, char *why,
                     size_t whylen);

/* Where the module is looked for: @given (RINGPOINT_UCX_MODULE) unless it
 * is NULL or empty, else the build tree's when this code runs from the
 * build tree (make check, the Python tests), else
 * $(pkglibdir)/ringpoint-ucx.so. Into @buf. */
void rp__transport_module_path(const char *given, char *buf, size_t len);

#endif /* RP_TRANSPORT_MODULE_H */
