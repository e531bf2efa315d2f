/*
 * Picks a transport implementation by name. The one there is, "ucx",
 * lives in a module opened on first use (loader.c), so that nothing of
 * UCX runs in a process that never communicates.
 */
#include "config.h"

#include "transport/module.h"
#include "transport/transport.h"
#include "util/log.h"

#include <limits.h>
#include <string.h>

rp_status_t rp__transport_create(const char *name, rp_bootstrap_t *bs,
                                 const rp__transport_settings_t *set,
                                 rp_transport_t **tp_p)
{
    if (strcmp(name, "ucx") == 0) {
#ifdef HAVE_UCX
        const rp__transport_module_t *mod;
        char why[PATH_MAX + 1024];

        mod = rp__transport_module(set, why, sizeof(why));
        if (mod == NULL) {
            rp_error("transport: %s; %d ranks cannot communicate", why,
                     bs->size);
            return RP_ERR_NOT_SUPPORTED;
        }
        return mod->create(bs, set, tp_p);
#else
        rp_error("transport: this ringpoint was built without UCX; "
                 "%d ranks cannot communicate", bs->size);
        return RP_ERR_NOT_SUPPORTED;
#endif
    }
    rp_error("transport: unknown transport '%s'", name);
    return RP_ERR_INVALID_ARG;
}

void rp__transport_destroy(rp_transport_t *tp)
{
    if (tp != NULL) {
        tp->ops->destroy(tp);
    }
}
