/*
 * The UCX module's entry point: the ops table it hands libringpoint. Only
 * the entry point is exported (see runtime/local.mk); what the module
 * borrows from the library is in ucx_host.c.
 */
#include "config.h"

#include "transport/module.h"
#include "transport/ucx_host.h"
#include "transport/ucx_int.h"

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
    rp__ucx_host_set(host);
    return &rp_ucx_module;
}
