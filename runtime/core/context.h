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

/* What a sub-communicator's context adds (coll/subcomm.c). Such a context
 * borrows the job's bootstrap, transport, settings and ring cards and has
 * a communicator of its own; checkpoints and the GPU path stay the job's. */
#define RP__SUBCOMM_IDS 1024 /* tag ids (coll/comm.h): 10 bits */
typedef struct rp__subcomm {
    struct rp_context *parent; /* the context it was made from */
    struct rp_context *job;    /* the job's context */
    struct rp_context *next;   /* the next of parent's live subs */
    int id;                    /* its tag id, the same on every member */
    int rank, size;            /* this rank in it, and its size */
    int parent_rank;           /* this rank in @parent */
    int *world;                /* the members' job ranks, in rank order */
    char name[96];             /* "sub-communicator 3 (job ranks 0,2,4)" */
} rp__subcomm_t;

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
     * rp__gpu_init; on a sub-context, coll/subcomm.h's, which refuses
     * them); NULL: host buffers only. coll/backend.h. */
    const struct rp__coll_backend *coll_device;
    /* Sub-communicators (coll/subcomm.c): NULL for the job's context, else
     * what this sub-context adds; the live sub-contexts made from this one
     * (freed with it); on the job's context, the tag ids its process's
     * live sub-communicators hold, one bit each. */
    rp__subcomm_t *sub;
    struct rp_context *subs;
    /* On the job's context: freed sub-contexts whose communicator broke,
     * kept until the transport is gone (requests abandoned after an error
     * may still point into them, coll/comm_create.h). */
    struct rp_context *sub_dead;
    uint64_t sub_ids[RP__SUBCOMM_IDS / 64];
};

/* Calls that take the job's context only (checkpoints): RP_OK for it,
 * RP_ERR_INVALID_ARG, logged for @what, for a sub-communicator's. */
rp_status_t rp__context_job_only(rp_context_h ctx, const char *what);

#endif /* RP_CORE_CONTEXT_H */
