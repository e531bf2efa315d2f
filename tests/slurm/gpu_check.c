/*
 * ringpoint-gpu-check: the GPU path end to end (tests/slurm/test_gpu.sh).
 *
 *   uid [N]  no GPU needed: rank 0's 128-byte NCCL-id-sized blob reaches
 *            every rank through the PMIx exchange the GPU path uses; each
 *            rank prints it in hex, for N communicator generations.
 *   device   needs a GPU (exit 77 with "SKIP: no CUDA device: ..." where
 *            there is none): every op and dtype on device buffers against
 *            the host path's results, broadcast, allgather, the grouped
 *            and non-blocking forms, a mixed call refused, and a device
 *            checkpoint region written and restored, with rates beside a
 *            host region of the same size.
 *
 * It links the runtime's internals for the bootstrap and for the module's
 * device allocator (it must not link CUDA itself).
 */
#include "config.h"

#include <ringpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "bootstrap/bootstrap.h"
#include "ckpt/engine/engine.h"
#include "core/context.h"
#include "gpu/path.h"

static int check_uid(unsigned gens)
{
    rp_bootstrap_t *bs = NULL;
    unsigned char uid[RP_GPU_UID_BYTES];

    if (rp__bootstrap_init(false, NULL, &bs) != RP_OK) {
        return 1;
    }
    for (unsigned gen = 0; gen < gens; gen++) {
        memset(uid, 0, sizeof(uid));
        if (bs->rank == 0 && getrandom(uid, sizeof(uid), 0) != sizeof(uid)) {
            perror("getrandom");
            return 1;
        }
        if (rp__gpu_uid_exchange(bs, gen, uid, sizeof(uid)) != RP_OK) {
            return 1;
        }
        printf("rank=%d size=%d gen=%u uid=", bs->rank, bs->size, gen);
        for (size_t i = 0; i < sizeof(uid); i++) {
            printf("%02x", uid[i]);
        }
        printf("\n");
    }
    rp__bootstrap_finalize(bs);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int g_fail;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) {                                                    \
            printf("FAIL: " __VA_ARGS__);                                 \
            printf("\n");                                                 \
            g_fail++;                                                     \
        }                                                                 \
    } while (0)

/* Small integer values are exact in every dtype, so NCCL and the host
 * path must agree bit for bit except where AVG rounds differently. */
static void fill(void *buf, size_t n, rp_dtype_t t, int rank)
{
    for (size_t i = 0; i < n; i++) {
        int v = 1 + (int)((i + (size_t)rank) % 3);

        switch (t) {
        case RP_DTYPE_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
        case RP_DTYPE_INT32: ((int32_t *)buf)[i] = v; break;
        case RP_DTYPE_INT64: ((int64_t *)buf)[i] = v; break;
        case RP_DTYPE_FLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3c00 + ((v - 1) << 10)); break;
        case RP_DTYPE_BFLOAT16: ((uint16_t *)buf)[i] = (uint16_t)(0x3f80 + ((v - 1) << 7)); break;
        case RP_DTYPE_FLOAT32: ((float *)buf)[i] = (float)v; break;
        default: ((double *)buf)[i] = v; break;
        }
    }
}

static int check_device(rp_context_h ctx, size_t ckpt_mib)
{
    const rp__gpu_ops_t *ops = ctx->gpu->ops;
    const size_t n = 4099;
    size_t es, bytes;
    unsigned char *h_in, *h_ref, *h_out;
    void *d_in, *d_out;
    int size = ctx->bootstrap->size, rank = ctx->bootstrap->rank;
    rp_request_h req = NULL;

    bytes = n * 8 * (size_t)size;
    h_in = malloc(bytes);
    h_ref = malloc(bytes);
    h_out = malloc(bytes);
    if (h_in == NULL || h_ref == NULL || h_out == NULL ||
        ops->dev_alloc(bytes, &d_in) != RP_OK ||
        ops->dev_alloc(bytes, &d_out) != RP_OK) {
        printf("FAIL: out of memory\n");
        return 1;
    }
    for (int t = 0; t < RP_DTYPE_COUNT; t++) {
        es = rp_dtype_size((rp_dtype_t)t);
        for (int op = 0; op < RP_OP_COUNT; op++) {
            fill(h_in, n, (rp_dtype_t)t, rank);
            CHECK(rp_allreduce(ctx, h_in, h_ref, n, (rp_dtype_t)t, (rp_op_t)op) == RP_OK,
                  "host allreduce %s %s", rp_dtype_name(t), rp_op_name(op));
            (void)ops->copy_async(d_in, h_in, n * es, NULL);
            if (rp_allreduce(ctx, d_in, d_out, n, (rp_dtype_t)t, (rp_op_t)op) != RP_OK) {
                /* The communicator is aborted after a failed collective
                 * (NCCL refusing two ranks on one GPU, say): every later
                 * device check would fail the same way, so one line. */
                CHECK(0, "device allreduce %s %s (the remaining device checks "
                      "are skipped)", rp_dtype_name(t), rp_op_name(op));
                goto out;
            }
            (void)ops->copy_async(h_out, d_out, n * es, NULL);
            (void)ops->stream_wait(ctx->gpu->comm, NULL, 60000);
            /* AVG of floats: NCCL pre-multiplies, the host divides once. */
            if (op != RP_OP_AVG || t <= RP_DTYPE_INT64 || size == 1) {
                CHECK(memcmp(h_out, h_ref, n * es) == 0,
                      "allreduce %s %s: device result differs from host",
                      rp_dtype_name(t), rp_op_name(op));
            }
        }
    }
    /* broadcast, allgather, group, non-blocking */
    fill(h_in, n, RP_DTYPE_INT32, rank);
    (void)ops->copy_async(d_in, h_in, n * 4, NULL);
    CHECK(rp_broadcast(ctx, d_in, n, RP_DTYPE_INT32, size - 1) == RP_OK, "broadcast");
    (void)ops->copy_async(h_out, d_in, n * 4, NULL);
    (void)ops->stream_wait(NULL, NULL, 60000);
    fill(h_ref, n, RP_DTYPE_INT32, size - 1);
    CHECK(memcmp(h_out, h_ref, n * 4) == 0, "broadcast result");
    fill(h_in, n, RP_DTYPE_INT32, rank);
    CHECK(rp_allgather(ctx, h_in, h_ref, n, RP_DTYPE_INT32) == RP_OK, "host allgather");
    (void)ops->copy_async(d_in, h_in, n * 4, NULL);
    CHECK(rp_allgather(ctx, d_in, d_out, n, RP_DTYPE_INT32) == RP_OK, "allgather");
    (void)ops->copy_async(h_out, d_out, n * 4 * (size_t)size, NULL);
    (void)ops->stream_wait(NULL, NULL, 60000);
    CHECK(memcmp(h_out, h_ref, n * 4 * (size_t)size) == 0, "allgather result");
    {
        const void *s[2] = {d_in, (char *)d_in + 1024 * 4};
        void *r[2] = {d_out, (char *)d_out + 1024 * 4};
        size_t c[2] = {1024, 2000};
        const void *mixed_s[2] = {d_in, h_in};
        void *mixed_r[2] = {d_out, h_out};

        CHECK(rp_allreduce_group(ctx, s, r, c, 2, RP_DTYPE_INT32, RP_OP_SUM) == RP_OK,
              "grouped allreduce");
        CHECK(rp_allreduce_group(ctx, mixed_s, mixed_r, c, 2, RP_DTYPE_INT32,
                                 RP_OP_SUM) == RP_ERR_INVALID_ARG,
              "a group of host and device buffers is refused");
    }
    CHECK(rp_allreduce(ctx, d_in, h_out, n, RP_DTYPE_INT32, RP_OP_SUM) ==
              RP_ERR_INVALID_ARG, "host and device in one call is refused");
    CHECK(rp_iallreduce(ctx, d_in, d_out, n, RP_DTYPE_INT32, RP_OP_SUM, &req) == RP_OK &&
          rp_wait(&req) == RP_OK && req == NULL, "non-blocking device allreduce");
    {
        void *stream = NULL;

        CHECK(ops->stream_create(&stream) == RP_OK &&
              rp_cuda_set_stream(ctx, stream) == RP_OK &&
              rp_allreduce(ctx, d_in, d_out, n, RP_DTYPE_INT32, RP_OP_SUM) == RP_OK &&
              ops->stream_wait(ctx->gpu->comm, stream, 60000) == RP_OK,
              "allreduce on the application's stream");
        (void)rp_cuda_set_stream(ctx, NULL);
        ops->stream_destroy(stream);
    }
    /* A device checkpoint region beside a host one of the same size. */
    if (ckpt_mib > 0) {
        size_t len = ckpt_mib << 20;
        void *dreg, *hreg = malloc(len), *back = malloc(len);
        rp__ckpt_stats_t st;
        rp_restore_info_t info;
        double t0, dev_w, dev_r;

        CHECK(hreg != NULL && back != NULL && ops->dev_alloc(len, &dreg) == RP_OK,
              "checkpoint buffers");
        memset(hreg, 0x5a, len);
        for (size_t i = 0; i < len; i++) {
            ((unsigned char *)back)[i] = (unsigned char)(i * 131 + 7);
        }
        (void)ops->copy_async(dreg, back, len, NULL);
        (void)ops->stream_wait(NULL, NULL, 60000);
        CHECK(rp_region_register(ctx, "device", dreg, len, RP_REGION_REPLICATED) == RP_OK,
              "register a device region");
        CHECK(rp_region_register(ctx, "host", hreg, len, RP_REGION_REPLICATED) == RP_OK,
              "register a host region");
        t0 = now_s();
        CHECK(rp_checkpoint(ctx, 1) == RP_OK, "checkpoint with a device region");
        dev_w = now_s() - t0;
        rp__ckpt_get_stats(ctx, &st);
        (void)ops->copy_async(dreg, hreg, len, NULL); /* clobber */
        (void)ops->stream_wait(NULL, NULL, 60000);
        t0 = now_s();
        CHECK(rp_restore(ctx, NULL, 0, &info) == RP_OK && info.restored, "restore");
        dev_r = now_s() - t0;
        memset(h_out, 0, 16);
        {
            unsigned char *got = malloc(len);

            (void)ops->copy_async(got, dreg, len, NULL);
            (void)ops->stream_wait(NULL, NULL, 60000);
            CHECK(got != NULL && memcmp(got, back, len) == 0,
                  "device region restored bit for bit");
            free(got);
        }
        if (rank == 0) {
            printf("ckpt: %zu MiB device + %zu MiB host region, %d ranks: "
                   "checkpoint %.3f s (%.0f MiB/s), restore %.3f s "
                   "(%.0f MiB/s), pinned+host staging %llu MiB\n",
                   ckpt_mib, ckpt_mib, size, dev_w, 2.0 * (double)ckpt_mib / dev_w,
                   dev_r, 2.0 * (double)ckpt_mib / dev_r,
                   (unsigned long long)(st.staging_bytes >> 20));
        }
        ops->dev_free(dreg);
        free(hreg);
        free(back);
    }
out:
    ops->dev_free(d_in);
    ops->dev_free(d_out);
    free(h_in);
    free(h_ref);
    free(h_out);
    if (rank == 0) {
        printf("device checks: %s (%d failed)\n", g_fail ? "FAIL" : "ok", g_fail);
    }
    return g_fail != 0;
}

int main(int argc, char **argv)
{
    rp_context_h ctx = NULL;
    int dev = -1, rc;

    if (argc >= 2 && strcmp(argv[1], "uid") == 0) {
        return check_uid(argc > 2 ? (unsigned)atoi(argv[2]) : 2);
    }
    if (argc < 2 || strcmp(argv[1], "device") != 0) {
        fprintf(stderr, "usage: ringpoint-gpu-check uid | device [CKPT_MIB]\n");
        return 64;
    }
    if (rp_init(NULL, &ctx) != RP_OK) {
        return 1;
    }
    if (rp_cuda_device(ctx, &dev) != RP_OK) {
        const char *why = ctx->gpu->why;

        printf("SKIP: %s%s\n",
               strncmp(why, "no CUDA device", 14) != 0 ? "no CUDA device: "
                                                       : "", why);
        rp_finalize(ctx);
        return 77;
    }
    rc = check_device(ctx, argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 64);
    rp_finalize(ctx);
    return rc;
}
