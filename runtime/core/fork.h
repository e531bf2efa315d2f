/*
 * A process forked after rp_init (a PyTorch DataLoader worker with the
 * fork start method, a helper that runs a command) holds a copy of the
 * context: the UCX endpoints, the sockets and the shared memory of its
 * parent, but none of its threads (progress, liveness, async writer).
 * Whatever the copy did would go out on the parent's connections (a
 * collective, a checkpoint, the disconnect of rp_finalize) or wait for a
 * thread that is not there. So the child is told apart by its pid and
 * the library refuses to act in it: public calls fail with RP_ERR_STATE,
 * rp_finalize returns without touching anything, and the stop signals go
 * back to the dispositions the application had, so that SIGTERM ends the
 * child as it would without ringpoint.
 */
#ifndef RP_CORE_FORK_H
#define RP_CORE_FORK_H

#include <stdbool.h>
#include <stddef.h>

#include "ringpoint/status.h"

/* What rp__fork_guard_init needs to know from before rp_init opened
 * anything: the descriptors already open (the application's). */
typedef struct rp__fork_fds {
    int *open;
    size_t n;
} rp__fork_fds_t;

/* Note the descriptors open now (at the start of rp_init). A failure
 * leaves @before without a list: then nothing is marked later. */
void rp__fork_fds_note(rp__fork_fds_t *before);

/* Free what rp__fork_fds_note kept. */
void rp__fork_fds_free(rp__fork_fds_t *fds);

/* At the end of rp_init: record the calling process as the one that owns
 * the contexts, install the fork handler once, and make every descriptor
 * that rp_init opened (the PMIx server connection, UCX's listening and
 * connected sockets, its shared memory) close-on-exec, so that a command
 * the rank runs (system(), popen, fork and exec) does not keep them open:
 * a rank that dies must close its connections, or its peers notice only
 * at a timeout. Descriptors UCX opens later (a connection it accepts or
 * makes after rp_init) are not marked: telling them from the
 * application's would take guesses, and such a leak only delays the
 * peers' verdict to RINGPOINT_PEER_TIMEOUT (the liveness socket is
 * close-on-exec). */
void rp__fork_guard_init(const rp__fork_fds_t *before);

/* Whether this process is a child forked after rp__fork_guard_init. */
bool rp__fork_is_child(void);

/* RP_OK in the owning process; in a forked child, say once that @what
 * cannot be done there and return RP_ERR_STATE. */
rp_status_t rp__fork_check(const char *what);

#endif /* RP_CORE_FORK_H */
