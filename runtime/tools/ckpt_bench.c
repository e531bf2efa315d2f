/*
 * ringpoint-ckpt bench --dir DIR --size BYTES [--iters N]: under srun or
 * mpirun, checkpoint and restore SIZE bytes of replicated state (plus 4 KiB
 * per rank) with the real engine, synchronously and asynchronously, beside
 * the ceilings of the same per-rank bytes measured in the same rounds: a
 * raw O_DIRECT writer (+ fsync) and cold reader, `dd conv=fsync`, and the
 * memory kernels (memcpy, CRC32C) over the stripe, every rank at once;
 * interleaved N times (the disk is noisy; compare medians). DIR is created
 * when missing; the checkpoints go to a fresh DIR/ckpt-bench.<pid>,
 * removed at the end. Rank 0 prints a table:
 *
 *   write GB/s    SIZE / slowest rank's time from the safe point to the
 *                 durable commit (async: until the commit is done)
 *   stall ms      time the training thread was held at the safe point
 *   busy %        async: training-loop slowdown while the write runs,
 *                 against the same loop run as long right after the
 *                 commit, in the same round (so that another job's load
 *                 that comes and goes hits both alike)
 *                 (--work mem, the default: a loop copying 32 MiB, which
 *                 is memory-bound; --work cpu: arithmetic in L1)
 *   commit ms     after the vote: manifest + dir fsync + rename + root
 *                 fsync + the outcome allreduce
 *   restore GB/s  SIZE / slowest rank's rp_restore (cold: page cache of
 *                 the shards dropped first), CRCs verified
 *   staging MiB   host memory the engine held for the snapshot, per rank
 *
 * and the phases of each mode in ms (medians; each the slowest rank's,
 * except the manifest and rename steps that only rank 0 runs): snapshot
 * copy+CRC (async, the stall), copy+CRC into bounce buffers (sync), pwrite,
 * fsync, the rest of the shard write (wr-other: buffers, open, header,
 * the first fill, the writer waiting for a filled buffer), the vote (it
 * waits for the slowest rank's write), the commit
 * without the vote, of which the collectives (rank 0), the manifest, the
 * renames + directory fsyncs; retention (rank 0, a helper thread: not in
 * the stall); restore: read,
 * CRC checks, allgather, scatter into the regions, other (listing, the
 * verdict).
 *
 * Internals are reached through the convenience library: the benchmark
 * switches the engine between sync and async in one job.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt/catalog/catalog.h"
#include "ckpt/catalog/prune.h"
#include "ckpt/engine/engine.h"
#include "ckpt/engine/root.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/layout.h"
#include "ckpt/write/async.h"
#include "core/context.h"
#include "ringpoint.h"
#include "tools/ckpt_bench.h"

extern char **environ;

int rp__ckpt_bench_main(int argc, char **argv);

/* Phases, per mode: see the header comment. */
enum {
    RP_B_BEGIN, RP_B_SNAP, RP_B_FILL, RP_B_PWRITE, RP_B_FSYNC, RP_B_WOTHER, RP_B_VOTE, RP_B_COMMIT,
    RP_B_COLL, RP_B_MANIFEST, RP_B_RENAME, RP_B_PRUNE, RP_B_RD_TOTAL, RP_B_RD_READ, RP_B_RD_CRC,
    RP_B_RD_GATHER, RP_B_RD_SCATTER, RP_B_RD_OTHER, RP_B_NPHASES
};

static const char *const rp_b_phase_names[RP_B_NPHASES] = {
    "begin", "snapshot", "copy+crc", "pwrite", "fsync", "wr-other", "vote", "commit", "coll",
    "manifest",
    "rename", "prune", "restore", "rd-read", "rd-crc", "allgather", "scatter",
    "rd-other"};

typedef struct rp_b_row {
    double write_gbs[RP_BENCH_MAX_ITERS], stall_ms[RP_BENCH_MAX_ITERS];
    double commit_ms[RP_BENCH_MAX_ITERS], restore_gbs[RP_BENCH_MAX_ITERS];
    double busy_pct[RP_BENCH_MAX_ITERS];
    double phase_ms[RP_B_NPHASES][RP_BENCH_MAX_ITERS];
    double staging_mib;
    int n, direct;
} rp_b_row_t;

static double rp_b_ms(uint64_t ns)
{
    return (double)ns / 1e6;
}

/* The phases of the last checkpoint and restore into @row (slot row->n). */
static void rp_b_phases(rp_context_h ctx, int rank, const rp__ckpt_stats_t *st,
                        double restore_s, rp_b_row_t *row)
{
    double v[RP_B_NPHASES], r0[4];
    int i;

    v[RP_B_BEGIN] = rp_b_ms(st->begin_ns);
    v[RP_B_SNAP] = rp_b_ms(st->snap_ns);
    v[RP_B_FILL] = rp_b_ms(st->fill_ns);
    v[RP_B_PWRITE] = rp_b_ms(st->pwrite_ns);
    v[RP_B_FSYNC] = rp_b_ms(st->fsync_ns);
    /* The shard write's time in neither pwrite nor fsync: buffers, open,
     * header, the first fill, the writer waiting for a filled buffer. */
    v[RP_B_WOTHER] = rp_b_ms(st->write_ns) - v[RP_B_PWRITE] - v[RP_B_FSYNC];
    v[RP_B_VOTE] = rp_b_ms(st->vote_ns);
    v[RP_B_COMMIT] = rp_b_ms(st->commit_ns - st->vote_ns);
    v[RP_B_MANIFEST] = 0;
    v[RP_B_RENAME] = 0;
    v[RP_B_PRUNE] = 0;
    v[RP_B_COLL] = 0;
    v[RP_B_RD_TOTAL] = restore_s * 1e3;
    v[RP_B_RD_READ] = rp_b_ms(st->rd_read_ns);
    v[RP_B_RD_CRC] = rp_b_ms(st->rd_crc_ns);
    v[RP_B_RD_GATHER] = rp_b_ms(st->rd_gather_ns);
    v[RP_B_RD_SCATTER] = rp_b_ms(st->rd_scatter_ns);
    /* The reads and the CRC checks overlap (a worker reads ahead), so
     * the rest is what the total leaves, when it leaves anything. */
    v[RP_B_RD_OTHER] = rp_b_ms(st->restore_ns) - rp_b_ms(st->rd_read_ns) -
                       rp_b_ms(st->rd_crc_ns) - rp_b_ms(st->rd_gather_ns) -
                       rp_b_ms(st->rd_scatter_ns) - rp_b_ms(st->rd_wait_ns);
    v[RP_B_RD_OTHER] = v[RP_B_RD_OTHER] > 0 ? v[RP_B_RD_OTHER] : 0;
    (void)rp_allreduce(ctx, v, v, RP_B_NPHASES, RP_DTYPE_FLOAT64, RP_OP_MAX);
    /* Only rank 0 writes the manifest and renames. */
    r0[0] = rank == 0 ? rp_b_ms(st->manifest_ns) : 0;
    r0[1] = rank == 0 ? rp_b_ms(st->rename_ns) : 0;
    r0[2] = rank == 0 ? rp_b_ms(st->prune_ns) : 0;
    /* Rank 0's commit less its file system steps: the allreduce of the
     * outcome (and the bookkeeping around it). */
    r0[3] = rank == 0 ? rp_b_ms(st->commit_ns - st->vote_ns -
                                st->manifest_ns - st->rename_ns) : 0;
    (void)rp_allreduce(ctx, r0, r0, 4, RP_DTYPE_FLOAT64, RP_OP_MAX);
    v[RP_B_MANIFEST] = r0[0];
    v[RP_B_RENAME] = r0[1];
    v[RP_B_PRUNE] = r0[2];
    v[RP_B_COLL] = r0[3];
    for (i = 0; i < RP_B_NPHASES; i++) {
        row->phase_ms[i][row->n] = v[i];
    }
}

/* Rank 0: remove the bench's checkpoint directory (its checkpoints, then
 * the directory itself). */
static void rp_b_cleanup(const char *parent, const char *sub)
{
    int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

    if (pfd < 0) {
        return;
    }
    {
        char path[4400];
        rp__ckpt_catalog_t cat;
        size_t i;

        snprintf(path, sizeof(path), "%s/%s", parent, sub);
        if (rp__ckpt_catalog_scan(path, false, &cat) == RP_OK) {
            int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

            for (i = 0; dfd >= 0 && i < cat.count; i++) {
                (void)rp__ckpt_remove_at(dfd, cat.entries[i].name);
            }
            if (dfd >= 0) {
                close(dfd);
            }
            rp__ckpt_catalog_free(&cat);
        }
    }
    (void)unlinkat(pfd, sub, AT_REMOVEDIR);
    close(pfd);
}

int rp__ckpt_bench_main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"dir", required_argument, NULL, 'd'},
        {"size", required_argument, NULL, 's'},
        {"iters", required_argument, NULL, 'n'},
        {"work", required_argument, NULL, 'w'},
        {NULL, 0, NULL, 0}};
    bool cpu = false;
    const char *dir = NULL;
    uint64_t size = 0, step = 0;
    int iters = 3, opt, it, rank, wsize;
    rp_context_h ctx;
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                            RP_CONTEXT_ATTR_FIELD_SIZE};
    rp__ckpt_engine_t *e;
    unsigned char *state, perrank[4096], *raw, *wa, *wb;
    uint64_t soff, slen;
    rp_b_row_t rows[2], rawrow, ddrow, cprow, crcrow, rawdrow;
    /* Per round: the sync checkpoint's speed over the durable raw
     * write's beside it. */
    double paired[RP_BENCH_MAX_ITERS];
    double base_rate, pid0;
    char sub[64], ckdir[4200];

    optind = 1;
    while ((opt = getopt_long(argc, argv, "d:s:n:w:", longopts, NULL)) != -1) {
        switch (opt) {
        case 'd': dir = optarg; break;
        case 's':
            if (rp_b_size(optarg, &size) != 0) {
                fprintf(stderr, "ringpoint-ckpt bench: bad --size '%s' "
                        "(bytes, with K, M or G)\n", optarg);
                return 2;
            }
            break;
        case 'n': iters = atoi(optarg); break;
        case 'w':
            if (strcmp(optarg, "mem") != 0 && strcmp(optarg, "cpu") != 0) {
                fprintf(stderr, "ringpoint-ckpt bench: bad --work '%s' "
                        "(mem: a memory-bound loop, cpu: one that is "
                        "not)\n", optarg);
                return 2;
            }
            cpu = strcmp(optarg, "cpu") == 0;
            break;
        default: return 2;
        }
    }
    if (dir == NULL || size == 0 || iters < 1 || iters > RP_BENCH_MAX_ITERS ||
        strlen(dir) > 4000) {
        fprintf(stderr, "usage: ringpoint-ckpt bench --dir DIR --size "
                "BYTES[K|M|G] [--iters 1..%d] [--work mem|cpu]\n", RP_BENCH_MAX_ITERS);
        return 2;
    }
    /* Every rank: the directory may be node-local. */
    if (rp__ckpt_mkdirs(dir) != RP_OK) {
        return 2;
    }
    setenv("RINGPOINT_CKPT_DIR", dir, 1); /* the real one is set below */
    if (rp_init(NULL, &ctx) != RP_OK) {
        return 2;
    }
    rp_context_query(ctx, &attr);
    rank = attr.rank;
    wsize = attr.size;
    /* A fresh checkpoint directory, so checkpoints of another size left
     * in DIR (an earlier run) are never what the restore picks. */
    pid0 = (double)getpid();
    (void)rp_broadcast(ctx, &pid0, 1, RP_DTYPE_FLOAT64, 0);
    snprintf(sub, sizeof(sub), "ckpt-bench.%.0f", pid0);
    snprintf(ckdir, sizeof(ckdir), "%s/%s", dir, sub);
    state = rp__ckpt_io_alloc((size_t)size);
    (void)rp__ckpt_stripe(size, (uint32_t)wsize, (uint32_t)rank, &soff, &slen);
    raw = rp__ckpt_io_alloc((size_t)slen + 4096);
    wa = rp__ckpt_io_alloc(RP_BENCH_WORK);
    wb = rp__ckpt_io_alloc(RP_BENCH_WORK);
    if (state == NULL || raw == NULL || wa == NULL || wb == NULL) {
        fprintf(stderr, "ringpoint-ckpt bench: out of memory\n");
        return 2;
    }
    for (uint64_t i = 0; i < size; i += 8) {
        uint64_t v = i * 0x9E3779B97F4A7C15ull;
        memcpy(state + i, &v, size - i < 8 ? size - i : 8);
    }
    memset(perrank, rank, sizeof(perrank));
    memcpy(raw, state + soff, (size_t)slen);
    if (rp_region_register(ctx, "state", state, (size_t)size,
                           RP_REGION_REPLICATED) != RP_OK ||
        rp_region_register(ctx, "rank", perrank, sizeof(perrank),
                           RP_REGION_PER_RANK) != RP_OK) {
        return 2;
    }
    if (rp__ckpt_engine_get(ctx, &e) != RP_OK) {
        return 2;
    }
    snprintf(e->dir, sizeof(e->dir), "%.4000s/%s", dir, sub);
    e->keep = 1;
    e->interval_s = 0;
    e->every = 0;
    memset(rows, 0, sizeof(rows));
    memset(&rawrow, 0, sizeof(rawrow));
    memset(&ddrow, 0, sizeof(ddrow));
    memset(&cprow, 0, sizeof(cprow));
    memset(&crcrow, 0, sizeof(crcrow));
    memset(&rawdrow, 0, sizeof(rawdrow));
    base_rate = rp_b_work(wa, wb, cpu, 0.3);

    for (it = 0; it < iters; it++) {
        double w_s, r_s, dd_s, cp_s, crc_s, f_s, rawd_s = -1;
        /* The stripe rounded up to whole 4 KiB blocks, for O_DIRECT. */
        const size_t rawlen = (size_t)((slen + 4095) / 4096 * 4096);
        int mode;

        if (rp_b_raw(ctx, dir, rank, raw, rawlen,
                     &w_s, &r_s, &f_s) != 0) {
            return 2;
        }
        rawrow.write_gbs[rawrow.n] = (double)size / w_s / 1e9;
        rawrow.restore_gbs[rawrow.n] = (double)size / r_s / 1e9;
        rawrow.stall_ms[rawrow.n] = f_s * 1e3; /* its fsync */
        rawrow.n++;
        dd_s = rp_b_dd(ctx, dir, rank, slen);
        ddrow.write_gbs[ddrow.n++] = dd_s > 0 ? (double)size / dd_s / 1e9 : 0;
        /* raw is the stripe's copy; state's stripe is the source */
        rp_b_mem(ctx, state + soff, raw, (size_t)slen, &cp_s, &crc_s);
        cprow.write_gbs[cprow.n] = (double)size / cp_s / 1e9;
        /* What a restore that verifies before it writes cannot beat: the
         * cold read of the state, then every rank's copy of all of it
         * into its memory (its stripe's memcpy, every rank at once, once
         * per stripe). */
        cprow.restore_gbs[cprow.n++] =
            (double)size / (r_s + cp_s * (double)wsize) / 1e9;
        crcrow.write_gbs[crcrow.n++] = (double)size / crc_s / 1e9;
        for (mode = 0; mode < 2; mode++) {
            rp_b_row_t *row = &rows[mode];
            rp_restore_info_t info;
            rp__ckpt_stats_t st;
            double t0, total, stall, rate = 0, ctl_s = 0;
            rp_step_result_t res;

            e->async = mode == 1;
            if (mode == 0) {
                /* The durable raw write beside the sync checkpoint, first
                 * in even rounds and second in odd ones (the disk's state
                 * drifts within a round); both after a quiesce. */
                if (it % 2 == 0) {
                    rawd_s = rp_b_raw_durable(ctx, dir, rank, raw, rawlen);
                }
                rp_b_quiesce(ctx, dir);
            }
            rp_barrier(ctx);
            step += 10;
            t0 = rp_b_now();
            if (mode == 0) {
                if (rp_checkpoint(ctx, step) != RP_OK) {
                    return 2;
                }
                stall = rp_b_now() - t0;
            } else {
                long passes = 0;
                double tw;

                e->every = 1;
                if (rp_step(ctx, step, &res) != RP_OK || !res.checkpointed) {
                    return 2;
                }
                e->every = 0;
                stall = rp_b_now() - t0;
                /* Train while the shard is written; then safe points
                 * until the commit happened. */
                tw = rp_b_now();
                while (!rp__ckpt_async_done(e)) {
                    rp_b_pass(wa, wb, cpu);
                    passes++;
                }
                if (passes > 0) {
                    rate = (double)passes / (rp_b_now() - tw);
                }
                while (e->pend.active) {
                    if (rp_step(ctx, ++step, &res) != RP_OK) {
                        return 2;
                    }
                }
                ctl_s = passes > 0 ? (double)passes / rate : 0;
            }
            total = rp_b_max(ctx, rp_b_now() - t0);
            if (ctl_s > 0) {
                /* The control: the same loop as long, nothing written. */
                base_rate = rp_b_work(wa, wb, cpu, ctl_s);
            }
            rp__ckpt_get_stats(ctx, &st);
            row->write_gbs[row->n] = (double)size / total / 1e9;
            row->stall_ms[row->n] = rp_b_max(ctx, stall) * 1e3;
            row->commit_ms[row->n] = rp_b_max(
                ctx, (double)(st.commit_ns - st.vote_ns) / 1e6);
            row->busy_pct[row->n] =
                mode == 1 && rate > 0 ? 100.0 * (1.0 - rate / base_rate) : 0;
            row->staging_mib = rp_b_max(ctx, (double)st.staging_bytes / 1048576.0);
            row->direct = st.direct;
            if (mode == 0) {
                if (it % 2 == 1) {
                    rawd_s = rp_b_raw_durable(ctx, dir, rank, raw, rawlen);
                }
                if (rawd_s <= 0) {
                    return 2;
                }
                rawdrow.write_gbs[rawdrow.n++] = (double)size / rawd_s / 1e9;
                paired[row->n] = rawd_s * row->write_gbs[row->n] * 1e9 / (double)size;
            }
            if (rank == 0) {
                rp_b_drop_cache(ckdir);
            }
            rp_barrier(ctx);
            t0 = rp_b_now();
            if (rp_restore(ctx, NULL, 0, &info) != RP_OK || !info.restored) {
                fprintf(stderr, "ringpoint-ckpt bench: restore failed\n");
                return 2;
            }
            total = rp_b_max(ctx, rp_b_now() - t0);
            row->restore_gbs[row->n] = (double)size / total / 1e9;
            rp__ckpt_get_stats(ctx, &st);
            rp_b_phases(ctx, rank, &st, total, row);
            row->n++;
        }
    }
    if (rank == 0) {
        static const char *const names[] = {"sync", "async"};

        printf("# ringpoint-ckpt bench: %d ranks, %" PRIu64 " bytes replicated "
               "+ 4096 per rank, %d iterations (medians), dir %s, crc32c %s, "
               "chunk %" PRIu64 ", training loop %s\n", wsize, size, iters,
               ckdir, rp__crc32c_impl_name(), e->chunk_size,
               cpu ? "cpu (in L1)" : "mem (32 MiB copies)");
        printf("# ceilings, same rounds, every rank its stripe at once "
               "(GB/s of the %" PRIu64 " bytes): O_DIRECT write+fsync %.2f, "
               "cold O_DIRECT read %.2f, dd conv=fsync %.2f, memcpy %.2f, "
               "crc32c %.2f; the raw write's fsync %.1f ms; restore "
               "ceiling (cold read + each rank's copy of the state) %.2f\n",
               size, rp_b_median(rawrow.write_gbs, rawrow.n),
               rp_b_median(rawrow.restore_gbs, rawrow.n),
               rp_b_median(ddrow.write_gbs, ddrow.n),
               rp_b_median(cprow.write_gbs, cprow.n),
               rp_b_median(crcrow.write_gbs, crcrow.n),
               rp_b_median(rawrow.stall_ms, rawrow.n),
               rp_b_median(cprow.restore_gbs, cprow.n));
        printf("%-11s %12s %10s %8s %10s %13s %12s %7s\n", "mode",
               "write(GB/s)", "stall(ms)", "busy(%)", "commit(ms)",
               "restore(GB/s)", "staging(MiB)", "direct");
        printf("%-11s %12.2f %10s %8s %10s %13.2f %12s %7s\n", "raw-odirect",
               rp_b_median(rawrow.write_gbs, rawrow.n), "-", "-", "-",
               rp_b_median(rawrow.restore_gbs, rawrow.n), "-", "yes");
        printf("%-11s %12.2f %10s %8s %10s %13s %12s %7s\n", "raw-durable",
               rp_b_median(rawdrow.write_gbs, rawdrow.n), "-", "-", "-", "-",
               "-", "yes");
        printf("%-11s %12.2f %10s %8s %10s %13s %12s %7s\n", "dd-fsync",
               rp_b_median(ddrow.write_gbs, ddrow.n), "-", "-", "-", "-", "-",
               "no");
        for (int m = 0; m < 2; m++) {
            rp_b_row_t *row = &rows[m];

            printf("%-11s %12.2f %10.1f %8.1f %10.2f %13.2f %12.1f %7s\n",
                   names[m], rp_b_median(row->write_gbs, row->n),
                   rp_b_median(row->stall_ms, row->n),
                   rp_b_median(row->busy_pct, row->n),
                   rp_b_median(row->commit_ms, row->n),
                   rp_b_median(row->restore_gbs, row->n), row->staging_mib,
                   row->direct ? "yes" : "no");
        }
        printf("# phases in ms (medians; slowest rank, manifest and rename "
               "rank 0's; commit excludes the vote):\n%-6s", "mode");
        for (int i = 0; i < RP_B_NPHASES; i++) {
            printf(" %8s", rp_b_phase_names[i]);
        }
        printf("\n");
        for (int m = 0; m < 2; m++) {
            printf("%-6s", names[m]);
            for (int i = 0; i < RP_B_NPHASES; i++) {
                printf(" %8.1f", rp_b_median(rows[m].phase_ms[i], rows[m].n));
            }
            printf("\n");
        }
        for (int m = 0; m < 2; m++) {
            printf("# %s per iteration write GB/s:", names[m]);
            for (int i = 0; i < rows[m].n; i++) {
                printf(" %.2f", rows[m].write_gbs[i]);
            }
            printf("; stall ms:");
            for (int i = 0; i < rows[m].n; i++) {
                printf(" %.1f", rows[m].stall_ms[i]);
            }
            printf("; restore GB/s:");
            for (int i = 0; i < rows[m].n; i++) {
                printf(" %.2f", rows[m].restore_gbs[i]);
            }
            if (m == 1) {
                printf("; busy %%:");
                for (int i = 0; i < rows[m].n; i++) {
                    printf(" %.1f", rows[m].busy_pct[i]);
                }
            }
            printf("\n");
        }
        printf("# sync against the durable raw write beside it (same round, "
               "order alternating, both after a quiesce; raw-durable: a new "
               "file, 64 MiB O_DIRECT writes, fsync, directory fsync): per "
               "round x");
        for (int i = 0; i < rows[0].n; i++) {
            printf(" %.2f", paired[i]);
        }
        printf("; median %.2f (against raw-odirect: %.2f)\n",
               rp_b_median(paired, rows[0].n),
               rp_b_median(rows[0].write_gbs, rows[0].n) /
                   rp_b_median(rawrow.write_gbs, rawrow.n));
        fflush(stdout);
    }
    rp_finalize(ctx);
    if (rank == 0) {
        rp_b_cleanup(dir, sub);
    }
    rp__ckpt_io_free(state);
    rp__ckpt_io_free(raw);
    rp__ckpt_io_free(wa);
    rp__ckpt_io_free(wb);
    return 0;
}
