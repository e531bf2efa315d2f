/*
 * Unit tests for the on-disk format pieces that need no files: the stripe
 * layout, checkpoint names, the shard header, and the manifest encoder and
 * parser, including every rejection rule and a mutation fuzzer that checks
 * the parser never crashes and only accepts canonical text.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/format/crc32c.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"
#include "ckpt/format/manifest_encode.h"
#include "ckpt/format/manifest_grammar.h"
#include "ckpt/format/manifest_parse.h"
#include "ckpt/format/shard.h"
#include "test_rng.h"


/* ---- stripes ----------------------------------------------------------- */

static void test_stripe_check_all(uint64_t len, uint32_t world)
{
    const uint64_t unit = RP_CKPT_STRIPE_UNIT;
    uint64_t expect_off = 0, min_units = UINT64_MAX, max_units = 0;
    uint32_t r;

    for (r = 0; r < world; r++) {
        uint64_t off, sl, units;

        assert_int_equal(rp__ckpt_stripe(len, world, r, &off, &sl), RP_OK);
        /* Contiguous, in rank order, no gaps, no overlap. */
        assert_true(off == expect_off);
        expect_off = off + sl;
        /* Every non-empty stripe starts on a unit boundary. */
        if (sl > 0) {
            assert_true(off % unit == 0);
        }
        /* Only the stripe that reaches the end may be a partial unit. */
        if (off + sl < len) {
            assert_true(sl % unit == 0);
        }
        units = sl / unit + (sl % unit != 0);
        min_units = units < min_units ? units : min_units;
        max_units = units > max_units ? units : max_units;
    }
    assert_true(expect_off == len);
    assert_true(max_units - min_units <= 1);
}

static void test_stripe_cases(void **state)
{
    uint64_t off, len;
    unsigned i;

    (void)state;
    /* L = 0: every stripe empty, at offset 0. */
    for (i = 0; i < 4; i++) {
        assert_int_equal(rp__ckpt_stripe(0, 4, i, &off, &len), RP_OK);
        assert_true(off == 0 && len == 0);
    }
    /* L < W (and < one unit): rank 0 holds it all. */
    assert_int_equal(rp__ckpt_stripe(3, 8, 0, &off, &len), RP_OK);
    assert_true(off == 0 && len == 3);
    assert_int_equal(rp__ckpt_stripe(3, 8, 7, &off, &len), RP_OK);
    assert_true(off == 3 && len == 0);
    /* W = 1: the whole stream. */
    assert_int_equal(rp__ckpt_stripe(12345, 1, 0, &off, &len), RP_OK);
    assert_true(off == 0 && len == 12345);
    /* Not divisible: 11 units (last short) over 3 ranks -> 4, 4, 3. */
    assert_int_equal(rp__ckpt_stripe(10 * 4096 + 5, 3, 0, &off, &len), RP_OK);
    assert_true(off == 0 && len == 4 * 4096);
    assert_int_equal(rp__ckpt_stripe(10 * 4096 + 5, 3, 1, &off, &len), RP_OK);
    assert_true(off == 4 * 4096 && len == 4 * 4096);
    assert_int_equal(rp__ckpt_stripe(10 * 4096 + 5, 3, 2, &off, &len), RP_OK);
    assert_true(off == 8 * 4096 && len == 2 * 4096 + 5);
    /* Divisible: equal stripes. */
    assert_int_equal(rp__ckpt_stripe(8 * 4096, 4, 3, &off, &len), RP_OK);
    assert_true(off == 6 * 4096 && len == 2 * 4096);
    /* Fewer units than ranks: ranks past the end are empty. */
    assert_int_equal(rp__ckpt_stripe(2 * 4096 + 1, 5, 2, &off, &len), RP_OK);
    assert_true(off == 2 * 4096 && len == 1);
    assert_int_equal(rp__ckpt_stripe(2 * 4096 + 1, 5, 4, &off, &len), RP_OK);
    assert_true(off == 2 * 4096 + 1 && len == 0);
    /* Invalid arguments. */
    assert_int_equal(rp__ckpt_stripe(100, 0, 0, &off, &len),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_stripe(100, 4, 4, &off, &len),
                     RP_ERR_INVALID_ARG);

    test_stripe_check_all(0, 1);
    test_stripe_check_all(1, 1);
    test_stripe_check_all(4095, 7);
    test_stripe_check_all(4097, 2);
    test_stripe_check_all(UINT64_MAX, 3);
    test_stripe_check_all(UINT64_MAX - 4095, 1000);
    for (i = 0; i < 300; i++) {
        uint32_t w = 1 + (uint32_t)(test_rng() % 300);
        uint64_t l = test_rng() % (1ull << (test_rng() % 40));
        test_stripe_check_all(l, w);
    }
}

/* ---- names ------------------------------------------------------------- */

static void test_names(void **state)
{
    char buf[RP_CKPT_NAME_MAX];
    uint64_t step;

    (void)state;
    rp__ckpt_name_committed(42, buf, sizeof(buf));
    assert_string_equal(buf, "step-000000000042");
    assert_true(rp__ckpt_parse_committed(buf, &step));
    assert_true(step == 42);
    rp__ckpt_name_committed(UINT64_MAX, buf, sizeof(buf));
    assert_string_equal(buf, "step-18446744073709551615");
    assert_true(rp__ckpt_parse_committed(buf, &step));
    assert_true(step == UINT64_MAX);

    assert_false(rp__ckpt_parse_committed("step-42", NULL));
    assert_false(rp__ckpt_parse_committed("step-0000000000042", NULL));
    assert_false(rp__ckpt_parse_committed("step-000000000042 ", NULL));
    assert_false(rp__ckpt_parse_committed("step-00000000004x", NULL));
    assert_false(rp__ckpt_parse_committed("step-", NULL));
    assert_false(rp__ckpt_parse_committed("step-18446744073709551616", NULL));
    assert_false(rp__ckpt_parse_committed("Step-000000000042", NULL));
    assert_false(rp__ckpt_parse_committed(".inflight-step-000000000042-"
                                          "0123456789abcdef", NULL));

    rp__ckpt_name_inflight(7, 0xdeadbeefull, buf, sizeof(buf));
    assert_string_equal(buf, ".inflight-step-000000000007-00000000deadbeef");
    assert_true(rp__ckpt_parse_inflight(buf, &step));
    assert_true(step == 7);
    assert_false(rp__ckpt_parse_committed(buf, NULL));
    assert_false(rp__ckpt_parse_inflight(".inflight-step-000000000007-"
                                         "00000000DEADBEEF", NULL));
    assert_false(rp__ckpt_parse_inflight(".inflight-step-000000000007-"
                                         "00000000deadbee", NULL));
    assert_false(rp__ckpt_parse_inflight(".inflight-step-7-00000000deadbeef",
                                         NULL));
    assert_false(rp__ckpt_parse_inflight("step-000000000007", NULL));

    rp__ckpt_name_deleting("step-000000000007", 1, buf, sizeof(buf));
    assert_string_equal(buf, ".deleting-step-000000000007-0000000000000001");
    assert_true(rp__ckpt_is_deleting(buf));
    assert_false(rp__ckpt_parse_committed(buf, NULL));
    assert_false(rp__ckpt_parse_inflight(buf, NULL));
    assert_false(rp__ckpt_is_deleting("step-000000000007"));

    rp__ckpt_name_shard(3, buf, sizeof(buf));
    assert_string_equal(buf, "shard-000003.rp");
    rp__ckpt_name_shard(1234567, buf, sizeof(buf));
    assert_string_equal(buf, "shard-1234567.rp");
}

/* ---- shard header ------------------------------------------------------ */

static void test_shard_header(void **state)
{
    uint8_t buf[RP_CKPT_SHARD_HEADER_SIZE];
    rp__ckpt_shard_header_t h, out;
    char err[256];
    unsigned i, bit;

    (void)state;
    memset(&h, 0, sizeof(h));
    for (i = 0; i < RP_CKPT_ID_SIZE; i++) {
        h.ckpt_id[i] = (uint8_t)(0xA0 + i);
    }
    h.step = 0x0102030405060708ull;
    h.rank = 3;
    h.world_size = 8;
    h.payload_length = 0x1122334455ull;
    rp__ckpt_shard_header_encode(&h, buf);
    /* Fixed little-endian layout. */
    assert_memory_equal(buf, "RPSHARD\0", 8);
    assert_int_equal(buf[8], 1);
    assert_int_equal(buf[13], 0x10); /* 4096 = 0x1000 */
    assert_int_equal(buf[32], 0x08);
    assert_int_equal(buf[39], 0x01);
    assert_int_equal(buf[40], 3);
    assert_int_equal(buf[44], 8);
    assert_int_equal(buf[48], 0x55);

    assert_int_equal(rp__ckpt_shard_header_decode(buf, sizeof(buf), &out,
                                                  err, sizeof(err)), RP_OK);
    assert_memory_equal(out.ckpt_id, h.ckpt_id, RP_CKPT_ID_SIZE);
    assert_true(out.step == h.step && out.rank == 3 && out.world_size == 8 &&
                out.payload_length == h.payload_length);
    assert_int_equal(rp__ckpt_shard_header_check(&out, h.ckpt_id, h.step, 8, 3,
                                                 h.payload_length, err,
                                                 sizeof(err)), RP_OK);

    /* Any single bit flip in the checksummed part or the padding. */
    for (i = 0; i < RP_CKPT_SHARD_HEADER_SIZE; i += (i < 64 ? 1 : 61)) {
        for (bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            assert_int_not_equal(rp__ckpt_shard_header_decode(
                                     buf, sizeof(buf), &out, err,
                                     sizeof(err)), RP_OK);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    assert_int_equal(rp__ckpt_shard_header_decode(buf, sizeof(buf) - 1, &out,
                                                  err, sizeof(err)),
                     RP_ERR_CORRUPT);

    /* Each mismatch against the manifest is reported. */
    assert_int_equal(rp__ckpt_shard_header_check(&out, h.ckpt_id, h.step, 8, 2,
                                                 h.payload_length, err,
                                                 sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "rank"));
    assert_int_equal(rp__ckpt_shard_header_check(&out, h.ckpt_id, h.step + 1,
                                                 8, 3, h.payload_length, err,
                                                 sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "step"));
    assert_int_equal(rp__ckpt_shard_header_check(&out, h.ckpt_id, h.step, 9, 3,
                                                 h.payload_length, err,
                                                 sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(rp__ckpt_shard_header_check(&out, h.ckpt_id, h.step, 8, 3,
                                                 h.payload_length - 1, err,
                                                 sizeof(err)), RP_ERR_CORRUPT);
    out.ckpt_id[5] ^= 1;
    assert_int_equal(rp__ckpt_shard_header_check(&out, h.ckpt_id, h.step, 8, 3,
                                                 h.payload_length, err,
                                                 sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "checkpoint id"));

    /* rank >= world size in an intact header. */
    h.rank = 8;
    rp__ckpt_shard_header_encode(&h, buf);
    assert_int_equal(rp__ckpt_shard_header_decode(buf, sizeof(buf), &out,
                                                  err, sizeof(err)),
                     RP_ERR_CORRUPT);
}

/* ---- manifest ---------------------------------------------------------- */

/* A manifest exercising every feature: gaps between regions, both kinds,
 * empty stripes (stream shorter than one unit per rank), multi-line CRC
 * lists and a shard with zero chunks. */
static void test_make_manifest(rp__ckpt_manifest_t *m, uint32_t world,
                               uint64_t stream_len, uint64_t per_rank_len)
{
    char err[256];
    uint64_t i;

    assert_int_equal(rp__ckpt_manifest_init(m, world, 3), RP_OK);
    m->step = 1200;
    m->job_id = 4242;
    m->restart_count = 2;
    m->created_ns = 1700000000123456789ull;
    for (i = 0; i < RP_CKPT_ID_SIZE; i++) {
        m->ckpt_id[i] = (uint8_t)(i * 17 + 3);
    }
    m->chunk_size = 4096;
    m->stream_length = stream_len;
    m->per_rank_length = per_rank_len;
    snprintf(m->regions[0].name, sizeof(m->regions[0].name), "model.weights");
    m->regions[0].kind = RP_CKPT_REGION_REPLICATED;
    m->regions[0].offset = 0;
    m->regions[0].size = stream_len / 2;
    m->regions[0].flags = 0x1;
    snprintf(m->regions[1].name, sizeof(m->regions[1].name), "optim/adam:m");
    m->regions[1].kind = RP_CKPT_REGION_REPLICATED;
    m->regions[1].offset = stream_len / 2 + (stream_len > 8 ? 8 : 0);
    m->regions[1].size = stream_len - m->regions[1].offset;
    m->regions[1].flags = 0xdeadbeef;
    snprintf(m->regions[2].name, sizeof(m->regions[2].name), "rng");
    m->regions[2].kind = RP_CKPT_REGION_PER_RANK;
    m->regions[2].offset = 0;
    m->regions[2].size = per_rank_len;
    m->regions[2].flags = 0;
    assert_int_equal(rp__ckpt_manifest_plan(m, err, sizeof(err)), RP_OK);
    for (i = 0; i < m->total_chunks; i++) {
        m->crc_pool[i] = (uint32_t)test_rng();
    }
}

static void test_encode(const rp__ckpt_manifest_t *m, char **text,
                        size_t *len)
{
    char err[256];

    assert_int_equal(rp__ckpt_manifest_encode(m, text, len, err,
                                              sizeof(err)), RP_OK);
}

static void test_manifest_roundtrip(void **state)
{
    rp__ckpt_manifest_t m, p;
    char *text, *text2, err[256];
    size_t len, len2;
    uint32_t r, i;

    (void)state;
    test_make_manifest(&m, 5, 37 * 4096 + 11, 5000);
    test_encode(&m, &text, &len);
    assert_true(strlen(text) == len);
    assert_true(strncmp(text, "ringpoint-manifest 1\nstep 1200\n", 31) == 0);
    assert_non_null(strstr(text, "\nregion optim/adam:m replicated "));
    assert_non_null(strstr(text, " deadbeef\n"));

    assert_int_equal(rp__ckpt_manifest_parse(text, len, &p, err, sizeof(err)),
                     RP_OK);
    assert_int_equal(p.version, 1);
    assert_true(p.step == 1200 && p.world_size == 5 && p.job_id == 4242 &&
                p.restart_count == 2 && p.created_ns == m.created_ns &&
                p.chunk_size == 4096 && p.stripe_unit == 4096 &&
                p.stream_length == m.stream_length &&
                p.per_rank_length == 5000 && p.nregions == 3);
    assert_memory_equal(p.ckpt_id, m.ckpt_id, RP_CKPT_ID_SIZE);
    for (i = 0; i < 3; i++) {
        assert_string_equal(p.regions[i].name, m.regions[i].name);
        assert_int_equal(p.regions[i].kind, m.regions[i].kind);
        assert_true(p.regions[i].offset == m.regions[i].offset);
        assert_true(p.regions[i].size == m.regions[i].size);
        assert_int_equal(p.regions[i].flags, m.regions[i].flags);
    }
    assert_true(p.total_chunks == m.total_chunks);
    for (r = 0; r < 5; r++) {
        assert_true(p.shards[r].length == m.shards[r].length);
        assert_int_equal(p.shards[r].nchunks, m.shards[r].nchunks);
        assert_memory_equal(p.shards[r].chunk_crc, m.shards[r].chunk_crc,
                            m.shards[r].nchunks * sizeof(uint32_t));
    }
    assert_int_equal(rp__ckpt_manifest_find_region(&p, "rng"), 2);
    assert_int_equal(rp__ckpt_manifest_find_region(&p, "nope"), -1);
    assert_true(rp__ckpt_manifest_payload_bytes(&p) ==
                m.stream_length + 5 * 5000ull);

    /* Canonical: encoding the parsed manifest gives the same bytes. */
    test_encode(&p, &text2, &len2);
    assert_true(len2 == len);
    assert_memory_equal(text2, text, len);
    free(text2);
    free(text);
    rp__ckpt_manifest_free(&p);
    rp__ckpt_manifest_free(&m);

    /* Edge layouts: empty stream, no regions, W=1. */
    assert_int_equal(rp__ckpt_manifest_init(&m, 1, 0), RP_OK);
    assert_int_equal(rp__ckpt_manifest_plan(&m, err, sizeof(err)), RP_OK);
    assert_int_equal(m.shards[0].nchunks, 0);
    test_encode(&m, &text, &len);
    assert_int_equal(rp__ckpt_manifest_parse(text, len, &p, err, sizeof(err)),
                     RP_OK);
    assert_true(p.world_size == 1 && p.nregions == 0 && p.total_chunks == 0);
    free(text);
    rp__ckpt_manifest_free(&p);
    rp__ckpt_manifest_free(&m);
}

static void test_manifest_encode_rejects(void **state)
{
    rp__ckpt_manifest_t m;
    char *text = NULL, err[256];
    size_t len;

    (void)state;
    test_make_manifest(&m, 3, 10000, 100);
    /* Region overlapping the previous one. */
    m.regions[1].offset = m.regions[0].size - 1;
    assert_int_equal(rp__ckpt_manifest_encode(&m, &text, &len, err,
                                              sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "optim/adam:m"));
    m.regions[1].offset = m.regions[0].size;
    /* Name with a space; duplicate names. */
    strcpy(m.regions[2].name, "bad name");
    assert_int_equal(rp__ckpt_manifest_encode(&m, &text, &len, err,
                                              sizeof(err)),
                     RP_ERR_INVALID_ARG);
    strcpy(m.regions[2].name, "model.weights");
    assert_int_equal(rp__ckpt_manifest_encode(&m, &text, &len, err,
                                              sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "twice"));
    strcpy(m.regions[2].name, "rng");
    /* Layout changed without re-planning. */
    m.per_rank_length = 200;
    assert_int_equal(rp__ckpt_manifest_encode(&m, &text, &len, err,
                                              sizeof(err)),
                     RP_ERR_INVALID_ARG);
    /* Bad chunk size. */
    m.per_rank_length = 100;
    m.chunk_size = 4097;
    assert_int_equal(rp__ckpt_manifest_plan(&m, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_null(text);
    rp__ckpt_manifest_free(&m);
    assert_int_equal(rp__ckpt_manifest_init(&m, 0, 0), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_manifest_init(&m, RP_CKPT_MAX_WORLD + 1, 0),
                     RP_ERR_INVALID_ARG);
}

/* Rebuild @body (no trailer) into a manifest with a correct checksum line,
 * so that the parser's structural checks are reached. */
static char *test_with_crc(const char *body, size_t blen, size_t *len_p)
{
    char *out = malloc(blen + 17);

    assert_non_null(out);
    memcpy(out, body, blen);
    snprintf(out + blen, 17, "crc32c %08x\n", rp__crc32c(0, body, blen));
    *len_p = blen + 16;
    return out;
}

/* Replace the first occurrence of @from in the body of @text by @to, fix
 * the checksum and parse. Returns the status; @err gets the message. */
static rp_status_t test_parse_edited(const char *text, size_t len,
                                     const char *from, const char *to,
                                     char *err, size_t errlen)
{
    size_t blen = len - 16, flen = strlen(from), tlen = strlen(to), nlen;
    const char *at = strstr(text, from);
    char *body, *fixed;
    rp__ckpt_manifest_t m;
    rp_status_t st;

    assert_non_null(at);
    assert_true((size_t)(at - text) + flen <= blen);
    body = malloc(blen - flen + tlen + 1);
    assert_non_null(body);
    memcpy(body, text, (size_t)(at - text));
    memcpy(body + (at - text), to, tlen);
    memcpy(body + (at - text) + tlen, at + flen, blen - (size_t)(at - text) - flen);
    fixed = test_with_crc(body, blen - flen + tlen, &nlen);
    st = rp__ckpt_manifest_parse(fixed, nlen, &m, err, errlen);
    if (st == RP_OK) {
        rp__ckpt_manifest_free(&m);
    } else {
        /* A failed parse leaves nothing to free. */
        assert_null(m.shards);
        assert_null(m.regions);
        assert_null(m.crc_pool);
    }
    free(fixed);
    free(body);
    return st;
}

static void test_manifest_rejects(void **state)
{
    rp__ckpt_manifest_t m, p;
    char *text, *buf, err[256];
    size_t len, i;
    unsigned bit;

    (void)state;
    test_make_manifest(&m, 4, 40 * 4096 + 7, 300);
    test_encode(&m, &text, &len);

    /* Sanity: the unedited text passes through the edit helper. */
    assert_int_equal(test_parse_edited(text, len, "step 1200\n", "step 1200\n",
                                       err, sizeof(err)), RP_OK);

    /* Any single bit flip anywhere. */
    buf = malloc(len);
    assert_non_null(buf);
    memcpy(buf, text, len);
    for (i = 0; i < len; i++) {
        for (bit = 0; bit < 8; bit++) {
            buf[i] ^= (char)(1u << bit);
            assert_int_not_equal(rp__ckpt_manifest_parse(buf, len, &p, err,
                                                         sizeof(err)), RP_OK);
            buf[i] ^= (char)(1u << bit);
        }
    }
    /* Every truncation, and a bit flip reported as a checksum error. */
    for (i = 0; i < len; i++) {
        assert_int_not_equal(rp__ckpt_manifest_parse(buf, i, &p, err,
                                                     sizeof(err)), RP_OK);
    }
    buf[40] ^= 0x01;
    assert_int_equal(rp__ckpt_manifest_parse(buf, len, &p, err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "crc32c"));
    free(buf);

    /* Trailing garbage after the checksum line. */
    buf = malloc(len + 1);
    assert_non_null(buf);
    memcpy(buf, text, len);
    buf[len] = '\n';
    assert_int_equal(rp__ckpt_manifest_parse(buf, len + 1, &p, err,
                                             sizeof(err)), RP_ERR_CORRUPT);
    free(buf);
    assert_int_equal(rp__ckpt_manifest_parse(NULL, 0, &p, err, sizeof(err)),
                     RP_ERR_CORRUPT);

    /* Unknown version: its own status, even with a valid checksum. */
    assert_int_equal(test_parse_edited(text, len, "ringpoint-manifest 1\n",
                                       "ringpoint-manifest 2\n", err,
                                       sizeof(err)), RP_ERR_NOT_SUPPORTED);
    assert_non_null(strstr(err, "version 2"));
    assert_int_equal(test_parse_edited(text, len, "ringpoint-manifest 1\n",
                                       "ringpoint-manifest 01\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "ringpoint-manifest",
                                       "ringpoint-manifesto", err,
                                       sizeof(err)), RP_ERR_CORRUPT);

    /* Missing, duplicate, out-of-order and unknown keys. */
    assert_int_equal(test_parse_edited(text, len, "slurm_job_id 4242\n", "",
                                       err, sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "missing key 'slurm_job_id'"));
    assert_int_equal(test_parse_edited(text, len, "world_size 4\n",
                                       "world_size 4\nworld_size 4\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "duplicate key 'world_size'"));
    assert_int_equal(test_parse_edited(text, len,
                                       "step 1200\nworld_size 4\n",
                                       "world_size 4\nstep 1200\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 1200\ncolour blue\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 1200 1201\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);

    /* Numbers: canonical form and range. */
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 01200\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step +1200\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 18446744073709551616\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "overflows"));
    assert_int_equal(test_parse_edited(text, len, "world_size 4\n",
                                       "world_size 0\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "out of range"));
    assert_int_equal(test_parse_edited(text, len, "slurm_job_id 4242\n",
                                       "slurm_job_id 4294967296\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "chunk_size 4096\n",
                                       "chunk_size 6144\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "stripe_unit 4096\n",
                                       "stripe_unit 8192\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "checkpoint_id 03",
                                       "checkpoint_id 0", err, sizeof(err)),
                     RP_ERR_CORRUPT);

    /* Whitespace and characters. */
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step  1200\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 1200 \n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 1200\r\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step\t1200\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "step 1200\n",
                                       "step 1200\n\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);

    /* Layout: counts that disagree with the recorded values. */
    assert_int_equal(test_parse_edited(text, len, "regions 3\n",
                                       "regions 2\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "shards 4\n", "shards 5\n",
                                       err, sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "\nshard 1 ", "\nshard 2 ",
                                       err, sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "per_rank_length 300\n",
                                       "per_rank_length 301\n", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, " replicated ",
                                       " mirrored ", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_int_equal(test_parse_edited(text, len, "region rng ",
                                       "region model.weights ", err,
                                       sizeof(err)), RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "twice"));
    /* A CRC list line split differently than the canonical 8 per line. */
    assert_int_equal(test_parse_edited(text, len, "\ncrc 0 8 ",
                                       "\ncrc 0 7 ", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    /* Extra line between the last shard and the checksum line. */
    {
        char *body = malloc(len);
        char *fixed;
        size_t nlen;

        assert_non_null(body);
        memcpy(body, text, len - 16);
        memcpy(body + len - 16, "shard 4 0 0 0 0\n", 16);
        fixed = test_with_crc(body, len, &nlen);
        assert_int_equal(rp__ckpt_manifest_parse(fixed, nlen, &p, err,
                                                 sizeof(err)), RP_ERR_CORRUPT);
        assert_non_null(strstr(err, "after the last shard"));
        free(fixed);
        free(body);
    }
    /* Counts that could not fit in the input are refused before any
     * allocation is sized by them. */
    assert_int_equal(test_parse_edited(text, len, "regions 3\n",
                                       "regions 65536\n", err, sizeof(err)),
                     RP_ERR_CORRUPT);
    assert_non_null(strstr(err, "cannot fit"));

    free(text);
    rp__ckpt_manifest_free(&m);
}

/* Random mutations. Without fixing the checksum every change must be
 * rejected; with a fixed checksum, the parser must never crash and may only
 * accept text that re-encodes to the same bytes. Run under ASan/UBSan this
 * also checks for out-of-bounds reads. */
static void test_manifest_fuzz(void **state)
{
    static const char *const snippets[] = {
        " ", "\n", "0", "9", "-", "a", "f", "g", "region", "shard", "crc",
        "18446744073709551615", "4096", "\t", "per_rank", "replicated",
        "crc32c ", "00000000", "ringpoint-manifest 1\n"
    };
    rp__ckpt_manifest_t m, p;
    char *text, *mut, err[256];
    size_t len, blen, iter, accepted = 0;

    (void)state;
    test_make_manifest(&m, 3, 9 * 4096 + 100, 64);
    test_encode(&m, &text, &len);
    blen = len - 16;
    mut = malloc(2 * len + 64);
    assert_non_null(mut);

    for (iter = 0; iter < 30000; iter++) {
        size_t mlen = blen, nmut = 1 + test_rng() % 3, k, full;
        char *fixed;
        bool fix = (iter % 4) != 0;

        memcpy(mut, text, blen);
        for (k = 0; k < nmut; k++) {
            size_t at = test_rng() % (mlen + 1);
            switch (test_rng() % 5) {
            case 0: /* bit flip */
                if (at < mlen) {
                    mut[at] ^= (char)(1u << (test_rng() % 8));
                }
                break;
            case 1: /* random byte */
                if (at < mlen) {
                    mut[at] = (char)test_rng();
                }
                break;
            case 2: { /* delete a run */
                size_t n = 1 + test_rng() % 16;
                if (at + n > mlen) {
                    n = mlen - at;
                }
                memmove(mut + at, mut + at + n, mlen - at - n);
                mlen -= n;
                break;
            }
            case 3: { /* insert a snippet */
                const char *s = snippets[test_rng() %
                                         (sizeof(snippets) / sizeof(*snippets))];
                size_t n = strlen(s);
                if (mlen + n <= 2 * len) {
                    memmove(mut + at + n, mut + at, mlen - at);
                    memcpy(mut + at, s, n);
                    mlen += n;
                }
                break;
            }
            default: /* truncate */
                mlen = at;
                break;
            }
        }
        if (fix) {
            fixed = test_with_crc(mut, mlen, &full);
        } else {
            fixed = malloc(mlen + 16);
            assert_non_null(fixed);
            memcpy(fixed, mut, mlen);
            memcpy(fixed + mlen, text + blen, 16); /* original trailer */
            full = mlen + 16;
        }
        if (rp__ckpt_manifest_parse(fixed, full, &p, err, sizeof(err)) ==
            RP_OK) {
            char *again;
            size_t alen;

            accepted++;
            test_encode(&p, &again, &alen);
            assert_true(alen == full);
            assert_memory_equal(again, fixed, full);
            free(again);
            rp__ckpt_manifest_free(&p);
            if (!fix) {
                /* Only an unchanged body can match the old checksum. */
                assert_true(mlen == blen);
                assert_memory_equal(mut, text, blen);
            }
        }
        free(fixed);
    }
    /* Some mutations are no-ops or equivalent (e.g. changing a CRC digit):
     * a sign the fuzzer reaches the accept path too. */
    print_message("# fuzz: %zu of %zu mutated manifests accepted\n", accepted,
                  iter);
    free(mut);
    free(text);
    rp__ckpt_manifest_free(&m);
}

/* The planner and the encoder judge the manifest's size by one
 * computation: what plan accepts encodes to exactly the bytes it counted,
 * and what is over the limit plan refuses, before any data is written.
 * (fuzz_manifest_build found plan accepting 2^26 chunks whose CRCs alone
 * encode to 576 MiB, over RP_CKPT_MANIFEST_MAX; the encoder refused it
 * at the commit, after every shard was written.) */
static void test_manifest_size_limit(void **state)
{
    static const uint64_t chunks[] = {0, 1, 8, 9, 79, 80, 81, 799, 800,
                                      801, 8000, 8001};
    rp__ckpt_manifest_t m;
    char *text = NULL, err[256];
    size_t len;
    uint64_t lo, hi;

    (void)state;
    /* Exact sizes: shard and rank numbers, CRC lines and their first
     * chunk numbers across powers of ten. */
    for (unsigned i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
        for (uint32_t world = 1; world <= 11; world += 5) {
            test_make_manifest(&m, world, chunks[i] * 4096 * world / 2,
                               chunks[i] * 4096 / 2 + i);
            test_encode(&m, &text, &len);
            assert_int_equal(len, rp__mf_encoded_size(&m));
            free(text);
            text = NULL;
            rp__ckpt_manifest_free(&m);
        }
    }
    /* The fuzzer's input: 1024 ranks of 65536 chunks of 4 KiB. */
    assert_int_equal(rp__ckpt_manifest_init(&m, 1024, 0), RP_OK);
    m.chunk_size = 4096;
    m.per_rank_length = 1ull << 28;
    assert_int_equal(rp__ckpt_manifest_plan(&m, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_non_null(strstr(err, "more than the limit"));
    assert_non_null(strstr(err, "chunk_size"));
    assert_null(m.crc_pool);
    assert_int_not_equal(rp__ckpt_manifest_encode(&m, &text, &len, err,
                                                  sizeof(err)),
                         RP_OK);
    assert_null(text);
    /* At the limit: the largest per-rank length plan accepts is within
     * it, one chunk more is not, and plan says so. */
    lo = 1;
    hi = 1u << 16;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;

        m.per_rank_length = mid * 4096;
        if (rp__ckpt_manifest_plan(&m, err, sizeof(err)) == RP_OK) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    m.per_rank_length = lo * 4096;
    assert_int_equal(rp__ckpt_manifest_plan(&m, err, sizeof(err)), RP_OK);
    assert_true(rp__mf_encoded_size(&m) <= RP_CKPT_MANIFEST_MAX);
    m.per_rank_length = hi * 4096;
    assert_int_equal(rp__ckpt_manifest_plan(&m, err, sizeof(err)),
                     RP_ERR_INVALID_ARG);
    assert_true(rp__mf_encoded_size(&m) > RP_CKPT_MANIFEST_MAX);
    rp__ckpt_manifest_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stripe_cases),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_shard_header),
        cmocka_unit_test(test_manifest_roundtrip),
        cmocka_unit_test(test_manifest_encode_rejects),
        cmocka_unit_test(test_manifest_size_limit),
        cmocka_unit_test(test_manifest_rejects),
        cmocka_unit_test(test_manifest_fuzz),
    };

    test_rng_seed(0x2545F4914F6CDD1Dull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
