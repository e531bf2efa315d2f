/*
 * Manifest parsing.
 *
 * The parser is written for hostile input: every line is bounded before it
 * is looked at, every number is range-checked as it is read, every count
 * that drives an allocation is first bounded by the bytes left in the input
 * (so a 100-byte file cannot ask for a million shard slots), and the text
 * must follow the one canonical spelling the encoder produces. That last
 * rule makes "parse then encode gives the same bytes" a property the tests
 * can check on mutated inputs, and leaves no second way to say anything.
 */
#include "ckpt/format/manifest_parse.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/format/crc32c.h"
#include "ckpt/format/manifest_grammar.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest_int.h"
#include "util/str.h"

typedef struct rp__mf_reader {
    const char *buf;
    size_t pos;
    size_t end;
    unsigned line;
    unsigned ntok;
    const char *tok[RP_MF_MAX_TOKENS];
    size_t toklen[RP_MF_MAX_TOKENS];
    char *err;
    size_t errlen;
} rp__mf_reader_t;

static rp_status_t rp__mf_fail(rp__mf_reader_t *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static rp_status_t rp__mf_fail(rp__mf_reader_t *r, const char *fmt, ...)
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
static rp_status_t rp__mf_next_line(rp__mf_reader_t *r)
{
    size_t limit;
    const char *p, *nl;

    r->line++;
    r->ntok = 0;
    if (r->pos >= r->end) {
        return rp__mf_fail(r, "unexpected end of manifest");
    }
    limit = r->end - r->pos;
    if (limit > RP_CKPT_MANIFEST_LINE_MAX) {
        limit = RP_CKPT_MANIFEST_LINE_MAX;
    }
    p = r->buf + r->pos;
    nl = memchr(p, '\n', limit);
    if (nl == NULL) {
        return rp__mf_fail(r, "line too long or not terminated");
    }
    if (p == nl || p[0] == ' ' || nl[-1] == ' ') {
        return rp__mf_fail(r, "empty line or stray space");
    }
    while (p < nl) {
        const char *start = p;

        while (p < nl && *p != ' ') {
            if ((unsigned char)*p < 0x21 || (unsigned char)*p > 0x7e) {
                return rp__mf_fail(r, "invalid character 0x%02x",
                                  (unsigned char)*p);
            }
            p++;
        }
        if (r->ntok == RP_MF_MAX_TOKENS) {
            return rp__mf_fail(r, "too many fields");
        }
        r->tok[r->ntok] = start;
        r->toklen[r->ntok] = (size_t)(p - start);
        r->ntok++;
        if (p < nl) {
            /* Skip the one separating space; the line does not end in a
             * space, so a token follows unless there is a second space. */
            p++;
            if (*p == ' ') {
                return rp__mf_fail(r, "empty field or stray space");
            }
        }
    }
    r->pos = (size_t)(nl - r->buf) + 1;
    return RP_OK;
}

static bool rp__mf_tok_is(const rp__mf_reader_t *r, unsigned i, const char *s)
{
    size_t n = strlen(s);

    return i < r->ntok && r->toklen[i] == n && memcmp(r->tok[i], s, n) == 0;
}

/* Canonical unsigned decimal: no sign, no leading zero, no overflow. */
static rp_status_t rp__mf_tok_u64(rp__mf_reader_t *r, unsigned i,
                                 const char *what, uint64_t min, uint64_t max,
                                 uint64_t *out)
{
    const char *p = r->tok[i];
    size_t n = r->toklen[i], k;
    uint64_t v = 0;

    if (n == 0 || n > 20 || (n > 1 && p[0] == '0')) {
        return rp__mf_fail(r, "%s '%.*s' is not a canonical number", what,
                          RP_MF_TOK(r, i));
    }
    for (k = 0; k < n; k++) {
        unsigned d;
        if (p[k] < '0' || p[k] > '9') {
            return rp__mf_fail(r, "%s '%.*s' is not a number", what,
                              RP_MF_TOK(r, i));
        }
        d = (unsigned)(p[k] - '0');
        if (v > (UINT64_MAX - d) / 10) {
            return rp__mf_fail(r, "%s '%.*s' overflows", what, RP_MF_TOK(r, i));
        }
        v = v * 10 + d;
    }
    if (v < min || v > max) {
        return rp__mf_fail(r, "%s %llu out of range [%llu, %llu]", what,
                          (unsigned long long)v, (unsigned long long)min,
                          (unsigned long long)max);
    }
    *out = v;
    return RP_OK;
}

static rp_status_t rp__mf_tok_u32(rp__mf_reader_t *r, unsigned i,
                                 const char *what, uint32_t min, uint32_t max,
                                 uint32_t *out)
{
    uint64_t v;
    rp_status_t st = rp__mf_tok_u64(r, i, what, min, max, &v);

    if (st == RP_OK) {
        *out = (uint32_t)v;
    }
    return st;
}

/* Number token that must equal @want (derived values recorded in the text). */
static rp_status_t rp__mf_tok_expect(rp__mf_reader_t *r, unsigned i,
                                     const char *what, uint64_t want)
{
    uint64_t v;
    rp_status_t st = rp__mf_tok_u64(r, i, what, 0, UINT64_MAX, &v);

    if (st != RP_OK) {
        return st;
    }
    if (v != want) {
        return rp__mf_fail(r, "%s %llu, expected %llu", what,
                          (unsigned long long)v, (unsigned long long)want);
    }
    return RP_OK;
}

/* Exactly @ndigits lower-case hex digits into @out (big-endian bytes). */
static bool rp__mf_hex(const char *p, size_t n, size_t ndigits, uint8_t *out)
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

static rp_status_t rp__mf_tok_hex32(rp__mf_reader_t *r, unsigned i,
                                   const char *what, uint32_t *out)
{
    uint8_t b[4];

    if (!rp__mf_hex(r->tok[i], r->toklen[i], 8, b)) {
        return rp__mf_fail(r, "%s '%.*s' is not 8 lower-case hex digits", what,
                          RP_MF_TOK(r, i));
    }
    *out = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
           ((uint32_t)b[2] << 8) | b[3];
    return RP_OK;
}

/* Read "key value" for header key @k, explaining an unexpected key. */
static rp_status_t rp__mf_key_line(rp__mf_reader_t *r, unsigned k)
{
    unsigned j;
    rp_status_t st = rp__mf_next_line(r);

    if (st != RP_OK) {
        return st;
    }
    if (rp__mf_tok_is(r, 0, rp__mf_keys[k])) {
        if (r->ntok != 2) {
            return rp__mf_fail(r, "'%s' needs exactly one value",
                               rp__mf_keys[k]);
        }
        return RP_OK;
    }
    for (j = 0; j < RP_MF_NKEYS; j++) {
        if (rp__mf_tok_is(r, 0, rp__mf_keys[j])) {
            return rp__mf_fail(r, j < k ? "duplicate key '%s'"
                                       : "missing key '%s' (keys out of order)",
                              j < k ? rp__mf_keys[j] : rp__mf_keys[k]);
        }
    }
    return rp__mf_fail(r, "expected key '%s', found '%.*s'", rp__mf_keys[k],
                      RP_MF_TOK(r, 0));
}

static rp_status_t rp__mf_parse_header(rp__mf_reader_t *r,
                                       rp__ckpt_manifest_t *h)
{
    rp_status_t st = RP_OK;
    unsigned k;

    for (k = 0; k < RP_MF_NKEYS && st == RP_OK; k++) {
        st = rp__mf_key_line(r, k);
        if (st != RP_OK) {
            break;
        }
        switch (k) {
        case RP_MF_STEP:
            st = rp__mf_tok_u64(r, 1, "step", 0, UINT64_MAX, &h->step);
            break;
        case RP_MF_WORLD:
            st = rp__mf_tok_u32(r, 1, "world_size", 1, RP_CKPT_MAX_WORLD,
                               &h->world_size);
            break;
        case RP_MF_JOB:
            st = rp__mf_tok_u32(r, 1, "slurm_job_id", 0, UINT32_MAX,
                               &h->job_id);
            break;
        case RP_MF_RESTART:
            st = rp__mf_tok_u32(r, 1, "slurm_restart_count", 0, UINT32_MAX,
                               &h->restart_count);
            break;
        case RP_MF_CREATED:
            st = rp__mf_tok_u64(r, 1, "created_ns", 0, UINT64_MAX,
                               &h->created_ns);
            break;
        case RP_MF_ID:
            if (!rp__mf_hex(r->tok[1], r->toklen[1], 2 * RP_CKPT_ID_SIZE,
                           h->ckpt_id)) {
                st = rp__mf_fail(r, "checkpoint_id is not 32 lower-case hex "
                                   "digits");
            }
            break;
        case RP_MF_CHUNK:
            st = rp__mf_tok_u64(r, 1, "chunk_size", RP_CKPT_MIN_CHUNK_SIZE,
                               RP_CKPT_MAX_CHUNK_SIZE, &h->chunk_size);
            if (st == RP_OK && h->chunk_size % RP_CKPT_MIN_CHUNK_SIZE != 0) {
                st = rp__mf_fail(r, "chunk_size is not a multiple of 4096");
            }
            break;
        case RP_MF_UNIT:
            st = rp__mf_tok_u64(r, 1, "stripe_unit", RP_CKPT_STRIPE_UNIT,
                               RP_CKPT_STRIPE_UNIT, &h->stripe_unit);
            break;
        case RP_MF_STREAM:
            st = rp__mf_tok_u64(r, 1, "stream_length", 0, RP_CKPT_MAX_LENGTH,
                               &h->stream_length);
            break;
        case RP_MF_PERRANK:
            st = rp__mf_tok_u64(r, 1, "per_rank_length", 0, RP_CKPT_MAX_LENGTH,
                               &h->per_rank_length);
            break;
        case RP_MF_REGIONS:
            st = rp__mf_tok_u32(r, 1, "regions", 0, RP_CKPT_MAX_REGIONS,
                               &h->nregions);
            break;
        default:
            break;
        }
    }
    return st;
}

static rp_status_t rp__mf_parse_region(rp__mf_reader_t *r,
                                       rp__ckpt_region_t *rg)
{
    rp_status_t st = rp__mf_next_line(r);
    unsigned kind;

    if (st != RP_OK) {
        return st;
    }
    if (!rp__mf_tok_is(r, 0, "region") || r->ntok != 6) {
        return rp__mf_fail(r, "expected 'region NAME KIND OFFSET SIZE FLAGS'");
    }
    if (r->toklen[1] > RP_CKPT_REGION_NAME_MAX) {
        return rp__mf_fail(r, "region name longer than %u bytes",
                          RP_CKPT_REGION_NAME_MAX);
    }
    memcpy(rg->name, r->tok[1], r->toklen[1]);
    rg->name[r->toklen[1]] = '\0';
    for (kind = 0; kind < 2; kind++) {
        if (rp__mf_tok_is(r, 2, rp__mf_kind_names[kind])) {
            break;
        }
    }
    if (kind == 2) {
        return rp__mf_fail(r, "region kind '%.*s' is not replicated or "
                             "per_rank", RP_MF_TOK(r, 2));
    }
    rg->kind = (rp__ckpt_region_kind_t)kind;
    st = rp__mf_tok_u64(r, 3, "region offset", 0, RP_CKPT_MAX_LENGTH,
                       &rg->offset);
    if (st == RP_OK) {
        st = rp__mf_tok_u64(r, 4, "region size", 0, RP_CKPT_MAX_LENGTH,
                           &rg->size);
    }
    if (st == RP_OK) {
        st = rp__mf_tok_hex32(r, 5, "region flags", &rg->flags);
    }
    return st;
}

static rp_status_t rp__mf_parse_shard(rp__mf_reader_t *r,
                                      rp__ckpt_manifest_t *m, uint32_t rank)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    uint32_t c, k, n;
    rp_status_t st = rp__mf_next_line(r);

    if (st != RP_OK) {
        return st;
    }
    if (!rp__mf_tok_is(r, 0, "shard") || r->ntok != 6) {
        return rp__mf_fail(r, "expected 'shard RANK STRIPE_OFFSET "
                             "STRIPE_LENGTH LENGTH CHUNKS' for rank %u", rank);
    }
    st = rp__mf_tok_expect(r, 1, "shard rank", rank);
    if (st == RP_OK) {
        st = rp__mf_tok_expect(r, 2, "stripe offset", sh->stripe_offset);
    }
    if (st == RP_OK) {
        st = rp__mf_tok_expect(r, 3, "stripe length", sh->stripe_length);
    }
    if (st == RP_OK) {
        st = rp__mf_tok_expect(r, 4, "shard length", sh->length);
    }
    if (st == RP_OK) {
        st = rp__mf_tok_expect(r, 5, "chunk count", sh->nchunks);
    }
    for (c = 0; st == RP_OK && c < sh->nchunks; c += n) {
        n = sh->nchunks - c;
        if (n > RP_CKPT_CRCS_PER_LINE) {
            n = RP_CKPT_CRCS_PER_LINE;
        }
        st = rp__mf_next_line(r);
        if (st != RP_OK) {
            break;
        }
        if (!rp__mf_tok_is(r, 0, "crc") || r->ntok != 3 + n) {
            st = rp__mf_fail(r, "expected 'crc %u %u' with %u CRCs", rank, c,
                            n);
            break;
        }
        st = rp__mf_tok_expect(r, 1, "crc rank", rank);
        if (st == RP_OK) {
            st = rp__mf_tok_expect(r, 2, "first chunk", c);
        }
        for (k = 0; st == RP_OK && k < n; k++) {
            st = rp__mf_tok_hex32(r, 3 + k, "chunk crc", &sh->chunk_crc[c + k]);
        }
    }
    return st;
}

rp_status_t rp__ckpt_manifest_parse(const void *buf, size_t len,
                                    rp__ckpt_manifest_t *m,
                                    char *err, size_t errlen)
{
    rp__mf_reader_t r;
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
        return rp__mf_fail(&r, "empty manifest");
    }
    if (len > RP_CKPT_MANIFEST_MAX) {
        return rp__mf_fail(&r, "manifest larger than %u bytes",
                          RP_CKPT_MANIFEST_MAX);
    }

    /* The version line first: a manifest of a future version may change
     * everything after it, including the checksum line. */
    st = rp__mf_next_line(&r);
    if (st != RP_OK) {
        return st;
    }
    if (!rp__mf_tok_is(&r, 0, RP_CKPT_MANIFEST_MAGIC) || r.ntok != 2) {
        return rp__mf_fail(&r, "not a ringpoint manifest");
    }
    st = rp__mf_tok_u64(&r, 1, "format version", 0, UINT64_MAX, &version);
    if (st != RP_OK) {
        return st;
    }
    if (version != RP_CKPT_MANIFEST_VERSION) {
        rp__mf_fail(&r, "unsupported manifest format version %llu (this "
                       "build reads version %u)",
                   (unsigned long long)version, RP_CKPT_MANIFEST_VERSION);
        return RP_ERR_NOT_SUPPORTED;
    }

    /* The checksum line covers every byte before it, so after this check
     * the rest is only parsed, never distrusted for being damaged. */
    if (len < r.pos + RP_MF_TRAILER_LEN ||
        memcmp(text + len - RP_MF_TRAILER_LEN, "crc32c ", 7) != 0 ||
        text[len - 1] != '\n' || text[len - RP_MF_TRAILER_LEN - 1] != '\n') {
        return rp__mf_fail(&r, "truncated: no final 'crc32c' line");
    }
    {
        uint8_t b[4];
        if (!rp__mf_hex(text + len - RP_MF_TRAILER_LEN + 7, 8, 8, b)) {
            return rp__mf_fail(&r, "final 'crc32c' line is malformed");
        }
        stored = ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) |
                 ((uint32_t)b[2] << 8) | b[3];
    }
    actual = rp__crc32c(0, text, len - RP_MF_TRAILER_LEN);
    if (stored != actual) {
        return rp__mf_fail(&r, "manifest crc32c %08x != computed %08x",
                          stored, actual);
    }
    r.end = len - RP_MF_TRAILER_LEN;

    h.version = (uint32_t)version;
    st = rp__mf_parse_header(&r, &h);
    if (st != RP_OK) {
        return st;
    }
    /* Bound what the counts would allocate by what the input can hold. */
    left = r.end - r.pos;
    if ((uint64_t)h.nregions * RP_MF_MIN_REGION_LINE > left ||
        (uint64_t)h.world_size * RP_MF_MIN_SHARD_LINE > left) {
        return rp__mf_fail(&r, "%u regions and %u shards cannot fit in the "
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
        st = rp__mf_parse_region(&r, &m->regions[i]);
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
        st = rp__mf_plan(m, max_chunks, why, sizeof(why));
        if (st != RP_OK) {
            if (st != RP_ERR_NO_MEMORY) {
                st = rp__mf_fail(&r, "after the region table: %s", why);
            } else {
                rp__errbuf(err, errlen, "%s", why);
            }
            goto err_parse;
        }
    }
    st = rp__mf_next_line(&r);
    if (st != RP_OK) {
        goto err_parse;
    }
    if (!rp__mf_tok_is(&r, 0, "shards") || r.ntok != 2) {
        st = rp__mf_fail(&r, "expected 'shards %u' after %u regions",
                        m->world_size, m->nregions);
        goto err_parse;
    }
    st = rp__mf_tok_expect(&r, 1, "shards", m->world_size);
    if (st != RP_OK) {
        goto err_parse;
    }
    for (i = 0; i < m->world_size; i++) {
        st = rp__mf_parse_shard(&r, m, i);
        if (st != RP_OK) {
            goto err_parse;
        }
    }
    if (r.pos != r.end) {
        r.line++;
        st = rp__mf_fail(&r, "unexpected data after the last shard");
        goto err_parse;
    }
    return RP_OK;

err_parse:
    rp__ckpt_manifest_free(m);
err_init:
    return st;
}
