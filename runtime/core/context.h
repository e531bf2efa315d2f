/*
 * The context: everything one process of a ringpoint job owns.
 */
#ifndef RP_CORE_CONTEXT_H
#define RP_CORE_CONTEXT_H

#include "ringpoint/context.h"
#include "bootstrap/bootstrap.h"
#include "core/settings.h"
#include "core/peer.h"
#include "transport/transport.h"

struct rp_comm;
struct rp__coll_backend;
struct rp__ckpt_engine;
struct rp__gpu;

struct rp_context {
    rp_bootstrap_t *bootstrap;
    rp_settings_t settings;
    rp_peer_card_t left;  /* ring neighbours, from the address exchange */
    rp_peer_card_t right;
    rp_transport_t *transport; /* NULL for a single rank */
    struct rp_comm *comm;      /* the collectives over it */
    struct rp__ckpt_engine *ckpt; /* registered state; NULL until used */
    struct rp__gpu *gpu;       /* the GPU path (runtime/gpu/path.h) */
    /* Runs the collectives on device buffers (the GPU path's, set by
     * rp__gpu_init); NULL: host buffers only. coll/backend.h. */
    const struct rp__coll_backend *coll_device;
};

#endif /* RP_CORE_CONTEXT_H */
