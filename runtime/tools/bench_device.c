/*
 * ringpoint-bench's buffers: page-aligned host memory, or with -D cuda the
 * task's GPU through the GPU module's allocator (runtime/gpu/devbuf.h), so
 * that the tool never links CUDA.
 */
#include "config.h"

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/devbuf.h"

/* ---- buffers: host memory, or the GPU's with -D cuda ----------------- */

static void *buf_alloc(const opts_t *o, size_t bytes)
{
    void *p = NULL;

    if (o->device) {
        return rp__gpu_devbuf_alloc(g_ctx, bytes, &p) == RP_OK ? p : NULL;
    }
    /* Page-aligned, like framework tensors. */
    return posix_memalign(&p, 4096, bytes) == 0 ? p : NULL;
}

static void buf_free(const opts_t *o, void *p)
{
    if (o->device) {
        rp__gpu_devbuf_free(g_ctx, p);
    } else {
        free(p);
    }
}

rp_status_t buf_set(const opts_t *o, void *p, int byte, size_t bytes)
{
    if (o->device) {
        return rp__gpu_devbuf_set(g_ctx, p, byte, bytes);
    }
    memset(p, byte, bytes);
    return RP_OK;
}

rp_status_t buf_copy(const opts_t *o, void *dst, const void *src,
                            size_t bytes)
{
    if (o->device) {
        return rp__gpu_devbuf_copy(g_ctx, dst, src, bytes);
    }
    memcpy(dst, src, bytes);
    return RP_OK;
}

/* Device: wait until the stream ran everything enqueued (copies and
 * collectives); a host collective is done when its call returns. */
rp_status_t buf_sync(const opts_t *o)
{
    return o->device ? rp__gpu_devbuf_sync(g_ctx) : RP_OK;
}

void bufs_free(const opts_t *o, bufs_t *b)
{
    if (b->in != b->pristine) {
        buf_free(o, b->in);
    }
    free(b->pristine);
    buf_free(o, b->out);
    free(b->host_out);
    memset(b, 0, sizeof(*b));
}

const void *bufs_result(const opts_t *o, const bufs_t *b, size_t out_bytes)
{
    if (!o->device) {
        return b->out;
    }
    if (buf_copy(o, b->host_out, b->out, out_bytes) != RP_OK ||
        buf_sync(o) != RP_OK) {
        fprintf(stderr, "ringpoint-bench: rank %d: cannot copy the result "
                "back from the GPU\n", g_rank);
        return NULL;
    }
    return b->host_out;
}

/* The input filled and the output cleared before anything is timed, so
 * that first-touch faults stay out of the figures. */
bool bufs_prepare(const opts_t *o, rp_dtype_t t, rp_op_t op,
                         size_t count, size_t out_bytes, bufs_t *b)
{
    const size_t in_bytes = count * rp_dtype_size(t);
    rp_status_t st;

    memset(b, 0, sizeof(*b));
    /* +64: a zero-sized row still gets distinct buffers. */
    if (posix_memalign(&b->pristine, 4096, in_bytes + 64) != 0) {
        b->pristine = NULL;
        return false;
    }
    b->in = o->device ? buf_alloc(o, in_bytes + 64) : b->pristine;
    b->out = buf_alloc(o, out_bytes + 64);
    b->host_out = o->device ? malloc(out_bytes + 64) : NULL;
    if (b->in == NULL || b->out == NULL ||
        (o->device && b->host_out == NULL)) {
        bufs_free(o, b);
        return false;
    }
    fill(o, t, op, b->pristine, count);
    st = buf_set(o, b->out, 0, out_bytes + 64);
    if (st == RP_OK && b->in != b->pristine) {
        st = buf_copy(o, b->in, b->pristine, in_bytes);
    }
    if (st == RP_OK) {
        st = buf_sync(o);
    }
    if (st != RP_OK) {
        bufs_free(o, b);
        return false;
    }
    return true;
}

/* -D cuda: every rank starts its GPU path, and all learn whether every
 * one did, so that they leave together; the first rank without one says
 * why, in one line. 0, 77 (no GPU path here: a skip) or 2. */
int device_open(void)
{
    char why[512] = "";
    rp_status_t mine = rp__gpu_devbuf_open(g_ctx, "ringpoint-bench -D cuda",
                                           why, sizeof(why));
    /* One MIN allreduce carries both the first failing rank and whether
     * its failure is a skip. (A broadcast of the verdict after it, right
     * before the ranks leave, was seen to fail on a rank still connecting
     * to one that had already finalized.) */
    int32_t key = mine == RP_OK                 ? 2 * g_size
                  : mine == RP_ERR_NOT_SUPPORTED ? 2 * g_rank
                                                 : 2 * g_rank + 1;
    int first;
    bool skip;

    if (rp_allreduce(g_ctx, &key, &key, 1, RP_DTYPE_INT32, RP_OP_MIN) !=
        RP_OK) {
        fprintf(stderr, "ringpoint-bench: rank %d: cannot agree on the GPU "
                "path with the other ranks\n", g_rank);
        return 2;
    }
    first = key / 2;
    skip = key % 2 == 0;
    if (first == g_size) {
        return 0;
    }
    if (mine == RP_OK) {
        rp__gpu_devbuf_close(g_ctx);
    }
    if (g_rank == first) {
        char who[32] = "";

        if (g_size > 1) {
            snprintf(who, sizeof(who), "rank %d: ", g_rank);
        }
        fprintf(stderr, "ringpoint-bench: %s-D cuda: %s%s\n",
                skip ? "SKIP: " : "", who, why);
    }
    return skip ? 77 : 2;
}

void device_close(void)
{
    rp__gpu_devbuf_close(g_ctx);
}
