/*
 * ringpoint-coll-check -l: an allreduce's bits never depend on layout.
 *
 * The promise (eval.h, libringpoint(3)): element i of an allreduce's result
 * is one fixed expression of the n ranks' element i, recursive doubling's,
 * whatever the element's offset in its buffer, the buffer's length, how
 * tensors are grouped, blocking or not, and whichever path the size and
 * the settings select. A resumed DDP run whose gradient buckets are laid
 * out differently from the run it resumed depends on it.
 *
 * Each element has an identity g, and rank q's value of it is a function
 * of (q, g) alone, with mantissas and exponents spread so that sums taken
 * in different orders round differently. A tensor of L elements is placed
 * at several offsets inside larger buffers (the rest holding other
 * elements), in place and not, non-blocking, and split across the tensors
 * of a grouped allreduce; every placement's result must equal, bit for
 * bit, the expression evaluated here one element at a time. test_coll.sh
 * runs this at 3, 4 and 5 ranks on every path.
 */
#include "coll_check.h"
#include "reduce/half.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* Rank @q's value of element @g: a 24-bit mantissa, either sign, times
 * 2^-12 to 2^12 (within float16's range, exact in float32). */
static float val32(int q, uint64_t g)
{
    uint64_t h = mix(g * 1000003u + (uint64_t)q);
    float m = (float)(int32_t)((h & 0xFFFFFF) | 0x800000) / 8388608.0f;
    int e = (int)((h >> 24) % 25) - 12;
    float v = m;

    for (; e > 0; e--) {
        v *= 2.0f;
    }
    for (; e < 0; e++) {
        v *= 0.5f;
    }
    return (h >> 63) ? -v : v;
}

static double val64(int q, uint64_t g)
{
    uint64_t h = mix(g * 7919u + (uint64_t)q + 0x5555);

    return (double)val32(q, g) + (double)(h & 0xFFFFFFF) * 0x1p-52 *
                                     (double)val32(q, g);
}

/* Element @g of rank @q into @buf[i]. */
static void store_val(rp_dtype_t t, void *buf, size_t i, int q, uint64_t g)
{
    switch (t) {
    case RP_DTYPE_FLOAT64: ((double *)buf)[i] = val64(q, g); break;
    case RP_DTYPE_FLOAT16:
        ((uint16_t *)buf)[i] = rp__f32_to_f16_1(val32(q, g));
        break;
    case RP_DTYPE_BFLOAT16:
        ((uint16_t *)buf)[i] = rp__f32_to_bf16_1(val32(q, g));
        break;
    default: ((float *)buf)[i] = val32(q, g); break;
    }
}

/* The expression (eval.h) of element @g, one operation at a time: ranks
 * past the largest power of two p2 folded into rank - p2 (lower operand
 * first), then pairs, quadruples, ... of consecutive ranks; half types in
 * float32, rounded once; AVG divides at the end. */
static void reference(rp_dtype_t t, rp_op_t op, uint64_t g, void *dst,
                      size_t i)
{
    const int n = g_size;
    int p2 = 1;
    double d[64];
    float f[64];

    while (p2 * 2 <= n) {
        p2 *= 2;
    }
    for (int q = 0; q < n; q++) {
        d[q] = val64(q, g);
        f[q] = t == RP_DTYPE_FLOAT16
                   ? rp__f16_to_f32_1(rp__f32_to_f16_1(val32(q, g)))
               : t == RP_DTYPE_BFLOAT16
                   ? rp__bf16_to_f32_1(rp__f32_to_bf16_1(val32(q, g)))
                   : val32(q, g);
    }
    for (int q = 0; q + p2 < n; q++) {
        d[q] = d[q] + d[q + p2];
        f[q] = f[q] + f[q + p2];
    }
    for (int mask = 1; mask < p2; mask <<= 1) {
        for (int q = 0; q < p2; q += 2 * mask) {
            d[q] = d[q] + d[q + mask];
            f[q] = f[q] + f[q + mask];
        }
    }
    if (op == RP_OP_AVG) {
        d[0] = d[0] / (double)n;
        f[0] = f[0] / (float)n;
    }
    switch (t) {
    case RP_DTYPE_FLOAT64: ((double *)dst)[i] = d[0]; break;
    case RP_DTYPE_FLOAT16: ((uint16_t *)dst)[i] = rp__f32_to_f16_1(f[0]); break;
    case RP_DTYPE_BFLOAT16:
        ((uint16_t *)dst)[i] = rp__f32_to_bf16_1(f[0]);
        break;
    default: ((float *)dst)[i] = f[0]; break;
    }
}

/* How a tensor is placed. */
typedef enum { PLAIN, INPLACE, NONBLOCKING, GROUPED } mode_t_;

typedef struct layout {
    size_t off, tail;
    mode_t_ mode;
} layout_t;

static const char *const mode_names[] = {"out of place", "in place",
                                         "non-blocking", "grouped"};

/* Identities of the elements around the tensor: none is the tensor's. */
#define FILLER (1ull << 40)

static size_t g_cases, g_elements;

/* Allreduce elements 0 .. L-1 placed as @lay says; compare to @ref. */
static void one_layout(rp_context_h ctx, rp_dtype_t t, rp_op_t op, size_t len,
                       const layout_t *lay, const char *ref)
{
    const size_t es = rp_dtype_size(t), total = lay->off + len + lay->tail;
    char *in = malloc(total * es), *out = malloc(total * es);
    const char *got;
    size_t bad = 0, first = 0;

    if (in == NULL || out == NULL) {
        fprintf(stderr, "coll-check: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < total; i++) {
        const bool mine = i >= lay->off && i < lay->off + len;

        store_val(t, in, i, g_rank, mine ? i - lay->off : FILLER + i);
    }
    if (lay->mode == PLAIN) {
        check_status("layout: rp_allreduce",
                     rp_allreduce(ctx, in, out, total, t, op));
    } else if (lay->mode == INPLACE) {
        check_status("layout: rp_allreduce in place",
                     rp_allreduce(ctx, in, in, total, t, op));
    } else if (lay->mode == NONBLOCKING) {
        rp_request_h req;

        check_status("layout: rp_iallreduce",
                     rp_iallreduce(ctx, in, out, total, t, op, &req));
        check_status("layout: rp_wait", rp_wait(&req));
    } else {
        /* The buffer as four tensors: the part before, the tensor cut in
         * two unequal pieces, the part after (empty parts are tensors of
         * no elements). */
        const size_t cut = len / 3;
        const void *s[4] = {in, in + lay->off * es,
                            in + (lay->off + cut) * es,
                            in + (lay->off + len) * es};
        void *d[4] = {out, out + lay->off * es, out + (lay->off + cut) * es,
                      out + (lay->off + len) * es};
        const size_t counts[4] = {lay->off, cut, len - cut, lay->tail};

        check_status("layout: rp_allreduce_group",
                     rp_allreduce_group(ctx, s, d, counts, 4, t, op));
    }
    got = (lay->mode == INPLACE ? in : out) + lay->off * es;
    for (size_t i = 0; i < len; i++) {
        if (memcmp(got + i * es, ref + i * es, es) != 0 && bad++ == 0) {
            first = i;
        }
    }
    if (bad > 0) {
        fprintf(stderr,
                "coll-check: rank %d: layout: %s %s of %zu elements at "
                "offset %zu of %zu (%s): %zu elements differ from the "
                "expression, the first at %zu\n",
                g_rank, rp_dtype_name(t), op == RP_OP_AVG ? "avg" : "sum",
                len, lay->off, total, mode_names[lay->mode], bad, first);
        g_errors++;
    }
    g_hash = fnv(g_hash, got, len * es);
    g_cases++;
    g_elements += len;
    free(in);
    free(out);
}

void check_layout(rp_context_h ctx)
{
    static const struct {
        rp_dtype_t t;
        rp_op_t op;
    } kinds[] = {
        {RP_DTYPE_FLOAT32, RP_OP_SUM}, {RP_DTYPE_FLOAT32, RP_OP_AVG},
        {RP_DTYPE_FLOAT64, RP_OP_SUM}, {RP_DTYPE_FLOAT16, RP_OP_SUM},
        {RP_DTYPE_BFLOAT16, RP_OP_AVG},
    };
    /* Small tensors (recursive doubling's sizes, the segment's) and one
     * past every path's threshold, at offsets that move the tensor across
     * block and segment boundaries. */
    static const size_t lens[] = {1000, 300001};
    static const layout_t lays[] = {
        {0, 0, PLAIN},          {1, 0, PLAIN},
        {65537, 0, PLAIN},      {5, 131072, INPLACE},
        {4099, 3, NONBLOCKING}, {0, 0, GROUPED},
        {3, 70001, GROUPED},    {0, 2, PLAIN},
    };

    if (g_size > 64) {
        return;
    }
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
            const size_t es = rp_dtype_size(kinds[k].t);
            char *ref = malloc(lens[l] * es);

            if (ref == NULL) {
                fprintf(stderr, "coll-check: out of memory\n");
                exit(2);
            }
            for (size_t i = 0; i < lens[l]; i++) {
                reference(kinds[k].t, kinds[k].op, i, ref, i);
            }
            for (size_t y = 0; y < sizeof(lays) / sizeof(lays[0]); y++) {
                one_layout(ctx, kinds[k].t, kinds[k].op, lens[l], &lays[y],
                           ref);
            }
            free(ref);
        }
    }
    if (g_rank == 0) {
        printf("coll-check: layout: %zu placements, %zu elements, each "
               "compared with the expression\n",
               g_cases, g_elements);
    }
}
