/*
 * The UCX module's entry point: the ops table it hands libringpoint, and
 * the few internals of libringpoint its files call (the logger, the
 * status strings, the liveness prober), defined here as calls through the
 * host table, since the module cannot reach the library's hidden symbols.
 * Only the entry point is exported (see runtime/local.mk).
 */
#include "config.h"

#include "transport/module.h"
#include "transport/ucx_int.h"
#include "util/log.h"

#include <stdarg.h>

static const rp__transport_host_t *rp_ucx_host;

void rp__vlog(rp_log_level_t level, const char *fmt, va_list ap)
{
    rp_ucx_host->vlog((int)level, fmt, ap);
}

void rp__log(rp_log_level_t level, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rp_ucx_host->vlog((int)level, fmt, ap);
    va_end(ap);
}

rp_log_level_t rp__log_level(void)
{
    return (rp_log_level_t)rp_ucx_host->log_level();
}

const char *rp_status_string(rp_status_t status)
{
    return rp_ucx_host->status_string(status);
}

rp_status_t rp__live_create(int rank, int size, uint64_t timeout_s,
                            rp_live_card_t *card, rp_live_t **live_p)
{
    return rp_ucx_host->live_create(rank, size, timeout_s, card, live_p);
}

void rp__live_watch(rp_live_t *live, int peer, const rp_live_card_t *card)
{
    rp_ucx_host->live_watch(live, peer, card);
}

bool rp__live_lost(rp_live_t *live, int peer, uint64_t *silent_ms)
{
    return rp_ucx_host->live_lost(live, peer, silent_ms);
}

void rp__live_addr_str(const rp_live_card_t *card, char *buf, size_t len)
{
    rp_ucx_host->live_addr_str(card, buf, len);
}

void rp__live_destroy(rp_live_t *live)
{
    rp_ucx_host->live_destroy(live);
}

static const rp_transport_ops_t rp_ucx_ops = {
    .name = "ucx",
    .connect = rp__ucx_connect,
    .isend = rp__ucx_isend,
    .irecv = rp__ucx_irecv,
    .cancel = rp__ucx_cancel,
    .progress = rp__ucx_progress,
    .block = rp__ucx_block,
    .peer_status = rp__ucx_peer_status,
    .flush = rp__ucx_flush,
    .describe_stall = rp__ucx_describe_stall,
    .destroy = rp__ucx_destroy,
};

static rp_status_t rp_ucx_module_create(rp_bootstrap_t *bs,
                                        const rp__transport_settings_t *set,
                                        rp_transport_t **tp_p)
{
    rp_status_t status = rp__ucx_create(bs, set, tp_p);

    if (status == RP_OK) {
        (*tp_p)->ops = &rp_ucx_ops;
    }
    return status;
}

static const rp__transport_module_t rp_ucx_module = {
    .abi = RP_TRANSPORT_ABI,
    .name = "ucx",
    .version = RP_UCX_VERSION,
    .create = rp_ucx_module_create,
};

/* A host of another ABI, or one whose structures were laid out otherwise,
 * gets NULL: the loader reports it rather than calling through a table it
 * does not share. */
__attribute__((visibility("default"))) const rp__transport_module_t *
rp_transport_module_v1(const rp__transport_host_t *host)
{
    if (host == NULL || host->abi != RP_TRANSPORT_ABI ||
        host->transport_size != sizeof(rp_transport_t) ||
        host->bootstrap_size != sizeof(rp_bootstrap_t)) {
        return NULL;
    }
    rp_ucx_host = host;
    return &rp_ucx_module;
}
