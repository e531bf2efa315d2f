/*
 * Non-blocking host collectives: a queue and the thread that runs it.
 *
 * A start call checks its arguments, queues the collective and returns; a
 * progress thread, started with the first one, runs the queue in order
 * with the same code as the blocking calls, so results are the blocking
 * calls' bits and completion follows call order. Progress needs nothing
 * from the application: the thread waits on the transport (poll, then
 * sleep on the UCX event descriptor) inside a collective and on a condition
 * variable between them, so it costs no CPU when idle.
 *
 * Why a thread runs whole collectives rather than the application's
 * thread driving a state machine from rp_test: the algorithms stay one
 * sequential piece of code each (the blocking ones), and communication
 * advances while the application computes without calling in.
 *
 * One thread at a time owns the communicator: the progress thread while
 * anything is queued, otherwise the application's thread. A blocking call
 * first waits for the queue to drain (one atomic load when it is empty, so
 * small blocking calls cost what they did), which also orders it after the
 * non-blocking calls started before it. The mutex hands the communicator's
 * state over between the two; UCX's worker is created SERIALIZED for the
 * same reason.
 *
 * Sub-communicators (the hierarchy's, the API's: coll/subcomm.c) share the
 * job's transport, so they share its queue and thread too: a request on a
 * sub-communicator goes into the job's queue (rp__comm_root) and the
 * thread runs it on the sub-communicator. Two threads, one a
 * sub-communicator's, would drive the one UCX worker at once; a lock
 * around each collective would serialise them as well, but in whatever
 * order the threads took it, which differs between ranks and deadlocks
 * two collectives that the ranks take in opposite orders. One queue runs
 * them in call order, so ranks that issue calls on different
 * communicators in the same order never wait on each other in a cycle;
 * and a blocking call on any of them drains the job's queue first.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/progress.h"
#include "coll/request.h"
#include "util/log.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* How long rp_wait polls for completion before sleeping on the condition
 * variable: a wakeup through the kernel costs more than a small
 * collective takes, so a short poll finishes most of them sooner. */
#define RP_WAIT_POLL_NS (50ULL * 1000)

typedef struct rp_host_req {
    struct rp_request base; /* first: the public handle points here */
    rp_comm_t *comm;
    struct rp_host_req *next;
    atomic_bool done;
    rp__coll_args_t args;
} rp_host_req_t;

static bool rp_host_test(struct rp_request *req)
{
    rp_host_req_t *h = (rp_host_req_t *)req;

    return atomic_load_explicit(&h->done, memory_order_acquire);
}

static rp_status_t rp_host_wait(struct rp_request *req)
{
    rp_host_req_t *h = (rp_host_req_t *)req;
    rp_comm_t *c = h->comm;
    rp_comm_progress_t *p;
    uint64_t end;

    /* Done: the communicator may be gone already (a sub-communicator
     * freed after its queue drained), so touch nothing of it. */
    if (rp_host_test(req)) {
        return req->status;
    }
    p = &rp__comm_root(c)->prog;
    end = rp__comm_now_ns() + RP_WAIT_POLL_NS;

    /* Oversubscribed, the poll yields: the progress thread may need this
     * core. (c->yield is set once at creation: safe to read here.) */
    for (int i = 0; !rp_host_test(req); i++) {
        if (c->yield) {
            sched_yield();
        }
        if ((i & 63) == 63 && rp__comm_now_ns() >= end) {
            break;
        }
    }
    if (!rp_host_test(req)) {
        pthread_mutex_lock(&p->mu);
        while (!atomic_load_explicit(&h->done, memory_order_acquire)) {
            pthread_cond_wait(&p->done_cv, &p->mu);
        }
        pthread_mutex_unlock(&p->mu);
    }
    return req->status;
}

static void rp_host_release(struct rp_request *req)
{
    free(req);
}

static const rp__request_ops_t rp_host_ops = {
    .name = "host",
    .test = rp_host_test,
    .wait = rp_host_wait,
    .release = rp_host_release,
};

static void *rp_progress_main(void *arg)
{
    rp_comm_t *c = arg;
    rp_comm_progress_t *p = &c->prog;

    pthread_mutex_lock(&p->mu);
    for (;;) {
        rp_host_req_t *h;
        rp_status_t status;

        while (p->head == NULL && !p->quit) {
            pthread_cond_wait(&p->work_cv, &p->mu);
        }
        if (p->head == NULL) {
            break; /* quit, and the queue is empty */
        }
        h = p->head;
        p->head = h->next;
        if (p->head == NULL) {
            p->tail = NULL;
        }
        pthread_mutex_unlock(&p->mu);

        /* The application computes meanwhile: poll only briefly before
         * sleeping on the transport, so as not to take its core. h->comm:
         * c's own or a sub-communicator's (the file's comment). */
        h->comm->spin_ns = h->comm->spin_bg_ns;
        status = rp__coll_run(h->comm, &h->args);
        h->comm->spin_ns = h->comm->spin_fg_ns;
        if (status != RP_OK && h->comm->name != NULL) {
            rp_error("non-blocking %s on %s, as its rank %d, failed: %s",
                     h->comm->op, h->comm->name, h->comm->rank,
                     rp_status_string(status));
        }

        pthread_mutex_lock(&p->mu);
        h->base.status = status;
        /* After this store the application may free h. */
        atomic_store_explicit(&h->done, true, memory_order_release);
        atomic_fetch_sub_explicit(&p->pending, 1, memory_order_release);
        pthread_cond_broadcast(&p->done_cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void rp__progress_init(rp_comm_t *c)
{
    rp_comm_progress_t *p = &c->prog;

    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->work_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    atomic_init(&p->pending, 0);
}

void rp__progress_stop(rp_comm_t *c)
{
    rp_comm_progress_t *p = &c->prog;

    if (!p->started) {
        return;
    }
    /* The thread runs what is queued before it leaves: the peers expect
     * those collectives. */
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    p->started = false;
}

void rp__progress_fini(rp_comm_t *c)
{
    rp_comm_progress_t *p = &c->prog;

    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->work_cv);
    pthread_mutex_destroy(&p->mu);
}

void rp__comm_drain(rp_comm_t *c)
{
    rp_comm_progress_t *p = &rp__comm_root(c)->prog;

    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
        pthread_cond_wait(&p->done_cv, &p->mu);
    }
    pthread_mutex_unlock(&p->mu);
}

/* A copy of @a whose grouped arrays and table live in the same
 * allocation. */
static rp_host_req_t *rp_host_req_new(rp_comm_t *c, const rp__coll_args_t *a)
{
    size_t n = a->kind == RP__COLL_ALLREDUCE_GROUP ||
                       a->kind == RP__COLL_REDUCE_SCATTER_GROUP
                   ? a->nbufs
                   : 0;
    size_t nt = a->table != NULL ? a->ntable : 0;
    rp_host_req_t *h;
    void **ptrs;
    size_t *counts;

    h = malloc(sizeof(*h) + n * (2 * sizeof(void *) + sizeof(size_t)) +
               nt * sizeof(size_t));
    if (h == NULL) {
        rp_error("collectives: out of memory for a request");
        return NULL;
    }
    memset(h, 0, sizeof(*h));
    h->base.ops = &rp_host_ops;
    h->base.status = RP_OK;
    h->comm = c;
    atomic_init(&h->done, false);
    h->args = *a;
    ptrs = (void **)(h + 1);
    counts = (size_t *)(ptrs + 2 * n);
    if (n > 0) {
        memcpy(ptrs, a->sendbufs, n * sizeof(void *));
        memcpy(ptrs + n, a->recvbufs, n * sizeof(void *));
        h->args.sendbufs = (const void *const *)ptrs;
        h->args.recvbufs = (void *const *)(ptrs + n);
        if (a->counts != NULL) { /* the grouped reduce-scatter's: table */
            memcpy(counts, a->counts, n * sizeof(size_t));
            h->args.counts = counts;
        }
    }
    if (nt > 0) {
        memcpy(counts + n, a->table, nt * sizeof(size_t));
        h->args.table = counts + n;
    }
    return h;
}

rp_status_t rp__coll_start(rp_comm_t *c, const rp__coll_args_t *a,
                           rp_request_h *req_p)
{
    rp_comm_t *root = rp__comm_root(c);
    rp_comm_progress_t *p = &root->prog;
    rp_host_req_t *h;
    int err;

    h = rp_host_req_new(c, a);
    if (h == NULL) {
        return RP_ERR_NO_MEMORY;
    }
    pthread_mutex_lock(&p->mu);
    if (!p->started) {
        p->quit = false;
        err = pthread_create(&p->thread, NULL, rp_progress_main, root);
        if (err != 0) {
            pthread_mutex_unlock(&p->mu);
            rp_error("collectives: cannot start the progress thread: %s",
                     strerror(err));
            free(h);
            return RP_ERR_NO_MEMORY;
        }
        p->started = true;
    }
    if (p->tail != NULL) {
        p->tail->next = h;
    } else {
        p->head = h;
    }
    p->tail = h;
    atomic_fetch_add_explicit(&p->pending, 1, memory_order_relaxed);
    pthread_cond_signal(&p->work_cv);
    pthread_mutex_unlock(&p->mu);
    *req_p = &h->base;
    return RP_OK;
}
