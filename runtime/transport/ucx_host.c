/*
 * The few internals of libringpoint the module's files call (the logger,
 * the status strings, the liveness prober), defined here as calls through
 * the host table the library handed the entry point: the module cannot
 * reach the library's hidden symbols. Below every other file of the
 * module, so that the entry point calls the transport's files and they
 * never call back into it.
 */
#include "config.h"

#include "transport/liveness.h"
#include "transport/module.h"
#include "transport/ucx_host.h"
#include "util/log.h"

#include <stdarg.h>

static const rp__transport_host_t *rp_ucx_host;

void rp__ucx_host_set(const rp__transport_host_t *host)
{
    rp_ucx_host = host;
}


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
