/*
 * Peer cards: what each rank publishes about itself through the bootstrap
 * so that others can reach it. The transports append their addresses under
 * keys of their own; the card carries the identity every transport needs to
 * check that it connected to the process it meant to.
 */
#ifndef RP_CORE_PEER_H
#define RP_CORE_PEER_H

#include <stdint.h>

#include "bootstrap/bootstrap.h"

/* Followed by ".<generation>" of the bootstrap (see bootstrap.h). */
#define RP_PEER_CARD_KEY   "ringpoint.card"
#define RP_PEER_CARD_MAGIC 0x72706332u /* "rpc2" */

typedef struct rp_peer_card {
    uint32_t magic;
    uint32_t rank;
    uint32_t size;
    uint32_t pid;
    uint32_t node_id;
    uint32_t generation; /* the bootstrap's: which rp_init of the process */
    char node_name[RP_BOOTSTRAP_NAME_MAX];
} rp_peer_card_t;

/* Publish this rank's card (before the fence). */
rp_status_t rp__peer_publish(rp_bootstrap_t *bs);

/* Fetch and check @rank's card (after the fence). A card that is missing,
 * of the wrong length or names another rank is a bootstrap error. */
rp_status_t rp__peer_fetch(rp_bootstrap_t *bs, int rank, rp_peer_card_t *card);

#endif /* RP_CORE_PEER_H */
