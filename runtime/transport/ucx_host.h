/*
 * The library's side of the UCX module (ucx_host.c): the host table the
 * entry point was given, through which the module logs and pings.
 */
#ifndef RP_TRANSPORT_UCX_HOST_H
#define RP_TRANSPORT_UCX_HOST_H

#include "transport/module.h"

/* Keep @host for the calls of ucx_host.c; the entry point calls it once,
 * before anything else of the module runs. */
void rp__ucx_host_set(const rp__transport_host_t *host);

#endif /* RP_TRANSPORT_UCX_HOST_H */
