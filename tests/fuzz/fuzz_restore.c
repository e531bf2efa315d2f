/*
 * The restore path over a damaged checkpoint directory: the catalog
 * (rp__ckpt_catalog_scan, rp__ckpt_verify) and the reader (rp_restore_step)
 * on a checkpoint written by 1 to 4 ranks, restored by a one-rank job (the
 * reader takes the replicated state from every writer's shard). The input
 * picks the writers' world size, then up to 8 edits of the checkpoint's
 * files: bit flips, truncations, appended bytes, deleted files, symbolic
 * links, manifest edits with a matching checksum (so the grammar and the
 * cross-checks behind it are reached), one shard copied over another, a
 * shard of another checkpoint, shard headers re-encoded with one field
 * changed, stray files.
 *
 * Properties:
 *  - the scan and the verification of that one directory name it the same
 *    way (complete, incomplete, corrupt); what the full check (every chunk
 *    CRC) calls complete, the quick one (manifest, sizes, headers) does
 *    too;
 *  - the reader restores exactly when the full check says complete (and
 *    the checkpoint's region table is the job's), and what it restores is
 *    the state that was written, byte for byte;
 *  - when it refuses, the job's memory is untouched.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "ckpt/catalog/validate.h"
#include "ringpoint.h"
#include "ckpt/catalog/catalog.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/shard.h"
#include "ckpt/write/write_local.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#define STREAM (3 * 4096 + 1234) /* 4 chunks of 4 KiB: 1 to 4 per shard */
#define MAX_WORLD 4
#define MAX_FILES 16

typedef struct mfile {
    char name[64];
    uint8_t *data;
    size_t len;
    int link;      /* >= 0: a symbolic link to file @link instead */
    bool gone;
} mfile_t;

typedef struct pristine {
    mfile_t files[MAX_WORLD + 1]; /* MANIFEST, shard-0 .. */
    unsigned nfiles;
} pristine_t;

static char root[64], work[128];
static uint8_t stream[MAX_WORLD + 1][STREAM];
static pristine_t pristine[MAX_WORLD + 1];
static rp_context_h ctx;
static uint8_t region[STREAM];

static int rm_one(const char *path, const struct stat *st, int flag,
                  struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void rm_tree(const char *path)
{
    nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Empty the checkpoint directory, keeping the directory itself: the
 * engine holds it open. */
static void clear_work(void)
{
    DIR *d = opendir(work);
    struct dirent *de;
    char path[512];

    if (d == NULL) {
        abort();
    }
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
            snprintf(path, sizeof(path), "%s/%s", work, de->d_name);
            rm_tree(path);
        }
    }
    closedir(d);
}

static void remove_root(void)
{
    rm_tree(root);
}

static uint8_t *read_all(const char *path, size_t *len)
{
    struct stat st;
    uint8_t *buf;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0 || fstat(fd, &st) != 0) {
        abort();
    }
    buf = malloc((size_t)st.st_size + 1);
    if (read(fd, buf, (size_t)st.st_size) != st.st_size) {
        abort();
    }
    close(fd);
    *len = (size_t)st.st_size;
    return buf;
}

static uint64_t step_of(unsigned world)
{
    return 10 + world;
}

static void setup(void)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp__ckpt_region_t reg = {.name = "model",
                             .kind = RP_CKPT_REGION_REPLICATED,
                             .offset = 0,
                             .size = STREAM};
    rp__ckpt_write_opts_t opts = {.chunk_size = 4096, .job_id = 7};
    char dir[256], path[512];
    int saved;

    snprintf(root, sizeof(root), "%s/rp-fuzz-restore-XXXXXX",
             access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
    if (mkdtemp(root) == NULL) {
        abort();
    }
    atexit(remove_root);
    snprintf(work, sizeof(work), "%s/work", root);
    snprintf(dir, sizeof(dir), "%s/pristine", root);
    if (mkdir(work, 0700) != 0 || mkdir(dir, 0700) != 0) {
        abort();
    }
    for (unsigned w = 1; w <= MAX_WORLD; w++) {
        pristine_t *p = &pristine[w];
        char name[RP_CKPT_NAME_MAX];

        for (size_t i = 0; i < STREAM; i++) {
            stream[w][i] = (uint8_t)(i * 31 + w + (i >> 12));
        }
        if (rp__ckpt_write_local(dir, step_of(w), w, &reg, 1, stream[w],
                                 STREAM, NULL, 0, &opts, NULL) != RP_OK) {
            abort();
        }
        rp__ckpt_name_committed(step_of(w), name, sizeof(name));
        p->nfiles = w + 1;
        for (unsigned f = 0; f <= w; f++) {
            mfile_t *m = &p->files[f];

            if (f == 0) {
                snprintf(m->name, sizeof(m->name), "%s", RP_CKPT_MANIFEST_NAME);
            } else {
                rp__ckpt_name_shard(f - 1, m->name, sizeof(m->name));
            }
            snprintf(path, sizeof(path), "%s/%s/%s", dir, name, m->name);
            m->data = read_all(path, &m->len);
            m->link = -1;
        }
    }
    setenv("RINGPOINT_CKPT_DIR", work, 1);
    setenv("RINGPOINT_CKPT_ASYNC", "0", 1);
    setenv("RINGPOINT_CKPT_INTERVAL", "0", 1);
    setenv("RINGPOINT_CKPT_KEEP", "1000000", 1);
    unsetenv("RINGPOINT_CKPT_EVERY");
    unsetenv("RINGPOINT_CKPT_FAULT");
    saved = fuzz_quiet_begin();
    if (rp_init(&params, &ctx) != RP_OK ||
        rp_region_register(ctx, "model", region, STREAM,
                           RP_REGION_REPLICATED) != RP_OK) {
        fuzz_quiet_end(saved);
        fprintf(stderr, "fuzz_restore: rp_init failed\n");
        abort();
    }
    fuzz_quiet_end(saved);
}

static void fix_manifest_crc(mfile_t *m)
{
    char hex[9];

    if (m->len < 16 || memcmp(m->data + m->len - 16, "crc32c ", 7) != 0) {
        return;
    }
    snprintf(hex, sizeof(hex), "%08x", rp__crc32c(0, m->data, m->len - 16));
    memcpy(m->data + m->len - 9, hex, 8);
}

/* Apply up to 8 edits from the input to the files of @d. */
static void edit(fuzz_in_t *in, mfile_t *d, unsigned *nfiles, unsigned world)
{
    for (int k = 0; k < 8 && in->left > 0; k++) {
        uint8_t op = fuzz_u8(in) % 10;
        unsigned fi = fuzz_u8(in) % *nfiles;
        mfile_t *f = &d[fi];

        switch (op) {
        case 0: /* flip a bit */
            if (f->len > 0) {
                f->data[fuzz_u32(in) % f->len] ^= (uint8_t)(1u << (fuzz_u8(in) % 8));
            }
            break;
        case 1: /* truncate */
            f->len = fuzz_u32(in) % (f->len + 1);
            break;
        case 2: { /* append */
            unsigned n = fuzz_u8(in) % 16;

            f->data = realloc(f->data, f->len + n + 1);
            for (unsigned i = 0; i < n; i++) {
                f->data[f->len++] = fuzz_u8(in);
            }
            break;
        }
        case 3:
            f->gone = true;
            break;
        case 4: /* a symbolic link to a file of the directory, itself
                 * included (a loop) */
            f->link = (int)(fuzz_u8(in) % *nfiles);
            break;
        case 5: /* the manifest edited, its checksum matching */
            if (d[0].len > 16) {
                d[0].data[fuzz_u32(in) % (d[0].len - 16)] = fuzz_u8(in);
                fix_manifest_crc(&d[0]);
            }
            break;
        case 6: { /* one shard copied over another */
            unsigned from = 1 + fuzz_u8(in) % world;

            if (fi > 0 && from != fi) {
                free(f->data);
                f->data = malloc(d[from].len + 1);
                memcpy(f->data, d[from].data, d[from].len);
                f->len = d[from].len;
            }
            break;
        }
        case 7: { /* the same rank's shard of another checkpoint */
            unsigned w = 1 + fuzz_u8(in) % MAX_WORLD;
            const mfile_t *o = &pristine[w].files[fi < pristine[w].nfiles ? fi : 1];

            if (fi > 0) {
                free(f->data);
                f->data = malloc(o->len + 1);
                memcpy(f->data, o->data, o->len);
                f->len = o->len;
            }
            break;
        }
        case 8: /* a shard header re-encoded with one field changed */
            if (fi > 0 && f->len >= RP_CKPT_SHARD_HEADER_SIZE) {
                rp__ckpt_shard_header_t h;
                uint8_t which = fuzz_u8(in);
                uint32_t v = fuzz_u32(in);

                if (rp__ckpt_shard_header_decode(f->data, f->len, &h, NULL,
                                                 0) != RP_OK) {
                    break;
                }
                switch (which % 5) {
                case 0: h.step = v; break;
                case 1: h.rank = v % 8; break;
                case 2: h.world_size = 1 + v % 8; break;
                case 3: h.payload_length = v; break;
                default: h.ckpt_id[v % RP_CKPT_ID_SIZE] ^= 1; break;
                }
                rp__ckpt_shard_header_encode(&h, f->data);
            }
            break;
        default: /* a stray file */
            if (*nfiles < MAX_FILES) {
                mfile_t *s = &d[(*nfiles)++];
                char *name = fuzz_str(in, 32);

                for (char *c = name; *c != '\0'; c++) {
                    if (*c == '/') {
                        *c = '_';
                    }
                }
                snprintf(s->name, sizeof(s->name), "%s",
                         name[0] == '\0' || strcmp(name, ".") == 0 ||
                                 strcmp(name, "..") == 0
                             ? "x"
                             : name);
                free(name);
                s->len = fuzz_u8(in) % 8;
                s->data = calloc(1, s->len + 1);
                s->link = -1;
                s->gone = false;
            }
            break;
        }
    }
}

static void materialize(const char *dir, mfile_t *d, unsigned nfiles)
{
    char path[1024];

    if (mkdir(dir, 0700) != 0) {
        abort();
    }
    for (unsigned i = 0; i < nfiles; i++) {
        mfile_t *f = &d[i];
        int fd;

        if (snprintf(path, sizeof(path), "%s/%s", dir, f->name) >=
            (int)sizeof(path)) {
            abort(); /* the harness's own names always fit */
        }
        if (f->gone) {
            continue;
        }
        if (f->link >= 0) {
            if (symlink(d[f->link].name, path) != 0) {
                continue; /* the name is taken: that damage is not made */
            }
            continue;
        }
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) {
            continue; /* a stray file named as another */
        }
        if (f->len > 0 && write(fd, f->data, f->len) != (ssize_t)f->len) {
            abort();
        }
        close(fd);
    }
}

static bool table_is_ours(const rp__ckpt_manifest_t *m)
{
    return m->nregions == 1 && strcmp(m->regions[0].name, "model") == 0 &&
           m->regions[0].kind == RP_CKPT_REGION_REPLICATED &&
           m->regions[0].size == STREAM && m->per_rank_length == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    unsigned world = 1 + fuzz_u8(&in) % MAX_WORLD, nfiles;
    mfile_t d[MAX_FILES];
    char name[RP_CKPT_NAME_MAX], path[512], msg[1024];
    rp__ckpt_state_t full, quick;
    rp__ckpt_manifest_t m;
    rp__ckpt_catalog_t cat;
    rp_restore_info_t info;
    const rp__ckpt_entry_t *entry = NULL;
    rp_status_t st;
    int saved;

    if (ctx == NULL) {
        setup();
    }
    memset(d, 0, sizeof(d));
    nfiles = pristine[world].nfiles;
    for (unsigned i = 0; i < nfiles; i++) {
        d[i] = pristine[world].files[i];
        d[i].data = malloc(d[i].len + 1);
        memcpy(d[i].data, pristine[world].files[i].data, d[i].len);
    }
    edit(&in, d, &nfiles, world);
    clear_work();
    rp__ckpt_name_committed(step_of(world), name, sizeof(name));
    snprintf(path, sizeof(path), "%s/%s", work, name);
    materialize(path, d, nfiles);

    saved = fuzz_quiet_begin();
    FUZZ_CHECK(rp__ckpt_catalog_scan(work, true, &cat) == RP_OK, "scan");
    for (size_t i = 0; i < cat.count; i++) {
        if (strcmp(cat.entries[i].name, name) == 0) {
            entry = &cat.entries[i];
        }
    }
    rp__ckpt_verify(path, true, &full, &m, msg, sizeof(msg));
    rp__ckpt_verify(path, false, &quick, NULL, NULL, 0);
    memset(region, 0xa5, sizeof(region));
    st = rp_restore_step(ctx, step_of(world), NULL, 0, &info);
    fuzz_quiet_end(saved);

    FUZZ_CHECK(entry != NULL, "the scan does not list %s", name);
    FUZZ_CHECK(entry->state == full, "the scan says %s, verify says %s (%s)",
               rp__ckpt_state_name(entry->state), rp__ckpt_state_name(full),
               msg);
    FUZZ_CHECK(full != RP_CKPT_COMPLETE || quick == RP_CKPT_COMPLETE,
               "complete, but the quick check says %s",
               rp__ckpt_state_name(quick));
    if (st == RP_OK) {
        FUZZ_CHECK(full == RP_CKPT_COMPLETE,
                   "restored from a checkpoint the catalog calls %s (%s)",
                   rp__ckpt_state_name(full), msg);
        FUZZ_CHECK(memcmp(region, stream[world], STREAM) == 0,
                   "restored state differs from what was written");
        FUZZ_CHECK(info.step == step_of(world) && info.world_size == world,
                   "restore info");
    } else {
        for (size_t i = 0; i < STREAM; i++) {
            FUZZ_CHECK(region[i] == 0xa5, "a refused restore (%s) changed "
                       "byte %zu of the job's memory", rp_status_string(st), i);
        }
        FUZZ_CHECK(full != RP_CKPT_COMPLETE ||
                       (st == RP_ERR_INVALID_ARG && !table_is_ours(&m)),
                   "the catalog calls it complete, the reader refuses: %s",
                   rp_status_string(st));
        FUZZ_CHECK(st == RP_ERR_NOT_FOUND || st == RP_ERR_CORRUPT ||
                       st == RP_ERR_INVALID_ARG,
                   "refused with %s", rp_status_string(st));
    }
    rp__ckpt_manifest_free(&m);
    rp__ckpt_catalog_free(&cat);
    for (unsigned i = 0; i < nfiles; i++) {
        free(d[i].data);
    }
    return 0;
}
