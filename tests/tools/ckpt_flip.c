/*
 * One judgement of a checkpoint, wherever it is looked at. A 2-rank
 * checkpoint (step 20, written by the format layer's one-process writer
 * beside an intact step 10) is damaged in every way one byte can damage
 * it: a byte flipped at every 512-byte offset of every file (every 32nd
 * byte of the short MANIFEST), and every file cut at several lengths. After each damage:
 *   - ringpoint-ckpt verify DIR 20 says "corrupt" and names the file (and
 *     the shard header and the flipped byte in it, the chunk, or the
 *     MANIFEST, as the offset says);
 *   - ls --full, verify DIR, show and prune print that same verdict, word
 *     for word; ls (the quick check) too, except for a flipped payload
 *     byte, which only reading the chunk can see ("complete" there);
 *   - prune removes nothing (the damaged step is newer than the newest
 *     complete one), and both checkpoints are still there;
 *   - rp_restore_step(20) refuses it with RP_ERR_CORRUPT, logs the same
 *     verdict, and leaves the application's memory untouched; rp_restore
 *     falls back to step 10 and loads its bytes.
 * The commands run in-process (ckpt_cmd.c), so the ~90 cases take well
 * under a second (a few seconds under ASan). Prints TAP.
 */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringpoint.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/shard.h"
#include "ckpt/write/write_local.h"
#include "tools/ckpt_tool.h"

#define STREAM 20000u   /* "model": striped over both shards */
#define CHUNK 4096u
#define GOOD 10u
#define BAD 20u
#define BADNAME "step-000000000020"

static char dir[64];
static unsigned char mem[STREAM];
static int ntests, nfailed;

static unsigned char content(uint64_t step, size_t i)
{
    return (unsigned char)(i * 31 + step);
}

static void write_ckpt(uint64_t step)
{
    rp__ckpt_region_t reg;
    rp__ckpt_write_opts_t opts = {0};
    static unsigned char stream[STREAM];
    size_t i;

    memset(&reg, 0, sizeof(reg));
    strcpy(reg.name, "model");
    reg.kind = RP_CKPT_REGION_REPLICATED;
    reg.size = STREAM;
    for (i = 0; i < STREAM; i++) {
        stream[i] = content(step, i);
    }
    opts.chunk_size = CHUNK;
    if (rp__ckpt_write_local(dir, step, 2, &reg, 1, stream, STREAM, NULL, 0,
                             &opts, NULL) != RP_OK) {
        printf("Bail out! cannot write the checkpoint of step %u\n",
               (unsigned)step);
        exit(1);
    }
}

/* Run "ringpoint-ckpt ARGS..." in-process; its output in @out (malloc'd). */
static int tool(char **out, ...)
{
    char *argv[8], *err = NULL;
    size_t len, elen;
    FILE *o = open_memstream(out, &len), *e = open_memstream(&err, &elen);
    va_list ap;
    int argc = 0, rc;

    va_start(ap, out);
    while (argc < 7 && (argv[argc] = va_arg(ap, char *)) != NULL) {
        argc++;
    }
    va_end(ap);
    argv[argc] = NULL;
    rc = rp__ckpt_tool(argc, argv, o, e);
    fclose(o);
    fclose(e);
    if (err[0] != '\0') {
        /* Usage and I/O errors: shown with the case that failed. */
        *out = realloc(*out, len + elen + 1);
        memcpy(*out + len, err, elen + 1);
    }
    free(err);
    return rc;
}

/* The text after "step 20: " on the line of @out that starts so. */
static bool verdict_line(const char *out, const char *lead, char *buf,
                         size_t len)
{
    const char *p = strstr(out, lead), *nl;

    if (p == NULL) {
        return false;
    }
    p += strlen(lead);
    nl = strchr(p, '\n');
    snprintf(buf, len, "%.*s", nl != NULL ? (int)(nl - p) : (int)strlen(p),
             p);
    return true;
}

/* Run rp_restore_step / rp_restore with stderr in @log (malloc'd). */
static rp_status_t restore(rp_context_h ctx, bool exact,
                           rp_restore_info_t *info, char **log)
{
    char path[96];
    FILE *f;
    long n;
    int saved = dup(2), fd;
    rp_status_t rc;

    snprintf(path, sizeof(path), "%s.log", dir);
    fflush(stderr);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    rc = exact ? rp_restore_step(ctx, BAD, NULL, 0, info)
               : rp_restore(ctx, NULL, 0, info);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    f = fopen(path, "r");
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    rewind(f);
    *log = calloc((size_t)n + 1, 1);
    if (fread(*log, 1, (size_t)n, f) != (size_t)n) {
        (*log)[0] = '\0';
    }
    fclose(f);
    unlink(path);
    return rc;
}

static bool exists(const char *name)
{
    char path[128];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

#define EXPECT(cond, ...)                                                   \
    do {                                                                    \
        if (!(cond)) {                                                      \
            snprintf(why, sizeof(why), __VA_ARGS__);                        \
            goto fail;                                                      \
        }                                                                   \
    } while (0)

/*
 * Judge the damaged checkpoint with every command and the restore path.
 * @file: the damaged file; @part: what verify must name after it ("shard
 * header", "chunk N", "" for the file as such); @at: text the verdict must
 * also hold (the flipped header byte), or ""; @payload: a flip only the
 * full check can see.
 */
static void judge_all(rp_context_h ctx, const char *what, const char *file,
                      const char *part, const char *at, bool payload)
{
    char *out = NULL, *log = NULL, v[768], w[768], want[160], why[1024];
    rp_restore_info_t info;
    size_t i;
    int rc;

    why[0] = '\0';
    ntests++;
    /* verify DIR 20: the reference verdict. */
    rc = tool(&out, "verify", dir, "20", NULL);
    EXPECT(rc == 1, "verify DIR 20 exited %d", rc);
    EXPECT(verdict_line(out, "step 20: corrupt: ", v, sizeof(v)),
           "verify DIR 20 did not say corrupt");
    snprintf(want, sizeof(want), BADNAME "/%s%s%s:", file,
             part[0] != '\0' ? " " : "", part);
    EXPECT(strncmp(v, want, strlen(want)) == 0, "verify names '%s', not '%s'",
           v, want);
    EXPECT(strstr(v, at) != NULL, "'%s' does not point at '%s'", v, at);
    free(out);
    out = NULL;

    /* The same words from every other command. */
    rc = tool(&out, "verify", dir, NULL);
    EXPECT(rc == 1 && verdict_line(out, "step 20: corrupt: ", w, sizeof(w)) &&
           strcmp(v, w) == 0 && strstr(out, "step 10: complete") != NULL,
           "verify DIR (rc %d) differs", rc);
    free(out);
    out = NULL;
    rc = tool(&out, "show", dir, "20", NULL);
    EXPECT(rc == 1 && verdict_line(out, "step 20: corrupt: ", w, sizeof(w)) &&
           strcmp(v, w) == 0, "show DIR 20 (rc %d) differs", rc);
    free(out);
    out = NULL;
    rc = tool(&out, "ls", dir, "--full", NULL);
    EXPECT(rc == 0 && strstr(out, v) != NULL, "ls --full lacks the verdict");
    free(out);
    out = NULL;
    rc = tool(&out, "ls", dir, NULL);
    EXPECT(rc == 0 && (payload ? strstr(out, BADNAME) == NULL &&
                                     strstr(out, "corrupt") == NULL
                               : strstr(out, v) != NULL),
           "ls (quick) %s", payload ? "saw a payload flip?" : "differs");
    free(out);
    out = NULL;
    rc = tool(&out, "prune", dir, "--keep", "1", NULL);
    EXPECT(rc == 0 && verdict_line(out, "step 20: corrupt: ", w, sizeof(w)) &&
           strncmp(w, v, strlen(v)) == 0 && strstr(w, "(kept") != NULL,
           "prune (rc %d) differs", rc);
    EXPECT(exists(BADNAME) && exists("step-000000000010"),
           "prune removed a checkpoint");
    free(out);
    out = NULL;

    /* The restore path: refused, memory untouched, same words logged. */
    memset(mem, 0xa5, sizeof(mem));
    memset(&info, 0x55, sizeof(info));
    rc = restore(ctx, true, &info, &log);
    EXPECT(rc == RP_ERR_CORRUPT, "rp_restore_step returned %d", rc);
    EXPECT(info.restored == 0, "rp_restore_step says restored");
    for (i = 0; i < sizeof(mem); i++) {
        EXPECT(mem[i] == 0xa5, "rp_restore_step wrote byte %zu", i);
    }
    EXPECT(strstr(log, v) != NULL, "the restore log lacks the verdict");
    free(log);
    log = NULL;
    rc = restore(ctx, false, &info, &log);
    EXPECT(rc == RP_OK && info.restored == 1 && info.step == GOOD,
           "rp_restore did not fall back to step 10 (rc %d)", rc);
    for (i = 0; i < sizeof(mem); i++) {
        EXPECT(mem[i] == content(GOOD, i), "step 10 byte %zu wrong", i);
    }
    free(log);
    printf("ok %d - %s: every command says \"%s\"\n", ntests, what, v);
    return;

fail:
    nfailed++;
    printf("not ok %d - %s\n# %s\n", ntests, what, why);
    if (out != NULL) {
        printf("# output: %s\n", out);
    }
    if (log != NULL) {
        printf("# log: %s\n", log);
    }
    free(out);
    free(log);
}

static void path_of(const char *file, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" BADNAME "/%s", dir, file);
}

static void flip(const char *file, off_t off)
{
    char path[128];
    unsigned char b;
    int fd;

    path_of(file, path, sizeof(path));
    fd = open(path, O_RDWR);
    if (fd < 0 || pread(fd, &b, 1, off) != 1) {
        printf("Bail out! cannot read %s\n", path);
        exit(1);
    }
    b ^= 0xff;
    if (pwrite(fd, &b, 1, off) != 1) {
        printf("Bail out! cannot write %s\n", path);
        exit(1);
    }
    close(fd);
}

static off_t file_size(const char *file)
{
    char path[128];
    struct stat st;

    path_of(file, path, sizeof(path));
    return stat(path, &st) == 0 ? st.st_size : -1;
}

/* Flip byte @off of @file, judge, flip it back. */
static void flip_case(rp_context_h ctx, const char *file, bool manifest,
                      off_t off)
{
    bool payload = !manifest && off >= RP_CKPT_SHARD_HEADER_SIZE;
    char what[160], part[32], at[48] = "";

    if (manifest) {
        part[0] = '\0';
    } else if (payload) {
        snprintf(part, sizeof(part), "chunk %u",
                 (unsigned)((off - RP_CKPT_SHARD_HEADER_SIZE) / CHUNK));
    } else {
        /* The verdict must also point at the flipped byte. */
        snprintf(part, sizeof(part), "shard header");
        snprintf(at, sizeof(at), ", byte %lld: ", (long long)off);
    }
    snprintf(what, sizeof(what), "%s: byte %lld flipped", file,
             (long long)off);
    flip(file, off);
    judge_all(ctx, what, file, part, at, payload);
    flip(file, off);
}

/* Every case for @file: its flips, then its truncations. */
static void damage_file(rp_context_h ctx, const char *file, bool manifest)
{
    /* The first byte of every header field after the magic (shard.h). */
    static const off_t fields[] = {8, 12, 16, 32, 40, 44, 48, 56, 60};
    off_t size = file_size(file), off, cuts[8];
    off_t step = manifest ? 32 : 512;
    char what[160], path[128];
    unsigned char *keep = malloc((size_t)size);
    size_t ncuts = 0, i;
    FILE *f;

    path_of(file, path, sizeof(path));
    f = fopen(path, "rb");
    if (keep == NULL || f == NULL ||
        fread(keep, 1, (size_t)size, f) != (size_t)size) {
        printf("Bail out! cannot read %s\n", path);
        exit(1);
    }
    fclose(f);
    /* Every 512th byte (of the MANIFEST, a few hundred bytes, every
     * 32nd), and the fields of a shard's header. */
    for (off = 0; off < size; off += step) {
        flip_case(ctx, file, manifest, off);
    }
    for (i = 0; !manifest && i < sizeof(fields) / sizeof(fields[0]); i++) {
        flip_case(ctx, file, manifest, fields[i]);
    }
    cuts[ncuts++] = 0;
    cuts[ncuts++] = 1;
    cuts[ncuts++] = size / 2;
    cuts[ncuts++] = size - 1;
    if (!manifest) {
        cuts[ncuts++] = RP_CKPT_SHARD_HEADER_SIZE - 1;
        cuts[ncuts++] = RP_CKPT_SHARD_HEADER_SIZE;
        cuts[ncuts++] = RP_CKPT_SHARD_HEADER_SIZE + 1;
    }
    for (i = 0; i < ncuts; i++) {
        snprintf(what, sizeof(what), "%s: cut to %lld of %lld bytes", file,
                 (long long)cuts[i], (long long)size);
        if (truncate(path, cuts[i]) != 0) {
            printf("Bail out! cannot truncate %s\n", path);
            exit(1);
        }
        judge_all(ctx, what, file, "", "", false);
        f = fopen(path, "wb");
        if (f == NULL || fwrite(keep, 1, (size_t)size, f) != (size_t)size) {
            printf("Bail out! cannot restore %s\n", path);
            exit(1);
        }
        fclose(f);
    }
    free(keep);
}

int main(void)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;
    char cmd[128], *out = NULL;

    snprintf(dir, sizeof(dir), "/var/tmp/rp-ckpt-flip-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        printf("Bail out! mkdtemp\n");
        return 1;
    }
    write_ckpt(GOOD);
    write_ckpt(BAD);
    setenv("RINGPOINT_CKPT_DIR", dir, 1);
    setenv("RINGPOINT_CKPT_ASYNC", "0", 1);
    setenv("RINGPOINT_CKPT_INTERVAL", "0", 1);
    setenv("RINGPOINT_CKPT_EVERY", "0", 1);
    unsetenv("RINGPOINT_CKPT_FAULT");
    if (rp_init(&params, &ctx) != RP_OK ||
        rp_region_register(ctx, "model", mem, sizeof(mem),
                           RP_REGION_REPLICATED) != RP_OK) {
        printf("Bail out! rp_init / rp_region_register\n");
        return 1;
    }
    /* Undamaged, both verify. */
    ntests++;
    if (tool(&out, "verify", dir, "20", NULL) == 0 &&
        strstr(out, "step 20: complete") != NULL) {
        printf("ok %d - the undamaged checkpoint verifies\n", ntests);
    } else {
        printf("not ok %d - the undamaged checkpoint verifies\n# %s\n",
               ntests, out);
        nfailed++;
    }
    free(out);
    damage_file(ctx, RP_CKPT_MANIFEST_NAME, true);
    damage_file(ctx, "shard-000000.rp", false);
    damage_file(ctx, "shard-000001.rp", false);
    rp_finalize(ctx);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        printf("# could not remove %s\n", dir);
    }
    printf("1..%d\n", ntests);
    return nfailed != 0;
}
