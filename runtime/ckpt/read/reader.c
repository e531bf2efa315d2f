/*
 * Restore on any world size.
 *
 * Rank 0 lists the checkpoints (a quick scan: manifest + shard headers)
 * and proposes the newest complete one; a broadcast names it. The bytes
 * to restore are the requested replicated regions, taken in manifest
 * order as one "restore stream" of R bytes, cut into W stripes of the
 * *current* job exactly as a writer cuts its stream. Each rank reads its
 * stripe of that stream from whichever old shards hold it (several, when
 * the world size changed), reading whole chunks and checking their CRCs,
 * plus its own per-rank regions; nothing is written into the application's
 * memory yet. An allreduce(MIN) of a verdict decides for everyone: all
 * good, then the replicated regions are rebuilt on every rank from the
 * ranks' stripes (on one node each rank reads its peers' stripe buffers
 * straight into its regions; else rounds of allgather and a scatter copy)
 * and the per-rank ones are copied in; a bad CRC or unreadable file on
 * any rank, then every rank tries the next older checkpoint; a region
 * that does not fit the checkpoint, then every rank fails.
 *
 * Everything taken from the manifest is checked against the registered
 * table before it sizes an allocation or an offset: names, kinds and sizes
 * must match, so a crafted manifest cannot make this allocate more than
 * the application registered.
 */
#include "config.h"

#include "ckpt/read/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog/catalog.h"
#include "ckpt/catalog/validate.h"
#include "ckpt/engine/devstage.h"
#include "ckpt/engine/regions.h"
#include "ckpt/engine/root.h"
#include "ckpt/format/fileio.h"
#include "ckpt/read/reader_int.h"
#include "ckpt/read/reader_plan.h"
#include "coll/backend.h"
#include "core/context.h"
#include "ringpoint/coll.h"
#include "util/log.h"
#include "util/str.h"

static void rp__rd_direct_free(rp__rd_t *r);

static void rp__rd_release(rp__rd_t *r)
{
    uint32_t i;

    if (r->shard_fd >= 0) {
        (void)close(r->shard_fd);
    }
    if (r->shard_dfd >= 0) {
        (void)close(r->shard_dfd);
    }
    if (r->cfd >= 0) {
        (void)close(r->cfd);
    }
    for (i = 0; i < r->npers; i++) {
        free(r->pers[i].tmp);
    }
    free(r->pers);
    free(r->reps);
    if (r->vbuf != r->e->staging) {
        rp__ckpt_io_free(r->vbuf);
    }
    free(r->tmp);
    free(r->send);
    free(r->recv);
    r->send = r->recv = NULL;
    rp__rd_direct_free(r);
    rp__ckpt_manifest_free(&r->m);
    r->shard_fd = r->shard_dfd = r->cfd = -1;
    r->pers = NULL;
    r->reps = NULL;
    r->vbuf = r->tmp = NULL;
    r->npers = r->nreps = 0;
}

/* Copy restore-stream bytes [@v, @v+@n) from @src into the regions. */
static void rp__rd_scatter(const rp__rd_t *r, uint64_t v, uint64_t n,
                           const unsigned char *src)
{
    uint32_t i;

    for (i = 0; i < r->nreps && n > 0; i++) {
        const rp__rd_rep_t *p = &r->reps[i];
        uint64_t s, t;

        if (!rp__rd_clip(p, v, n, &s, &t)) {
            continue;
        }
        if (p->device) {
            rp__ckpt_devstage_in(r->e, (unsigned char *)p->addr +
                                           (s - p->voff),
                                 src + (s - v), (size_t)(t - s));
        } else {
            memcpy((unsigned char *)p->addr + (s - p->voff), src + (s - v),
                   (size_t)(t - s));
        }
    }
}

/* Start round @k of the exchange into @recv (non-blocking: the library's
 * progress thread runs it). */
static rp_status_t rp__rd_post(rp__rd_t *r, uint64_t k, unsigned char *recv,
                               rp_request_h *req)
{
    uint64_t round = r->round, mine = r->vlen > k ? r->vlen - k : 0;

    if (mine < round) {
        /* The last round: the stripe ends inside it (the send buffer is
         * only ever used by this one round). */
        memcpy(r->send, r->vbuf + k, (size_t)mine);
    }
    return rp_iallgather(r->e->ctx, mine < round ? r->send : r->vbuf + k,
                         recv, (size_t)round, RP_DTYPE_UINT8, req);
}

/*
 * The exchange in one copy, where the job has the path (all ranks on one
 * node, cross-memory attach): every rank reads each peer's verified stripe
 * out of the peer's stripe buffer straight into its own regions, its own
 * stripe copied in beside. Against the rounds below (an allgather into a
 * buffer, then the scatter copy out of it) that halves the bytes written
 * per rank; see doc/benchmarks.md. Host regions only (a device region is
 * filled through its staging).
 *
 * The piece lists are made before the agreement, so that running out of
 * memory is this rank's vote against the path, not a rank missing from
 * the collective. False: this rank votes against it (a device region, or
 * no memory for the lists; the rounds need no more than they have).
 */
static bool rp__rd_direct_plan(rp__rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    struct iovec *all;
    size_t used = 0;
    uint32_t j, i;

    for (i = 0; i < r->nreps; i++) {
        if (r->reps[i].device) {
            return false;
        }
    }
    /* A stripe is a contiguous range of the stream, so the stripes cut
     * the regions into at most nreps + size - 1 pieces: one array, each
     * stripe's list a part of it (iov[0] owns it). */
    r->iov = calloc(e->size, sizeof(*r->iov));
    r->niov = calloc(e->size, sizeof(*r->niov));
    all = calloc((size_t)r->nreps + e->size, sizeof(*all));
    if (r->iov == NULL || r->niov == NULL || all == NULL) {
        free(all);
        return false;
    }
    /* Stripe j's pieces: the parts of the regions it covers, in stream
     * order (the regions tile the stream). */
    for (j = 0; j < e->size; j++) {
        uint64_t o, l;

        (void)rp__ckpt_stripe(r->rlen, e->size, j, &o, &l);
        r->iov[j] = all + used;
        for (i = 0; i < r->nreps && l > 0; i++) {
            const rp__rd_rep_t *p = &r->reps[i];
            uint64_t s, t;

            if (rp__rd_clip(p, o, l, &s, &t)) {
                all[used].iov_base = (unsigned char *)p->addr + (s - p->voff);
                all[used++].iov_len = (size_t)(t - s);
                r->niov[j]++;
            }
        }
    }
    return true;
}

static void rp__rd_direct_free(rp__rd_t *r)
{
    if (r->iov != NULL) {
        free(r->iov[0]);
    }
    free(r->iov);
    free(r->niov);
    r->iov = NULL;
    r->niov = NULL;
}

/* The stripes to everyone through rounds of r->round bytes per rank
 * (allgather), each round copied into the regions (the scatter). */
static rp_status_t rp__rd_rounds(rp__rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint64_t round = r->round, k, t0, t1;
    unsigned char *recv[2];
    rp_request_h req = NULL;
    rp_status_t rc = RP_OK;

    /* Two receive buffers: round k+1 travels (on the progress thread)
     * while this thread copies round k into the regions. */
    recv[0] = r->recv;
    /* No receive buffer when nothing is replicated: no offset from NULL
     * (UB, found by tests/fuzz/fuzz_restore under clang's UBSan). */
    recv[1] = r->recv != NULL ? r->recv + (size_t)round * e->size : NULL;
    if (r->maxlen > 0) {
        rc = rp__rd_post(r, 0, recv[0], &req);
    }
    for (k = 0; rc == RP_OK && k < r->maxlen; k += round) {
        unsigned char *in = recv[(k / round) % 2];

        t0 = rp__ckpt_now_ns();
        rc = rp_wait(&req);
        if (rc == RP_OK && k + round < r->maxlen) {
            rc = rp__rd_post(r, k + round, recv[(k / round + 1) % 2], &req);
        }
        t1 = rp__ckpt_now_ns();
        r->gather_ns += t1 - t0;
        if (rc != RP_OK) {
            break;
        }
        for (uint32_t j = 0; j < e->size; j++) {
            uint64_t o, l, n;

            (void)rp__ckpt_stripe(r->rlen, e->size, j, &o, &l);
            n = l > k ? l - k : 0;
            n = n < round ? n : round;
            rp__rd_scatter(r, o + k, n, in + (size_t)j * round);
        }
        r->scatter_ns += rp__ckpt_now_ns() - t1;
    }
    if (req != NULL) {
        (void)rp_wait(&req); /* after a failure: nothing left in flight */
    }
    return rc;
}

/* The replicated regions from everyone's stripes: a one-rank job's own
 * copy, the one-copy exchange (@direct: every rank voted for it) or, where
 * the job has no such path, the rounds. */
static rp_status_t rp__rd_replicated(rp__rd_t *r, bool direct)
{
    rp__ckpt_engine_t *e = r->e;
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc;

    if (e->size == 1) {
        rp__rd_scatter(r, 0, r->vlen, r->vbuf);
        r->scatter_ns += rp__ckpt_now_ns() - t0;
        return RP_OK;
    }
    if (direct) {
        rc = rp__coll_host_allgather_iov(e->ctx, r->vbuf,
                                         (const struct iovec *const *)r->iov,
                                         r->niov);
        r->gather_ns += rp__ckpt_now_ns() - t0;
        r->direct = rc == RP_OK;
        if (rc != RP_ERR_NOT_SUPPORTED) {
            return rc;
        }
    }
    return rp__rd_rounds(r);
}

/* Everything into the application's memory: the replicated regions, then
 * the per-rank ones from their buffers. */
static rp_status_t rp__rd_apply(rp__rd_t *r, bool direct)
{
    rp__ckpt_engine_t *e = r->e;
    rp_status_t rc = rp__rd_replicated(r, direct);

    if (rc != RP_OK) {
        return rc;
    }
    for (uint32_t i = 0; i < r->npers; i++) {
        if (r->pers[i].size == 0) {
            continue; /* may have no address at all */
        } else if (r->pers[i].device) {
            rp__ckpt_devstage_in(e, r->pers[i].addr, r->pers[i].tmp,
                                 (size_t)r->pers[i].size);
        } else {
            memcpy(r->pers[i].addr, r->pers[i].tmp, (size_t)r->pers[i].size);
        }
    }
    return e->dev != NULL ? e->dev->failed : RP_OK;
}

/* Rank 0: the complete checkpoints, newest first (quick scan). */
rp_status_t rp__rd_candidates(rp__ckpt_engine_t *e,
                              char (**names_p)[RP_CKPT_NAME_MAX],
                              size_t *n_p)
{
    rp__ckpt_catalog_t cat;
    char (*names)[RP_CKPT_NAME_MAX];
    size_t i, n = 0;
    rp_status_t rc;

    *names_p = NULL;
    *n_p = 0;
    rp__ckpt_prune_join(e); /* the list is not changing under the scan */
    rc = rp__ckpt_open_root(e, false);
    if (rc == RP_ERR_NOT_FOUND) {
        return RP_OK;
    }
    if (rc != RP_OK) {
        return rc;
    }
    rp__ckpt_cleanup_once(e, RP_LOG_WARN, "restore");
    /* Manifests only: the candidate's shards are checked by all ranks,
     * each its share, when it is read (rp__rd_read). */
    rc = rp__ckpt_catalog_scan_manifests(e->dir, &cat);
    if (rc == RP_ERR_NOT_FOUND) {
        return RP_OK;
    }
    if (rc != RP_OK) {
        return rc;
    }
    names = calloc(cat.count + 1, sizeof(*names));
    if (names == NULL) {
        rp__ckpt_catalog_free(&cat);
        rp_error("restore: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (i = cat.count; i-- > 0;) {
        const rp__ckpt_entry_t *en = &cat.entries[i];

        if (en->state == RP_CKPT_COMPLETE) {
            snprintf(names[n++], RP_CKPT_NAME_MAX, "%s", en->name);
        } else if (en->state != RP_CKPT_INFLIGHT) {
            rp_warn("restore: skipping %s/%s (%s): %s", e->dir, en->name,
                    rp__ckpt_state_name(en->state), en->reason);
        }
    }
    rp__ckpt_catalog_free(&cat);
    *names_p = names;
    *n_p = n;
    return RP_OK;
}

typedef struct rp__rd_msg {
    int32_t have;
    int32_t status;
    char name[RP_CKPT_NAME_MAX];
} rp__rd_msg_t;

rp_status_t rp__ckpt_restore(rp__ckpt_engine_t *e, const char *const names[],
                             size_t nnames, bool exact, uint64_t step,
                             rp_restore_info_t *info)
{
    char (*cands)[RP_CKPT_NAME_MAX] = NULL;
    size_t ncands = 0, next = 0, i;
    bool *want;
    uint64_t t0 = rp__ckpt_now_ns();
    rp_status_t rc;

    if (info != NULL) {
        memset(info, 0, sizeof(*info));
    }
    rc = rp__ckpt_regions_check(e);
    if (rc != RP_OK) {
        return rc;
    }
    e->last_ckpt_ns = rp__ckpt_now_ns();
    e->clock_started = true;
    want = calloc(e->nregs + 1, sizeof(*want));
    if (want == NULL) {
        rp_error("rp_restore: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (i = 0; i < e->nregs; i++) {
        want[i] = names == NULL;
    }
    for (i = 0; names != NULL && i < nnames; i++) {
        long k = names[i] != NULL ? rp__ckpt_regions_find(e, names[i]) : -1;

        if (k < 0) {
            rp_error("rp_restore: '%s' is not a registered region",
                     names[i] != NULL ? names[i] : "(null)");
            free(want);
            return RP_ERR_INVALID_ARG;
        }
        want[k] = true;
    }
    if (e->rank == 0) {
        rc = rp__rd_candidates(e, &cands, &ncands);
        if (rc == RP_OK && exact) {
            /* Only the checkpoint of @step is a candidate. */
            size_t k = 0;
            uint64_t s;

            for (i = 0; i < ncands; i++) {
                if (rp__ckpt_parse_committed(cands[i], &s) && s == step) {
                    memmove(cands[0], cands[i], RP_CKPT_NAME_MAX);
                    k = 1;
                    break;
                }
            }
            ncands = k;
            if (k == 0 && e->rootfd >= 0) {
                /* There but not complete is unusable, not missing. */
                char nm[RP_CKPT_NAME_MAX], why[640];
                rp__ckpt_verdict_t v;

                rp__ckpt_name_committed(step, nm, sizeof(nm));
                if (rp__ckpt_validate_at(e->rootfd, nm, false, &v, NULL) !=
                        RP_ERR_NOT_FOUND && v.state != RP_CKPT_COMPLETE) {
                    rp_error("restore: %s/%s is unusable: %s: %s; not "
                             "falling back (rp_restore_step)", e->dir, nm,
                             rp__ckpt_state_name(v.state),
                             rp__ckpt_verdict_format(&v, why, sizeof(why)));
                    rc = RP_ERR_CORRUPT;
                }
            }
        }
    }
    for (;;) {
        rp__rd_msg_t msg;
        rp__rd_t r;
        int32_t verdict, vote[2];
        uint64_t tv;

        memset(&msg, 0, sizeof(msg));
        if (e->rank == 0) {
            msg.status = rc;
            msg.have = rc == RP_OK && next < ncands;
            if (msg.have) {
                memcpy(msg.name, cands[next], RP_CKPT_NAME_MAX);
            }
            next++;
        }
        rc = rp_broadcast(e->ctx, &msg, sizeof(msg), RP_DTYPE_UINT8, 0);
        if (rc != RP_OK) {
            break;
        }
        if (msg.status != RP_OK) {
            rc = (rp_status_t)msg.status;
            if (e->rank != 0 && rc != RP_ERR_CORRUPT) {
                rp_error("restore: rank 0 could not list %s (%s)", e->dir,
                         rp_status_string(rc));
            }
            break;
        }
        if (!msg.have && exact) {
            if (e->rank == 0) {
                rp_info("restore: no complete checkpoint of step %llu in %s",
                        (unsigned long long)step, e->dir);
            }
            rc = RP_ERR_NOT_FOUND;
            break;
        }
        if (!msg.have) {
            if (e->rank == 0) {
                rp_info("restore: no complete checkpoint in %s: starting "
                        "fresh", e->dir);
            }
            rc = RP_OK;
            break;
        }
        memset(&r, 0, sizeof(r));
        r.e = e;
        r.want = want;
        r.cfd = r.shard_fd = r.shard_dfd = -1;
        memcpy(r.name, msg.name, RP_CKPT_NAME_MAX);
        r.name[RP_CKPT_NAME_MAX - 1] = '\0';
        /* The verdict, and this rank's vote for the one-copy exchange,
         * in one allreduce. */
        vote[0] = rp__rd_read(&r);
        vote[1] = vote[0] == RP_RD_OK && e->size > 1 && rp__rd_direct_plan(&r);
        tv = rp__ckpt_now_ns();
        rc = rp_allreduce(e->ctx, vote, vote, 2, RP_DTYPE_INT32, RP_OP_MIN);
        e->stats.rd_wait_ns = rp__ckpt_now_ns() - tv;
        verdict = vote[0];
        if (rc == RP_OK && verdict == RP_RD_OK) {
            rc = rp__rd_apply(&r, vote[1] == 1);
            if (rc == RP_OK) {
                e->have_ckpt_step = true;
                e->ckpt_step = r.m.step;
            }
            if (rc == RP_OK && info != NULL) {
                struct timespec now;
                double created = (double)r.m.created_ns / 1e9;

                clock_gettime(CLOCK_REALTIME, &now);
                info->restored = 1;
                info->step = r.m.step;
                info->age_s = (double)now.tv_sec +
                              (double)now.tv_nsec / 1e9 - created;
                info->world_size = r.m.world_size;
                (void)rp__strlcpy(info->path, r.label, sizeof(info->path));
            }
            if (rc == RP_OK && e->rank == 0) {
                rp_info("restore: step %llu from %s (written by %u ranks%s)",
                        (unsigned long long)r.m.step, r.label,
                        r.m.world_size,
                        e->size == 1  ? ""
                        : r.direct    ? "; stripes exchanged in one copy"
                                      : "; stripes exchanged in rounds");
            }
            e->stats.restore_bytes = r.bytes_read;
            e->stats.rd_read_ns = r.read_ns;
            e->stats.rd_crc_ns = r.crc_ns;
            e->stats.rd_gather_ns = r.gather_ns;
            e->stats.rd_scatter_ns = r.scatter_ns;
        } else if (rc == RP_OK && verdict == RP_RD_FATAL) {
            rc = RP_ERR_INVALID_ARG;
        } else if (rc == RP_OK && exact) {
            /* The caller chooses what to try next. */
            if (e->rank == 0) {
                rp_error("restore: %s is unusable (see the messages above); "
                         "not falling back (rp_restore_step)", r.label);
            }
            rc = RP_ERR_CORRUPT;
        } else if (rc == RP_OK) {
            if (e->rank == 0) {
                rp_warn("restore: %s is unusable (see the messages above); "
                        "falling back to an older checkpoint", r.label);
            }
            rp__rd_release(&r);
            continue;
        }
        rp__rd_release(&r);
        break;
    }
    e->stats.restore_ns = rp__ckpt_now_ns() - t0;
    free(cands);
    free(want);
    return rc;
}
