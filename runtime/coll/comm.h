/*
 * The communicator: the ranks of a job and the state the collectives keep
 * between calls (a sequence number for tags, persistent scratch buffers,
 * a request pool, the failure notice). One per context.
 *
 * This header is the collectives' ground: the type and the point-to-point
 * calls (comm.c) that every algorithm, the selector and the set-ups use.
 * Above it: the algorithms over the transport (algo.h), the node's segment
 * (shm.h), the path selector (select.h), the hierarchy (hier.h), the
 * non-blocking queue (progress.h), the dispatcher (dispatch.h) and, on
 * top, the communicator's assembly (comm_create.h).
 *
 * Failures: a wait that sees a failed peer, a peer silent for longer than
 * the timeout, or a failure notice from another rank breaks the
 * communicator. It then tells the peers it talked to (so ranks further
 * round the ring learn which rank failed instead of each timing out on its
 * own neighbour), and every later collective returns the same error: a
 * job whose rank died restarts from its checkpoint.
 */
#ifndef RP_COLL_COMM_H
#define RP_COLL_COMM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/coll.h"
#include "ringpoint/types.h"
#include "core/settings.h"
#include "transport/transport.h"

typedef struct rp_comm_buf {
    void *ptr;
    size_t size;
} rp_comm_buf_t;

/* Payload of the failure notice. */
typedef struct rp_comm_notice {
    uint32_t magic;
    int32_t failed;   /* the rank that failed, or -1 if unknown */
    int32_t reporter; /* the rank that saw it first */
    int32_t status;   /* rp_status_t */
} rp_comm_notice_t;

/* The non-blocking collectives' queue and its thread (progress.c). */
struct rp_host_req;
typedef struct rp_comm_progress {
    pthread_mutex_t mu;
    pthread_cond_t work_cv; /* the thread waits here for work */
    pthread_cond_t done_cv; /* the application waits here for completions */
    struct rp_host_req *head, *tail;
    atomic_size_t pending;  /* started and not finished */
    bool started, quit;
    pthread_t thread;
} rp_comm_progress_t;

typedef struct rp_comm {
    rp_transport_t *tp; /* NULL when size == 1 */
    int rank;
    int size;
    uint32_t seq;       /* collective counter, part of every tag */
    const char *op;     /* name of the collective running, for messages */
    rp_status_t broken; /* first failure; RP_OK while healthy */

    /* settings */
    uint64_t timeout_ns; /* silence tolerated from a peer; 0: forever */
    uint64_t spin_ns;    /* poll this long before sleeping: one of */
    uint64_t spin_fg_ns; /* ... in the application's thread */
    uint64_t spin_bg_ns; /* ... in the progress thread */
    bool yield;          /* give the CPU away between polls */
    /* Work of the running collective's own that a wait does between
     * polls that found nothing, a piece per call (false once none is
     * left): it fills the time the transfer leaves the core idle. */
    bool (*idle)(void *arg);
    void *idle_arg;
    rp_coll_algo_t algo;
    size_t rd_max_bytes; /* auto: recursive doubling up to this size */
    size_t seg_bytes;    /* pipelining unit */
    int window;          /* receives posted ahead */
    rp_compression_t compression; /* RINGPOINT_COMPRESSION: the default */

    /* persistent scratch, grown on demand and pre-touched */
    rp_comm_buf_t work; /* float32 partials for fp16/bf16 */
    rp_comm_buf_t tmp;  /* recursive doubling's partner data; ring slots */
    rp_comm_buf_t fuse; /* grouped allreduce's packed buffers */
    rp_treq_t *reqs;    /* request pool for one collective */
    size_t nreqs;

    /* failure notices */
    bool *touched;           /* peers this rank has exchanged messages with */
    rp_treq_t notice_req;    /* posted receive for a notice */
    rp_comm_notice_t notice; /* its buffer */
    rp_treq_t *notice_sends; /* one per rank, for forwarding */
    rp_comm_notice_t notice_out;

    rp_comm_progress_t prog;

    /* The node's shared segment when all ranks share a node (shm.h), else
     * NULL; collectives of at most shm_max bytes go through it. */
    struct rp__shm *shm;
    size_t shm_max;
    size_t shm_ar_max, shm_ag_max; /* allreduce's, allgather's (comm_create.c) */
    bool shm_on; /* RINGPOINT_COLL_SHM */
    bool cma_on; /* RINGPOINT_COLL_CMA */
    bool shm_max_set; /* RINGPOINT_COLL_SHM_MAX given */

    /* A sub-communicator of the hierarchy (hier.h): its ranks' places in
     * the job (world[i] is rank i's), the job's communicator, which owns
     * the failure notices, and the tag range apart from it. NULL, NULL, 0
     * for the job's own. */
    const int *world;
    struct rp_comm *parent;
    uint32_t seq_base;
    /* An API sub-communicator's name for messages ("sub-communicator 3
     * (job ranks 0,2,4)"); NULL for the job's and the hierarchy's. */
    const char *name;
    /* The job's hierarchy when its ranks span nodes (hier.h), else NULL;
     * auto takes it for allreduces up to hier_max (tune.h, select.c). */
    struct rp__hier *hier;
    size_t hier_max;
} rp_comm_t;

/* Tags: 28 bits of sequence number, 16 bits of message index. The 28
 * bits are split so that the messages of different communicators between
 * the same two ranks never match each other:
 *
 *   bit 27  26  25..16  15..0
 *       0   0   the job's sequence, 26 bits
 *       1   the hierarchy's sub-communicators' sequence, 27 bits
 *       0   1   id      a sub-communicator's sequence, 16 bits
 *
 * and the last value (all ones) is the failure notices'. The job's prefix
 * and the hierarchy's never end in all ones (their counters stop short of
 * it), a sub-communicator's has bit 27 clear. The hierarchy's
 * sub-communicators never share two ranks (a node's ranks, its leaders,
 * the lanes are disjoint pairs), so they need no id. A sub-communicator of
 * the API (coll/subcomm.c) gets an id that no live communicator of any of
 * its members holds, agreed on at creation, the same on every member: two
 * live ones that share two ranks have different ids. Each counter wraps;
 * that is safe because the transport matches messages of one source and
 * one tag in the order they were sent, and because a communicator has far
 * fewer collectives in flight than its wrap (the queue runs one at a time,
 * and no rank gets more than a few collectives ahead of a peer it needs). */
#define RP_COMM_SEQ_MASK    0x0FFFFFFFu
#define RP_COMM_NOTICE_SEQ  RP_COMM_SEQ_MASK
#define RP_COMM_SEQ_WRAP    0x07FFFFFFu
#define RP_COMM_SEQ_SUB     0x08000000u
#define RP_COMM_SEQ_JOB     0x03FFFFFFu /* the job's bits */
#define RP_COMM_SEQ_USER    0x04000000u /* an API sub-communicator */
#define RP_COMM_SEQ_ID_SHIFT 16
#define RP_COMM_SEQ_ID_MAX  1024u
#define RP_COMM_SEQ_USER_SEQ 0xFFFFu

/* The sequence prefix of the API sub-communicator @id. */
static inline uint32_t rp__comm_user_base(unsigned id)
{
    return RP_COMM_SEQ_USER |
           ((id & (RP_COMM_SEQ_ID_MAX - 1)) << RP_COMM_SEQ_ID_SHIFT);
}

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t rp__comm_now_ns(void);

/* Start a collective: check that the communicator is healthy, bump the
 * sequence number, name the operation for messages. */
rp_status_t rp__comm_begin(rp_comm_t *c, const char *op);

static inline uint64_t rp__comm_tag(const rp_comm_t *c, size_t index)
{
    const uint32_t keep = (c->seq_base & RP_COMM_SEQ_USER) != 0
                              ? RP_COMM_SEQ_USER_SEQ
                          : c->seq_base != 0 ? RP_COMM_SEQ_WRAP
                                             : RP_COMM_SEQ_JOB;

    return ((uint64_t)(((c->seq & keep) | c->seq_base) & RP_COMM_SEQ_MASK)
            << 16) |
           (index & 0xFFFFu);
}

/* The job rank of this communicator's rank @q (the transport's peer). */
static inline int rp__comm_world(const rp_comm_t *c, int q)
{
    return c->world != NULL ? c->world[q] : q;
}

/* The communicator that owns the failure notices. */
static inline rp_comm_t *rp__comm_root(rp_comm_t *c)
{
    return c->parent != NULL ? c->parent : c;
}

/* Requests for the running collective: @n zeroed, done ones. */
rp_status_t rp__comm_reqs(rp_comm_t *c, size_t n, rp_treq_t **reqs_p);

/* A scratch buffer of at least @size bytes, contents undefined. */
rp_status_t rp__comm_scratch(rp_comm_t *c, rp_comm_buf_t *buf, size_t size,
                             void **ptr_p);

/* Post a send/receive of the running collective; on error the
 * communicator is broken and the status returned. */
rp_status_t rp__comm_isend(rp_comm_t *c, int peer, size_t index,
                           const void *buf, size_t len, rp_treq_t *req);
rp_status_t rp__comm_irecv(rp_comm_t *c, int peer, size_t index, void *buf,
                           size_t len, rp_treq_t *req);

/* Wait for @req, progressing everything, for at most the timeout since
 * the last sign of life. Returns RP_OK or breaks the communicator. */
rp_status_t rp__comm_wait(rp_comm_t *c, rp_treq_t *req);

/* Break the communicator (once; later calls return the first error),
 * telling the peers; @failed: the job rank that failed, or -1. A
 * sub-communicator breaks the job's with it. */
rp_status_t rp__comm_fail(rp_comm_t *c, rp_status_t status, int failed);
/* A failure notice arrived (c->notice_req done): adopt it. */
rp_status_t rp__comm_fail_noticed(rp_comm_t *c);
/* @peer stayed silent past the timeout: say so and break. */
rp_status_t rp__comm_timed_out(rp_comm_t *c, int peer);

/* Wait for every request in @reqs[0..n). */
rp_status_t rp__comm_wait_all(rp_comm_t *c, rp_treq_t *reqs, size_t n);

/* Send @slen bytes of @sbuf to @peer while receiving @rlen bytes from it
 * into @rbuf (either length may be 0: that half is skipped), message
 * @index, and wait for both; @reqs: two requests of the pool. */
rp_status_t rp__comm_exchange(rp_comm_t *c, rp_treq_t *reqs, int peer,
                              size_t index, const void *sbuf, size_t slen,
                              void *rbuf, size_t rlen);

/* After an error inside a collective: cancel the pool's requests still in
 * flight. The communicator is already broken. */
void rp__comm_abandon(rp_comm_t *c);

#endif /* RP_COLL_COMM_H */
