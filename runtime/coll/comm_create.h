/*
 * The communicator's assembly (comm_create.c): the top floor of coll/.
 * Creating a communicator runs the set-ups (the tuning table, the node's
 * segment, the hierarchy), which run collectives on it; so this header is
 * for the context that owns the communicator, never for the algorithms or
 * the set-ups themselves (they include comm.h, the ground).
 */
#ifndef RP_COLL_COMM_CREATE_H
#define RP_COLL_COMM_CREATE_H

#include "coll/comm.h"
#include "core/settings.h"
#include "ringpoint/status.h"
#include "transport/transport.h"

rp_status_t rp__comm_create(rp_transport_t *tp, int rank, int size,
                            const rp_settings_t *settings, rp_comm_t **comm_p);
/* Teardown is in two steps because requests abandoned after an error point
 * into the communicator's memory: quiesce (cancel what is posted), destroy
 * the transport, then destroy the communicator. NULL is ignored. */
void rp__comm_quiesce(rp_comm_t *comm);
void rp__comm_destroy(rp_comm_t *comm);

#endif /* RP_COLL_COMM_CREATE_H */
