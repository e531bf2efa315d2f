/*
 * Publishes and reads peer cards through the bootstrap key-value store.
 */
#include "config.h"

#include "core/peer.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void rp_peer_key(const rp_bootstrap_t *bs, char *key, size_t len)
{
    snprintf(key, len, "%s.%u", RP_PEER_CARD_KEY, bs->generation);
}

rp_status_t rp__peer_publish(rp_bootstrap_t *bs)
{
    rp_peer_card_t card;
    char key[64];

    memset(&card, 0, sizeof(card));
    card.magic = RP_PEER_CARD_MAGIC;
    card.rank = (uint32_t)bs->rank;
    card.size = (uint32_t)bs->size;
    card.pid = (uint32_t)getpid();
    card.node_id = (uint32_t)bs->node_id;
    card.generation = bs->generation;
    memcpy(card.node_name, bs->node_name, sizeof(card.node_name));
    card.node_name[sizeof(card.node_name) - 1] = '\0';
    rp_peer_key(bs, key, sizeof(key));
    return bs->ops->put(bs, key, &card, sizeof(card));
}

rp_status_t rp__peer_fetch(rp_bootstrap_t *bs, int rank, rp_peer_card_t *card)
{
    void *data = NULL;
    size_t len = 0;
    rp_status_t status;
    char key[64];

    rp_peer_key(bs, key, sizeof(key));
    status = bs->ops->get(bs, rank, key, &data, &len);
    if (status == RP_ERR_NOT_FOUND) {
        rp_error("bootstrap: rank %d published no card under %s (this is "
                 "rp_init #%u of this process: does every rank call rp_init "
                 "as often? do all run ringpoint of the same version?)",
                 rank, key, bs->generation + 1);
        return RP_ERR_BOOTSTRAP;
    }
    if (status != RP_OK) {
        return status;
    }
    if (len != sizeof(*card)) {
        rp_error("bootstrap: the card of rank %d has %zu bytes, expected %zu "
                 "(mixed ringpoint versions?)", rank, len, sizeof(*card));
        goto err_free;
    }
    memcpy(card, data, sizeof(*card));
    card->node_name[sizeof(card->node_name) - 1] = '\0';
    if (card->magic != RP_PEER_CARD_MAGIC || card->rank != (uint32_t)rank ||
        card->size != (uint32_t)bs->size ||
        card->generation != bs->generation) {
        rp_error("bootstrap: the card read for rank %d names rank %u of %u "
                 "of rp_init #%u (magic 0x%08x), expected rp_init #%u: the "
                 "exchange is inconsistent", rank, card->rank, card->size,
                 card->generation + 1, card->magic, bs->generation + 1);
        goto err_free;
    }
    free(data);
    return RP_OK;

err_free:
    free(data);
    return RP_ERR_BOOTSTRAP;
}
