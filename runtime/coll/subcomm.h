/*
 * Sub-communicators of the API (ringpoint/subcomm.h): contexts over a
 * subset of the job's ranks (subcomm.c), their backend (subcomm_backend.c)
 * and the pure plan behind their creation (subcomm_plan.h).
 *
 * A sub-context borrows the job's bootstrap, transport and settings and has
 * a communicator of its own, built like the hierarchy's: its members' job
 * ranks (world), the job's communicator as parent (failure notices, the
 * non-blocking queue and its thread, progress.c) and a tag prefix with an
 * id agreed on at creation (comm.h). It has no node segment and no
 * hierarchy: every collective takes the flat algorithms over the
 * transport, which evaluate the same expression (eval.h) as every other
 * path, so a sub-communicator's results are the bits a job of its ranks
 * would get. A size-1 sub-communicator copies, without the transport.
 */
#ifndef RP_COLL_SUBCOMM_H
#define RP_COLL_SUBCOMM_H

#include "coll/backend.h"
#include "core/context.h"

/* What a sub-context's collectives go through: it refuses device buffers,
 * and names the sub-communicator in the errors of the host collectives it
 * hands them to. */
extern const rp__coll_backend_t rp__subcomm_backend;

/* rp_finalize of the job's context: free the sub-contexts still live
 * (before its last barrier), then, after the transport is gone, those
 * whose communicator broke. */
void rp__subcomm_free_all(rp_context_h job);
void rp__subcomm_reap(rp_context_h job);

#endif /* RP_COLL_SUBCOMM_H */
