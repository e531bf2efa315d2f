/*
 * ringpoint-bench's check: inputs chosen so that every type holds every
 * result exactly, and the count of output elements whose bits differ from
 * the expected value.
 */
#include "config.h"

#include "bench.h"
#include "benchtable.h"
#include "reduce/half.h"

#include <string.h>

/* ---- exact inputs and expected values -------------------------------- */

/* Write value @v (an exact small integer for float types; any, wrapping,
 * for integers) as element @i of @buf. */
static void store(rp_dtype_t t, void *buf, size_t i, int64_t iv, double fv)
{
    char *p = (char *)buf + i * rp_dtype_size(t);
    uint8_t u8;
    int32_t i32;
    uint16_t h;
    float f;

    switch (t) {
    case RP_DTYPE_UINT8: u8 = (uint8_t)(uint64_t)iv; memcpy(p, &u8, 1); break;
    case RP_DTYPE_INT32: i32 = (int32_t)(uint32_t)(uint64_t)iv; memcpy(p, &i32, 4); break;
    case RP_DTYPE_INT64: memcpy(p, &iv, 8); break;
    case RP_DTYPE_FLOAT16: h = rp__f32_to_f16_1((float)fv); memcpy(p, &h, 2); break;
    case RP_DTYPE_BFLOAT16: h = rp__f32_to_bf16_1((float)fv); memcpy(p, &h, 2); break;
    case RP_DTYPE_FLOAT32: f = (float)fv; memcpy(p, &f, 4); break;
    default: memcpy(p, &fv, 8); break;
    }
}

static void store_int(rp_dtype_t t, void *buf, size_t i, int64_t v)
{
    store(t, buf, i, v, (double)v);
}

/* Broadcast and allgather: what rank @r holds at element @i. */
static int64_t bg_input(size_t i, int r)
{
    return (int64_t)((i * 7 + (size_t)r * 31) % 97) + 1;
}

static size_t count_wrong(rp_dtype_t t, const void *buf, size_t count,
                          int64_t (*want)(size_t, void *), void *arg)
{
    const size_t es = rp_dtype_size(t);
    const char *p = buf;
    char exp[8];
    size_t wrong = 0;

    for (size_t i = 0; i < count; i++) {
        store_int(t, exp, 0, want(i, arg));
        wrong += memcmp(exp, p + i * es, es) != 0;
    }
    return wrong;
}

typedef struct want_ar { rp_op_t op; int n; } want_ar_t;
static int64_t want_ar(size_t i, void *arg)
{
    want_ar_t *w = arg;
    return bt_ar_expected((int)w->op, i, w->n);
}

typedef struct want_bg { int root; size_t per_rank; } want_bg_t;
static int64_t want_bcast(size_t i, void *arg)
{
    return bg_input(i, ((want_bg_t *)arg)->root);
}
static int64_t want_gather(size_t i, void *arg)
{
    want_bg_t *w = arg;
    return bg_input(i % w->per_rank, (int)(i / w->per_rank));
}


/* Reduce-scatter: rank @rank's block, element @i, of the allreduce's
 * expected result. */
typedef struct want_rs { rp_op_t op; int n; size_t base; } want_rs_t;
static int64_t want_rs(size_t i, void *arg)
{
    want_rs_t *w = arg;
    return bt_ar_expected((int)w->op, w->base + i, w->n);
}

/* All-to-all: block q of the output came from rank q. */
typedef struct want_a2a { int me; size_t per_rank; } want_a2a_t;
static int64_t want_a2a(size_t i, void *arg)
{
    want_a2a_t *w = arg;
    return bt_a2a_input((int)(i / w->per_rank), w->me, i % w->per_rank);
}

void fill(const opts_t *o, rp_dtype_t t, rp_op_t op, void *buf,
                 size_t count)
{
    /* All-to-all: block q, for rank q, of count / size elements. */
    const size_t per_rank = count / (size_t)g_size;

    for (size_t i = 0; i < count; i++) {
        int64_t v;

        switch (o->coll) {
        case COLL_ALLREDUCE:
        case COLL_REDUCE_SCATTER:
            /* Reduce-scatter is the allreduce of the whole buffer, each
             * rank keeping its block: the same inputs, the same sums. */
            v = bt_ar_input((int)op, i, g_rank, g_size);
            break;
        case COLL_ALLTOALL:
            v = bt_a2a_input(g_rank, (int)(i / per_rank), i % per_rank);
            break;
        default:
            v = bg_input(i, g_rank);
            break;
        }
        store_int(t, buf, i, v);
    }
}

int64_t count_row_wrong(const opts_t *o, rp_dtype_t t, rp_op_t op,
                        size_t count, const void *out)
{
    if (o->coll == COLL_ALLREDUCE) {
        want_ar_t w = {op, g_size};
        return (int64_t)count_wrong(t, out, count, want_ar, &w);
    }
    if (o->coll == COLL_BROADCAST) {
        want_bg_t w = {o->root, count};
        return (int64_t)count_wrong(t, out, count, want_bcast, &w);
    }
    if (o->coll == COLL_REDUCE_SCATTER) {
        want_rs_t w = {op, g_size, (size_t)g_rank * count};
        return (int64_t)count_wrong(t, out, count, want_rs, &w);
    }
    if (o->coll == COLL_ALLTOALL) {
        want_a2a_t w = {g_rank, count};
        return (int64_t)count_wrong(t, out, count * (size_t)g_size, want_a2a,
                                    &w);
    }
    want_bg_t w = {0, count};
    return (int64_t)count_wrong(t, out, count * (size_t)g_size, want_gather,
                                &w);
}
