/*
 * Liveness of the hosts of remote peers, independent of what their
 * applications are doing.
 *
 * A host that vanishes (power, a switch, a cut link) closes nothing: the
 * bytes sent to it wait unacknowledged in the kernel, TCP retransmits for
 * about 15 minutes (tcp_retries2) and its keepalive never starts while
 * data is outstanding, so UCX reports nothing for that long. A peer that
 * is merely busy (a long step, a checkpoint write) looks the same from
 * inside a collective, and a collective may legitimately wait minutes.
 *
 * So each process runs one small thread with a UDP socket: it answers
 * pings at once, whatever the application does, and pings the hosts of the
 * peers it watches every interval. A watched peer from which no answer
 * came for the timeout is lost: its host is down or cut off, not busy. A
 * peer that never answered at all is not judged (UDP may be filtered
 * between the hosts); a wait that would have judged it warns once.
 * The thread notices when it was itself stopped (the whole job suspended,
 * a stalled machine) and then starts the count again instead of blaming
 * the peers.
 */
#ifndef RP_TRANSPORT_LIVENESS_H
#define RP_TRANSPORT_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* Addresses of a host that a card carries. */
#define RP_LIVE_MAX_ADDRS 4

/* What a process publishes so that others can ping it. */
typedef struct rp_live_card {
    uint64_t token;                   /* random; answers must carry it */
    uint32_t addrs[RP_LIVE_MAX_ADDRS]; /* IPv4, network order; 0: none */
    uint16_t port;                    /* network order; 0: not pingable */
    uint16_t pad[3];
} rp_live_card_t;

typedef struct rp_live rp_live_t;

/* Open the socket of process @rank of @size and fill @card. The thread
 * starts with the first watched peer. */
rp_status_t rp__live_create(int rank, int size, uint64_t timeout_s,
                            rp_live_card_t *card, rp_live_t **live_p);

/* Start pinging @peer, described by its @card; its silence counts from
 * now. A card without a port or address is not watched. */
void rp__live_watch(rp_live_t *live, int peer, const rp_live_card_t *card);

/* Whether @peer is watched and has not answered for the timeout; then
 * *silent_ms says for how long. */
bool rp__live_lost(rp_live_t *live, int peer, uint64_t *silent_ms);

/* The first address of @card as text, for messages. */
void rp__live_addr_str(const rp_live_card_t *card, char *buf, size_t len);

/* Stop the thread and close the socket; NULL is ignored. */
void rp__live_destroy(rp_live_t *live);

#endif /* RP_TRANSPORT_LIVENESS_H */
