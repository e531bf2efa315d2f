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
 * good, then rounds of allgather rebuild the replicated regions on every
 * rank and the per-rank ones are copied in; a bad CRC or unreadable file
 * on any rank, then every rank tries the next older checkpoint; a region
 * that does not fit the checkpoint, then every rank fails.
 *
 * Everything taken from the manifest is checked against the registered
 * table before it sizes an allocation or an offset: names, kinds and sizes
 * must match, so a crafted manifest cannot make this allocate more than
 * the application registered.
 */
#include "config.h"

#include "ckpt/engine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog.h"
#include "ckpt/crc32c.h"
#include "ckpt/devstage.h"
#include "ckpt/fileio.h"
#include "core/context.h"
#include "ringpoint/coll.h"
#include "util/log.h"
#include "util/str.h"

#define RP_RD_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define RP_RD_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
/* Read unit for bytes outside the wanted range (still CRC-checked). */
#define RP_RD_BUF (4u << 20)
/* Bytes per rank per allgather round when rebuilding the stream. */
#define RP_RD_ROUND (16u << 20)

/* Verdicts, reduced with MIN. */
#define RP_RD_FATAL (-1) /* does not fit the registered regions */
#define RP_RD_BAD   0    /* unreadable or corrupt: try an older one */
#define RP_RD_OK    1

typedef struct rp_rd_rep {
    uint64_t old_off; /* in the checkpoint's stream */
    uint64_t voff;    /* in the restore stream */
    uint64_t size;
    void *addr;
    bool device;      /* GPU memory (ckpt/devstage.h) */
} rp_rd_rep_t;

typedef struct rp_rd_perrank {
    uint64_t off;     /* in the per-rank section */
    uint64_t size;
    void *addr;
    bool device;
    unsigned char *tmp; /* where it is read before the agreement */
} rp_rd_perrank_t;

/* One candidate checkpoint being read. */
typedef struct rp_rd {
    rp__ckpt_engine_t *e;
    const bool *want;
    char name[RP_CKPT_NAME_MAX];
    char label[RP_CKPT_LABEL_MAX];
    int cfd;
    rp__ckpt_manifest_t m;
    rp_rd_rep_t *reps;
    uint32_t nreps;
    uint64_t rlen;         /* R: bytes of the restore stream */
    uint64_t voff, vlen;   /* this rank's stripe of it */
    unsigned char *vbuf;
    rp_rd_perrank_t *pers;
    uint32_t npers;
    int shard_fd;          /* the shard file open now, and its rank */
    uint32_t shard_rank;
    unsigned char *tmp;    /* RP_RD_BUF */
    uint64_t round;        /* bytes per rank per allgather round */
    uint64_t maxlen;       /* longest stripe of the restore stream */
    unsigned char *send, *recv;
    uint64_t bytes_read;
} rp_rd_t;

static void rp_rd_release(rp_rd_t *r)
{
    uint32_t i;

    if (r->shard_fd >= 0) {
        (void)close(r->shard_fd);
    }
    if (r->cfd >= 0) {
        (void)close(r->cfd);
    }
    for (i = 0; i < r->npers; i++) {
        free(r->pers[i].tmp);
    }
    free(r->pers);
    free(r->reps);
    free(r->vbuf);
    free(r->tmp);
    free(r->send);
    free(r->recv);
    r->send = r->recv = NULL;
    rp__ckpt_manifest_free(&r->m);
    r->shard_fd = r->cfd = -1;
    r->pers = NULL;
    r->reps = NULL;
    r->vbuf = r->tmp = NULL;
    r->npers = r->nreps = 0;
}

/* Open shard @j (header and length checked against the manifest). */
static int rp_rd_shard(rp_rd_t *r, uint32_t j)
{
    char file[RP_CKPT_NAME_MAX], msg[512];
    rp__ckpt_state_t state;
    rp_status_t rc;

    if (r->shard_fd >= 0 && r->shard_rank == j) {
        return RP_RD_OK;
    }
    if (r->shard_fd >= 0) {
        (void)close(r->shard_fd);
        r->shard_fd = -1;
    }
    rc = rp__ckpt_verify_shard(r->cfd, r->name, &r->m, j, false, &state, msg,
                               sizeof(msg));
    if (rc != RP_OK) {
        rp_warn("restore: %s/%s", r->e->dir, msg);
        return RP_RD_BAD;
    }
    rp__ckpt_name_shard(j, file, sizeof(file));
    r->shard_fd = openat(r->cfd, file, RP_RD_FILE_FLAGS);
    if (r->shard_fd < 0) {
        rp_warn("restore: open %s/%s: %s", r->label, file, strerror(errno));
        return RP_RD_BAD;
    }
    (void)posix_fadvise(r->shard_fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    r->shard_rank = j;
    return RP_RD_OK;
}

static int rp_rd_pread(rp_rd_t *r, void *dst, size_t n, uint64_t poff)
{
    char what[RP_CKPT_LABEL_MAX + RP_CKPT_NAME_MAX + 2], file[RP_CKPT_NAME_MAX];
    size_t got;

    rp__ckpt_name_shard(r->shard_rank, file, sizeof(file));
    snprintf(what, sizeof(what), "%s/%s", r->label, file);
    if (rp__ckpt_pread_full(r->shard_fd, dst, n,
                            RP_CKPT_SHARD_HEADER_SIZE + poff, &got,
                            what) != RP_OK) {
        return RP_RD_BAD; /* logged */
    }
    if (got != n) {
        rp_warn("restore: %s: shrank while being read", what);
        return RP_RD_BAD;
    }
    r->bytes_read += n;
    return RP_RD_OK;
}

/*
 * Payload bytes [@poff, @poff+@n) of shard @j into @dst: every chunk that
 * covers part of the range is read whole and its CRC checked; bytes in the
 * range go straight to @dst, the others through a small buffer.
 */
static int rp_rd_payload(rp_rd_t *r, uint32_t j, uint64_t poff, uint64_t n,
                         unsigned char *dst)
{
    const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
    uint64_t cs = r->m.chunk_size, end = poff + n;
    uint32_t c;
    int v;

    if (n == 0) {
        return RP_RD_OK;
    }
    v = rp_rd_shard(r, j);
    if (v != RP_RD_OK) {
        return v;
    }
    for (c = (uint32_t)(poff / cs); (uint64_t)c * cs < end; c++) {
        uint64_t cstart = (uint64_t)c * cs;
        uint64_t cend = cstart + cs < sh->length ? cstart + cs : sh->length;
        uint64_t pos = cstart;
        uint32_t crc = 0;

        while (pos < cend) {
            uint64_t stop = cend;
            bool inside = pos >= poff && pos < end;

            /* Cut pieces at the range's edges: each piece is wholly in
             * the range (read in place) or wholly out (read to tmp). */
            if (inside && end < stop) {
                stop = end;
            } else if (!inside && pos < poff && poff < stop) {
                stop = poff;
            }
            if (!inside && stop - pos > RP_RD_BUF) {
                stop = pos + RP_RD_BUF;
            }
            if (inside && stop - pos > (1u << 30)) {
                stop = pos + (1u << 30);
            }
            {
                unsigned char *p = inside ? dst + (pos - poff) : r->tmp;
                size_t len = (size_t)(stop - pos);

                v = rp_rd_pread(r, p, len, pos);
                if (v != RP_RD_OK) {
                    return v;
                }
                crc = rp__crc32c(crc, p, len);
            }
            pos = stop;
        }
        if (crc != sh->chunk_crc[c]) {
            char file[RP_CKPT_NAME_MAX];

            rp__ckpt_name_shard(j, file, sizeof(file));
            rp_warn("restore: %s/%s chunk %u: crc32c 0x%08x != manifest "
                    "0x%08x", r->label, file, c, crc, sh->chunk_crc[c]);
            return RP_RD_BAD;
        }
    }
    return RP_RD_OK;
}

/* Bytes [@off, @off+@n) of the checkpoint's stream, from the old shards
 * whose stripes hold them. */
static int rp_rd_stream(rp_rd_t *r, uint64_t off, uint64_t n,
                        unsigned char *dst)
{
    uint32_t j;

    for (j = 0; j < r->m.world_size && n > 0; j++) {
        const rp__ckpt_shard_info_t *sh = &r->m.shards[j];
        uint64_t s = off, t = off + n;
        int v;

        if (sh->stripe_length == 0 || t <= sh->stripe_offset ||
            s >= sh->stripe_offset + sh->stripe_length) {
            continue;
        }
        if (s < sh->stripe_offset) {
            s = sh->stripe_offset;
        }
        if (t > sh->stripe_offset + sh->stripe_length) {
            t = sh->stripe_offset + sh->stripe_length;
        }
        v = rp_rd_payload(r, j, s - sh->stripe_offset, t - s,
                          dst + (s - off));
        if (v != RP_RD_OK) {
            return v;
        }
    }
    return RP_RD_OK;
}

/* Check the manifest against what is asked for; build the read plan. */
static int rp_rd_plan(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint32_t i;

    r->reps = calloc(e->nregs + 1, sizeof(*r->reps));
    r->pers = calloc(e->nregs + 1, sizeof(*r->pers));
    if (r->reps == NULL || r->pers == NULL) {
        rp_error("restore: out of memory");
        return RP_RD_FATAL;
    }
    for (i = 0; i < e->nregs; i++) {
        const rp__ckpt_reg_t *g = &e->regs[i];
        long k;

        if (!r->want[i]) {
            continue;
        }
        k = rp__ckpt_manifest_find_region(&r->m, g->name);
        if (k < 0) {
            rp_error("restore: region '%s' is not in %s", g->name, r->label);
            return RP_RD_FATAL;
        }
        if (r->m.regions[k].kind != g->kind) {
            rp_error("restore: region '%s' is %s in %s but registered as %s",
                     g->name, r->m.regions[k].kind == RP_CKPT_REGION_PER_RANK
                                  ? "per-rank" : "replicated",
                     r->label, g->kind == RP_CKPT_REGION_PER_RANK
                                   ? "per-rank" : "replicated");
            return RP_RD_FATAL;
        }
        if (r->m.regions[k].size != g->size) {
            rp_error("restore: region '%s' has %llu bytes in %s but %llu "
                     "registered", g->name,
                     (unsigned long long)r->m.regions[k].size, r->label,
                     (unsigned long long)g->size);
            return RP_RD_FATAL;
        }
        if (g->kind == RP_CKPT_REGION_PER_RANK) {
            if (r->m.world_size != e->size) {
                rp_error("restore: per-rank region '%s' cannot be restored: "
                         "%s was written by %u ranks and this job has %u "
                         "(restore only the replicated regions by name to "
                         "resume on another size)", g->name, r->label,
                         r->m.world_size, e->size);
                return RP_RD_FATAL;
            }
            r->pers[r->npers].off = r->m.regions[k].offset;
            r->pers[r->npers].size = g->size;
            r->pers[r->npers].addr = g->addr;
            r->pers[r->npers].device = g->device;
            r->npers++;
        } else {
            r->reps[r->nreps].old_off = r->m.regions[k].offset;
            r->reps[r->nreps].size = g->size;
            r->reps[r->nreps].addr = g->addr;
            r->reps[r->nreps].device = g->device;
            r->nreps++;
        }
    }
    /* The restore stream in the checkpoint's order, so consecutive
     * regions read consecutive bytes of the old shards. */
    for (i = 1; i < r->nreps; i++) {
        rp_rd_rep_t x = r->reps[i];
        uint32_t k = i;

        while (k > 0 && r->reps[k - 1].old_off > x.old_off) {
            r->reps[k] = r->reps[k - 1];
            k--;
        }
        r->reps[k] = x;
    }
    r->rlen = 0;
    for (i = 0; i < r->nreps; i++) {
        r->reps[i].voff = r->rlen;
        r->rlen += r->reps[i].size;
    }
    return RP_RD_OK;
}

/* Copy restore-stream bytes [@v, @v+@n) from @src into the regions. */
static void rp_rd_scatter(const rp_rd_t *r, uint64_t v, uint64_t n,
                          const unsigned char *src)
{
    uint32_t i;

    for (i = 0; i < r->nreps && n > 0; i++) {
        const rp_rd_rep_t *p = &r->reps[i];
        uint64_t s = v, t = v + n;

        if (t <= p->voff || s >= p->voff + p->size) {
            continue;
        }
        if (s < p->voff) {
            s = p->voff;
        }
        if (t > p->voff + p->size) {
            t = p->voff + p->size;
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

/* Read this rank's part of candidate @r->name. Returns a verdict. */
static int rp_rd_read(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    rp__ckpt_state_t state;
    char msg[512];
    uint64_t name_step;
    uint32_t i;
    int v;

    snprintf(r->label, sizeof(r->label), "%s/%s", e->dir, r->name);
    if (rp__ckpt_open_root(e, false) != RP_OK) {
        rp_warn("restore: cannot open %s on this node (it must be shared by "
                "all nodes)", e->dir);
        return RP_RD_BAD;
    }
    r->cfd = openat(e->rootfd, r->name, RP_RD_DIR_FLAGS);
    if (r->cfd < 0) {
        rp_warn("restore: open %s: %s", r->label, strerror(errno));
        return RP_RD_BAD;
    }
    if (rp__ckpt_load_manifest_at(r->cfd, r->name, &r->m, &state, msg,
                                  sizeof(msg)) != RP_OK) {
        rp_warn("restore: %s/%s", e->dir, msg);
        return RP_RD_BAD;
    }
    if (!rp__ckpt_parse_committed(r->name, &name_step) ||
        name_step != r->m.step) {
        rp_warn("restore: %s: manifest step %llu does not match the name",
                r->label, (unsigned long long)r->m.step);
        return RP_RD_BAD;
    }
    v = rp_rd_plan(r);
    if (v != RP_RD_OK) {
        return v;
    }
    if (rp__ckpt_stripe(r->rlen, e->size, e->rank, &r->voff, &r->vlen) !=
        RP_OK) {
        return RP_RD_FATAL;
    }
    for (i = 0; i < e->size; i++) {
        uint64_t o, l;

        (void)rp__ckpt_stripe(r->rlen, e->size, i, &o, &l);
        r->maxlen = l > r->maxlen ? l : r->maxlen;
    }
    r->round = r->maxlen < RP_RD_ROUND ? r->maxlen : RP_RD_ROUND;
    r->tmp = malloc(RP_RD_BUF);
    r->vbuf = malloc(r->vlen > 0 ? (size_t)r->vlen : 1);
    /* The gather buffers too, before the agreement: running out of memory
     * is then a verdict, not a rank missing from a collective. */
    if (e->size > 1 && r->round > 0) {
        r->send = malloc((size_t)r->round);
        r->recv = malloc((size_t)r->round * e->size);
    }
    if (r->tmp == NULL || r->vbuf == NULL ||
        (e->size > 1 && r->round > 0 && (r->send == NULL || r->recv == NULL))) {
        rp_error("restore: out of memory for %llu bytes",
                 (unsigned long long)r->vlen);
        return RP_RD_FATAL;
    }
    /* My stripe of the restore stream, region by region. */
    for (i = 0; i < r->nreps; i++) {
        const rp_rd_rep_t *p = &r->reps[i];
        uint64_t s = r->voff, t = r->voff + r->vlen;

        if (t <= p->voff || s >= p->voff + p->size) {
            continue;
        }
        if (s < p->voff) {
            s = p->voff;
        }
        if (t > p->voff + p->size) {
            t = p->voff + p->size;
        }
        v = rp_rd_stream(r, p->old_off + (s - p->voff), t - s,
                         r->vbuf + (s - r->voff));
        if (v != RP_RD_OK) {
            return v;
        }
    }
    for (i = 0; i < r->npers; i++) {
        rp_rd_perrank_t *p = &r->pers[i];

        p->tmp = malloc(p->size > 0 ? (size_t)p->size : 1);
        if (p->tmp == NULL) {
            rp_error("restore: out of memory");
            return RP_RD_FATAL;
        }
        v = rp_rd_payload(r, e->rank,
                          r->m.shards[e->rank].stripe_length + p->off,
                          p->size, p->tmp);
        if (v != RP_RD_OK) {
            return v;
        }
    }
    return RP_RD_OK;
}

/* Everyone's stripes to everyone, in rounds of RP_RD_ROUND per rank, then
 * into the regions; per-rank regions from their buffers. */
static rp_status_t rp_rd_apply(rp_rd_t *r)
{
    rp__ckpt_engine_t *e = r->e;
    uint64_t round = r->round, k;
    uint32_t j, i;
    rp_status_t rc;

    if (e->size == 1) {
        rp_rd_scatter(r, 0, r->vlen, r->vbuf);
    }
    for (k = 0; e->size > 1 && k < r->maxlen; k += round) {
        uint64_t mine = r->vlen > k ? r->vlen - k : 0;

        mine = mine < round ? mine : round;
        memcpy(r->send, r->vbuf + k, (size_t)mine);
        rc = rp_allgather(e->ctx, r->send, r->recv, (size_t)round,
                          RP_DTYPE_UINT8);
        if (rc != RP_OK) {
            return rc;
        }
        for (j = 0; j < e->size; j++) {
            uint64_t o, l, n;

            (void)rp__ckpt_stripe(r->rlen, e->size, j, &o, &l);
            n = l > k ? l - k : 0;
            n = n < round ? n : round;
            rp_rd_scatter(r, o + k, n, r->recv + (size_t)j * round);
        }
    }
    for (i = 0; i < r->npers; i++) {
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
static rp_status_t rp_rd_candidates(rp__ckpt_engine_t *e, char (**names_p)[RP_CKPT_NAME_MAX],
                                    size_t *n_p)
{
    rp__ckpt_catalog_t cat;
    char (*names)[RP_CKPT_NAME_MAX];
    size_t i, n = 0;
    rp_status_t rc;

    *names_p = NULL;
    *n_p = 0;
    rc = rp__ckpt_open_root(e, false);
    if (rc == RP_ERR_NOT_FOUND) {
        return RP_OK;
    }
    if (rc != RP_OK) {
        return rc;
    }
    if (!e->cleaned) {
        unsigned removed = 0;

        if (rp__ckpt_cleanup_inflight(e->dir, &removed) == RP_OK &&
            removed > 0) {
            rp_warn("restore: removed %u leftover in-flight director%s in "
                    "%s", removed, removed == 1 ? "y" : "ies", e->dir);
        }
        e->cleaned = true;
    }
    rc = rp__ckpt_catalog_scan(e->dir, false, &cat);
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

typedef struct rp_rd_msg {
    int32_t have;
    int32_t status;
    char name[RP_CKPT_NAME_MAX];
} rp_rd_msg_t;

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
        rc = rp_rd_candidates(e, &cands, &ncands);
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
        }
    }
    for (;;) {
        rp_rd_msg_t msg;
        rp_rd_t r;
        int32_t verdict;

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
            if (e->rank != 0) {
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
        r.cfd = r.shard_fd = -1;
        memcpy(r.name, msg.name, RP_CKPT_NAME_MAX);
        r.name[RP_CKPT_NAME_MAX - 1] = '\0';
        verdict = rp_rd_read(&r);
        rc = rp_allreduce(e->ctx, &verdict, &verdict, 1, RP_DTYPE_INT32,
                          RP_OP_MIN);
        if (rc == RP_OK && verdict == RP_RD_OK) {
            rc = rp_rd_apply(&r);
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
                rp_info("restore: step %llu from %s (written by %u ranks)",
                        (unsigned long long)r.m.step, r.label,
                        r.m.world_size);
            }
            e->stats.restore_bytes = r.bytes_read;
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
            rp_rd_release(&r);
            continue;
        }
        rp_rd_release(&r);
        break;
    }
    e->stats.restore_ns = rp__ckpt_now_ns() - t0;
    free(cands);
    free(want);
    return rc;
}

/* What rank 0 tells everyone about the checkpoint rp_ckpt_find chose. */
typedef struct rp_rd_find_msg {
    int32_t status;
    uint32_t world_size;
    uint64_t step;
    uint64_t nregions;
    char name[RP_CKPT_NAME_MAX];
} rp_rd_find_msg_t;

/* Rank 0: the newest complete checkpoint below @before whose manifest
 * reads, as restore would choose it; its table into *@regs_p (malloc'd). */
static rp_status_t rp_rd_find_root(rp__ckpt_engine_t *e, uint64_t before,
                                   rp_rd_find_msg_t *msg,
                                   rp_ckpt_region_desc_t **regs_p)
{
    char (*cands)[RP_CKPT_NAME_MAX] = NULL;
    rp__ckpt_manifest_t m;
    rp__ckpt_state_t state;
    char errmsg[512];
    size_t ncands = 0, i;
    uint32_t k;
    rp_status_t rc;

    rc = rp_rd_candidates(e, &cands, &ncands);
    if (rc != RP_OK) {
        return rc;
    }
    rc = RP_ERR_NOT_FOUND;
    for (i = 0; i < ncands && rc == RP_ERR_NOT_FOUND; i++) {
        uint64_t step;
        int cfd;

        if (!rp__ckpt_parse_committed(cands[i], &step) ||
            (before != UINT64_MAX && step >= before)) {
            continue;
        }
        cfd = openat(e->rootfd, cands[i], RP_RD_DIR_FLAGS);
        if (cfd < 0) {
            rp_warn("rp_ckpt_find: open %s/%s: %s", e->dir, cands[i],
                    strerror(errno));
            continue;
        }
        if (rp__ckpt_load_manifest_at(cfd, cands[i], &m, &state, errmsg,
                                      sizeof(errmsg)) != RP_OK) {
            rp_warn("rp_ckpt_find: skipping %s/%s", e->dir, errmsg);
            (void)close(cfd);
            continue;
        }
        (void)close(cfd);
        if (m.step != step) {
            rp_warn("rp_ckpt_find: skipping %s/%s: manifest step %llu does "
                    "not match the name", e->dir, cands[i],
                    (unsigned long long)m.step);
            rp__ckpt_manifest_free(&m);
            continue;
        }
        *regs_p = calloc(m.nregions > 0 ? m.nregions : 1, sizeof(**regs_p));
        if (*regs_p == NULL) {
            rp_error("rp_ckpt_find: out of memory");
            rp__ckpt_manifest_free(&m);
            rc = RP_ERR_NO_MEMORY;
            break;
        }
        for (k = 0; k < m.nregions; k++) {
            rp_ckpt_region_desc_t *d = &(*regs_p)[k];

            (void)rp__strlcpy(d->name, m.regions[k].name, sizeof(d->name));
            d->kind = m.regions[k].kind == RP_CKPT_REGION_PER_RANK
                          ? RP_REGION_PER_RANK : RP_REGION_REPLICATED;
            d->size = m.regions[k].size;
        }
        msg->step = m.step;
        msg->world_size = m.world_size;
        msg->nregions = m.nregions;
        memcpy(msg->name, cands[i], RP_CKPT_NAME_MAX);
        rp__ckpt_manifest_free(&m);
        rc = RP_OK;
    }
    free(cands);
    return rc;
}

rp_status_t rp__ckpt_find(rp__ckpt_engine_t *e, uint64_t before_step,
                          rp_ckpt_desc_t *desc)
{
    rp_ckpt_region_desc_t *regs = NULL;
    rp_rd_find_msg_t msg;
    char label[RP_CKPT_LABEL_MAX];
    int32_t ok;
    rp_status_t rc;

    memset(&msg, 0, sizeof(msg));
    if (e->rank == 0) {
        msg.status = (int32_t)rp_rd_find_root(e, before_step, &msg, &regs);
    }
    rc = rp_broadcast(e->ctx, &msg, sizeof(msg), RP_DTYPE_UINT8, 0);
    if (rc != RP_OK) {
        goto err_free;
    }
    rc = (rp_status_t)msg.status;
    if (rc != RP_OK) {
        if (e->rank != 0 && rc != RP_ERR_NOT_FOUND) {
            rp_error("rp_ckpt_find: rank 0 could not list %s (%s)", e->dir,
                     rp_status_string(rc));
        }
        goto err_free;
    }
    if (e->rank != 0) {
        regs = calloc(msg.nregions > 0 ? (size_t)msg.nregions : 1,
                      sizeof(*regs));
        if (regs == NULL) {
            rp_error("rp_ckpt_find: out of memory for %llu regions",
                     (unsigned long long)msg.nregions);
        }
    }
    /* Every rank can receive the table, or none tries. */
    ok = regs != NULL;
    rc = rp_allreduce(e->ctx, &ok, &ok, 1, RP_DTYPE_INT32, RP_OP_MIN);
    if (rc != RP_OK) {
        goto err_free;
    }
    if (!ok) {
        rc = RP_ERR_NO_MEMORY;
        goto err_free;
    }
    if (msg.nregions > 0) {
        rc = rp_broadcast(e->ctx, regs,
                          (size_t)msg.nregions * sizeof(*regs),
                          RP_DTYPE_UINT8, 0);
        if (rc != RP_OK) {
            goto err_free;
        }
    }
    msg.name[RP_CKPT_NAME_MAX - 1] = '\0';
    snprintf(label, sizeof(label), "%s/%s", e->dir, msg.name);
    desc->step = msg.step;
    desc->world_size = msg.world_size;
    desc->nregions = (size_t)msg.nregions;
    desc->regions = regs;
    (void)rp__strlcpy(desc->path, label, sizeof(desc->path));
    return RP_OK;

err_free:
    free(regs);
    return rc;
}
