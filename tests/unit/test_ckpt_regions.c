/*
 * State that moves and grows: regions updated, added and removed after the
 * first checkpoint, a checkpoint in flight that keeps the table of its
 * snapshot, rp_ckpt_find and rp_restore_step. One process (the engine with
 * a real checkpoint directory in a temporary folder); the multi-rank paths
 * are the same code with more ranks (tests/slurm/test_ckpt.sh).
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
#include <unistd.h>

#include <cmocka.h>

#include "ringpoint.h"
#include "ckpt/engine/engine.h"
#include "ckpt/engine/regions.h"
#include "ckpt/format/shard.h"
#include "core/context.h"

typedef struct fixture {
    char dir[64];
    rp_context_h ctx;
} fixture_t;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (unsigned char)(i * 131 + seed * 7 + (i >> 9));
    }
}

/* A context over a fresh checkpoint directory; @async: background writes. */
static void start(fixture_t *f, int async)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};

    snprintf(f->dir, sizeof(f->dir), "/tmp/rp-ckpt-regions-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    setenv("RINGPOINT_CKPT_DIR", f->dir, 1);
    setenv("RINGPOINT_CKPT_ASYNC", async ? "1" : "0", 1);
    setenv("RINGPOINT_CKPT_INTERVAL", "0", 1);
    setenv("RINGPOINT_CKPT_EVERY", "10", 1);
    setenv("RINGPOINT_CKPT_KEEP", "10", 1);
    setenv("RINGPOINT_CKPT_CHUNK_SIZE", "4096", 1);
    unsetenv("RINGPOINT_CKPT_FAULT");
    f->ctx = NULL;
    assert_int_equal(rp_init(&params, &f->ctx), RP_OK);
}

static void stop(fixture_t *f)
{
    char cmd[128];

    rp_finalize(f->ctx);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
    assert_int_equal(system(cmd), 0);
}

static const rp_ckpt_region_desc_t *region(const rp_ckpt_desc_t *d,
                                           const char *name)
{
    for (size_t i = 0; i < d->nregions; i++) {
        if (strcmp(d->regions[i].name, name) == 0) {
            return &d->regions[i];
        }
    }
    return NULL;
}

/* The engine alone: offsets follow every change of the table. */
static void test_layout_follows_changes(void **state)
{
    rp__ckpt_engine_t e;
    char x[300];

    (void)state;
    memset(&e, 0, sizeof(e));
    assert_int_equal(rp__ckpt_regions_add(&e, "a", x, 10, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "p", x, 7, RP_CKPT_REGION_PER_RANK), RP_OK);
    assert_int_equal(rp__ckpt_regions_add(&e, "b", x, 20, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(e.regs[2].offset, 64);
    assert_int_equal(e.stream_len, 84);
    e.checked = true;
    /* The address alone: no check needed, nothing moves. */
    assert_int_equal(rp__ckpt_regions_update(&e, "a", x + 1, 10), RP_OK);
    assert_true(e.checked);
    assert_ptr_equal(e.regs[0].addr, x + 1);
    /* A new size: b moves, the table must be checked again. */
    assert_int_equal(rp__ckpt_regions_update(&e, "a", x, 100), RP_OK);
    assert_false(e.checked);
    assert_int_equal(e.regs[2].offset, 128);
    assert_int_equal(e.stream_len, 148);
    assert_int_equal(rp__ckpt_regions_update(&e, "a", NULL, 5), RP_ERR_INVALID_ARG);
    assert_int_equal(rp__ckpt_regions_update(&e, "a", NULL, 0), RP_OK);
    assert_int_equal(e.regs[2].offset, 0);
    assert_int_equal(rp__ckpt_regions_update(&e, "a", x, 100), RP_OK);
    /* Too large: refused, nothing changed. */
    assert_int_equal(rp__ckpt_regions_update(&e, "a", x, (size_t)RP_CKPT_MAX_LENGTH), RP_ERR_INVALID_ARG);
    assert_int_equal(e.regs[0].size, 100);
    assert_int_equal(e.stream_len, 148);
    assert_int_equal(rp__ckpt_regions_update(&e, "nope", x, 1), RP_ERR_NOT_FOUND);
    e.checked = true;
    assert_int_equal(rp__ckpt_regions_remove(&e, "a"), RP_OK);
    assert_false(e.checked);
    assert_int_equal(e.nregs, 2);
    assert_string_equal(e.regs[0].name, "p");
    assert_string_equal(e.regs[1].name, "b");
    assert_int_equal(e.regs[1].offset, 0);
    assert_int_equal(e.stream_len, 20);
    assert_int_equal(e.per_rank_len, 7);
    assert_int_equal(rp__ckpt_regions_remove(&e, "a"), RP_ERR_NOT_FOUND);
    /* The name is free again. */
    assert_int_equal(rp__ckpt_regions_add(&e, "a", x, 1, RP_CKPT_REGION_REPLICATED), RP_OK);
    assert_int_equal(e.regs[2].offset, 64);
    free(e.regs);
}

/* A region pointed at new memory is checkpointed from the new memory. */
static void test_update_address(void **state)
{
    fixture_t f;
    unsigned char old[5000], cur[5000], want[5000], rng[33];
    rp_restore_info_t info;

    (void)state;
    start(&f, 0);
    fill(old, sizeof(old), 1);
    fill(rng, sizeof(rng), 2);
    assert_int_equal(rp_region_register(f.ctx, "model", old, sizeof(old), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "rng", rng, sizeof(rng), RP_REGION_PER_RANK), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 1), RP_OK);
    /* load_state_dict: the storage moved. */
    fill(cur, sizeof(cur), 3);
    memcpy(want, cur, sizeof(want));
    assert_int_equal(rp_region_update(f.ctx, "model", cur, sizeof(cur)), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 2), RP_OK);
    memset(cur, 0, sizeof(cur));
    fill(old, sizeof(old), 9);
    assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
    assert_int_equal(info.restored, 1);
    assert_int_equal(info.step, 2);
    assert_memory_equal(cur, want, sizeof(want));
    assert_int_equal(rp_region_update(f.ctx, "none", cur, 1), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_region_update(f.ctx, NULL, cur, 1), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_region_unregister(f.ctx, "none"), RP_ERR_NOT_FOUND);
    stop(&f);
}

/* After a restore the table may still change: the optimizer's state that
 * the first step creates joins the next checkpoint; a region emptied to
 * size 0 stays in the table. */
static void test_register_after_restore(void **state)
{
    fixture_t f;
    unsigned char m[1000], o[2000], wm[1000], wo[2000];
    rp_restore_info_t info;
    rp_ckpt_desc_t d;

    (void)state;
    start(&f, 0);
    fill(m, sizeof(m), 1);
    assert_int_equal(rp_region_register(f.ctx, "model", m, sizeof(m), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
    assert_int_equal(info.restored, 0);
    fill(o, sizeof(o), 2);
    memcpy(wm, m, sizeof(m));
    memcpy(wo, o, sizeof(o));
    assert_int_equal(rp_region_register(f.ctx, "opt", o, sizeof(o), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "blob", NULL, 0, RP_REGION_PER_RANK), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "none", NULL, 0, RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 5), RP_OK);
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_OK);
    assert_int_equal(d.nregions, 4);
    assert_int_equal(region(&d, "blob")->size, 0);
    rp_ckpt_desc_free(&d);
    memset(m, 0, sizeof(m));
    memset(o, 0, sizeof(o));
    assert_int_equal(rp_restore_step(f.ctx, 5, NULL, 0, &info), RP_OK);
    assert_memory_equal(m, wm, sizeof(m));
    assert_memory_equal(o, wo, sizeof(o));
    stop(&f);
}

/* Registered after the first checkpoint, then a region resized: the next
 * manifest has the new table, and the older checkpoint restores with its
 * own table through rp_ckpt_find + rp_restore_step. */
static void test_register_after_and_resize(void **state)
{
    fixture_t f;
    unsigned char a1[3000], a2[9000], opt[777], want1[3000], want2[9000];
    unsigned char wopt[777];
    rp_ckpt_desc_t d;
    rp_restore_info_t info;
    const rp_ckpt_region_desc_t *r;

    (void)state;
    start(&f, 0);
    fill(a1, sizeof(a1), 1);
    memcpy(want1, a1, sizeof(a1));
    assert_int_equal(rp_region_register(f.ctx, "model", a1, sizeof(a1), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 10), RP_OK);
    /* The optimizer's state appears after the first step; the model grows. */
    fill(opt, sizeof(opt), 2);
    fill(a2, sizeof(a2), 3);
    memcpy(wopt, opt, sizeof(opt));
    memcpy(want2, a2, sizeof(a2));
    assert_int_equal(rp_region_register(f.ctx, "opt", opt, sizeof(opt), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_update(f.ctx, "model", a2, sizeof(a2)), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 20), RP_OK);

    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_OK);
    assert_int_equal(d.step, 20);
    assert_int_equal(d.world_size, 1);
    assert_int_equal(d.nregions, 2);
    assert_string_equal(d.regions[0].name, "model");
    assert_int_equal(d.regions[0].size, sizeof(a2));
    assert_int_equal(d.regions[0].kind, RP_REGION_REPLICATED);
    assert_string_equal(d.regions[1].name, "opt");
    assert_int_equal(d.regions[1].size, sizeof(opt));
    assert_non_null(strstr(d.path, "/step-000000000020"));
    rp_ckpt_desc_free(&d);
    assert_null(d.regions);

    assert_int_equal(rp_ckpt_find(f.ctx, 20, &d), RP_OK);
    assert_int_equal(d.step, 10);
    assert_int_equal(d.nregions, 1);
    r = region(&d, "model");
    assert_non_null(r);
    assert_int_equal(r->size, sizeof(a1));
    assert_null(region(&d, "opt"));
    /* Register exactly that table, restore exactly that checkpoint. */
    assert_int_equal(rp_region_unregister(f.ctx, "opt"), RP_OK);
    assert_int_equal(rp_region_update(f.ctx, "model", a1, (size_t)r->size), RP_OK);
    memset(a1, 0, sizeof(a1));
    assert_int_equal(rp_restore_step(f.ctx, d.step, NULL, 0, &info), RP_OK);
    assert_int_equal(info.restored, 1);
    assert_int_equal(info.step, 10);
    assert_memory_equal(a1, want1, sizeof(a1));
    rp_ckpt_desc_free(&d);

    /* And back to the newer one with its table. */
    assert_int_equal(rp_region_register(f.ctx, "opt", opt, sizeof(opt), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_update(f.ctx, "model", a2, sizeof(a2)), RP_OK);
    memset(a2, 0, sizeof(a2));
    memset(opt, 0, sizeof(opt));
    assert_int_equal(rp_restore_step(f.ctx, 20, NULL, 0, &info), RP_OK);
    assert_memory_equal(a2, want2, sizeof(a2));
    assert_memory_equal(opt, wopt, sizeof(opt));
    /* A table that does not fit the checkpoint is refused, not a
     * fall-back. */
    assert_int_equal(rp_restore_step(f.ctx, 10, NULL, 0, &info), RP_ERR_INVALID_ARG);
    assert_int_equal(info.restored, 0);
    stop(&f);
}

/* An unregistered region is no longer in the next checkpoint. */
static void test_unregister(void **state)
{
    fixture_t f;
    unsigned char a[100], b[200], c[300], wa[100], wc[300];
    rp_ckpt_desc_t d;
    rp_restore_info_t info;

    (void)state;
    start(&f, 0);
    fill(a, sizeof(a), 1);
    fill(b, sizeof(b), 2);
    fill(c, sizeof(c), 3);
    memcpy(wa, a, sizeof(a));
    memcpy(wc, c, sizeof(c));
    assert_int_equal(rp_region_register(f.ctx, "a", a, sizeof(a), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "b", b, sizeof(b), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "c", c, sizeof(c), RP_REGION_PER_RANK), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 1), RP_OK);
    assert_int_equal(rp_region_unregister(f.ctx, "b"), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 2), RP_OK);
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_OK);
    assert_int_equal(d.step, 2);
    assert_int_equal(d.nregions, 2);
    assert_non_null(region(&d, "a"));
    assert_null(region(&d, "b"));
    assert_int_equal(region(&d, "c")->kind, RP_REGION_PER_RANK);
    rp_ckpt_desc_free(&d);
    memset(a, 0, sizeof(a));
    memset(c, 0, sizeof(c));
    assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
    assert_int_equal(info.step, 2);
    assert_memory_equal(a, wa, sizeof(a));
    assert_memory_equal(c, wc, sizeof(c));
    stop(&f);
}

/* Async: the table changes right after rp_step, while the write is in
 * flight; the committed manifest has the table of the snapshot, and its
 * bytes. A changed table is checked again without restarting the
 * interval clock. */
static void test_async_change_in_flight(void **state)
{
    fixture_t f;
    unsigned char a[20000], big[30000], extra[64], want[20000];
    rp_step_result_t res;
    rp_ckpt_desc_t d;
    rp_restore_info_t info;
    rp__ckpt_engine_t *e;
    uint64_t clock;

    (void)state;
    start(&f, 1);
    fill(a, sizeof(a), 1);
    /* Initialised: a checkpoint of uninitialised bytes is memcheck's
     * finding (scripts/valgrind.sh), not the engine's. */
    fill(extra, sizeof(extra), 3);
    assert_int_equal(rp_region_register(f.ctx, "model", a, sizeof(a), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_step(f.ctx, 9, &res), RP_OK);
    assert_int_equal(res.checkpointed, 0);
    e = f.ctx->ckpt;
    clock = e->last_ckpt_ns;
    assert_int_equal(rp_region_register(f.ctx, "late", extra, sizeof(extra), RP_REGION_REPLICATED), RP_OK);
    assert_false(e->checked);
    assert_int_equal(rp_step(f.ctx, 10, &res), RP_OK);
    assert_int_equal(res.checkpointed, 1);
    assert_true(e->checked);
    assert_true(e->last_ckpt_ns > clock); /* the checkpoint, not the check */
    assert_int_equal(rp_region_unregister(f.ctx, "late"), RP_OK);
    /* Right away, the write possibly still running: the model grows and
     * its old memory is overwritten. */
    memcpy(want, a, sizeof(a));
    fill(big, sizeof(big), 5);
    assert_int_equal(rp_region_update(f.ctx, "model", big, sizeof(big)), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "opt", extra, sizeof(extra), RP_REGION_PER_RANK), RP_OK);
    memset(a, 0xEE, sizeof(a));
    clock = e->last_ckpt_ns;
    assert_int_equal(rp_step(f.ctx, 11, &res), RP_OK); /* checks the table */
    assert_true(e->checked);
    assert_int_equal(e->last_ckpt_ns, clock);
    /* Commit what is in flight (and take 12 with the new table). */
    assert_int_equal(rp_checkpoint(f.ctx, 12), RP_OK);

    assert_int_equal(rp_ckpt_find(f.ctx, 12, &d), RP_OK);
    assert_int_equal(d.step, 10);
    assert_int_equal(d.nregions, 2);
    assert_string_equal(d.regions[0].name, "model");
    assert_int_equal(d.regions[0].size, sizeof(a));
    assert_string_equal(d.regions[1].name, "late");
    assert_int_equal(d.regions[1].size, sizeof(extra));
    rp_ckpt_desc_free(&d);
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_OK);
    assert_int_equal(d.step, 12);
    assert_int_equal(region(&d, "model")->size, sizeof(big));
    assert_int_equal(region(&d, "opt")->kind, RP_REGION_PER_RANK);
    assert_null(region(&d, "late"));
    rp_ckpt_desc_free(&d);

    /* Step 10 holds the bytes of the snapshot. */
    assert_int_equal(rp_region_unregister(f.ctx, "opt"), RP_OK);
    assert_int_equal(rp_region_update(f.ctx, "model", a, sizeof(a)), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "late", extra, sizeof(extra), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_restore_step(f.ctx, 10, NULL, 0, &info), RP_OK);
    assert_memory_equal(a, want, sizeof(a));
    stop(&f);
}

/* rp_checkpoint of the step rp_step is writing in the background waits
 * for that checkpoint's commit: no second one, and no warning that it
 * "exists already" (the caller asked for exactly this). */
static void test_checkpoint_of_step_in_flight(void **state)
{
    fixture_t f;
    unsigned char a[20000], want[20000];
    rp_step_result_t res;
    rp_ckpt_desc_t d;
    rp_restore_info_t info;
    char errpath[] = "/tmp/rp-ckpt-stderr-XXXXXX", buf[4096];
    int efd, saved;
    ssize_t n;

    (void)state;
    start(&f, 1);
    fill(a, sizeof(a), 2);
    memcpy(want, a, sizeof(a));
    assert_int_equal(rp_region_register(f.ctx, "model", a, sizeof(a), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_step(f.ctx, 10, &res), RP_OK);
    assert_int_equal(res.checkpointed, 1);
    efd = mkstemp(errpath);
    assert_true(efd >= 0);
    fflush(stderr);
    saved = dup(2);
    assert_true(saved >= 0);
    assert_int_equal(dup2(efd, 2), 2);
    assert_int_equal(rp_checkpoint(f.ctx, 10), RP_OK);
    fflush(stderr);
    assert_int_equal(dup2(saved, 2), 2);
    close(saved);
    assert_false(f.ctx->ckpt->pend.active); /* committed on return */
    n = pread(efd, buf, sizeof(buf) - 1, 0);
    assert_true(n >= 0);
    buf[n] = '\0';
    close(efd);
    unlink(errpath);
    assert_null(strstr(buf, "exists already"));
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_OK);
    assert_int_equal(d.step, 10);
    rp_ckpt_desc_free(&d);
    memset(a, 0, sizeof(a));
    assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
    assert_int_equal(info.step, 10);
    assert_memory_equal(a, want, sizeof(a));
    stop(&f);
}

/* rp_ckpt_find walks from the newest to the oldest, then NOT_FOUND. */
static void test_find_walks_back(void **state)
{
    fixture_t f;
    unsigned char a[128];
    rp_ckpt_desc_t d;
    uint64_t before = UINT64_MAX;
    const uint64_t steps[] = {30, 20, 10};

    (void)state;
    start(&f, 0);
    /* Nothing yet: not even the directory's checkpoints. */
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_ERR_NOT_FOUND);
    assert_null(d.regions);
    assert_int_equal(d.nregions, 0);
    rp_ckpt_desc_free(&d);
    fill(a, sizeof(a), 1);
    assert_int_equal(rp_region_register(f.ctx, "a", a, sizeof(a), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 10), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 20), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 30), RP_OK);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(rp_ckpt_find(f.ctx, before, &d), RP_OK);
        assert_int_equal(d.step, steps[i]);
        assert_int_equal(d.nregions, 1);
        before = d.step;
        rp_ckpt_desc_free(&d);
    }
    assert_int_equal(rp_ckpt_find(f.ctx, before, &d), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_ckpt_find(f.ctx, 25, &d), RP_OK);
    assert_int_equal(d.step, 20);
    rp_ckpt_desc_free(&d);
    assert_int_equal(rp_ckpt_find(f.ctx, 0, &d), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, NULL), RP_ERR_INVALID_ARG);
    rp_ckpt_desc_free(NULL);
    stop(&f);
}

/* Flip one payload byte of @step's shard 0. */
static void corrupt(const fixture_t *f, uint64_t step, off_t at)
{
    char path[256];
    unsigned char b;
    int fd;

    snprintf(path, sizeof(path), "%s/step-%012llu/shard-000000.rp", f->dir,
             (unsigned long long)step);
    fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, &b, 1, RP_CKPT_SHARD_HEADER_SIZE + at), 1);
    b ^= 0x40;
    assert_int_equal(pwrite(fd, &b, 1, RP_CKPT_SHARD_HEADER_SIZE + at), 1);
    assert_int_equal(close(fd), 0);
}

/* rp_restore_step never falls back: a corrupt shard is RP_ERR_CORRUPT and
 * the application's memory is untouched; a missing step is NOT_FOUND. */
static void test_restore_step_exact(void **state)
{
    fixture_t f;
    unsigned char a[10000], p[50], before[10000], pbefore[50], w1[10000];
    rp_restore_info_t info;
    rp_ckpt_desc_t d;

    (void)state;
    start(&f, 0);
    fill(a, sizeof(a), 1);
    fill(p, sizeof(p), 2);
    memcpy(w1, a, sizeof(a));
    assert_int_equal(rp_region_register(f.ctx, "a", a, sizeof(a), RP_REGION_REPLICATED), RP_OK);
    assert_int_equal(rp_region_register(f.ctx, "p", p, sizeof(p), RP_REGION_PER_RANK), RP_OK);
    assert_int_equal(rp_checkpoint(f.ctx, 1), RP_OK);
    fill(a, sizeof(a), 3);
    assert_int_equal(rp_checkpoint(f.ctx, 2), RP_OK);
    corrupt(&f, 2, 5000);

    fill(a, sizeof(a), 7);
    fill(p, sizeof(p), 8);
    memcpy(before, a, sizeof(a));
    memcpy(pbefore, p, sizeof(p));
    /* The quick scan still calls it complete; its bytes are bad. */
    assert_int_equal(rp_ckpt_find(f.ctx, UINT64_MAX, &d), RP_OK);
    assert_int_equal(d.step, 2);
    rp_ckpt_desc_free(&d);
    memset(&info, 0x55, sizeof(info));
    assert_int_equal(rp_restore_step(f.ctx, 2, NULL, 0, &info), RP_ERR_CORRUPT);
    assert_int_equal(info.restored, 0);
    assert_memory_equal(a, before, sizeof(a));
    assert_memory_equal(p, pbefore, sizeof(p));
    assert_int_equal(rp_restore_step(f.ctx, 99, NULL, 0, &info), RP_ERR_NOT_FOUND);
    assert_int_equal(rp_restore_step(f.ctx, 0, NULL, 0, NULL), RP_ERR_NOT_FOUND);
    assert_memory_equal(a, before, sizeof(a));
    /* The caller's fall-back: the one before it. */
    assert_int_equal(rp_ckpt_find(f.ctx, 2, &d), RP_OK);
    assert_int_equal(rp_restore_step(f.ctx, d.step, NULL, 0, &info), RP_OK);
    assert_int_equal(info.step, 1);
    assert_memory_equal(a, w1, sizeof(a));
    rp_ckpt_desc_free(&d);
    /* rp_restore still falls back by itself. */
    memcpy(a, before, sizeof(a));
    assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
    assert_int_equal(info.step, 1);
    assert_memory_equal(a, w1, sizeof(a));
    stop(&f);
}

/* A state bigger than one restore read (RP_RD_RUN, 16 MiB): the reads
 * go through the worker that reads ahead while the CRCs are checked, in
 * both modes; a bad chunk far into the shard (a read in flight when it is
 * found) is RP_ERR_CORRUPT with the memory untouched, and the one before
 * still restores. */
static void test_restore_large_state(void **state)
{
    enum { N = (40 << 20) + 123 };
    unsigned char *a = malloc(N), *w1 = malloc(N), *w2 = malloc(N);
    unsigned char *before = malloc(N);
    rp_restore_info_t info;
    int async;

    (void)state;
    assert_non_null(a);
    assert_non_null(w1);
    assert_non_null(w2);
    assert_non_null(before);
    for (async = 0; async < 2; async++) {
        fixture_t f;

        start(&f, async);
        fill(a, N, 11);
        memcpy(w1, a, N);
        assert_int_equal(rp_region_register(f.ctx, "a", a, N, RP_REGION_REPLICATED), RP_OK);
        assert_int_equal(rp_checkpoint(f.ctx, 1), RP_OK);
        fill(a, N, 12);
        memcpy(w2, a, N);
        assert_int_equal(rp_checkpoint(f.ctx, 2), RP_OK);
        fill(a, N, 13);
        assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
        assert_int_equal(info.step, 2);
        assert_memory_equal(a, w2, N);
        corrupt(&f, 2, (off_t)35 << 20);
        fill(a, N, 14);
        memcpy(before, a, N);
        assert_int_equal(rp_restore_step(f.ctx, 2, NULL, 0, &info), RP_ERR_CORRUPT);
        assert_memory_equal(a, before, N);
        assert_int_equal(rp_restore(f.ctx, NULL, 0, &info), RP_OK);
        assert_int_equal(info.step, 1);
        assert_memory_equal(a, w1, N);
        stop(&f);
    }
    free(a);
    free(w1);
    free(w2);
    free(before);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_follows_changes),
        cmocka_unit_test(test_update_address),
        cmocka_unit_test(test_register_after_restore),
        cmocka_unit_test(test_register_after_and_resize),
        cmocka_unit_test(test_unregister),
        cmocka_unit_test(test_async_change_in_flight),
        cmocka_unit_test(test_checkpoint_of_step_in_flight),
        cmocka_unit_test(test_find_walks_back),
        cmocka_unit_test(test_restore_step_exact),
        cmocka_unit_test(test_restore_large_state),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
