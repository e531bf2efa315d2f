/*
 * The NCCL unique id travels through the bootstrap's key-value exchange,
 * not through the host collectives: it must work where the ranks have no
 * host transport in common yet, and PMIx is what every launcher gives.
 * Rank 0 publishes, all fence, all read rank 0's copy. Each communicator
 * gets a key of its own, so a communicator rebuilt later never reads a
 * stale id.
 */
#include "config.h"

#include "gpu/gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bootstrap/bootstrap.h"
#include "util/log.h"

/* The bootstrap's generation too: the PMIx client outlives a context, so
 * the first communicator of the next rp_init must not read this one's. */
void rp__gpu_uid_key(unsigned bs_gen, unsigned gen, char *buf, size_t len)
{
    snprintf(buf, len, "ringpoint.nccl.uid.%u.%u", bs_gen, gen);
}

rp_status_t rp__gpu_uid_exchange(rp_bootstrap_t *bs, unsigned gen, void *uid,
                                 size_t len)
{
    char key[64];
    void *data = NULL;
    size_t got = 0;
    rp_status_t rc;

    rp__gpu_uid_key(bs->generation, gen, key, sizeof(key));
    if (bs->rank == 0) {
        rc = bs->ops->put(bs, key, uid, len);
        if (rc != RP_OK) {
            return rc;
        }
    }
    rc = bs->ops->fence(bs);
    if (rc != RP_OK) {
        return rc;
    }
    rc = bs->ops->get(bs, 0, key, &data, &got);
    if (rc == RP_ERR_NOT_FOUND) {
        rp_error("GPU: rank 0 published no NCCL id under %s", key);
        return RP_ERR_BOOTSTRAP;
    }
    if (rc != RP_OK) {
        return rc;
    }
    if (got != len) {
        rp_error("GPU: the NCCL id from rank 0 has %zu bytes, expected %zu "
                 "(mixed ringpoint versions?)", got, len);
        free(data);
        return RP_ERR_BOOTSTRAP;
    }
    memcpy(uid, data, len);
    free(data);
    return RP_OK;
}
