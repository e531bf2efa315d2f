/*
 * Manifest encoding and parsing.
 *
 * The parser is written for hostile input: every line is bounded before it
 * is looked at, every number is range-checked as it is read, every count
 * that drives an allocation is first bounded by the bytes left in the input
 * (so a 100-byte file cannot ask for a million shard slots), and the text
 * must follow the one canonical spelling the encoder produces. That last
 * rule makes "parse then encode gives the same bytes" a property the tests
 * can check on mutated inputs, and leaves no second way to say anything.
 */
#include "ckpt/manifest.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/crc32c.h"
#include "ckpt/layout.h"
#include "util/str.h"

/* "crc32c " + 8 hex digits + "\n" */
#define RP_MF_TRAILER_LEN 16u
/* Shortest possible lines, for bounding counts by the input left. */
#define RP_MF_MIN_REGION_LINE 33u /* "region a replicated 0 0 00000000\n" */
#define RP_MF_MIN_SHARD_LINE  16u /* "shard 0 0 0 0 0\n" */
#define RP_MF_MIN_CRC_BYTES    9u /* " 00000000" */
#define RP_MF_MAX_TOKENS (3u + RP_CKPT_CRCS_PER_LINE)

/* Header keys, in the only order they may appear. */
enum {
    RP_MF_STEP, RP_MF_WORLD, RP_MF_JOB, RP_MF_RESTART, RP_MF_CREATED,
    RP_MF_ID, RP_MF_CHUNK, RP_MF_UNIT, RP_MF_STREAM, RP_MF_PERRANK,
    RP_MF_REGIONS, RP_MF_NKEYS
};

static const char *const rp_mf_keys[RP_MF_NKEYS] = {
    "step", "world_size", "slurm_job_id", "slurm_restart_count",
    "created_ns", "checkpoint_id", "chunk_size", "stripe_unit",
    "stream_length", "per_rank_length", "regions"
};

static const char *const rp_mf_kind_names[2] = {"replicated", "per_rank"};

void rp__ckpt_id_format(const uint8_t id[RP_CKPT_ID_SIZE], char *buf,
                        size_t len)
{
    static const char hex[] = "0123456789abcdef";
    unsigned i;

    if (len < 2 * RP_CKPT_ID_SIZE + 1) {
        if (len > 0) {
            buf[0] = '\0';
        }
        return;
    }
    for (i = 0; i < RP_CKPT_ID_SIZE; i++) {
        buf[2 * i] = hex[id[i] >> 4];
        buf[2 * i + 1] = hex[id[i] & 0xf];
    }
    buf[2 * RP_CKPT_ID_SIZE] = '\0';
}

/* ---- structure checks, shared by encode, plan and parse ---------------- */

static bool rp_mf_name_ok(const char *name)
{
    size_t n = strnlen(name, RP_CKPT_REGION_NAME_MAX + 1);
    size_t i;

    if (n == 0 || n > RP_CKPT_REGION_NAME_MAX) {
        return false;
    }
    for (i = 0; i < n; i++) {
        if (name[i] <= ' ' || name[i] > '~') {
            return false;
        }
    }
    return true;
}

static rp_status_t rp_mf_check_fields(const rp__ckpt_manifest_t *m, char *err,
                                      size_t errlen)
{
    if (m->version != RP_CKPT_MANIFEST_VERSION) {
        rp__errbuf(err, errlen, "unsupported manifest version %u", m->version);
        return RP_ERR_INVALID_ARG;
    }
    if (m->world_size == 0 || m->world_size > RP_CKPT_MAX_WORLD) {
        rp__errbuf(err, errlen, "world_size %u out of range [1, %u]",
                  m->world_size, RP_CKPT_MAX_WORLD);
        return RP_ERR_INVALID_ARG;
    }
    if (m->chunk_size < RP_CKPT_MIN_CHUNK_SIZE ||
        m->chunk_size > RP_CKPT_MAX_CHUNK_SIZE ||
        m->chunk_size % RP_CKPT_MIN_CHUNK_SIZE != 0) {
        rp__errbuf(err, errlen,
                  "chunk_size %llu is not a multiple of 4096 in [4096, %llu]",
                  (unsigned long long)m->chunk_size,
                  (unsigned long long)RP_CKPT_MAX_CHUNK_SIZE);
        return RP_ERR_INVALID_ARG;
    }
    if (m->stripe_unit != RP_CKPT_STRIPE_UNIT) {
        rp__errbuf(err, errlen, "stripe_unit %llu, expected %u",
                  (unsigned long long)m->stripe_unit, RP_CKPT_STRIPE_UNIT);
        return RP_ERR_INVALID_ARG;
    }
    if (m->stream_length > RP_CKPT_MAX_LENGTH ||
        m->per_rank_length > RP_CKPT_MAX_LENGTH) {
        rp__errbuf(err, errlen, "stream or per-rank length above %llu",
                  (unsigned long long)RP_CKPT_MAX_LENGTH);
        return RP_ERR_INVALID_ARG;
    }
    if (m->nregions > RP_CKPT_MAX_REGIONS) {
        rp__errbuf(err, errlen, "%u regions, at most %u allowed", m->nregions,
                  RP_CKPT_MAX_REGIONS);
        return RP_ERR_INVALID_ARG;
    }
    if ((m->nregions > 0 && m->regions == NULL) || m->shards == NULL) {
        rp__errbuf(err, errlen, "manifest not initialised");
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

static int rp_mf_cmp_names(const void *a, const void *b)
{
    const rp__ckpt_region_t *const *ra = a;
    const rp__ckpt_region_t *const *rb = b;

    return strcmp((*ra)->name, (*rb)->name);
}

static rp_status_t rp_mf_check_regions(const rp__ckpt_manifest_t *m, char *err,
                                       size_t errlen)
{
    uint64_t end[2] = {0, 0};
    const uint64_t total[2] = {m->stream_length, m->per_rank_length};
    const rp__ckpt_region_t **sorted;
    uint32_t i;

    for (i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *rg = &m->regions[i];
        unsigned k;

        if (!rp_mf_name_ok(rg->name)) {
            rp__errbuf(err, errlen,
                      "region %u: name must be 1-%u printable characters "
                      "without spaces", i, RP_CKPT_REGION_NAME_MAX);
            return RP_ERR_INVALID_ARG;
        }
        if (rg->kind != RP_CKPT_REGION_REPLICATED &&
            rg->kind != RP_CKPT_REGION_PER_RANK) {
            rp__errbuf(err, errlen, "region '%s': invalid kind %d", rg->name,
                      (int)rg->kind);
            return RP_ERR_INVALID_ARG;
        }
        k = (unsigned)rg->kind;
        /* offset >= end[k] and the totals are <= 2^56, so these additions
         * and subtractions cannot wrap. */
        if (rg->offset < end[k] || rg->offset > total[k] ||
            rg->size > total[k] - rg->offset) {
            rp__errbuf(err, errlen,
                      "region '%s': [%llu, +%llu) overlaps the previous %s "
                      "region or ends past its %s length %llu", rg->name,
                      (unsigned long long)rg->offset,
                      (unsigned long long)rg->size, rp_mf_kind_names[k],
                      k == 0 ? "stream" : "per-rank",
                      (unsigned long long)total[k]);
            return RP_ERR_INVALID_ARG;
        }
        end[k] = rg->offset + rg->size;
    }
    if (m->nregions < 2) {
        return RP_OK;
    }
    sorted = malloc(m->nregions * sizeof(*sorted));
    if (sorted == NULL) {
        rp__errbuf(err, errlen, "out of memory");
        return RP_ERR_NO_MEMORY;
    }
    for (i = 0; i < m->nregions; i++) {
        sorted[i] = &m->regions[i];
    }
    qsort(sorted, m->nregions, sizeof(*sorted), rp_mf_cmp_names);
    for (i = 1; i < m->nregions; i++) {
        if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) {
            rp__errbuf(err, errlen, "region name '%s' used twice",
                      sorted[i]->name);
            free(sorted);
            return RP_ERR_INVALID_ARG;
        }
    }
    free(sorted);
    return RP_OK;
}

/* Stripe, length and chunk count of @rank under @m's layout. */
static void rp_mf_shard_geometry(const rp__ckpt_manifest_t *m, uint32_t rank,
                                 rp__ckpt_shard_info_t *out)
{
    /* world_size was checked, so this cannot fail. */
    (void)rp__ckpt_stripe(m->stream_length, m->world_size, rank,
                          &out->stripe_offset, &out->stripe_length);
    out->length = out->stripe_length + m->per_rank_length;
}

static uint64_t rp_mf_nchunks(uint64_t length, uint64_t chunk_size)
{
    return length / chunk_size + (length % chunk_size != 0);
}

/* Plan with an explicit bound on the total chunk count (parse passes one
 * derived from the input size). */
static rp_status_t rp_mf_plan(rp__ckpt_manifest_t *m, uint64_t max_chunks,
                              char *err, size_t errlen)
{
    uint64_t total = 0, next = 0;
    uint32_t r;
    rp_status_t st;

    st = rp_mf_check_fields(m, err, errlen);
    if (st != RP_OK) {
        return st;
    }
    st = rp_mf_check_regions(m, err, errlen);
    if (st != RP_OK) {
        return st;
    }
    for (r = 0; r < m->world_size; r++) {
        rp__ckpt_shard_info_t *sh = &m->shards[r];
        uint64_t n;

        rp_mf_shard_geometry(m, r, sh);
        n = rp_mf_nchunks(sh->length, m->chunk_size);
        if (n > max_chunks - total) {
            rp__errbuf(err, errlen,
                      "more than %llu chunks in total; use a larger "
                      "chunk_size", (unsigned long long)max_chunks);
            return RP_ERR_INVALID_ARG;
        }
        total += n;
        sh->nchunks = (uint32_t)n;
        sh->chunk_crc = NULL;
    }
    free(m->crc_pool);
    m->crc_pool = calloc(total > 0 ? total : 1, sizeof(uint32_t));
    m->total_chunks = 0;
    if (m->crc_pool == NULL) {
        rp__errbuf(err, errlen, "out of memory for %llu chunk CRCs",
                  (unsigned long long)total);
        return RP_ERR_NO_MEMORY;
    }
    m->total_chunks = total;
    for (r = 0; r < m->world_size; r++) {
        m->shards[r].chunk_crc = m->crc_pool + next;
        next += m->shards[r].nchunks;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_manifest_init(rp__ckpt_manifest_t *m, uint32_t world_size,
                                   uint32_t nregions)
{
    if (m == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    memset(m, 0, sizeof(*m));
    if (world_size == 0 || world_size > RP_CKPT_MAX_WORLD ||
        nregions > RP_CKPT_MAX_REGIONS) {
        return RP_ERR_INVALID_ARG;
    }
    m->shards = calloc(world_size, sizeof(*m->shards));
    if (m->shards == NULL) {
        goto err_shards;
    }
    if (nregions > 0) {
        m->regions = calloc(nregions, sizeof(*m->regions));
        if (m->regions == NULL) {
            goto err_regions;
        }
    }
    m->version = RP_CKPT_MANIFEST_VERSION;
    m->world_size = world_size;
    m->nregions = nregions;
    m->chunk_size = RP_CKPT_DEFAULT_CHUNK_SIZE;
    m->stripe_unit = RP_CKPT_STRIPE_UNIT;
    return RP_OK;

err_regions:
    free(m->shards);
    m->shards = NULL;
err_shards:
    return RP_ERR_NO_MEMORY;
}

rp_status_t rp__ckpt_manifest_plan(rp__ckpt_manifest_t *m, char *err,
                                   size_t errlen)
{
    if (m == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    return rp_mf_plan(m, RP_CKPT_MAX_TOTAL_CHUNKS, err, errlen);
}

void rp__ckpt_manifest_free(rp__ckpt_manifest_t *m)
{
    if (m == NULL) {
        return;
    }
    free(m->regions);
    free(m->shards);
    free(m->crc_pool);
    memset(m, 0, sizeof(*m));
}

long rp__ckpt_manifest_find_region(const rp__ckpt_manifest_t *m,
                                   const char *name)
{
    uint32_t i;

    if (m == NULL || name == NULL) {
        return -1;
    }
    for (i = 0; i < m->nregions; i++) {
        if (strcmp(m->regions[i].name, name) == 0) {
            return (long)i;
        }
    }
    return -1;
}

uint64_t rp__ckpt_manifest_payload_bytes(const rp__ckpt_manifest_t *m)
{
    uint64_t sum = 0;
    uint32_t r;

    if (m == NULL || m->shards == NULL) {
        return 0;
    }
    for (r = 0; r < m->world_size; r++) {
        sum += m->shards[r].length;
    }
    return sum;
}

/* ---- encoding ---------------------------------------------------------- */

typedef struct rp_mf_out {
    char *p;
    size_t len;
    size_t cap;
    rp_status_t st;
} rp_mf_out_t;

static void rp_mf_put(rp_mf_out_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void rp_mf_put(rp_mf_out_t *o, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (o->st != RP_OK) {
        return;
    }
    for (;;) {
        size_t room = o->cap - o->len;
        va_start(ap, fmt);
        n = vsnprintf(o->p + o->len, room, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->st = RP_ERR_INVALID_ARG;
            return;
        }
        if ((size_t)n < room) {
            o->len += (size_t)n;
            return;
        }
        if (o->cap >= RP_CKPT_MANIFEST_MAX) {
            o->st = RP_ERR_INVALID_ARG;
            return;
        }
        {
            size_t ncap = o->cap * 2;
            char *np = realloc(o->p, ncap);
            if (np == NULL) {
                o->st = RP_ERR_NO_MEMORY;
                return;
            }
            o->p = np;
            o->cap = ncap;
        }
    }
}

static rp_status_t rp_mf_check_shards(const rp__ckpt_manifest_t *m, char *err,
                                      size_t errlen)
{
    uint32_t r;

    for (r = 0; r < m->world_size; r++) {
        rp__ckpt_shard_info_t want;
        const rp__ckpt_shard_info_t *sh = &m->shards[r];

        rp_mf_shard_geometry(m, r, &want);
        if (sh->stripe_offset != want.stripe_offset ||
            sh->stripe_length != want.stripe_length ||
            sh->length != want.length ||
            sh->nchunks != rp_mf_nchunks(want.length, m->chunk_size) ||
            (sh->nchunks > 0 && sh->chunk_crc == NULL)) {
            rp__errbuf(err, errlen,
                      "shard %u does not match the layout (call "
                      "rp__ckpt_manifest_plan after changing it)", r);
            return RP_ERR_INVALID_ARG;
        }
    }
    return RP_OK;
}

rp_status_t rp__ckpt_manifest_encode(const rp__ckpt_manifest_t *m,
                                     char **text_p, size_t *len_p,
                                     char *err, size_t errlen)
{
    rp_mf_out_t o = {NULL, 0, 4096, RP_OK};
    char idhex[2 * RP_CKPT_ID_SIZE + 1];
    uint32_t i, r, c;
    rp_status_t st;

    if (m == NULL || text_p == NULL || len_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    st = rp_mf_check_fields(m, err, errlen);
    if (st == RP_OK) {
        st = rp_mf_check_regions(m, err, errlen);
    }
    if (st == RP_OK) {
        st = rp_mf_check_shards(m, err, errlen);
    }
    if (st != RP_OK) {
        return st;
    }
    o.p = malloc(o.cap);
    if (o.p == NULL) {
        rp__errbuf(err, errlen, "out of memory");
        return RP_ERR_NO_MEMORY;
    }
    rp__ckpt_id_format(m->ckpt_id, idhex, sizeof(idhex));
    rp_mf_put(&o, "%s %u\n", RP_CKPT_MANIFEST_MAGIC, m->version);
    rp_mf_put(&o, "step %llu\n", (unsigned long long)m->step);
    rp_mf_put(&o, "world_size %u\n", m->world_size);
    rp_mf_put(&o, "slurm_job_id %u\n", m->job_id);
    rp_mf_put(&o, "slurm_restart_count %u\n", m->restart_count);
    rp_mf_put(&o, "created_ns %llu\n", (unsigned long long)m->created_ns);
    rp_mf_put(&o, "checkpoint_id %s\n", idhex);
    rp_mf_put(&o, "chunk_size %llu\n", (unsigned long long)m->chunk_size);
    rp_mf_put(&o, "stripe_unit %llu\n", (unsigned long long)m->stripe_unit);
    rp_mf_put(&o, "stream_length %llu\n",
              (unsigned long long)m->stream_length);
    rp_mf_put(&o, "per_rank_length %llu\n",
              (unsigned long long)m->per_rank_length);
    rp_mf_put(&o, "regions %u\n", m->nregions);
    for (i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *rg = &m->regions[i];
        rp_mf_put(&o, "region %s %s %llu %llu %08x\n", rg->name,
                  rp_mf_kind_names[rg->kind], (unsigned long long)rg->offset,
                  (unsigned long long)rg->size, rg->flags);
    }
    rp_mf_put(&o, "shards %u\n", m->world_size);
    for (r = 0; r < m->world_size; r++) {
        const rp__ckpt_shard_info_t *sh = &m->shards[r];
        rp_mf_put(&o, "shard %u %llu %llu %llu %u\n", r,
                  (unsigned long long)sh->stripe_offset,
                  (unsigned long long)sh->stripe_length,
                  (unsigned long long)sh->length, sh->nchunks);
        for (c = 0; c < sh->nchunks; c++) {
            if (c % RP_CKPT_CRCS_PER_LINE == 0) {
                rp_mf_put(&o, "crc %u %u", r, c);
            }
            rp_mf_put(&o, " %08x", sh->chunk_crc[c]);
            if (c % RP_CKPT_CRCS_PER_LINE == RP_CKPT_CRCS_PER_LINE - 1 ||
                c + 1 == sh->nchunks) {
                rp_mf_put(&o, "\n");
            }
        }
    }
    rp_mf_put(&o, "crc32c %08x\n", rp__crc32c(0, o.p, o.len));
    if (o.st != RP_OK || o.len > RP_CKPT_MANIFEST_MAX) {
        rp__errbuf(err, errlen, o.st == RP_ERR_NO_MEMORY
                                   ? "out of memory"
                                   : "manifest larger than the limit");
        free(o.p);
        return o.st != RP_OK ? o.st : RP_ERR_INVALID_ARG;
    }
    *text_p = o.p;
    *len_p = o.len;
    return RP_OK;
}

/* ---- parsing ----------------------------------------------------------- */

typedef struct rp_mf_reader {
    const char *buf;
    size_t pos;
    size_t end;
    unsigned line;
    unsigned ntok;
    const char *tok[RP_MF_MAX_TOKENS];
    size_t toklen[RP_MF_MAX_TOKENS];
    char *err;
    size_t errlen;
} rp_mf_reader_t;

static rp_status_t rp_mf_fail(rp_mf_reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static rp_status_t rp_mf_fail(rp_mf_reader_t *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (r->err == NULL || r->errlen == 0) {
        return RP_ERR_CORRUPT;
    }
    n = snprintf(r->err, r->errlen, "line %u: ", r->line);
    if (n < 0 || (size_t)n >= r->errlen) {
        return RP_ERR_CORRUPT;
    }
    va_start(ap, fmt);
    vsnprintf(r->err + n, r->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return RP_ERR_CORRUPT;
}

/* Token @i for messages, cut short so a long token cannot flood a log. */
#define RP_MF_TOK(r, i) (int)((r)->toklen[i] > 40 ? 40 : (r)->toklen[i]), (r)->tok[i]

/*
 * Read the next line into tokens. Only printable ASCII, single spaces
 * between non-empty tokens, at most RP_CKPT_MANIFEST_LINE_MAX bytes
 * including the newline, which must be there.
 */
static rp_status_t rp_mf_next_line(rp_mf_reader_t *r)
{
    size_t limit;
    const char *p, *nl;

    r->line++;
    r->ntok = 0;
    if (r->pos >= r->end) {
        return rp_mf_fail(r, "unexpected end of manifest");
    }
    limit = r->end - r->pos;
    if (limit > RP_CKPT_MANIFEST_LINE_MAX) {
        limit = RP_CKPT_MANIFEST_LINE_MAX;
    }
    p = r->buf + r->pos;
    nl = memchr(p, '\n', limit);
    if (nl == NULL) {
        return rp_mf_fail(r, "line too long or not terminated");
    }
    if (p == nl || p[0] == ' ' || nl[-1] == ' ') {
        return rp_mf_fail(r, "empty line or stray space");
    }
    while (p < nl) {
        const char *start = p;

        while (p < nl && *p != ' ') {
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) {
                return rp_mf_fail(r, "invalid character 0x%02x",
                                  (unsigned char)*p);
            }
            p++;
        }
        if (r->ntok == RP_MF_MAX_TOKENS) {
            return rp_mf_fail(r, "too many fields");
        }
        r->tok[r->ntok] = start;
        r->toklen[r->ntok] = (size_t)(p - start);
        r->ntok++;
        if (p < nl) {
            /* Skip the one separating space; the line does not end in a
             * space, so a token follows unless there is a second space. */
            p++;
            if (*p == ' ') {
                return rp_mf_fail(r, "empty field or stray space");
            }
        }
    }
    r->pos = (size_t)(nl - r->buf) + 1;
    return RP_OK;
}

static bool rp_mf_tok_is(const rp_mf_reader_t *r, unsigned i, const char *s)
{
    size_t n = strlen(s);

    return i < r->ntok && r->toklen[i] == n && memcmp(r->tok[i], s, n) == 0;
}

/* Canonical unsigned decimal: no sign, no leading zero, no overflow. */
static rp_status_t rp_mf_tok_u64(rp_mf_reader_t *r, unsigned i,
                                 const char *what, uint64_t min, uint64_t max,
                                 uint64_t *out)
{
    const char *p = r->tok[i];
    size_t n = r->toklen[i], k;
    uint64_t v = 0;

    if (n == 0 || n > 20 || (n > 1 && p[0] == '0')) {
        return rp_mf_fail(r, "%s '%.*s' is not a canonical number", what,
                          RP_MF_TOK(r, i));
    }
    for (k = 0; k < n; k++) {
        unsigned d;
        if (p[k] < '0' || p[k] > '9') {
            return rp_mf_fail(r, "%s '%.*s' is not a number", what,
                              RP_MF_TOK(r, i));
        }
        d = (unsigned)(p[k] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return rp_mf_fail(r, "%s '%.*s' overflows", what, RP_MF_TOK(r, i));
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        return rp_mf_fail(r, "%s %llu out of range [%llu, %llu]", what,
                          (unsigned long long)v, (unsigned long long)min,
                          (unsigned long long)max);
    }
    *out = v;
    return RP_OK;
}

static rp_status_t rp_mf_tok_u32(rp_mf_reader_t *r, unsigned i,
                                 const char *what, uint32_t min, uint32_t max,
                                 uint32_t *out)
{
    uint64_t v;
    rp_status_t st = rp_mf_tok_u64(r, i, what, min, max, &v);

    if (st == RP_OK) {
        *out = (uint32_t)v;
    }
    return st;
}

/* Number token that must equal @want (derived values recorded in the text). */
static rp_status_t rp_mf_tok_expect(rp_mf_reader_t *r, unsigned i,
                                    const char *what, uint64_t want)
{
    uint64_t v;
    rp_status_t st = rp_mf_tok_u64(r, i, what, 0, UINT64_MAX, &v);

    if (st != RP_OK) {
        return st;
    }
    if (v != want) {
        return rp_mf_fail(r, "%s %llu, expected %llu", what,
                          (unsigned long long)v, (unsigned long long)want);
    }
    return RP_OK;
}

/* Exactly @ndigits lower-case hex digits into @out (big-endian bytes). */
static bool rp_mf_hex(const char *p, size_t n, size_t ndigits, uint8_t *out)
{
    size_t k;

    if (n != ndigits) {
        return false;
    }
    for (k = 0; k < n; k++) {
        unsigned d;
        if (p[k] >= '0' && p[k] <= '9') {
            d = (unsigned)(p[k] - '0');
        } else if (p[k] >= 'a' && p[k] <= 'f') {
            d = (unsigned)(p[k] - 'a' + 10);
        } else {
            return false;
        }
        if (k % 2 == 0) {
            out[k / 2] = (uint8_t)(d << 4);
        } else {
            out[k / 2] |= (uint8_t)d;
        }
    }
    return true;
}

static rp_status_t rp_mf_tok_hex32(rp_mf_reader_t *r, unsigned i,
                                   const char *what, uint32_t *out)
{
    uint8_t b[4];

    if (!rp_mf_hex(r->tok[i], r->toklen[i], 8, b)) {
        return rp_mf_fail(r, "%s '%.*s' is not 8 lower-case hex digits", what,
                          RP_MF_TOK(r, i));
    }
    *out = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
           ((uint32_t)b[2] << 8) | b[3];
    return RP_OK;
}

/* Read "key value" for header key @k, explaining an unexpected key. */
static rp_status_t rp_mf_key_line(rp_mf_reader_t *r, unsigned k)
{
    unsigned j;
    rp_status_t st = rp_mf_next_line(r);

    if (st != RP_OK) {
        return st;
    }
    if (rp_mf_tok_is(r, 0, rp_mf_keys[k])) {
        if (r->ntok != 2) {
            return rp_mf_fail(r, "'%s' needs exactly one value", rp_mf_keys[k]);
        }
        return RP_OK;
    }
    for (j = 0; j < RP_MF_NKEYS; j++) {
        if (rp_mf_tok_is(r, 0, rp_mf_keys[j])) {
            return rp_mf_fail(r, j < k ? "duplicate key '%s'"
                                       : "missing key '%s' (keys out of order)",
                              j < k ? rp_mf_keys[j] : rp_mf_keys[k]);
        }
    }
    return rp_mf_fail(r, "expected key '%s', found '%.*s'", rp_mf_keys[k],
                      RP_MF_TOK(r, 0));
}

static rp_status_t rp_mf_parse_header(rp_mf_reader_t *r,
                                      rp__ckpt_manifest_t *h)
{
    rp_status_t st = RP_OK;
    unsigned k;

    for (k = 0; k < RP_MF_NKEYS && st == RP_OK; k++) {
        st = rp_mf_key_line(r, k);
        if (st != RP_OK) {
            break;
        }
        switch (k) {
        case RP_MF_STEP:
            st = rp_mf_tok_u64(r, 1, "step", 0, UINT64_MAX, &h->step);
            break;
        case RP_MF_WORLD:
            st = rp_mf_tok_u32(r, 1, "world_size", 1, RP_CKPT_MAX_WORLD,
                               &h->world_size);
            break;
        case RP_MF_JOB:
            st = rp_mf_tok_u32(r, 1, "slurm_job_id", 0, UINT32_MAX,
                               &h->job_id);
            break;
        case RP_MF_RESTART:
            st = rp_mf_tok_u32(r, 1, "slurm_restart_count", 0, UINT32_MAX,
                               &h->restart_count);
            break;
        case RP_MF_CREATED:
            st = rp_mf_tok_u64(r, 1, "created_ns", 0, UINT64_MAX,
                               &h->created_ns);
            break;
        case RP_MF_ID:
            if (!rp_mf_hex(r->tok[1], r->toklen[1], 2 * RP_CKPT_ID_SIZE,
                           h->ckpt_id)) {
                st = rp_mf_fail(r, "checkpoint_id is not 32 lower-case hex "
                                   "digits");
            }
            break;
        case RP_MF_CHUNK:
            st = rp_mf_tok_u64(r, 1, "chunk_size", RP_CKPT_MIN_CHUNK_SIZE,
                               RP_CKPT_MAX_CHUNK_SIZE, &h->chunk_size);
            if (st == RP_OK && h->chunk_size % RP_CKPT_MIN_CHUNK_SIZE != 0) {
                st = rp_mf_fail(r, "chunk_size is not a multiple of 4096");
            }
            break;
        case RP_MF_UNIT:
            st = rp_mf_tok_u64(r, 1, "stripe_unit", RP_CKPT_STRIPE_UNIT,
                               RP_CKPT_STRIPE_UNIT, &h->stripe_unit);
            break;
        case RP_MF_STREAM:
            st = rp_mf_tok_u64(r, 1, "stream_length", 0, RP_CKPT_MAX_LENGTH,
                               &h->stream_length);
            break;
        case RP_MF_PERRANK:
            st = rp_mf_tok_u64(r, 1, "per_rank_length", 0, RP_CKPT_MAX_LENGTH,
                               &h->per_rank_length);
            break;
        case RP_MF_REGIONS:
            st = rp_mf_tok_u32(r, 1, "regions", 0, RP_CKPT_MAX_REGIONS,
                               &h->nregions);
            break;
        default:
            break;
        }
    }
    return st;
}

static rp_status_t rp_mf_parse_region(rp_mf_reader_t *r,
                                      rp__ckpt_region_t *rg)
{
    rp_status_t st = rp_mf_next_line(r);
    unsigned kind;

    if (st != RP_OK) {
        return st;
    }
    if (!rp_mf_tok_is(r, 0, "region") || r->ntok != 6) {
        return rp_mf_fail(r, "expected 'region NAME KIND OFFSET SIZE FLAGS'");
    }
    if (r->toklen[1] > RP_CKPT_REGION_NAME_MAX) {
        return rp_mf_fail(r, "region name longer than %u bytes",
                          RP_CKPT_REGION_NAME_MAX);
    }
    memcpy(rg->name, r->tok[1], r->toklen[1]);
    rg->name[r->toklen[1]] = '\0';
    for (kind = 0; kind < 2; kind++) {
        if (rp_mf_tok_is(r, 2, rp_mf_kind_names[kind])) {
            break;
        }
    }
    if (kind == 2) {
        return rp_mf_fail(r, "region kind '%.*s' is not replicated or "
                             "per_rank", RP_MF_TOK(r, 2));
    }
    rg->kind = (rp__ckpt_region_kind_t)kind;
    st = rp_mf_tok_u64(r, 3, "region offset", 0, RP_CKPT_MAX_LENGTH,
                       &rg->offset);
    if (st == RP_OK) {
        st = rp_mf_tok_u64(r, 4, "region size", 0, RP_CKPT_MAX_LENGTH,
                           &rg->size);
    }
    if (st == RP_OK) {
        st = rp_mf_tok_hex32(r, 5, "region flags", &rg->flags);
    }
    return st;
}

static rp_status_t rp_mf_parse_shard(rp_mf_reader_t *r,
                                     rp__ckpt_manifest_t *m, uint32_t rank)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    uint32_t c, k, n;
    rp_status_t st = rp_mf_next_line(r);

    if (st != RP_OK) {
        return st;
    }
    if (!rp_mf_tok_is(r, 0, "shard") || r->ntok != 6) {
        return rp_mf_fail(r, "expected 'shard RANK STRIPE_OFFSET "
                             "STRIPE_LENGTH LENGTH CHUNKS' for rank %u", rank);
    }
    st = rp_mf_tok_expect(r, 1, "shard rank", rank);
    if (st == RP_OK) {
        st = rp_mf_tok_expect(r, 2, "stripe offset", sh->stripe_offset);
    }
    if (st == RP_OK) {
        st = rp_mf_tok_expect(r, 3, "stripe length", sh->stripe_length);
    }
    if (st == RP_OK) {
        st = rp_mf_tok_expect(r, 4, "shard length", sh->length);
    }
    if (st == RP_OK) {
        st = rp_mf_tok_expect(r, 5, "chunk count", sh->nchunks);
    }
    for (c = 0; st == RP_OK && c < sh->nchunks; c += n) {
        n = sh->nchunks - c;
        if (n > RP_CKPT_CRCS_PER_LINE) {
            n = RP_CKPT_CRCS_PER_LINE;
        }
        st = rp_mf_next_line(r);
        if (st != RP_OK) {
            break;
        }
        if (!rp_mf_tok_is(r, 0, "crc") || r->ntok != 3 + n) {
            st = rp_mf_fail(r, "expected 'crc %u %u' with %u CRCs", rank, c,
                            n);
            break;
        }
        st = rp_mf_tok_expect(r, 1, "crc rank", rank);
        if (st == RP_OK) {
            st = rp_mf_tok_expect(r, 2, "first chunk", c);
        }
        for (k = 0; st == RP_OK && k < n; k++) {
            st = rp_mf_tok_hex32(r, 3 + k, "chunk crc", &sh->chunk_crc[c + k]);
        }
    }
    return st;
}

rp_status_t rp__ckpt_manifest_parse(const void *buf, size_t len,
                                    rp__ckpt_manifest_t *m,
                                    char *err, size_t errlen)
{
    rp_mf_reader_t r;
    rp__ckpt_manifest_t h;
    const char *text = buf;
    uint64_t version, left, max_chunks;
    uint32_t stored, actual, i;
    rp_status_t st;

    if (m == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    memset(m, 0, sizeof(*m));
    memset(&h, 0, sizeof(h));
    memset(&r, 0, sizeof(r));
    r.buf = text;
    r.end = len;
    r.err = err;
    r.errlen = errlen;
    if (err != NULL && errlen > 0) {
        err[0] = '\0';
    }
    if (buf == NULL || len == 0) {
        return rp_mf_fail(&r, "empty manifest");
    }
    if (len > RP_CKPT_MANIFEST_MAX) {
        return rp_mf_fail(&r, "manifest larger than %u bytes",
                          RP_CKPT_MANIFEST_MAX);
    }

    /* The version line first: a manifest of a future version may change
     * everything after it, including the checksum line. */
    st = rp_mf_next_line(&r);
    if (st != RP_OK) {
        return st;
    }
    if (!rp_mf_tok_is(&r, 0, RP_CKPT_MANIFEST_MAGIC) || r.ntok != 2) {
        return rp_mf_fail(&r, "not a ringpoint manifest");
    }
    st = rp_mf_tok_u64(&r, 1, "format version", 0, UINT64_MAX, &version);
    if (st != RP_OK) {
        return st;
    }
    if (version != RP_CKPT_MANIFEST_VERSION) {
        rp_mf_fail(&r, "unsupported manifest format version %llu (this "
                       "build reads version %u)",
                   (unsigned long long)version, RP_CKPT_MANIFEST_VERSION);
        return RP_ERR_NOT_SUPPORTED;
    }

    /* The checksum line covers every byte before it, so after this check
     * the rest is only parsed, never distrusted for being damaged. */
    if (len < r.pos + RP_MF_TRAILER_LEN ||
        memcmp(text + len - RP_MF_TRAILER_LEN, "crc32c ", 7) != 0 ||
        text[len - 1] != '\n' || text[len - RP_MF_TRAILER_LEN - 1] != '\n') {
        return rp_mf_fail(&r, "truncated: no final 'crc32c' line");
    }
    {
        uint8_t b[4];
        if (!rp_mf_hex(text + len - RP_MF_TRAILER_LEN + 7, 8, 8, b)) {
            return rp_mf_fail(&r, "final 'crc32c' line is malformed");
        }
        stored = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
                 ((uint32_t)b[2] << 8) | b[3];
    }
    actual = rp__crc32c(0, text, len - RP_MF_TRAILER_LEN);
    if (stored != actual) {
        return rp_mf_fail(&r, "manifest crc32c %08x != computed %08x",
                          stored, actual);
    }
    r.end = len - RP_MF_TRAILER_LEN;

    h.version = (uint32_t)version;
    st = rp_mf_parse_header(&r, &h);
    if (st != RP_OK) {
        return st;
    }
    /* Bound what the counts would allocate by what the input can hold. */
    left = r.end - r.pos;
    if ((uint64_t)h.nregions * RP_MF_MIN_REGION_LINE > left ||
        (uint64_t)h.world_size * RP_MF_MIN_SHARD_LINE > left) {
        return rp_mf_fail(&r, "%u regions and %u shards cannot fit in the "
                              "%llu bytes left", h.nregions, h.world_size,
                          (unsigned long long)left);
    }
    st = rp__ckpt_manifest_init(m, h.world_size, h.nregions);
    if (st != RP_OK) {
        rp__errbuf(err, errlen, "out of memory");
        goto err_init;
    }
    m->step = h.step;
    m->job_id = h.job_id;
    m->restart_count = h.restart_count;
    m->created_ns = h.created_ns;
    memcpy(m->ckpt_id, h.ckpt_id, RP_CKPT_ID_SIZE);
    m->chunk_size = h.chunk_size;
    m->stripe_unit = h.stripe_unit;
    m->stream_length = h.stream_length;
    m->per_rank_length = h.per_rank_length;

    for (i = 0; i < m->nregions; i++) {
        st = rp_mf_parse_region(&r, &m->regions[i]);
        if (st != RP_OK) {
            goto err_parse;
        }
    }
    max_chunks = (r.end - r.pos) / RP_MF_MIN_CRC_BYTES;
    if (max_chunks > RP_CKPT_MAX_TOTAL_CHUNKS) {
        max_chunks = RP_CKPT_MAX_TOTAL_CHUNKS;
    }
    {
        char why[256];
        st = rp_mf_plan(m, max_chunks, why, sizeof(why));
        if (st != RP_OK) {
            if (st != RP_ERR_NO_MEMORY) {
                st = rp_mf_fail(&r, "after the region table: %s", why);
            } else {
                rp__errbuf(err, errlen, "%s", why);
            }
            goto err_parse;
        }
    }
    st = rp_mf_next_line(&r);
    if (st != RP_OK) {
        goto err_parse;
    }
    if (!rp_mf_tok_is(&r, 0, "shards") || r.ntok != 2) {
        st = rp_mf_fail(&r, "expected 'shards %u' after %u regions",
                        m->world_size, m->nregions);
        goto err_parse;
    }
    st = rp_mf_tok_expect(&r, 1, "shards", m->world_size);
    if (st != RP_OK) {
        goto err_parse;
    }
    for (i = 0; i < m->world_size; i++) {
        st = rp_mf_parse_shard(&r, m, i);
        if (st != RP_OK) {
            goto err_parse;
        }
    }
    if (r.pos != r.end) {
        r.line++;
        st = rp_mf_fail(&r, "unexpected data after the last shard");
        goto err_parse;
    }
    return RP_OK;

err_parse:
    rp__ckpt_manifest_free(m);
err_init:
    return st;
}
