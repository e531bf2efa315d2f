/*
 * ringpoint-ckpt bench: the baselines and ceilings it runs beside the
 * engine in the same rounds (raw O_DIRECT writer and reader, the durable
 * raw write, dd, the memory kernels, the training loop), and the small
 * numeric helpers both files use. ckpt_bench.c runs the rounds and prints.
 */
#ifndef RP_TOOLS_CKPT_BENCH_H
#define RP_TOOLS_CKPT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint.h"

#define RP_BENCH_MAX_ITERS 64
#define RP_BENCH_WORK (32u << 20)

/* Monotonic seconds. */
double rp_b_now(void);

/* BYTES[K|M|G] into *@out; 0, or -1 when @s is not such a size. */
int rp_b_size(const char *s, uint64_t *out);

/* The slowest rank's value. */
double rp_b_max(rp_context_h ctx, double v);

/* The median of @v[0..@n) (sorts @v). */
double rp_b_median(double *v, int n);

/* Raw baseline: this rank's stripe with O_DIRECT + fsync, then read back
 * cold with O_DIRECT. Returns the slowest rank's seconds. */
int rp_b_raw(rp_context_h ctx, const char *dir, int rank,
             unsigned char *buf, size_t len, double *w_s, double *r_s,
             double *fsync_s);

/* Let the file system settle before a timed write: every rank flushes
 * what earlier phases left (dd's and the retention's deletes, whose
 * journal commit and, on a file system mounted with `discard`, whose
 * discards would otherwise land in the next fsync), so that neither the
 * raw writer nor the checkpoint pays for the phase before it. */
void rp_b_quiesce(rp_context_h ctx, const char *dir);

/* The raw baseline as the same work as a sync checkpoint's write, placed
 * beside it: every rank at once, a new file (created in the timed part),
 * this rank's stripe in 64 MiB O_DIRECT writes, fsync, and the fsync of
 * its directory (the name durable, as the checkpoint's commit makes its
 * names durable); after a quiesce. Returns the slowest rank's seconds,
 * < 0 on failure. */
double rp_b_raw_durable(rp_context_h ctx, const char *dir, int rank,
                        unsigned char *buf, size_t len);

/* Drop the page cache of every shard of the newest checkpoint, so the
 * restore reads from the device (shards written with O_DIRECT are not
 * cached anyway; buffered fallbacks would be). */
void rp_b_drop_cache(const char *dir);

/* One pass of "training": a copy of a 32 MiB working set (memory-bound,
 * the default), or with @cpu the same time's worth of arithmetic on 4 KiB
 * that stays in L1 (a loop that is not memory-bound). */
void rp_b_pass(unsigned char *a, unsigned char *b, bool cpu);

/* Passes per second of rp_b_pass over @secs. */
double rp_b_work(unsigned char *a, unsigned char *b, bool cpu,
                 double secs);

/* `dd if=/dev/zero of=DIR/dd-RANK.bin bs=1M count=N conv=fsync` on every
 * rank at once, N MiB = this rank's stripe: what a shell user would call
 * "the disk's speed". Returns the slowest rank's seconds, < 0 on failure. */
double rp_b_dd(rp_context_h ctx, const char *dir, int rank,
               uint64_t len);

/* The memory ceilings over this rank's stripe, every rank at once:
 * memcpy into warm pages, and CRC32C. Slowest rank's seconds. */
void rp_b_mem(rp_context_h ctx, const unsigned char *src,
              unsigned char *dst, size_t len, double *cp_s,
              double *crc_s);

#endif
