/*
 * The non-blocking host collectives' queue and the thread that runs it
 * (progress.c). The queue's state is part of the communicator
 * (rp_comm_progress_t in comm.h); the thread runs each collective through
 * the dispatcher (dispatch.h), as the blocking calls do.
 */
#ifndef RP_COLL_PROGRESS_H
#define RP_COLL_PROGRESS_H

#include <stdatomic.h>

#include "coll/comm.h"
#include "coll/dispatch.h"

/* The progress thread: init at create, stop (after it ran what is queued)
 * at quiesce, fini at destroy. */
void rp__progress_init(rp_comm_t *c);
void rp__progress_stop(rp_comm_t *c);
void rp__progress_fini(rp_comm_t *c);
/* Wait until no non-blocking collective is queued or running. */
void rp__comm_drain(rp_comm_t *c);

/* Before a blocking collective: order it after the non-blocking ones, and
 * take the communicator back from the progress thread. One atomic load
 * when nothing is queued. A sub-communicator's are the job's queue and
 * thread (progress.c). */
static inline void rp__comm_sync(rp_comm_t *c)
{
    if (atomic_load_explicit(&rp__comm_root(c)->prog.pending,
                             memory_order_acquire) != 0) {
        rp__comm_drain(c);
    }
}

/* Queue @a on the communicator's progress thread (the job's, for a
 * sub-communicator) and return its request; the grouped arrays are
 * copied. */
rp_status_t rp__coll_start(rp_comm_t *c, const rp__coll_args_t *a,
                           rp_request_h *req_p);

#endif /* RP_COLL_PROGRESS_H */
