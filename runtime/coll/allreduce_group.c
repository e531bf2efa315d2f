/*
 * Grouped allreduce (tensor fusion): many buffers packed into few
 * allreduces of the path selector, optionally compressed to a half type
 * on the wire.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/dispatch.h"
#include "coll/select.h"
#include "reduce/reduce.h"

#include <string.h>

/* Largest packed buffer of a grouped allreduce: big enough that the
 * latency of one collective is lost in its transfer time (the ring runs at
 * full speed from about 1 MiB), small enough that the persistent fusion
 * buffer stays a modest fraction of a model (Horovod's default is 64 MiB
 * too). Buffers this large go on their own, with no copy. */
#define RP_FUSION_BYTES (64u * 1024 * 1024)

/* Into the packed buffer: a copy, or float32 rounded to the wire's half
 * type (divided by the rank count first for AVG, as PyTorch's fp16
 * compression hook does, so that partial sums stay within float16's
 * range). */
static void rp_pack(rp_compression_t comp, char *dst, const void *src,
                    size_t count, size_t es, int avg_ranks)
{
    float tmp[1024];
    const float *f = src;

    if (count == 0) {
        return; /* src may be NULL */
    }
    if (comp == RP_COMPRESSION_NONE) {
        memcpy(dst, src, count * es);
        return;
    }
    for (size_t done = 0; done < count;) {
        size_t k = count - done < 1024 ? count - done : 1024;
        const float *from = f + done;

        if (avg_ranks > 1) {
            for (size_t j = 0; j < k; j++) {
                tmp[j] = from[j] / (float)avg_ranks;
            }
            from = tmp;
        }
        if (comp == RP_COMPRESSION_FP16) {
            rp__f32_to_f16((uint16_t *)dst + done, from, k);
        } else {
            rp__f32_to_bf16((uint16_t *)dst + done, from, k);
        }
        done += k;
    }
}

/* Out of the packed buffer: a copy, or the half result widened (exact). */
static void rp_unpack(rp_compression_t comp, void *dst, const char *src,
                      size_t count, size_t es)
{
    if (count == 0) {
        return; /* dst may be NULL */
    }
    if (comp == RP_COMPRESSION_NONE) {
        memcpy(dst, src, count * es);
    } else if (comp == RP_COMPRESSION_FP16) {
        rp__f16_to_f32(dst, (const uint16_t *)src, count);
    } else {
        rp__bf16_to_f32(dst, (const uint16_t *)src, count);
    }
}

rp_status_t rp__comm_allreduce_group(rp_comm_t *c, const void *const *sendbufs,
                                     void *const *recvbufs,
                                     const size_t *counts, size_t nbufs,
                                     rp_dtype_t dtype, rp_op_t op,
                                     rp_compression_t comp)
{
    const size_t es = rp_dtype_size(dtype);
    const bool packed_only = comp != RP_COMPRESSION_NONE;
    /* Compressed: float32 travels as fp16/bf16 (wes bytes) and is summed
     * in that format at every hop; AVG is divided before packing. */
    const size_t wes = packed_only ? 2 : es;
    const rp_dtype_t wtype = comp == RP_COMPRESSION_FP16   ? RP_DTYPE_FLOAT16
                             : comp == RP_COMPRESSION_BF16 ? RP_DTYPE_BFLOAT16
                                                           : dtype;
    const rp_op_t wop = packed_only && op == RP_OP_AVG ? RP_OP_SUM : op;
    const int avg_ranks = packed_only && op == RP_OP_AVG ? c->size : 1;
    rp_status_t status = RP_OK;
    size_t i = 0;

    /* Every rank walks the same counts, so every rank forms the same
     * packs and calls the same collectives in the same order. */
    while (i < nbufs && status == RP_OK) {
        size_t first = i, bytes = 0, off = 0;
        char *fuse;
        void *p;

        if (counts[i] * wes >= RP_FUSION_BYTES) {
            /* Alone; uncompressed without a copy. */
            i++;
            bytes = counts[first] * wes;
        } else {
            while (i < nbufs && counts[i] * wes < RP_FUSION_BYTES &&
                   bytes + counts[i] * wes <= RP_FUSION_BYTES) {
                bytes += counts[i] * wes;
                i++;
            }
        }
        if (i - first == 1 && !packed_only) {
            status = rp__comm_allreduce(c, sendbufs[first], recvbufs[first],
                                        counts[first], dtype, op);
            continue;
        }
        if (bytes == 0) {
            continue; /* only empty buffers */
        }
        status = rp__comm_scratch(c, &c->fuse, bytes, &p);
        if (status != RP_OK) {
            return status;
        }
        fuse = p;
        for (size_t k = first; k < i; k++) {
            rp_pack(comp, fuse + off, sendbufs[k], counts[k], es, avg_ranks);
            off += counts[k] * wes;
        }
        status = rp__comm_allreduce_wire(c, fuse, fuse, bytes / wes, wtype,
                                         wop, packed_only);
        off = 0;
        for (size_t k = first; k < i && status == RP_OK; k++) {
            rp_unpack(comp, recvbufs[k], fuse + off, counts[k], es);
            off += counts[k] * wes;
        }
    }
    return status;
}
