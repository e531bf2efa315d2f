/*
 * ringpoint-ckpt bench: the baselines and ceilings (ckpt_bench.h).
 */
#include "config.h"

#include "tools/ckpt_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/catalog/catalog.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/engine/engine.h"
#include "ckpt/format/layout.h"

extern char **environ;

double rp_b_now(void)
{
    return (double)rp__ckpt_now_ns() / 1e9;
}

int rp_b_size(const char *s, uint64_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0 || end == s) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0' || v == 0) {
        return -1;
    }
    *out = v;
    return 0;
}

/* The slowest rank's value. */
double rp_b_max(rp_context_h ctx, double v)
{
    (void)rp_allreduce(ctx, &v, &v, 1, RP_DTYPE_FLOAT64, RP_OP_MAX);
    return v;
}

static int rp_b_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

double rp_b_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), rp_b_cmp);
    return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

/* All @len bytes of @buf to (@write) or from @fd at offset 0, in 64 MiB
 * requests: the raw baselines' access pattern. False on the first short
 * or failed request (errno says why). */
static bool rp_b_io(int fd, unsigned char *buf, size_t len, bool write)
{
    for (size_t off = 0; off < len; off += 64u << 20) {
        size_t n = len - off < (64u << 20) ? len - off : (64u << 20);
        ssize_t got = write ? pwrite(fd, buf + off, n, (off_t)off)
                            : pread(fd, buf + off, n, (off_t)off);

        if (got != (ssize_t)n) {
            return false;
        }
    }
    return true;
}

/* Raw baseline: this rank's stripe with O_DIRECT + fsync, then read back
 * cold with O_DIRECT. Returns the slowest rank's seconds. */
int rp_b_raw(rp_context_h ctx, const char *dir, int rank,
             unsigned char *buf, size_t len, double *w_s, double *r_s,
             double *fsync_s)
{
    char path[4200];
    double t0, t1;
    int fd;

    snprintf(path, sizeof(path), "%s/raw-%d.bin", dir, rank);
    (void)unlink(path);
    rp_barrier(ctx);
    t0 = rp_b_now();
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0) {
        perror(path);
        return -1;
    }
    if (!rp_b_io(fd, buf, len, true)) {
        perror("raw write");
        close(fd);
        return -1;
    }
    t1 = rp_b_now();
    fsync(fd);
    close(fd);
    *fsync_s = rp_b_max(ctx, rp_b_now() - t1);
    *w_s = rp_b_max(ctx, rp_b_now() - t0);
    rp_barrier(ctx);
    t0 = rp_b_now();
    fd = open(path, O_RDONLY | O_DIRECT);
    if (fd < 0) {
        perror(path);
        return -1;
    }
    if (!rp_b_io(fd, buf, len, false)) {
        perror("raw read");
        close(fd);
        return -1;
    }
    close(fd);
    *r_s = rp_b_max(ctx, rp_b_now() - t0);
    (void)unlink(path);
    return 0;
}

/* Let the file system settle before a timed write: every rank flushes
 * what earlier phases left (dd's and the retention's deletes, whose
 * journal commit and, on a file system mounted with `discard`, whose
 * discards would otherwise land in the next fsync), so that neither the
 * raw writer nor the checkpoint pays for the phase before it. */
void rp_b_quiesce(rp_context_h ctx, const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (fd >= 0) {
        (void)syncfs(fd);
        close(fd);
    }
    rp_barrier(ctx);
}

/* The raw baseline as the same work as a sync checkpoint's write, placed
 * beside it: every rank at once, a new file (created in the timed part),
 * this rank's stripe in 64 MiB O_DIRECT writes, fsync, and the fsync of
 * its directory (the name durable, as the checkpoint's commit makes its
 * names durable); after a quiesce. Returns the slowest rank's seconds,
 * < 0 on failure. */
double rp_b_raw_durable(rp_context_h ctx, const char *dir, int rank,
                        unsigned char *buf, size_t len)
{
    char path[4200];
    double t0, t;
    int fd, dfd, ok = 1;

    snprintf(path, sizeof(path), "%s/rawd-%d.bin", dir, rank);
    (void)unlink(path);
    rp_b_quiesce(ctx, dir);
    t0 = rp_b_now();
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0644);
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || dfd < 0) {
        perror(path);
        ok = 0;
    }
    ok = ok && rp_b_io(fd, buf, len, true) &&
         fsync(fd) == 0 && fsync(dfd) == 0;
    t = rp_b_now() - t0;
    if (fd >= 0) {
        close(fd);
    }
    if (dfd >= 0) {
        close(dfd);
    }
    (void)unlink(path);
    if (!ok) {
        perror("raw durable write");
    }
    /* A failure anywhere wins the MAX. */
    t = rp_b_max(ctx, ok ? t : 1e12);
    return t >= 1e12 ? -1 : t;
}

/* Drop the page cache of every shard of the newest checkpoint, so the
 * restore reads from the device (shards written with O_DIRECT are not
 * cached anyway; buffered fallbacks would be). */
void rp_b_drop_cache(const char *dir)
{
    rp__ckpt_catalog_t cat;
    size_t i;

    if (rp__ckpt_catalog_scan(dir, false, &cat) != RP_OK) {
        return;
    }
    for (i = 0; i < cat.count; i++) {
        uint32_t r;

        for (r = 0; r < cat.entries[i].world_size; r++) {
            char name[RP_CKPT_NAME_MAX], path[8400];
            int fd;

            rp__ckpt_name_shard(r, name, sizeof(name));
            snprintf(path, sizeof(path), "%s/%s", cat.entries[i].path, name);
            fd = open(path, O_RDONLY);
            if (fd >= 0) {
                (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
                close(fd);
            }
        }
    }
    rp__ckpt_catalog_free(&cat);
}

/* One pass of "training": a copy of a 32 MiB working set (memory-bound,
 * the default), or with @cpu the same time's worth of arithmetic on 4 KiB
 * that stays in L1 (a loop that is not memory-bound). */
void rp_b_pass(unsigned char *a, unsigned char *b, bool cpu)
{
    if (cpu) {
        float *x = (float *)(void *)b;
        int i, k;

        for (k = 0; k < 4096; k++) {
            for (i = 0; i < 1024; i++) {
                x[i] = x[i] * 0.999f + 0.001f;
            }
        }
    } else {
        memcpy(b, a, RP_BENCH_WORK);
    }
}

/* Passes per second of rp_b_pass over @secs. */
double rp_b_work(unsigned char *a, unsigned char *b, bool cpu,
                 double secs)
{
    double t0 = rp_b_now(), t;
    long n = 0;

    do {
        rp_b_pass(a, b, cpu);
        a[n % RP_BENCH_WORK] ^= b[(n * 7) % RP_BENCH_WORK];
        n++;
        t = rp_b_now() - t0;
    } while (t < secs);
    return (double)n / t;
}

/* `dd if=/dev/zero of=DIR/dd-RANK.bin bs=1M count=N conv=fsync` on every
 * rank at once, N MiB = this rank's stripe: what a shell user would call
 * "the disk's speed". Returns the slowest rank's seconds, < 0 on failure. */
double rp_b_dd(rp_context_h ctx, const char *dir, int rank,
               uint64_t len)
{
    char of[4200], count[32];
    char *argv[] = {"dd", "if=/dev/zero", of, "bs=1M", count, "conv=fsync",
                    "status=none", NULL};
    double t0, t;
    pid_t pid;
    int st = 0, ok;

    snprintf(of, sizeof(of), "of=%s/dd-%d.bin", dir, rank);
    snprintf(count, sizeof(count), "count=%" PRIu64, (len + (1u << 20) - 1) >> 20);
    rp_barrier(ctx);
    t0 = rp_b_now();
    ok = posix_spawnp(&pid, "dd", NULL, NULL, argv, environ) == 0 &&
         waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
         WEXITSTATUS(st) == 0;
    t = rp_b_max(ctx, ok ? rp_b_now() - t0 : -1e9);
    (void)unlink(of + 3);
    return ok ? t : -1;
}

/* The memory ceilings over this rank's stripe, every rank at once:
 * memcpy into warm pages, and CRC32C. Slowest rank's seconds. */
void rp_b_mem(rp_context_h ctx, const unsigned char *src,
              unsigned char *dst, size_t len, double *cp_s,
              double *crc_s)
{
    static volatile uint32_t sink;
    double t0;

    rp_barrier(ctx);
    t0 = rp_b_now();
    memcpy(dst, src, len);
    *cp_s = rp_b_max(ctx, rp_b_now() - t0);
    rp_barrier(ctx);
    t0 = rp_b_now();
    sink = rp__crc32c(0, src, len);
    *crc_s = rp_b_max(ctx, rp_b_now() - t0);
    (void)sink;
}
