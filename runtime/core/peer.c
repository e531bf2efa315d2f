/*
 * Publishes and reads peer cards through the bootstrap key-value store.
 */
#include "config.h"

#include "core/peer.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

rp_status_t rp__peer_publish(rp_bootstrap_t *bs)
{
    rp_peer_card_t card;

    memset(&card, 0, sizeof(card));
    card.magic = RP_PEER_CARD_MAGIC;
    card.rank = (uint32_t)bs->rank;
    card.size = (uint32_t)bs->size;
    card.pid = (uint32_t)getpid();
    card.node_id = (uint32_t)bs->node_id;
    memcpy(card.node_name, bs->node_name, sizeof(card.node_name));
    card.node_name[sizeof(card.node_name) - 1] = '\0';
    return bs->ops->put(bs, RP_PEER_CARD_KEY, &card, sizeof(card));
}

rp_status_t rp__peer_fetch(rp_bootstrap_t *bs, int rank, rp_peer_card_t *card)
{
    void *data = NULL;
    size_t len = 0;
    rp_status_t status;

    status = bs->ops->get(bs, rank, RP_PEER_CARD_KEY, &data, &len);
    if (status == RP_ERR_NOT_FOUND) {
        rp_error("bootstrap: rank %d published no card (is it running "
                 "ringpoint of the same version?)", rank);
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
        card->size != (uint32_t)bs->size) {
        rp_error("bootstrap: the card read for rank %d names rank %u of %u "
                 "(magic 0x%08x): the exchange is inconsistent", rank,
                 card->rank, card->size, card->magic);
        goto err_free;
    }
    free(data);
    return RP_OK;

err_free:
    free(data);
    return RP_ERR_BOOTSTRAP;
}
