/*
 * Picks a transport implementation by name.
 */
#include "config.h"

#include "transport/transport.h"
#include "util/log.h"

#include <string.h>

rp_status_t rp__transport_create(const char *name, rp_bootstrap_t *bs,
                                 const rp__transport_settings_t *set,
                                 rp_transport_t **tp_p)
{
    if (strcmp(name, "ucx") == 0) {
#ifdef HAVE_UCX
        return rp__transport_ucx_create(bs, set, tp_p);
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
