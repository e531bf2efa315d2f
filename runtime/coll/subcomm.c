/*
 * Sub-communicators (ringpoint/subcomm.h, subcomm.h): creating them from a
 * context and freeing them. Creation is one allgather over the parent of
 * every rank's record (subcomm_plan.h): the color and key, or the list's
 * length and hash, whether the arguments are valid, and the tag ids the
 * rank's process already holds. Every rank then decides alike: a bad
 * argument anywhere fails the call on every rank, and each new
 * sub-communicator takes the lowest id none of its members holds.
 */
#include "config.h"

#include "ringpoint/subcomm.h"
#include "coll/comm.h"
#include "coll/progress.h"
#include "coll/select.h"
#include "coll/subcomm.h"
#include "coll/subcomm_plan.h"
#include "core/context.h"
#include "core/fork.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(RP__SUBCOMM_IDS == RP_COMM_SEQ_ID_MAX &&
               RP__SUBCOMM_IDS == RP__SUBCOMM_ID_WORDS * 64,
               "the tag ids, the context's bitmap and the records differ");

static rp_context_h rp_job_of(rp_context_h ctx)
{
    return ctx->sub != NULL ? ctx->sub->job : ctx;
}

static rp_status_t rp_sub_args(const char *what, rp_context_h ctx,
                               rp_context_h *sub_p)
{
    if (sub_p != NULL) {
        *sub_p = NULL;
    }
    if (ctx == NULL || sub_p == NULL) {
        rp_error("%s: %s is NULL", what, ctx == NULL ? "ctx" : "sub_p");
        return RP_ERR_INVALID_ARG;
    }
    return rp__fork_check(what);
}

/* Every rank's record of @ctx into @recs (ctx->comm->size of them), after
 * the non-blocking collectives queued before. */
static rp_status_t rp_sub_exchange(rp_context_h ctx, rp__subcomm_rec_t *rec,
                                   rp__subcomm_rec_t **recs_p)
{
    rp_comm_t *c = ctx->comm;
    rp__subcomm_rec_t *recs = calloc((size_t)c->size, sizeof(*recs));
    rp_status_t status;

    *recs_p = NULL;
    if (recs == NULL) {
        rp_error("sub-communicator: out of memory for %d ranks", c->size);
        return RP_ERR_NO_MEMORY;
    }
    memcpy(rec->ids, rp_job_of(ctx)->sub_ids, sizeof(rec->ids));
    rp__comm_sync(c);
    status = rp__comm_allgather(c, rec, recs, sizeof(*rec));
    if (status != RP_OK) {
        free(recs);
        return status;
    }
    *recs_p = recs;
    return RP_OK;
}

static void rp_sub_comm_free(rp_comm_t *s)
{
    if (s == NULL) {
        return;
    }
    free(s->reqs);
    free(s->work.ptr);
    free(s->tmp.ptr);
    free(s->fuse.ptr);
    free(s);
}

/* The communicator over @world[0..n) (job ranks) with this rank at
 * @rank: the job's settings, no segment, no hierarchy (subcomm.h). */
static rp_comm_t *rp_sub_comm_new(rp_comm_t *root, const int *world, int n,
                                  int rank, int id, const char *name)
{
    rp_comm_t *s = calloc(1, sizeof(*s));

    if (s == NULL) {
        return NULL;
    }
    s->tp = root->tp;
    s->rank = rank;
    s->size = n;
    s->op = "collective";
    s->timeout_ns = root->timeout_ns;
    s->spin_ns = s->spin_fg_ns = root->spin_fg_ns;
    s->spin_bg_ns = root->spin_bg_ns;
    s->yield = root->yield;
    s->algo = root->algo;
    /* The job's cuts: the same on every rank, and the algorithm's choice
     * changes the time, never the bits (eval.h). */
    s->rd_max_bytes = root->rd_max_bytes;
    s->seg_bytes = root->seg_bytes;
    s->window = root->window;
    s->compression = root->compression;
    s->shm_max = s->shm_ar_max = s->shm_ag_max = root->shm_max;
    s->world = world;
    s->parent = root;
    s->seq_base = rp__comm_user_base((unsigned)id);
    s->name = name;
    return s;
}

/* This rank's context in the sub-communicator of @parent's ranks
 * @members[0..m), in which it is @rank, under tag id @id. */
static rp_status_t rp_sub_new(rp_context_h parent, const int *members, int m,
                              int rank, int id, rp_context_h *sub_p)
{
    rp_context_h job = rp_job_of(parent), ctx;
    rp__subcomm_t *d;
    char list[64];

    ctx = calloc(1, sizeof(*ctx));
    d = calloc(1, sizeof(*d));
    if (ctx == NULL || d == NULL) {
        goto err_nomem;
    }
    d->world = calloc((size_t)m, sizeof(int));
    if (d->world == NULL) {
        goto err_nomem;
    }
    for (int i = 0; i < m; i++) {
        d->world[i] = rp__comm_world(parent->comm, members[i]);
    }
    rp__subcomm_format(d->world, m, list, sizeof(list));
    snprintf(d->name, sizeof(d->name), "sub-communicator %d (job ranks %s)",
             id, list);
    ctx->comm = rp_sub_comm_new(job->comm, d->world, m, rank, id, d->name);
    if (ctx->comm == NULL) {
        goto err_nomem;
    }
    d->parent = parent;
    d->job = job;
    d->id = id;
    d->rank = rank;
    d->size = m;
    d->parent_rank = parent->comm->rank;
    /* Borrowed from the job; checkpoints and the GPU path stay its own
     * (rp_cuda_set_stream and rp_cuda_device on a sub-communicator act on
     * the job's GPU path, which is this process's; the backend refuses
     * device buffers). */
    ctx->gpu = job->gpu;
    ctx->bootstrap = job->bootstrap;
    ctx->settings = job->settings;
    ctx->left = job->left;
    ctx->right = job->right;
    ctx->transport = job->transport;
    ctx->coll_device = &rp__subcomm_backend;
    ctx->sub = d;
    d->next = parent->subs;
    parent->subs = ctx;
    job->sub_ids[id / 64] |= UINT64_C(1) << (id % 64);
    rp_debug("%s: rank %d of %d", d->name, rank, m);
    *sub_p = ctx;
    return RP_OK;

err_nomem:
    rp_error("sub-communicator: out of memory for %d ranks", m);
    if (d != NULL) {
        free(d->world);
    }
    free(d);
    free(ctx);
    return RP_ERR_NO_MEMORY;
}

/* The members' records agree on an id; make this rank's context. */
static rp_status_t rp_sub_join(const char *what, rp_context_h ctx,
                               const rp__subcomm_rec_t *recs,
                               const int *members, int m, int rank,
                               rp_context_h *sub_p)
{
    int id = rp__subcomm_pick_id(recs, members, m);

    if (id < 0) {
        char list[64];

        rp__subcomm_format(members, m, list, sizeof(list));
        rp_error("%s: the ranks %s already hold %d live sub-communicators "
                 "between them, the most there can be: free some with "
                 "rp_comm_free", what, list, RP__SUBCOMM_IDS);
        return RP_ERR_NO_MEMORY;
    }
    return rp_sub_new(ctx, members, m, rank, id, sub_p);
}

rp_status_t rp_comm_split(rp_context_h ctx, int color, int key,
                          rp_context_h *sub_p)
{
    const char *what = "rp_comm_split";
    rp__subcomm_rec_t rec = {.color = color, .key = key};
    rp__subcomm_rec_t *recs;
    int *members = NULL, m, rank, bad;
    rp_status_t status = rp_sub_args(what, ctx, sub_p);

    if (status != RP_OK) {
        return status;
    }
    if (color < 0 && color != RP_UNDEFINED) {
        rec.bad = RP__SUBCOMM_BAD_COLOR;
    }
    status = rp_sub_exchange(ctx, &rec, &recs);
    if (status != RP_OK) {
        return status;
    }
    bad = rp__subcomm_first_bad(recs, ctx->comm->size);
    if (bad >= 0) {
        rp_error("%s: rank %d passed color %d, %s: pass a color of 0 or "
                 "more, or RP_UNDEFINED to join none", what, bad,
                 (int)recs[bad].color, rp__subcomm_bad_string(recs[bad].bad));
        status = RP_ERR_INVALID_ARG;
        goto out;
    }
    members = calloc((size_t)ctx->comm->size, sizeof(int));
    if (members == NULL) {
        rp_error("%s: out of memory for %d ranks", what, ctx->comm->size);
        status = RP_ERR_NO_MEMORY;
        goto out;
    }
    m = rp__subcomm_split_members(recs, ctx->comm->size, ctx->comm->rank,
                                  RP_UNDEFINED, members, &rank);
    if (m > 0) {
        status = rp_sub_join(what, ctx, recs, members, m, rank, sub_p);
    }
out:
    free(members);
    free(recs);
    return status;
}

rp_status_t rp_comm_create_group(rp_context_h ctx, const int *ranks, int n,
                                 rp_context_h *sub_p)
{
    const char *what = "rp_comm_create_group";
    rp__subcomm_rec_t rec = {.n = n};
    rp__subcomm_rec_t *recs;
    char list[64];
    int at, r, rank = -1;
    rp_status_t status = rp_sub_args(what, ctx, sub_p);

    if (status != RP_OK) {
        return status;
    }
    /* Checked here, reported after the exchange: every rank must take
     * part in it and fail alike. */
    rec.bad = rp__subcomm_list_check(ranks, n, ctx->comm->size, &at);
    rec.hash = rp__subcomm_list_hash(rec.bad == RP__SUBCOMM_OK ? ranks : NULL,
                                     n);
    rp__subcomm_format(ranks, n, list, sizeof(list));
    if (rec.bad != RP__SUBCOMM_OK) {
        rp_error("%s: the list [%s] has %s (entry %d); pass distinct ranks "
                 "of ctx, 0..%d", what, list, rp__subcomm_bad_string(rec.bad),
                 at, ctx->comm->size - 1);
    }
    status = rp_sub_exchange(ctx, &rec, &recs);
    if (status != RP_OK) {
        return status;
    }
    r = rp__subcomm_first_bad(recs, ctx->comm->size);
    if (r >= 0) {
        rp_error("%s: rank %d passed a list that has %s (this rank's: [%s]); "
                 "every rank must pass the same list of distinct ranks of "
                 "ctx, 0..%d", what, r, rp__subcomm_bad_string(recs[r].bad),
                 list, ctx->comm->size - 1);
        status = RP_ERR_INVALID_ARG;
        goto out;
    }
    r = rp__subcomm_list_differs(recs, ctx->comm->size, &rec);
    if (r >= 0) {
        rp_error("%s: rank %d passed a different list (%d ranks) than this "
                 "rank's [%s]: every rank of ctx must pass the same list",
                 what, r, (int)recs[r].n, list);
        status = RP_ERR_MISMATCH;
        goto out;
    }
    for (int i = 0; i < n; i++) {
        if (ranks[i] == ctx->comm->rank) {
            rank = i;
        }
    }
    if (rank >= 0) {
        status = rp_sub_join(what, ctx, recs, ranks, n, rank, sub_p);
    }
out:
    free(recs);
    return status;
}

/* Free @sub, its own subs first; the queue has drained. */
static void rp_sub_destroy(rp_context_h sub)
{
    rp__subcomm_t *d = sub->sub;
    rp_context_h job = d->job, *pp;

    while (sub->subs != NULL) {
        rp_sub_destroy(sub->subs);
    }
    for (pp = &d->parent->subs; *pp != NULL; pp = &(*pp)->sub->next) {
        if (*pp == sub) {
            *pp = d->next;
            break;
        }
    }
    job->sub_ids[d->id / 64] &= ~(UINT64_C(1) << (d->id % 64));
    if (sub->comm->broken != RP_OK) {
        /* Its abandoned requests may still point into it. */
        d->next = job->sub_dead;
        job->sub_dead = sub;
        return;
    }
    rp_sub_comm_free(sub->comm);
    free(d->world);
    free(d);
    free(sub);
}

void rp_comm_free(rp_context_h sub)
{
    if (sub == NULL || rp__fork_check("rp_comm_free") != RP_OK) {
        return;
    }
    if (sub->sub == NULL) {
        rp_error("rp_comm_free: ctx is the job's context, not a "
                 "sub-communicator: free it with rp_finalize");
        return;
    }
    /* What is queued runs first: the peers expect it, and the requests
     * are then complete (progress.c's rp_wait touches no freed memory). */
    rp__comm_sync(sub->comm);
    rp_sub_destroy(sub);
}

void rp__subcomm_free_all(rp_context_h job)
{
    if (job->subs == NULL) {
        return;
    }
    rp__comm_sync(job->comm);
    while (job->subs != NULL) {
        rp_sub_destroy(job->subs);
    }
}

void rp__subcomm_reap(rp_context_h job)
{
    while (job->sub_dead != NULL) {
        rp_context_h sub = job->sub_dead;

        job->sub_dead = sub->sub->next;
        rp_sub_comm_free(sub->comm);
        free(sub->sub->world);
        free(sub->sub);
        free(sub);
    }
}
