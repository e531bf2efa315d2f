/*
 * ringpoint-gpu-bench: the GPU path's rates beside what CUDA and NCCL give
 * on their own, in the same process and the same run.
 *
 *   ringpoint-gpu-bench coll [-r ROUNDS] [-i ITERS]
 *       allreduce on device buffers, one rank: ncclAllReduce called
 *       directly on a communicator of its own vs rp_allreduce on the same
 *       stream, each followed by cudaStreamSynchronize (latency), and the
 *       time of the call alone (the module's overhead on the host).
 *   ringpoint-gpu-bench ckpt GIB [-r ROUNDS]
 *       a device checkpoint region of GIB GiB: cudaMemcpy device -> pinned
 *       host and back (the ceilings), then rp_checkpoint / rp_step in the
 *       mode RINGPOINT_CKPT_ASYNC says, per phase, and rp_restore, checked
 *       bit for bit.
 *
 * Rounds interleave the peers; medians are printed. This tool links CUDA
 * and NCCL itself (the library never does): it is built only with the GPU
 * module, and it reads the checkpoint engine's phase counters, so it links
 * the runtime's core like ringpoint-bench.
 */
#include "config.h"

#include <ringpoint.h>

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ckpt/engine/engine.h"

#define MAXR 64

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_d);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define CU(call)                                                         \
    do {                                                                 \
        cudaError_t e_ = (call);                                         \
        if (e_ != cudaSuccess) {                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    cudaGetErrorString(e_));                             \
            exit(1);                                                     \
        }                                                                \
    } while (0)

#define NC(call)                                                         \
    do {                                                                 \
        ncclResult_t r_ = (call);                                        \
        if (r_ != ncclSuccess) {                                         \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    ncclGetErrorString(r_));                             \
            exit(1);                                                     \
        }                                                                \
    } while (0)

#define RP(call)                                                         \
    do {                                                                 \
        rp_status_t s_ = (call);                                         \
        if (s_ != RP_OK) {                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, \
                    rp_status_string(s_));                               \
            exit(1);                                                     \
        }                                                                \
    } while (0)

/* ---- collectives -------------------------------------------------------- */

static int bench_coll(int rounds, int iters)
{
    static const size_t sizes[] = {4, 64, 1024, 16384, 262144, 4 << 20,
                                   64 << 20};
    const int ns = (int)(sizeof(sizes) / sizeof(sizes[0]));
    double t_nccl[16][MAXR], t_rp[16][MAXR], c_nccl[16][MAXR], c_rp[16][MAXR];
    rp_context_h ctx = NULL;
    ncclComm_t comm;
    cudaStream_t stream;
    int dev = 0;
    void *buf;

    RP(rp_init(NULL, &ctx));
    RP(rp_cuda_device(ctx, &dev));
    CU(cudaSetDevice(dev));
    CU(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    NC(ncclCommInitAll(&comm, 1, &dev));
    CU(cudaMalloc(&buf, sizes[ns - 1]));
    CU(cudaMemset(buf, 0, sizes[ns - 1]));
    RP(rp_cuda_set_stream(ctx, stream));
    /* Warm up both: the first rp_allreduce on device memory loads the
     * module and creates ringpoint's communicator. */
    for (int w = 0; w < 20; w++) {
        NC(ncclAllReduce(buf, buf, 1, ncclFloat, ncclSum, comm, stream));
        RP(rp_allreduce(ctx, buf, buf, 1, RP_DTYPE_FLOAT32, RP_OP_SUM));
    }
    CU(cudaStreamSynchronize(stream));

    for (int r = 0; r < rounds; r++) {
        for (int s = 0; s < ns; s++) {
            size_t cnt = sizes[s] / 4;
            int it = sizes[s] >= (4 << 20) ? iters / 10 + 1 : iters;

            for (int pass = 0; pass < 2; pass++) {
                /* Alternate who goes first from round to round. */
                int who = (pass + r) % 2;
                double call = 0, t0 = now_s(), c0;

                for (int i = 0; i < it; i++) {
                    c0 = now_s();
                    if (who == 0) {
                        NC(ncclAllReduce(buf, buf, cnt, ncclFloat, ncclSum, comm,
                                         stream));
                    } else {
                        RP(rp_allreduce(ctx, buf, buf, cnt, RP_DTYPE_FLOAT32,
                                        RP_OP_SUM));
                    }
                    call += now_s() - c0;
                    CU(cudaStreamSynchronize(stream));
                }
                if (who == 0) {
                    t_nccl[s][r] = (now_s() - t0) / it * 1e6;
                    c_nccl[s][r] = call / it * 1e6;
                } else {
                    t_rp[s][r] = (now_s() - t0) / it * 1e6;
                    c_rp[s][r] = call / it * 1e6;
                }
            }
        }
    }
    printf("# allreduce float32 sum on device memory, 1 rank, in place, "
           "medians of %d rounds (interleaved)\n", rounds);
    printf("# latency = call + cudaStreamSynchronize; call = the enqueue alone\n");
    printf("%10s %14s %14s %10s %12s %12s %10s\n", "bytes", "nccl lat us",
           "rp lat us", "lat diff", "nccl call us", "rp call us", "call diff");
    for (int s = 0; s < ns; s++) {
        double a = median(t_nccl[s], rounds), b = median(t_rp[s], rounds);
        double c = median(c_nccl[s], rounds), d = median(c_rp[s], rounds);

        printf("%10zu %14.2f %14.2f %10.2f %12.2f %12.2f %10.2f\n", sizes[s], a,
               b, b - a, c, d, d - c);
    }
    CU(cudaFree(buf));
    ncclCommDestroy(comm);
    CU(cudaStreamDestroy(stream));
    rp_finalize(ctx);
    return 0;
}

/* ---- checkpoint regions ------------------------------------------------ */

static void pattern(unsigned char *p, size_t n, unsigned seed)
{
    uint64_t *q = (uint64_t *)p;

    for (size_t i = 0; i < n / 8; i++) {
        q[i] = (i + seed) * 0x9e3779b97f4a7c15ull;
    }
}

static int bench_ckpt(double gib, int rounds)
{
    size_t len = (size_t)(gib * (double)(1ull << 30));
    const char *mode = getenv("RINGPOINT_CKPT_ASYNC");
    int async = mode == NULL || strcmp(mode, "0") != 0;
    double d2h[MAXR], h2d[MAXR], stall[MAXR], stage[MAXR], total[MAXR],
        rest[MAXR], wr[MAXR];
    /* Where the time between the stall and the commit goes, and the
     * restore's, from the engine's phase counters (this rank). */
    enum { PH_COPY, PH_PWRITE, PH_FSYNC, PH_COMMIT, PH_RD_READ, PH_RD_CRC,
           PH_RD_SCATTER, PH_N };
    static const char *const ph_name[PH_N] = {
        "  copy + CRC into host buffers", "  pwrite", "  fsync",
        "  commit (vote, manifest, rename)", "  restore: read the shard",
        "  restore: CRC checks", "  restore: copy into the region"};
    double ph[PH_N][MAXR];
    rp_context_h ctx = NULL;
    unsigned char *pinned, *want;
    rp__ckpt_stats_t st;
    int dev = 0, bad = 0;
    uint64_t step = 0;
    void *d;

    RP(rp_init(NULL, &ctx));
    RP(rp_cuda_device(ctx, &dev));
    CU(cudaSetDevice(dev));
    CU(cudaMalloc(&d, len));
    CU(cudaMallocHost((void **)&pinned, len));
    want = malloc(len);
    if (want == NULL) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    pattern(want, len, 1);
    CU(cudaMemcpy(d, want, len, cudaMemcpyHostToDevice));
    RP(rp_region_register(ctx, "weights", d, len, RP_REGION_REPLICATED));

    for (int r = 0; r < rounds; r++) {
        double t0 = now_s();
        rp_restore_info_t info;

        /* The ceilings: one plain copy each way through pinned memory. */
        CU(cudaMemcpy(pinned, d, len, cudaMemcpyDeviceToHost));
        d2h[r] = now_s() - t0;
        t0 = now_s();
        CU(cudaMemcpy(d, pinned, len, cudaMemcpyHostToDevice));
        h2d[r] = now_s() - t0;

        /* ringpoint: the checkpoint of this step; rp_step decides it is
         * due (RINGPOINT_CKPT_EVERY=1) and, in async mode, returns after
         * the snapshot: that is the stall. */
        step++;
        t0 = now_s();
        if (async) {
            rp_step_result_t res;

            RP(rp_step(ctx, step, &res));
            if (!res.checkpointed) {
                fprintf(stderr, "step %llu: no checkpoint taken: set "
                        "RINGPOINT_CKPT_EVERY=1\n", (unsigned long long)step);
                return 1;
            }
            rp__ckpt_get_stats(ctx, &st);
            stall[r] = (double)st.stall_ns / 1e9;
            /* Until it is committed: rp_checkpoint of the same step
             * settles the one in flight and returns. */
            RP(rp_checkpoint(ctx, step));
        } else {
            RP(rp_checkpoint(ctx, step));
            rp__ckpt_get_stats(ctx, &st);
            stall[r] = (double)st.stall_ns / 1e9;
        }
        total[r] = now_s() - t0;
        rp__ckpt_get_stats(ctx, &st);
        stage[r] = (double)st.stage_ns / 1e9;
        wr[r] = (double)st.write_ns / 1e9;
        ph[PH_COPY][r] = (double)(async ? st.snap_ns : st.fill_ns) / 1e9;
        ph[PH_PWRITE][r] = (double)st.pwrite_ns / 1e9;
        ph[PH_FSYNC][r] = (double)st.fsync_ns / 1e9;
        ph[PH_COMMIT][r] = (double)st.commit_ns / 1e9;

        CU(cudaMemset(d, 0, len));
        CU(cudaDeviceSynchronize());
        t0 = now_s();
        RP(rp_restore(ctx, NULL, 0, &info));
        rest[r] = now_s() - t0;
        rp__ckpt_get_stats(ctx, &st);
        ph[PH_RD_READ][r] = (double)st.rd_read_ns / 1e9;
        ph[PH_RD_CRC][r] = (double)st.rd_crc_ns / 1e9;
        ph[PH_RD_SCATTER][r] = (double)st.rd_scatter_ns / 1e9;
        CU(cudaMemcpy(pinned, d, len, cudaMemcpyDeviceToHost));
        if (!info.restored || info.step != step || memcmp(pinned, want, len) != 0) {
            fprintf(stderr, "round %d: the region was not restored bit for bit\n", r);
            bad++;
        }
    }
    /* Before the medians sort them: each round's stall and commit, so a
     * first round that pins the staging shows as itself. */
    printf("# per round, stall / committed s:");
    for (int r = 0; r < rounds; r++) {
        printf(" %.3f/%.3f", stall[r], total[r]);
    }
    printf("\n");
    {
        double g = (double)len / 1e9;
        double md2h = median(d2h, rounds), mh2d = median(h2d, rounds);
        double mst = median(stage, rounds), mstall = median(stall, rounds);
        double mtot = median(total, rounds), mres = median(rest, rounds);
        double mwr = median(wr, rounds);

        printf("# device checkpoint region %.2f GiB, %s, medians of %d rounds\n",
               gib, async ? "async" : "sync", rounds);
        printf("%-44s %9s %9s\n", "what", "s", "GB/s");
        printf("%-44s %9.3f %9.2f\n", "cudaMemcpy device->pinned (ceiling)", md2h, g / md2h);
        printf("%-44s %9.3f %9.2f  %.0f%% of ceiling\n", "ringpoint staging device->pinned",
               mst, g / mst, 100.0 * md2h / mst);
        printf("%-44s %9.3f %9.2f  %.2fx the device->host copy\n",
               async ? "stall (rp_step returns)" : "stall (rp_checkpoint)", mstall,
               g / mstall, mstall / md2h);
        printf("%-44s %9.3f %9.2f\n", "shard write (pwrite+fsync)", mwr, g / mwr);
        printf("%-44s %9.3f %9.2f\n", "checkpoint committed", mtot, g / mtot);
        for (int p = PH_COPY; p <= PH_COMMIT; p++) {
            printf("%-44s %9.3f\n", ph_name[p], median(ph[p], rounds));
        }
        printf("%-44s %9.3f %9.2f\n", "cudaMemcpy pinned->device (ceiling)", mh2d, g / mh2d);
        /* Restore reads the shard from disk: the disk is its ceiling
         * (scripts/gpu-checks.sh measures it with dd beside this). */
        printf("%-44s %9.3f %9.2f  %.1fx the pinned->device copy\n",
               "rp_restore (disk -> device)", mres, g / mres, mres / mh2d);
        for (int p = PH_RD_READ; p < PH_N; p++) {
            printf("%-44s %9.3f\n", ph_name[p], median(ph[p], rounds));
        }
        printf("# staging held: %llu MiB pinned/host; restored bit for bit: %s\n",
               (unsigned long long)(st.staging_bytes >> 20), bad ? "NO" : "yes");
    }
    CU(cudaFree(d));
    CU(cudaFreeHost(pinned));
    free(want);
    rp_finalize(ctx);
    return bad != 0;
}

int main(int argc, char **argv)
{
    int rounds = 5, iters = 2000, opt;
    const char *what;

    if (argc < 2) {
        goto usage;
    }
    what = argv[1];
    optind = 2;
    if (strcmp(what, "ckpt") == 0) {
        if (argc < 3) {
            goto usage;
        }
        optind = 3;
    }
    while ((opt = getopt(argc, argv, "r:i:")) != -1) {
        switch (opt) {
        case 'r': rounds = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        default: goto usage;
        }
    }
    if (rounds < 1 || rounds > MAXR || iters < 1) {
        goto usage;
    }
    if (strcmp(what, "coll") == 0) {
        return bench_coll(rounds, iters);
    }
    if (strcmp(what, "ckpt") == 0) {
        return bench_ckpt(atof(argv[2]), rounds);
    }
usage:
    fprintf(stderr, "usage: ringpoint-gpu-bench coll [-r ROUNDS] [-i ITERS]\n"
                    "       ringpoint-gpu-bench ckpt GIB [-r ROUNDS]\n");
    return 64;
}
