/*
 * Unit tests for the checkpoint catalog and the local writer, on real
 * directories under a mkdtemp in /var/tmp (not /tmp: often tmpfs, and the
 * point is a real file system). Each test builds fixtures with
 * rp__ckpt_write_local, damages them in one specific way, and checks the
 * classification, the message, and what prune/cleanup delete. Every test
 * removes its directory.
 */
/* nftw() for the teardown; must precede every system header. */
#define _GNU_SOURCE 1

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt/catalog/catalog.h"
#include "ckpt/catalog/prune.h"
#include "ckpt/catalog/validate.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"
#include "ckpt/format/shard.h"
#include "ckpt/write/write_local.h"
#include "test_rng.h"

#define TEST_WORLD    4u
#define TEST_CHUNK    4096u
/* Big enough that every shard has more than 17 chunks (the brief's
 * "shard-000003.rp chunk 17" example is checked literally). */
#define TEST_STREAM   (4u * 70000u + 123u)
#define TEST_PER_RANK 5000u

typedef struct test_ctx {
    char dir[64];
    unsigned char *stream;
    unsigned char *mine[TEST_WORLD];
} test_ctx_t;


static void test_free_ctx(test_ctx_t *t)
{
    unsigned r;

    free(t->stream);
    for (r = 0; r < TEST_WORLD; r++) {
        free(t->mine[r]);
    }
    free(t);
}

static int test_setup(void **state)
{
    test_ctx_t *t = calloc(1, sizeof(*t));
    unsigned r;

    if (t == NULL) {
        return -1;
    }
    t->stream = malloc(TEST_STREAM);
    for (r = 0; r < TEST_WORLD; r++) {
        t->mine[r] = malloc(TEST_PER_RANK);
        if (t->mine[r] == NULL) {
            goto err_alloc;
        }
        test_fill(t->mine[r], TEST_PER_RANK);
    }
    if (t->stream == NULL) {
        goto err_alloc;
    }
    test_fill(t->stream, TEST_STREAM);
    snprintf(t->dir, sizeof(t->dir), "/var/tmp/rp-catalog-XXXXXX");
    if (mkdtemp(t->dir) == NULL) {
        goto err_alloc;
    }
    *state = t;
    return 0;

err_alloc:
    test_free_ctx(t);
    return -1;
}

static int test_rm_one(const char *path, const struct stat *st, int flag,
                       struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static int test_teardown(void **state)
{
    test_ctx_t *t = *state;
    int rc;

    rc = nftw(t->dir, test_rm_one, 16, FTW_DEPTH | FTW_PHYS);
    test_free_ctx(t);
    return rc;
}

/* Write checkpoint @step with the standard layout. */
static void test_write(test_ctx_t *t, uint64_t step)
{
    rp__ckpt_region_t regions[3];
    rp__ckpt_write_opts_t opts = {TEST_CHUNK, 777, 1};
    const void *per_rank[TEST_WORLD];
    unsigned r;

    memset(regions, 0, sizeof(regions));
    snprintf(regions[0].name, sizeof(regions[0].name), "weights");
    regions[0].kind = RP_CKPT_REGION_REPLICATED;
    regions[0].offset = 0;
    regions[0].size = 200000;
    snprintf(regions[1].name, sizeof(regions[1].name), "optimizer");
    regions[1].kind = RP_CKPT_REGION_REPLICATED;
    regions[1].offset = 200704; /* gap: 4 KiB aligned start */
    regions[1].size = TEST_STREAM - 200704;
    regions[1].flags = 7;
    snprintf(regions[2].name, sizeof(regions[2].name), "rng");
    regions[2].kind = RP_CKPT_REGION_PER_RANK;
    regions[2].size = TEST_PER_RANK;
    for (r = 0; r < TEST_WORLD; r++) {
        per_rank[r] = t->mine[r];
    }
    assert_int_equal(rp__ckpt_write_local(t->dir, step, TEST_WORLD, regions, 3,
                                          t->stream, TEST_STREAM, per_rank,
                                          TEST_PER_RANK, &opts, NULL), RP_OK);
}

static void test_path(const test_ctx_t *t, uint64_t step, const char *file,
                      char *buf, size_t len)
{
    char name[RP_CKPT_NAME_MAX];

    rp__ckpt_name_committed(step, name, sizeof(name));
    if (file != NULL) {
        snprintf(buf, len, "%s/%s/%s", t->dir, name, file);
    } else {
        snprintf(buf, len, "%s/%s", t->dir, name);
    }
}

static bool test_exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

static size_t test_count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    size_t n = 0;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            n++;
        }
    }
    closedir(d);
    return n;
}

/* Scan and return the single entry's state, message into @why. */
static rp__ckpt_state_t test_scan_one(const test_ctx_t *t, bool full,
                                      char *why, size_t len)
{
    rp__ckpt_catalog_t cat;
    rp__ckpt_state_t s;

    assert_int_equal(rp__ckpt_catalog_scan(t->dir, full, &cat), RP_OK);
    assert_int_equal(cat.count, 1);
    s = cat.entries[0].state;
    snprintf(why, len, "%s", cat.entries[0].reason);
    rp__ckpt_catalog_free(&cat);
    return s;
}

static void test_flip_byte(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    unsigned char b;

    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x20;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    assert_int_equal(close(fd), 0);
}

/* ---- tests ------------------------------------------------------------- */

static void test_complete(void **state)
{
    test_ctx_t *t = *state;
    rp__ckpt_catalog_t cat;
    rp__ckpt_manifest_t m;
    rp__ckpt_state_t s;
    char path[512], msg[512];
    unsigned char *buf;
    uint64_t expect_bytes = 0, step;
    char *newest;
    unsigned r;

    test_write(t, 100);
    assert_int_equal(rp__ckpt_catalog_scan(t->dir, true, &cat), RP_OK);
    assert_int_equal(cat.count, 1);
    assert_int_equal(cat.entries[0].state, RP_CKPT_COMPLETE);
    assert_true(cat.entries[0].step == 100);
    assert_int_equal(cat.entries[0].world_size, TEST_WORLD);
    assert_string_equal(cat.entries[0].reason, "");
    assert_true(cat.entries[0].created_ns > 1600000000ull * 1000000000ull);
    test_path(t, 100, NULL, path, sizeof(path));
    assert_string_equal(cat.entries[0].path, path);
    /* total_bytes is what the files really occupy. */
    for (r = 0; r < TEST_WORLD; r++) {
        struct stat st;
        char name[RP_CKPT_NAME_MAX];
        rp__ckpt_name_shard(r, name, sizeof(name));
        test_path(t, 100, name, path, sizeof(path));
        assert_int_equal(stat(path, &st), 0);
        expect_bytes += (uint64_t)st.st_size;
    }
    {
        struct stat st;
        test_path(t, 100, "MANIFEST", path, sizeof(path));
        assert_int_equal(stat(path, &st), 0);
        expect_bytes += (uint64_t)st.st_size;
    }
    assert_true(cat.entries[0].total_bytes == expect_bytes);
    rp__ckpt_catalog_free(&cat);

    /* verify(path, full) and the manifest it hands back. */
    test_path(t, 100, NULL, path, sizeof(path));
    assert_int_equal(rp__ckpt_verify(path, true, &s, &m, msg, sizeof(msg)),
                     RP_OK);
    assert_int_equal(s, RP_CKPT_COMPLETE);
    assert_true(m.step == 100 && m.job_id == 777 && m.restart_count == 1 &&
                m.chunk_size == TEST_CHUNK && m.nregions == 3);
    assert_int_equal(m.regions[1].flags, 7);
    assert_true(m.shards[3].nchunks > 17);

    /* Each shard is header + stripe + that rank's own bytes. */
    buf = malloc(RP_CKPT_SHARD_HEADER_SIZE + TEST_STREAM + TEST_PER_RANK);
    assert_non_null(buf);
    for (r = 0; r < TEST_WORLD; r++) {
        const rp__ckpt_shard_info_t *sh = &m.shards[r];
        char name[RP_CKPT_NAME_MAX];
        ssize_t n;
        int fd;

        rp__ckpt_name_shard(r, name, sizeof(name));
        test_path(t, 100, name, path, sizeof(path));
        fd = open(path, O_RDONLY);
        assert_true(fd >= 0);
        n = read(fd, buf, RP_CKPT_SHARD_HEADER_SIZE + TEST_STREAM +
                              TEST_PER_RANK);
        assert_true(n == (ssize_t)(RP_CKPT_SHARD_HEADER_SIZE + sh->length));
        close(fd);
        assert_memory_equal(buf + RP_CKPT_SHARD_HEADER_SIZE,
                            t->stream + sh->stripe_offset, sh->stripe_length);
        assert_memory_equal(buf + RP_CKPT_SHARD_HEADER_SIZE +
                                sh->stripe_length,
                            t->mine[r], TEST_PER_RANK);
        assert_true(sh->stripe_offset % RP_CKPT_STRIPE_UNIT == 0);
    }
    free(buf);
    rp__ckpt_manifest_free(&m);

    /* Trailing slash; newest_complete; a second write of the same step. */
    test_path(t, 100, NULL, path, sizeof(path));
    strcat(path, "/");
    assert_int_equal(rp__ckpt_verify(path, false, &s, NULL, msg, sizeof(msg)),
                     RP_OK);
    assert_int_equal(rp__ckpt_newest_complete(t->dir, true, &step, &newest),
                     RP_OK);
    assert_true(step == 100);
    assert_non_null(strstr(newest, "step-000000000100"));
    free(newest);
    {
        const void *per_rank[TEST_WORLD] = {t->mine[0], t->mine[1], t->mine[2],
                                            t->mine[3]};
        assert_int_equal(rp__ckpt_write_local(t->dir, 100, TEST_WORLD, NULL, 0,
                                              t->stream, TEST_STREAM, per_rank,
                                              TEST_PER_RANK, NULL, NULL),
                         RP_ERR_STATE);
    }
    /* Nothing else was left behind by the refused write. */
    assert_int_equal(test_count_entries(t->dir), 1);
}

static void test_missing_dir(void **state)
{
    test_ctx_t *t = *state;
    rp__ckpt_catalog_t cat;
    rp__ckpt_state_t s;
    char path[512], msg[256];
    uint64_t step;

    snprintf(path, sizeof(path), "%s/nope", t->dir);
    assert_int_equal(rp__ckpt_catalog_scan(path, false, &cat),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(rp__ckpt_verify(path, false, &s, NULL, msg, sizeof(msg)),
                     RP_ERR_NOT_FOUND);
    /* Empty directory: nothing complete. */
    assert_int_equal(rp__ckpt_newest_complete(t->dir, false, &step, NULL),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(rp__ckpt_catalog_scan(t->dir, false, &cat), RP_OK);
    assert_int_equal(cat.count, 0);
    assert_null(rp__ckpt_catalog_newest_complete(&cat));
    rp__ckpt_catalog_free(&cat);
}

static void test_shard_missing(void **state)
{
    test_ctx_t *t = *state;
    char path[512], why[512];

    test_write(t, 5);
    test_path(t, 5, "shard-000002.rp", path, sizeof(path));
    assert_int_equal(unlink(path), 0);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_INCOMPLETE);
    assert_non_null(strstr(why, "step-000000000005/shard-000002.rp: missing"));
}

static void test_shard_truncated(void **state)
{
    test_ctx_t *t = *state;
    char path[512], why[512];
    struct stat st;

    test_write(t, 5);
    test_path(t, 5, "shard-000001.rp", path, sizeof(path));
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(truncate(path, st.st_size - 100), 0);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(why, "shard-000001.rp: truncated"));
    /* Too long is as wrong as too short. */
    assert_int_equal(truncate(path, st.st_size + 1), 0);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(why, "too long"));
}

static void test_payload_bit_flip(void **state)
{
    test_ctx_t *t = *state;
    rp__ckpt_state_t s;
    char path[512], msg[512], want[64];
    const char *p;

    test_write(t, 9);
    test_path(t, 9, "shard-000003.rp", path, sizeof(path));
    test_flip_byte(path, RP_CKPT_SHARD_HEADER_SIZE + 17 * TEST_CHUNK + 5);

    /* The quick check cannot see it: lengths and headers are fine. */
    assert_int_equal(test_scan_one(t, false, msg, sizeof(msg)),
                     RP_CKPT_COMPLETE);
    /* The full check names the shard and the chunk. */
    test_path(t, 9, NULL, path, sizeof(path));
    assert_int_equal(rp__ckpt_verify(path, true, &s, NULL, msg, sizeof(msg)),
                     RP_ERR_CORRUPT);
    assert_int_equal(s, RP_CKPT_CORRUPT);
    snprintf(want, sizeof(want), "shard-000003.rp chunk 17: crc32c 0x");
    p = strstr(msg, want);
    assert_non_null(p);
    assert_non_null(strstr(p, " != manifest 0x"));
    assert_int_equal(test_scan_one(t, true, msg, sizeof(msg)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(msg, "chunk 17"));
    /* A full newest_complete refuses it. */
    assert_int_equal(rp__ckpt_newest_complete(t->dir, true, NULL, NULL),
                     RP_ERR_NOT_FOUND);
    assert_int_equal(rp__ckpt_newest_complete(t->dir, false, NULL, NULL),
                     RP_OK);
}

static void test_last_chunk_flip(void **state)
{
    test_ctx_t *t = *state;
    rp__ckpt_manifest_t m;
    rp__ckpt_state_t s;
    char path[512], msg[512], want[64];
    struct stat st;

    test_write(t, 9);
    test_path(t, 9, "shard-000000.rp", path, sizeof(path));
    assert_int_equal(stat(path, &st), 0);
    test_flip_byte(path, st.st_size - 1); /* last byte of the short chunk */
    test_path(t, 9, NULL, path, sizeof(path));
    assert_int_equal(rp__ckpt_verify(path, true, &s, &m, msg, sizeof(msg)),
                     RP_ERR_CORRUPT);
    /* The manifest itself verified, so it is handed back. */
    assert_non_null(m.shards);
    snprintf(want, sizeof(want), "shard-000000.rp chunk %u:",
             m.shards[0].nchunks - 1);
    assert_non_null(strstr(msg, want));
    rp__ckpt_manifest_free(&m);
}

static void test_header_damage(void **state)
{
    test_ctx_t *t = *state;
    char path[512], other[512], why[512];

    test_write(t, 1);
    test_write(t, 2);
    /* Flip a byte of rank 1's header in step 1. */
    test_path(t, 1, "shard-000001.rp", path, sizeof(path));
    test_flip_byte(path, 41);
    {
        rp__ckpt_catalog_t cat;
        assert_int_equal(rp__ckpt_catalog_scan(t->dir, false, &cat), RP_OK);
        assert_int_equal(cat.count, 2);
        assert_int_equal(cat.entries[0].state, RP_CKPT_CORRUPT);
        assert_non_null(strstr(cat.entries[0].reason, "shard-000001.rp"));
        assert_non_null(strstr(cat.entries[0].reason, "crc32c"));
        assert_int_equal(cat.entries[1].state, RP_CKPT_COMPLETE);
        rp__ckpt_catalog_free(&cat);
    }
    /* Step 2's shard 0 replaced by step 1's (same size, other checkpoint). */
    test_path(t, 1, "shard-000000.rp", other, sizeof(other));
    test_path(t, 2, "shard-000000.rp", path, sizeof(path));
    assert_int_equal(rename(other, path), 0);
    {
        rp__ckpt_state_t s;
        test_path(t, 2, NULL, path, sizeof(path));
        assert_int_equal(rp__ckpt_verify(path, false, &s, NULL, why,
                                         sizeof(why)), RP_ERR_CORRUPT);
        assert_int_equal(s, RP_CKPT_CORRUPT);
        assert_non_null(strstr(why, "checkpoint id"));
    }
}

static void test_manifest_damage(void **state)
{
    test_ctx_t *t = *state;
    char path[512], tmp[512], why[512];

    test_write(t, 3);
    test_path(t, 3, "MANIFEST", path, sizeof(path));
    test_flip_byte(path, 30);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(why, "MANIFEST"));
    test_flip_byte(path, 30);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_COMPLETE);

    /* Only .MANIFEST.tmp: the commit did not finish. */
    test_path(t, 3, ".MANIFEST.tmp", tmp, sizeof(tmp));
    assert_int_equal(rename(path, tmp), 0);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_INCOMPLETE);
    assert_non_null(strstr(why, ".MANIFEST.tmp"));

    /* A MANIFEST that is a symlink to a valid one is not followed. */
    assert_int_equal(symlink(tmp, path), 0);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(why, "symbolic link"));
}

static void test_symlinked_shard(void **state)
{
    test_ctx_t *t = *state;
    char path[512], moved[512], why[512];

    test_write(t, 4);
    test_path(t, 4, "shard-000002.rp", path, sizeof(path));
    snprintf(moved, sizeof(moved), "%s/elsewhere.rp", t->dir);
    assert_int_equal(rename(path, moved), 0);
    assert_int_equal(symlink(moved, path), 0);
    assert_int_equal(test_scan_one(t, true, why, sizeof(why)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(why, "shard-000002.rp: is a symbolic link"));
}

static void test_name_mismatch(void **state)
{
    test_ctx_t *t = *state;
    char from[512], to[512], why[512];
    rp__ckpt_catalog_t cat;

    test_write(t, 6);
    test_path(t, 6, NULL, from, sizeof(from));
    test_path(t, 60, NULL, to, sizeof(to));
    assert_int_equal(rename(from, to), 0);
    assert_int_equal(test_scan_one(t, false, why, sizeof(why)),
                     RP_CKPT_CORRUPT);
    assert_non_null(strstr(why, "does not match the directory name"));
    /* A plain file under a committed name, and names that are not ours. */
    test_path(t, 61, NULL, to, sizeof(to));
    assert_int_equal(close(open(to, O_CREAT | O_WRONLY, 0644)), 0);
    snprintf(to, sizeof(to), "%s/step-62", t->dir);
    assert_int_equal(mkdir(to, 0755), 0);
    assert_int_equal(rp__ckpt_catalog_scan(t->dir, false, &cat), RP_OK);
    assert_int_equal(cat.count, 2);
    assert_true(cat.entries[1].step == 61);
    assert_int_equal(cat.entries[1].state, RP_CKPT_CORRUPT);
    assert_non_null(strstr(cat.entries[1].reason, "not a directory"));
    rp__ckpt_catalog_free(&cat);
}

static void test_inflight_and_cleanup(void **state)
{
    test_ctx_t *t = *state;
    rp__ckpt_catalog_t cat;
    char name[RP_CKPT_NAME_MAX], path[600], del[512];
    unsigned removed;
    int fd;

    test_write(t, 10);
    rp__ckpt_name_inflight(11, 0xabcdefull, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", t->dir, name);
    assert_int_equal(mkdir(path, 0755), 0);
    snprintf(path, sizeof(path), "%s/%s/shard-000000.rp", t->dir, name);
    fd = open(path, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "partial", 7), 7);
    close(fd);
    /* A deletion interrupted by a crash. */
    snprintf(del, sizeof(del), "%s/.deleting-step-000000000001-00000000000000aa",
             t->dir);
    assert_int_equal(mkdir(del, 0755), 0);
    snprintf(path, sizeof(path), "%s/MANIFEST", del);
    assert_int_equal(close(open(path, O_CREAT | O_WRONLY, 0644)), 0);

    assert_int_equal(rp__ckpt_catalog_scan(t->dir, false, &cat), RP_OK);
    assert_int_equal(cat.count, 2); /* .deleting- is not listed */
    assert_int_equal(cat.entries[0].state, RP_CKPT_COMPLETE);
    assert_int_equal(cat.entries[1].state, RP_CKPT_INFLIGHT);
    assert_true(cat.entries[1].step == 11);
    assert_true(cat.entries[1].total_bytes == 7);
    rp__ckpt_catalog_free(&cat);

    /* Prune leaves an in-flight directory newer than the newest complete
     * (could be a live writer), but finishes the interrupted deletion. */
    assert_int_equal(rp__ckpt_prune(t->dir, 1, false, &removed), RP_OK);
    assert_int_equal(removed, 0);
    assert_false(test_exists(del));
    assert_int_equal(test_count_entries(t->dir), 2);

    /* Clean start: in-flight goes, committed stays. */
    assert_int_equal(rp__ckpt_cleanup_inflight(t->dir, &removed), RP_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(test_count_entries(t->dir), 1);
    test_path(t, 10, NULL, path, sizeof(path));
    assert_true(test_exists(path));
    assert_int_equal(rp__ckpt_cleanup_inflight(t->dir, &removed), RP_OK);
    assert_int_equal(removed, 0);
}

static void test_prune(void **state)
{
    test_ctx_t *t = *state;
    rp__ckpt_catalog_t cat;
    char name[RP_CKPT_NAME_MAX], path[512];
    unsigned removed, step;

    for (step = 1; step <= 5; step++) {
        test_write(t, step);
    }
    /* 3 corrupt, 6 incomplete (newer than newest complete), in-flight 2
     * (older) and 7 (newer). */
    test_path(t, 3, "shard-000000.rp", path, sizeof(path));
    assert_int_equal(truncate(path, 10), 0);
    test_write(t, 6);
    test_path(t, 6, "shard-000001.rp", path, sizeof(path));
    assert_int_equal(unlink(path), 0);
    rp__ckpt_name_inflight(2, 1, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", t->dir, name);
    assert_int_equal(mkdir(path, 0755), 0);
    rp__ckpt_name_inflight(7, 2, name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", t->dir, name);
    assert_int_equal(mkdir(path, 0755), 0);

    assert_int_equal(rp__ckpt_prune(t->dir, 2, false, &removed), RP_OK);
    /* Deleted: complete 1 and 2 (beyond keep=2), corrupt 3, in-flight 2. */
    assert_int_equal(removed, 4);
    assert_int_equal(rp__ckpt_catalog_scan(t->dir, false, &cat), RP_OK);
    assert_int_equal(cat.count, 4);
    assert_true(cat.entries[0].step == 4 &&
                cat.entries[0].state == RP_CKPT_COMPLETE);
    assert_true(cat.entries[1].step == 5 &&
                cat.entries[1].state == RP_CKPT_COMPLETE);
    assert_true(cat.entries[2].step == 6 &&
                cat.entries[2].state == RP_CKPT_INCOMPLETE);
    assert_true(cat.entries[3].step == 7 &&
                cat.entries[3].state == RP_CKPT_INFLIGHT);
    rp__ckpt_catalog_free(&cat);
    /* No .deleting- leftovers: exactly the four above remain. */
    assert_int_equal(test_count_entries(t->dir), 4);

    /* keep = 0 still keeps the newest complete one. */
    assert_int_equal(rp__ckpt_prune(t->dir, 0, false, &removed), RP_OK);
    assert_int_equal(removed, 1);
    test_path(t, 5, NULL, path, sizeof(path));
    assert_true(test_exists(path));
    test_path(t, 4, NULL, path, sizeof(path));
    assert_false(test_exists(path));
    /* Idempotent. */
    assert_int_equal(rp__ckpt_prune(t->dir, 0, false, &removed), RP_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(test_count_entries(t->dir), 3);
}

static void test_prune_without_complete(void **state)
{
    test_ctx_t *t = *state;
    char path[512];
    unsigned removed;

    test_write(t, 1);
    test_write(t, 2);
    test_path(t, 1, "MANIFEST", path, sizeof(path));
    assert_int_equal(unlink(path), 0);
    test_path(t, 2, "shard-000000.rp", path, sizeof(path));
    test_flip_byte(path, 3);
    /* Nothing complete: nothing is deleted, whatever its state. */
    assert_int_equal(rp__ckpt_prune(t->dir, 1, false, &removed), RP_OK);
    assert_int_equal(removed, 0);
    assert_int_equal(test_count_entries(t->dir), 2);
    /* A newer complete one makes both older broken ones debris. */
    test_write(t, 3);
    assert_int_equal(rp__ckpt_prune(t->dir, 5, false, &removed), RP_OK);
    assert_int_equal(removed, 2);
    assert_int_equal(test_count_entries(t->dir), 1);
}

static void test_remove_safety(void **state)
{
    test_ctx_t *t = *state;
    char path[512], outside[512];
    int dfd;

    test_write(t, 8);
    /* A symlink inside pointing outside: removal must not follow it. */
    snprintf(outside, sizeof(outside), "%s/outside.txt", t->dir);
    assert_int_equal(close(open(outside, O_CREAT | O_WRONLY, 0644)), 0);
    test_path(t, 8, "link", path, sizeof(path));
    assert_int_equal(symlink(outside, path), 0);
    dfd = open(t->dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(rp__ckpt_remove_at(dfd, "step-000000000008"), RP_OK);
    assert_int_equal(rp__ckpt_remove_at(dfd, "step-000000000008"),
                     RP_ERR_NOT_FOUND);
    close(dfd);
    assert_true(test_exists(outside));
    assert_int_equal(test_count_entries(t->dir), 1);
}

static void test_small_layouts(void **state)
{
    test_ctx_t *t = *state;
    const void *per_rank[TEST_WORLD] = {t->mine[0], t->mine[1], t->mine[2],
                                        t->mine[3]};
    rp__ckpt_region_t bad;
    rp__ckpt_catalog_t cat;
    size_t i;

    /* Stream shorter than one unit per rank: shards 1-3 hold only their
     * per-rank bytes. Stream empty. No per-rank data. W=1. */
    assert_int_equal(rp__ckpt_write_local(t->dir, 1, TEST_WORLD, NULL, 0,
                                          t->stream, 100, per_rank, 10, NULL,
                                          NULL), RP_OK);
    assert_int_equal(rp__ckpt_write_local(t->dir, 2, TEST_WORLD, NULL, 0, NULL,
                                          0, per_rank, 10, NULL, NULL), RP_OK);
    assert_int_equal(rp__ckpt_write_local(t->dir, 3, TEST_WORLD, NULL, 0,
                                          t->stream, 9000, NULL, 0, NULL,
                                          NULL), RP_OK);
    assert_int_equal(rp__ckpt_write_local(t->dir, 4, 1, NULL, 0, t->stream,
                                          TEST_STREAM, NULL, 0, NULL, NULL),
                     RP_OK);
    assert_int_equal(rp__ckpt_catalog_scan(t->dir, true, &cat), RP_OK);
    assert_int_equal(cat.count, 4);
    for (i = 0; i < cat.count; i++) {
        assert_int_equal(cat.entries[i].state, RP_CKPT_COMPLETE);
    }
    rp__ckpt_catalog_free(&cat);

    /* A region past the end of the stream is refused before any file. */
    memset(&bad, 0, sizeof(bad));
    snprintf(bad.name, sizeof(bad.name), "too-big");
    bad.size = 101;
    assert_int_equal(rp__ckpt_write_local(t->dir, 5, TEST_WORLD, &bad, 1,
                                          t->stream, 100, NULL, 0, NULL, NULL),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(test_count_entries(t->dir), 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_complete, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_missing_dir, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_shard_missing, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_shard_truncated, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_payload_bit_flip, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_last_chunk_flip, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_header_damage, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_manifest_damage, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_symlinked_shard, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_name_mismatch, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_inflight_and_cleanup, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_prune, test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_prune_without_complete,
                                        test_setup, test_teardown),
        cmocka_unit_test_setup_teardown(test_remove_safety, test_setup,
                                        test_teardown),
        cmocka_unit_test_setup_teardown(test_small_layouts, test_setup,
                                        test_teardown),
    };

    test_rng_seed(0xD1B54A32D192ED03ull);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
