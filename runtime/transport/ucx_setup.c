/*
 * The UCX transport's set-up and teardown: the context and its worker,
 * this process's card and worker address published through the
 * bootstrap, the endpoint to a peer made from what it published, and
 * closing it all down.
 */
#include "config.h"

#include "transport/ucx_int.h"
#include "util/log.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fill all of @card but its live part. */
static void rp_ucx_card_init(rp_ucx_card_t *card)
{
    const char *value;
    struct stat st;
    ssize_t n;
    int fd;

    memset(card, 0, sizeof(*card));
    card->magic = RP_UCX_CARD_MAGIC;
    card->pid = (uint32_t)getpid();
    if (stat("/proc/self/ns/pid", &st) == 0) {
        card->pidns = (uint64_t)st.st_ino;
    }
    if (stat("/proc/self/ns/net", &st) == 0) {
        card->netns = (uint64_t)st.st_ino;
    }
    value = getenv("SLURMD_NODENAME");
    if (value != NULL && *value != '\0') {
        snprintf(card->node, sizeof(card->node), "%s", value);
    } else if (gethostname(card->node, sizeof(card->node) - 1) != 0) {
        snprintf(card->node, sizeof(card->node), "?");
    }
    fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, card->boot_id, sizeof(card->boot_id) - 1);
        if (n < 0) {
            card->boot_id[0] = '\0';
        }
        close(fd);
    }
}

/* Whether a pid from @peer's card names the same process here, and the
 * two talk without a network between them. A peer in another network
 * namespace (a container, an emulated host) can be cut off from us by its
 * link while its pid lives on: to it the endpoint needs the PEER mode,
 * like to another host. */
static bool rp_ucx_same_host(const rp_ucx_card_t *mine,
                             const rp_ucx_card_t *peer)
{
    return mine->boot_id[0] != '\0' && mine->pidns != 0 &&
           memcmp(mine->boot_id, peer->boot_id, sizeof(mine->boot_id)) == 0 &&
           mine->pidns == peer->pidns && mine->netns == peer->netns;
}


/* Recorded, not reported: the error is news only to a rank that still
 * needs the peer, and peer_status() says so when a wait asks. A connection
 * also fails when its peer finalizes first and exits, while this rank is
 * still closing down: that is a clean end, and must not print an error. */
static void rp_ucx_err_cb(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    rp_ucx_peer_t *peer = arg;

    (void)ep;
    rp_debug("transport: the connection to rank %d failed: %s", peer->rank,
             ucs_status_string(st));
    if (peer->status == RP_OK) {
        peer->error = st;
    }
    peer->ucx->dirty = true;
    peer->status = RP_ERR_PEER_FAILED;
}

/* What @rank published: its card into @card, and the whole blob (card,
 * then worker address) into *@blob_p, the caller's to free. */
static rp_status_t rp_ucx_fetch_card(rp_transport_t *tp, int rank,
                                     rp_ucx_card_t *card, void **blob_p)
{
    rp_ucx_t *ucx = tp->impl;
    void *addr = NULL;
    size_t len = 0;
    rp_status_t status;

    status = tp->bs->ops->get(tp->bs, rank, ucx->key, &addr, &len);
    if (status != RP_OK) {
        rp_error("transport: no UCX address published by rank %d under "
                 "%s (%s)", rank, ucx->key, rp_status_string(status));
        return status == RP_ERR_NOT_FOUND ? RP_ERR_BOOTSTRAP : status;
    }
    if (len <= sizeof(*card) ||
        (memcpy(card, addr, sizeof(*card)), card->magic != RP_UCX_CARD_MAGIC)) {
        rp_error("transport: the UCX address of rank %d is malformed "
                 "(mixed ringpoint versions?)", rank);
        free(addr);
        return RP_ERR_BOOTSTRAP;
    }
    card->boot_id[sizeof(card->boot_id) - 1] = '\0';
    card->node[sizeof(card->node) - 1] = '\0';
    *blob_p = addr;
    return RP_OK;
}

rp_status_t rp__ucx_connect_ep(rp_transport_t *tp, int rank, bool for_recv)
{
    rp_ucx_t *ucx = tp->impl;
    rp_ucx_peer_t *peer = &ucx->peers[rank];
    ucp_ep_params_t params;
    rp_ucx_card_t card;
    void *addr = NULL;
    rp_status_t status;
    ucs_status_t st;

    if (peer->ep != NULL || peer->unreachable) {
        return peer->status;
    }
    status = rp_ucx_fetch_card(tp, rank, &card, &addr);
    if (status != RP_OK) {
        return status;
    }
    snprintf(peer->node, sizeof(peer->node), "%s", card.node);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                        UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.address = (const ucp_address_t *)((char *)addr + sizeof(card));
    params.err_mode = UCP_ERR_HANDLING_MODE_PEER;
    if (rp_ucx_same_host(&ucx->card, &card) && !ucx->peer_errmode) {
        params.err_mode = UCP_ERR_HANDLING_MODE_NONE;
        peer->pid = (pid_t)card.pid;
    }
    if (params.err_mode == UCP_ERR_HANDLING_MODE_PEER && ucx->live != NULL) {
        /* Across a network: its host may vanish without a word. */
        rp__live_watch(ucx->live, rank, &card.live);
        rp__live_addr_str(&card.live, peer->addr, sizeof(peer->addr));
    }
    params.err_handler.cb = rp_ucx_err_cb;
    params.err_handler.arg = peer;
    st = ucp_ep_create(ucx->worker, &params, &peer->ep);
    free(addr);
    if (st != UCS_OK) {
        peer->ep = NULL;
        if (for_recv) {
            rp_debug("transport: cannot connect to rank %d: %s (a receive "
                     "from it goes on: what it sent is here)", rank,
                     ucs_status_string(st));
            peer->unreachable = true;
            peer->error = st;
            peer->status = RP_ERR_PEER_FAILED;
            return RP_OK;
        }
        rp_error("transport: cannot connect to rank %d: %s", rank,
                 ucs_status_string(st));
        return RP_ERR_TRANSPORT;
    }
    rp_debug("transport: connected to rank %d (%s)", rank,
             peer->pid > 0 ? "same host" : "remote");
    return RP_OK;
}

rp_status_t rp__ucx_connect(rp_transport_t *tp, int rank)
{
    return rp__ucx_connect_ep(tp, rank, false);
}

static rp_status_t rp_ucx_alloc(const rp_bootstrap_t *bs,
                                rp_transport_t **tp_p, rp_ucx_t **ucx_p)
{
    rp_transport_t *tp = calloc(1, sizeof(*tp));
    rp_ucx_t *ucx = calloc(1, sizeof(*ucx));

    if (tp == NULL || ucx == NULL) {
        rp_error("transport: out of memory");
        goto err_free;
    }
    ucx->peers = calloc((size_t)bs->size, sizeof(*ucx->peers));
    if (ucx->peers == NULL) {
        rp_error("transport: out of memory for %d peers", bs->size);
        goto err_free;
    }
    for (int i = 0; i < bs->size; i++) {
        ucx->peers[i].ucx = ucx;
        ucx->peers[i].rank = i;
    }
    *tp_p = tp;
    *ucx_p = ucx;
    return RP_OK;

err_free:
    free(ucx);
    free(tp);
    return RP_ERR_NO_MEMORY;
}

static void rp_ucx_free(rp_transport_t *tp, rp_ucx_t *ucx)
{
    free(ucx->peers);
    free(ucx);
    free(tp);
}

/* Close every endpoint: flush those that are healthy, for a bounded time,
 * so the last messages of the last collective are not cut off; force
 * those whose peer failed. */
static void rp_ucx_close_eps(rp_ucx_t *ucx, int size)
{
    ucp_request_param_t param;
    ucs_status_ptr_t *reqs;
    uint64_t deadline;
    bool pending;
    int i;

    reqs = calloc((size_t)size, sizeof(*reqs));
    for (i = 0; i < size; i++) {
        rp_ucx_peer_t *peer = &ucx->peers[i];
        ucs_status_ptr_t ret;

        if (peer->ep == NULL) {
            continue;
        }
        param.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
        param.flags = peer->status == RP_OK && !ucx->dirty
                          ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
        ret = ucp_ep_close_nbx(peer->ep, &param);
        peer->ep = NULL;
        if (reqs != NULL && ret != NULL && !UCS_PTR_IS_ERR(ret)) {
            reqs[i] = ret;
        }
    }
    if (reqs == NULL) {
        return;
    }
    deadline = rp__ucx_now_ns() + RP_UCX_CLOSE_TIMEOUT_NS;
    do {
        ucp_worker_progress(ucx->worker);
        pending = false;
        for (i = 0; i < size; i++) {
            if (reqs[i] == NULL) {
                continue;
            }
            if (ucp_request_check_status(reqs[i]) != UCS_INPROGRESS) {
                ucp_request_free(reqs[i]);
                reqs[i] = NULL;
            } else {
                pending = true;
            }
        }
    } while (pending && rp__ucx_now_ns() < deadline);
    for (i = 0; i < size; i++) {
        if (reqs[i] != NULL) {
            rp_debug("transport: closing the endpoint to rank %d timed out", i);
            ucp_request_free(reqs[i]);
        }
    }
    free(reqs);
}

void rp__ucx_destroy(rp_transport_t *tp)
{
    rp_ucx_t *ucx = tp->impl;

    rp_ucx_close_eps(ucx, tp->size);
    rp__live_destroy(ucx->live);
    ucp_worker_destroy(ucx->worker);
    ucp_cleanup(ucx->context);
    rp_ucx_free(tp, ucx);
}

/* The context, with the configuration UCX read from the environment (and
 * its configuration files, see loader.c) and what ucx_tune.c sets. */
static rp_status_t rp_ucx_init_context(rp_ucx_t *ucx, const rp_bootstrap_t *bs)
{
    ucp_config_t *config;
    ucp_params_t params;
    ucs_status_t st;

    st = ucp_config_read(NULL, NULL, &config);
    if (st != UCS_OK) {
        rp_error("transport: reading the UCX configuration: %s",
                 ucs_status_string(st));
        return RP_ERR_TRANSPORT;
    }
    ucx->owed_min = rp__ucx_tune_config(bs, ucx->oversubscribed, config);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_EPS |
                        UCP_PARAM_FIELD_ESTIMATED_NUM_PPN;
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    /* Ring neighbours and log2(n) partners, not everyone. */
    params.estimated_num_eps = 8;
    params.estimated_num_ppn = (size_t)(bs->local_size > 0 ? bs->local_size : 1);
    st = ucp_init(&params, config, &ucx->context);
    ucp_config_release(config);
    if (st != UCS_OK) {
        rp_error("transport: ucp_init: %s", ucs_status_string(st));
        return RP_ERR_TRANSPORT;
    }
    return RP_OK;
}

static rp_status_t rp_ucx_init_worker(rp_ucx_t *ucx)
{
    ucp_worker_params_t wparams;
    ucs_status_t st;

    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    /* Serialized, not single: the progress thread of the non-blocking
     * collectives and the application's thread take turns on the worker
     * (never at once; coll/progress.c hands it over under a mutex). */
    wparams.thread_mode = UCS_THREAD_MODE_SERIALIZED;
    st = ucp_worker_create(ucx->context, &wparams, &ucx->worker);
    if (st != UCS_OK) {
        rp_error("transport: ucp_worker_create: %s", ucs_status_string(st));
        return RP_ERR_TRANSPORT;
    }
    st = ucp_worker_get_efd(ucx->worker, &ucx->efd);
    if (st != UCS_OK) {
        rp_error("transport: ucp_worker_get_efd: %s", ucs_status_string(st));
        ucp_worker_destroy(ucx->worker);
        return RP_ERR_TRANSPORT;
    }
    return RP_OK;
}

/* Start the liveness prober of remote hosts, whose address goes into this
 * process's card. Without it a lost host is noticed only by
 * RINGPOINT_COLL_TIMEOUT: go on, but say so. */
static void rp_ucx_init_live(rp_ucx_t *ucx, const rp_bootstrap_t *bs)
{
    if (ucx->live_timeout_s > 0 &&
        rp__live_create(bs->rank, bs->size, ucx->live_timeout_s,
                        &ucx->card.live, &ucx->live) != RP_OK) {
        rp_warn("transport: no liveness check of remote hosts; a lost "
                "host is noticed after RINGPOINT_COLL_TIMEOUT");
        ucx->live = NULL;
    }
}

/* Publish this process's card and worker address through @bs, under this
 * bootstrap generation's key. */
static rp_status_t rp_ucx_publish(rp_ucx_t *ucx, rp_bootstrap_t *bs)
{
    ucp_address_t *addr;
    size_t addr_len;
    rp_status_t status;
    ucs_status_t st;
    char *blob;

    st = ucp_worker_get_address(ucx->worker, &addr, &addr_len);
    if (st != UCS_OK) {
        rp_error("transport: ucp_worker_get_address: %s", ucs_status_string(st));
        return RP_ERR_TRANSPORT;
    }
    rp_ucx_card_init(&ucx->card);
    rp_ucx_init_live(ucx, bs);
    blob = malloc(sizeof(ucx->card) + addr_len);
    if (blob == NULL) {
        rp_error("transport: out of memory");
        ucp_worker_release_address(ucx->worker, addr);
        return RP_ERR_NO_MEMORY;
    }
    memcpy(blob, &ucx->card, sizeof(ucx->card));
    memcpy(blob + sizeof(ucx->card), addr, addr_len);
    ucp_worker_release_address(ucx->worker, addr);
    snprintf(ucx->key, sizeof(ucx->key), "%s.%u", RP_UCX_ADDR_KEY,
             bs->generation);
    status = bs->ops->put(bs, ucx->key, blob, sizeof(ucx->card) + addr_len);
    free(blob);
    return status;
}

rp_status_t rp__ucx_create(rp_bootstrap_t *bs,
                           const rp__transport_settings_t *set,
                           rp_transport_t **tp_p)
{
    rp_transport_t *tp;
    rp_ucx_t *ucx;
    rp_status_t status;

    status = rp_ucx_alloc(bs, &tp, &ucx);
    if (status != RP_OK) {
        return status;
    }
    ucx->live_timeout_s = set->peer_timeout_s;
    ucx->peer_errmode = set->peer_errmode;
    ucx->oversubscribed = set->oversubscribed;
    status = rp_ucx_init_context(ucx, bs);
    if (status != RP_OK) {
        goto err_free;
    }
    status = rp_ucx_init_worker(ucx);
    if (status != RP_OK) {
        goto err_context;
    }
    status = rp_ucx_publish(ucx, bs);
    if (status != RP_OK) {
        goto err_worker;
    }
    tp->bs = bs;
    tp->rank = bs->rank;
    tp->size = bs->size;
    tp->seg_hint = rp__ucx_seg_hint();
    tp->impl = ucx;
    *tp_p = tp;
    return RP_OK;

err_worker:
    rp__live_destroy(ucx->live); /* NULL until the card was made */
    ucp_worker_destroy(ucx->worker);
err_context:
    ucp_cleanup(ucx->context);
err_free:
    rp_ucx_free(tp, ucx);
    return status;
}
