/*
 * The checkpoint engine's pure parts: region registration and layout, the
 * segments a rank writes for its stripe, the copy-and-checksum cursor, the
 * shard writer's double-buffered path, and the RINGPOINT_CKPT_* settings.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cmocka.h>

#include "ckpt/engine/engine.h"
#include "ckpt/engine/regions.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/cursor.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/shard.h"
#include "ckpt/format/shardio.h"
#include "ckpt/write/pcopy.h"
#include "core/settings.h"
#include "util/log.h"

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 9));
    }
}

/* Copy every segment out in awkward pieces: the bytes and the per-chunk
 * CRCs must be those of the concatenation. */
static void test_cursor_bytes_and_crcs(void **state)
{
    enum { A = 5000, GAP = 100, B = 70001, TOTAL = A + GAP + B, CS = 4096 };
    unsigned char *a = malloc(A), *b = malloc(B), *want = calloc(1, TOTAL);
    unsigned char *got = malloc(TOTAL);
    rp__ckpt_seg_t segs[4] = {{a, A}, {NULL, 0}, {NULL, GAP}, {b, B}};
    uint32_t crcs[TOTAL / CS + 1];
    rp__ckpt_cursor_t cur;
    size_t done = 0, piece = 1;

    (void)state;
    fill(a, A, 1);
    fill(b, B, 2);
    memcpy(want, a, A);
    memcpy(want + A + GAP, b, B);
    rp__ckpt_cursor_init(&cur, segs, 4, CS, crcs);
    assert_int_equal(cur.total, TOTAL);
    assert_int_equal(cur.nchunks, TOTAL / CS + 1);
    while (done < TOTAL) {
        size_t n = rp__ckpt_cursor_fill(&cur, got + done, piece);

        assert_true(n > 0);
        done += n;
        piece = piece * 3 + 1; /* 1, 4, 13, 40, ... crosses every edge */
    }
    assert_int_equal(rp__ckpt_cursor_fill(&cur, got, 10), 0);
    assert_memory_equal(got, want, TOTAL);
    for (uint32_t c = 0; c < cur.nchunks; c++) {
        size_t len = TOTAL - c * CS < CS ? TOTAL - c * CS : CS;

        assert_int_equal(crcs[c], rp__crc32c(0, want + c * CS, len));
    }
    free(a);
    free(b);
    free(want);
    free(got);
}

/* A payload of several bounce buffers goes through the writer's ring (a
 * buffer written while the next is filled; the header goes out with the
 * first bytes of the payload): the file holds the header, then exactly
 * the payload, and the CRCs are the file's; an injected write fault half
 * way fails the write after the first half. */
static void test_shard_write_double_buffered(void **state)
{
    enum { A = 9 << 20, GAP = 4000, B = (13 << 20) + 12345, CS = 1 << 20 };
    const size_t total = A + GAP + B, nch = total / CS + 1;
    unsigned char *a = malloc(A), *b = malloc(B), *want = calloc(1, total);
    unsigned char *got = malloc(total + 1);
    unsigned char hwant[RP_CKPT_SHARD_HEADER_SIZE], hgot[RP_CKPT_SHARD_HEADER_SIZE];
    uint32_t *crcs = calloc(nch, sizeof(uint32_t));
    rp__ckpt_seg_t segs[3] = {{a, A}, {NULL, GAP}, {b, B}};
    rp__ckpt_shard_header_t hdr;
    rp__ckpt_write_stats_t st;
    rp__ckpt_cursor_t cur;
    char dir[] = "/tmp/rp-ckpt-engine-XXXXXX", path[128];
    int cfd, fd, fault;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(want);
    assert_non_null(got);
    assert_non_null(crcs);
    fill(a, A, 1);
    fill(b, B, 2);
    memcpy(want, a, A);
    memcpy(want + A + GAP, b, B);
    assert_non_null(mkdtemp(dir));
    for (fault = 0; fault < 2; fault++) {
        rp_status_t rc;
        ssize_t n;
        size_t c;

        cfd = open(dir, O_RDONLY | O_DIRECTORY);
        assert_true(cfd >= 0);
        memset(&hdr, 0, sizeof(hdr));
        hdr.rank = (uint32_t)fault;
        hdr.world_size = 2;
        hdr.payload_length = total;
        rp__ckpt_cursor_init(&cur, segs, 3, CS, crcs);
        rc = rp__ckpt_shard_write(cfd, dir, &hdr, &cur, NULL,
                                  fault ? RP_CKPT_FAULT_WRITE
                                        : RP_CKPT_FAULT_NONE, &st);
        close(cfd);
        rp__ckpt_name_shard((uint32_t)fault, path, sizeof(path));
        {
            char full[256];

            snprintf(full, sizeof(full), "%s/%s", dir, path);
            fd = open(full, O_RDONLY);
        }
        assert_true(fd >= 0);
        n = pread(fd, got, total + 1, RP_CKPT_SHARD_HEADER_SIZE);
        rp__ckpt_shard_header_encode(&hdr, hwant);
        assert_int_equal(pread(fd, hgot, sizeof(hgot), 0), (ssize_t)sizeof(hgot));
        assert_memory_equal(hgot, hwant, sizeof(hgot));
        close(fd);
        if (fault) {
            /* The first half is there, nothing of the second. */
            assert_int_equal(rc, RP_ERR_IO);
            assert_int_equal(n, total / 2);
            assert_memory_equal(got, want, total / 2);
            continue;
        }
        assert_int_equal(rc, RP_OK);
        assert_int_equal(st.bytes, total);
        assert_int_equal(n, total);
        assert_memory_equal(got, want, total);
        for (c = 0; c * CS < total; c++) {
            size_t len = total - c * CS < CS ? total - c * CS : CS;

            assert_int_equal(crcs[c], rp__crc32c(0, want + c * CS, len));
        }
    }
    snprintf(path, sizeof(path), "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
    free(a);
    free(b);
    free(want);
    free(got);
    free(crcs);
}

static void test_nchunks(void **state)
{
    (void)state;
    assert_int_equal(rp__ckpt_nchunks(0, 4096), 0);
    assert_int_equal(rp__ckpt_nchunks(1, 4096), 1);
    assert_int_equal(rp__ckpt_nchunks(4096, 4096), 1);
    assert_int_equal(rp__ckpt_nchunks(4097, 4096), 2);
}

static void test_register_rules(void **state)
{
    rp__ckpt_engine_t e;
    char x[8], big[200];

    (void)state;
    memset(&e, 0, sizeof(e));
    assert_int_equal(rp__ckpt_regions_add(&e, "model", x, 5, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "model", x, 5, RP_CKPT_REGION_PER_RANK), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_regions_add(&e, "has space", x, 5, RP_CKPT_REGION_REPLICATED), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_regions_add(&e, "", x, 5, RP_CKPT_REGION_REPLICATED), RP_ERR_INVALID_ARG);
    memset(big, 'a', sizeof(big));
    big[129] = '\0';
    assert_int_equal(rp__ckpt_regions_add(&e, big, x, 5, RP_CKPT_REGION_REPLICATED), RP_ERR_INVALID_ARG);
    big[128] = '\0';
    assert_int_equal(rp__ckpt_regions_add(&e, big, x, 5, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "null", NULL, 5, RP_CKPT_REGION_REPLICATED), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_regions_add(&e, "empty", NULL, 0, RP_CKPT_REGION_REPLICATED), RP_OK);
    /* Aligned offsets: 0, 64, 128. */
    assert_int_equal(e.regs[1].offset, 64);
    assert_int_equal(e.regs[2].offset, 128);
    assert_int_equal(e.stream_len, 128);
    /* A table checked across ranks still takes regions: it is laid out
     * again and must be checked again. */
    e.checked = true;
    assert_int_equal(rp__ckpt_regions_add(&e, "late", x, 1, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_false(e.checked);
    assert_int_equal(e.regs[3].offset, 128);
    assert_int_equal(e.stream_len, 129);
    free(e.regs);
}

/* The stripes of every rank, concatenated, are the stream; each rank's
 * payload then carries the whole per-rank section. */
static void test_segments_cover_the_stream(void **state)
{
    enum { NA = 10007, NB = 3, NC = 50000, NP = 77 };
    unsigned char *a = malloc(NA), *b = malloc(NB), *c = malloc(NC), p[NP];
    rp__ckpt_engine_t e;
    unsigned char *stream, *got;
    uint32_t world;

    (void)state;
    fill(a, NA, 3);
    fill(b, NB, 4);
    fill(c, NC, 5);
    fill(p, NP, 6);
    memset(&e, 0, sizeof(e));
    assert_int_equal(rp__ckpt_regions_add(&e, "a", a, NA, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "p", p, NP, RP_CKPT_REGION_PER_RANK), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "b", b, NB, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "c", c, NC, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(e.per_rank_len, NP);
    stream = calloc(1, e.stream_len);
    memcpy(stream + e.regs[0].offset, a, NA);
    memcpy(stream + e.regs[2].offset, b, NB);
    memcpy(stream + e.regs[3].offset, c, NC);
    got = malloc(e.stream_len + NP);
    for (world = 1; world <= 7; world++) {
        for (uint32_t r = 0; r < world; r++) {
            uint64_t off, len;
            rp__ckpt_seg_t *segs;
            rp__ckpt_cursor_t cur;
            size_t n;

            assert_int_equal(rp__ckpt_stripe(e.stream_len, world, r, &off, &len), RP_OK);
            assert_int_equal(rp__ckpt_regions_segments(&e, off, len, &segs, &n), RP_OK);
            rp__ckpt_cursor_init(&cur, segs, n, 4096, NULL);
            assert_int_equal(cur.total, len + NP);
            assert_int_equal(rp__ckpt_cursor_fill(&cur, got, (size_t)(len + NP)), len + NP);
            assert_memory_equal(got, stream + off, len);
            assert_memory_equal(got + len, p, NP);
            free(segs);
        }
    }
    free(e.regs);
    free(stream);
    free(got);
    free(a);
    free(b);
    free(c);
}

static void test_settings(void **state)
{
    rp_settings_t s;

    (void)state;
    unsetenv("RINGPOINT_CKPT_DIR");
    unsetenv("RINGPOINT_CKPT_KEEP");
    unsetenv("RINGPOINT_CKPT_EVERY");
    unsetenv("RINGPOINT_CKPT_ASYNC");
    unsetenv("RINGPOINT_CKPT_CHUNK_SIZE");
    assert_int_equal(rp__settings_load(&s), RP_OK);
    assert_string_equal(s.ckpt_dir, RP_DEFAULT_CKPT_DIR);
    assert_int_equal(s.ckpt_keep, 2);
    assert_int_equal(s.ckpt_every, 0);
    assert_int_equal(s.ckpt_async, 1);
    setenv("RINGPOINT_CKPT_DIR", "/x/y", 1);
    setenv("RINGPOINT_CKPT_KEEP", "5", 1);
    setenv("RINGPOINT_CKPT_EVERY", "100", 1);
    setenv("RINGPOINT_CKPT_ASYNC", "0", 1);
    assert_int_equal(rp__settings_load(&s), RP_OK);
    assert_string_equal(s.ckpt_dir, "/x/y");
    assert_int_equal(s.ckpt_keep, 5);
    assert_int_equal(s.ckpt_every, 100);
    assert_int_equal(s.ckpt_async, 0);
    setenv("RINGPOINT_CKPT_KEEP", "0", 1);
    assert_int_equal(rp__settings_load(&s), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_CKPT_KEEP", "2", 1);
    setenv("RINGPOINT_CKPT_ASYNC", "yes", 1);
    assert_int_equal(rp__settings_load(&s), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_CKPT_ASYNC", "1", 1);
    setenv("RINGPOINT_CKPT_CHUNK_SIZE", "5000", 1);
    assert_int_equal(rp__settings_load(&s), RP_ERR_INVALID_ARG);
    setenv("RINGPOINT_CKPT_CHUNK_SIZE", "65536", 1);
    assert_int_equal(rp__settings_load(&s), RP_OK);
    assert_int_equal(s.ckpt_chunk, 65536);
    setenv("RINGPOINT_CKPT_DIR", "", 1);
    assert_int_equal(rp__settings_load(&s), RP_ERR_INVALID_ARG);
}

/* The snapshot copy split between threads puts every byte where one
 * thread would: spans of odd sizes, zero fills, part cuts inside spans;
 * the same pool reused (each copy counted by every thread, including one
 * posted before a thread first ran); too few bytes to share, and no pool;
 * a bad RINGPOINT_CKPT_COPY_THREADS refused. */
static void test_parallel_copy(void **state)
{
    enum { A = (19 << 20) + 333, Z = 4097, B = (23 << 20) + 7, C = 5 };
    const size_t total = A + Z + B + C;
    unsigned char *a = malloc(A), *b = malloc(B), c[C] = {9, 8, 7, 6, 5};
    unsigned char *want = malloc(total), *got = malloc(total);
    rp__ckpt_pcopy_t *pool;
    unsigned n;

    (void)state;
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(want);
    assert_non_null(got);
    for (size_t i = 0; i < A; i++) {
        a[i] = (unsigned char)(i * 31 + 1);
    }
    for (size_t i = 0; i < B; i++) {
        b[i] = (unsigned char)(i * 17 + 3);
    }
    memcpy(want, a, A);
    memset(want + A, 0, Z);
    memcpy(want + A + Z, b, B);
    memcpy(want + A + Z + B, c, C);
    rp__ckpt_span_t spans[4] = {{got, a, A},
                                {got + A, NULL, Z},
                                {got + A + Z, b, B},
                                {got + A + Z + B, c, C}};
    for (unsigned threads = 1; threads <= 5; threads += 2) {
        pool = rp__ckpt_pcopy_new(threads);
        assert_true(threads == 1 ? pool == NULL : pool != NULL);
        for (int round = 0; round < 3; round++) {
            memset(got, 0xee, total);
            rp__ckpt_pcopy_run(pool, spans, 4);
            assert_memory_equal(got, want, total);
        }
        /* Too few bytes to share: the caller alone. */
        memset(got, 0xee, 100);
        rp__ckpt_span_t small = {got, a, 100};
        rp__ckpt_pcopy_run(pool, &small, 1);
        assert_memory_equal(got, a, 100);
        rp__ckpt_pcopy_free(pool);
    }
    rp__ckpt_pcopy_free(rp__ckpt_pcopy_new(4)); /* never used */
    rp__ckpt_pcopy_threads(3, 2, &n); /* RINGPOINT_CKPT_COPY_THREADS=3 */
    assert_int_equal(n, 3);
    rp__ckpt_pcopy_threads(0, 1000000, &n); /* unset: by the cores */
    {
        /* More ranks than cores: alone, unless the launcher bound this
         * process to cores of its own. */
        cpu_set_t set;
        long mine = sched_getaffinity(0, sizeof(set), &set) == 0
                        ? CPU_COUNT(&set) : 0;
        long online = sysconf(_SC_NPROCESSORS_ONLN);

        assert_int_equal(n, mine > 0 && mine < online ? (mine > 8 ? 8 : mine)
                                                       : 1);
    }
    free(a);
    free(b);
    free(want);
    free(got);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cursor_bytes_and_crcs),
        cmocka_unit_test(test_shard_write_double_buffered),
        cmocka_unit_test(test_nchunks),
        cmocka_unit_test(test_register_rules),
        cmocka_unit_test(test_segments_cover_the_stream),
        cmocka_unit_test(test_settings),
        cmocka_unit_test(test_parallel_copy),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
