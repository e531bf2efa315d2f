/*
 * The reduce-scatter and the all-to-all in ringpoint-coll-check.
 *
 * Reduce-scatter: pseudo-random inputs, every dtype and op, equal and
 * uneven blocks (some empty); each rank's block must hold exactly the
 * bits the allreduce of the same inputs gives that block (the allreduce
 * itself is checked against exact values in coll_check.c), whatever the
 * block sizes, and the non-blocking form the blocking one's.
 *
 * All-to-all: every element encodes (sender, receiver, index), so the
 * receiver knows what each must be; equal shares, uneven ones with empty
 * shares, and the non-blocking forms.
 */
#include "coll_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Rank @q's input element @i: small integers for the integer types (so
 * products stay in range), values in [-2, 2) for the floats. */
static double rs_input(rp_dtype_t t, rp_op_t op, int q, size_t i)
{
    uint64_t h = mix64(((uint64_t)q << 40) ^ i ^ ((uint64_t)t << 56));

    if (t == RP_DTYPE_UINT8 || t == RP_DTYPE_INT32 || t == RP_DTYPE_INT64) {
        return op == RP_OP_PROD ? (double)(h % 3) : (double)(h % 50);
    }
    return ((double)(h >> 11) / (double)(1ULL << 53)) * 4.0 - 2.0;
}

/* The block sizes: @kind 0 equal (@m each), 1 uneven (rank q gets
 * (q * 7 + m) % (m + 3), so some get none), 2 only the last rank. */
static void rs_counts(size_t *counts, int kind, size_t m)
{
    for (int q = 0; q < g_size; q++) {
        counts[q] = kind == 0 ? m
                    : kind == 1 ? ((size_t)q * 7 + m) % (m + 3)
                                : (q == g_size - 1 ? m : 0);
    }
}

void check_reduce_scatter(rp_context_h ctx, size_t max_count)
{
    static const size_t ms[] = {1, 3, 1000, 65537, 300001};
    size_t *counts = malloc((size_t)g_size * sizeof(*counts));
    size_t cases = 0;

    for (size_t s = 0; s < sizeof(ms) / sizeof(ms[0]); s++) {
        for (int kind = 0; kind < 3 && ms[s] <= max_count; kind++) {
            size_t total = 0, off = 0, mine;
            char *in, *all, *out, *out2;

            rs_counts(counts, kind, ms[s]);
            for (int q = 0; q < g_size; q++) {
                off += q < g_rank ? counts[q] : 0;
                total += counts[q];
            }
            mine = counts[g_rank];
            in = malloc(total * 8 + 8);
            all = malloc(total * 8 + 8);
            out = malloc(mine * 8 + 8);
            out2 = malloc(mine * 8 + 8);
            for (int t = 0; t < RP_DTYPE_COUNT; t++) {
                const size_t es = rp_dtype_size((rp_dtype_t)t);

                for (int op = 0; op < RP_OP_COUNT; op++) {
                    rp_request_h req;
                    char what[128];

                    snprintf(what, sizeof(what),
                             "reduce-scatter %s %s blocks=%zu%s",
                             rp_dtype_name((rp_dtype_t)t),
                             rp_op_name((rp_op_t)op), ms[s],
                             kind == 0 ? "" : kind == 1 ? " uneven"
                                                        : " last only");
                    for (size_t i = 0; i < total; i++) {
                        store((rp_dtype_t)t, in, i,
                              rs_input((rp_dtype_t)t, (rp_op_t)op, g_rank, i));
                    }
                    memset(out, 0xa5, mine * es);
                    memset(out2, 0x5a, mine * es);
                    check_status(what, rp_allreduce(ctx, in, all, total,
                                                    (rp_dtype_t)t,
                                                    (rp_op_t)op));
                    check_status(what,
                                 kind == 0
                                     ? rp_reduce_scatter(ctx, in, out, ms[s],
                                                         (rp_dtype_t)t,
                                                         (rp_op_t)op)
                                     : rp_reduce_scatterv(ctx, in, out,
                                                          counts,
                                                          (rp_dtype_t)t,
                                                          (rp_op_t)op));
                    check_status(what,
                                 rp_ireduce_scatterv(ctx, in, out2, counts,
                                                     (rp_dtype_t)t,
                                                     (rp_op_t)op, &req));
                    check_status(what, rp_wait(&req));
                    if (memcmp(out, all + off * es, mine * es) != 0 ||
                        memcmp(out2, out, mine * es) != 0) {
                        size_t i = 0;

                        while (i < mine &&
                               memcmp(out + i * es, all + (off + i) * es,
                                      es) == 0) {
                            i++;
                        }
                        fprintf(stderr,
                                "coll-check: rank %d: %s: differs from the "
                                "allreduce's block (first at %zu of %zu) or "
                                "the non-blocking form\n",
                                g_rank, what, i, mine);
                        g_errors++;
                    }
                    g_hash = fnv(g_hash, out, mine * es);
                    cases++;
                }
            }
            free(in);
            free(all);
            free(out);
            free(out2);
        }
    }
    free(counts);
    if (g_rank == 0) {
        printf("coll-check: reduce-scatter: %zu cases\n", cases);
    }
}

/* What rank @from sends rank @to as element @i. */
static int64_t a2a_value(int from, int to, size_t i)
{
    return ((int64_t)from << 48) | ((int64_t)to << 32) | (int64_t)i;
}

/* Elements rank @from sends rank @to: @kind 0 equal (@m), 1 uneven
 * ((from * 3 + to * 5) % (m + 1): some pairs none), 2 only to rank 0. */
static size_t a2a_count(int kind, size_t m, int from, int to)
{
    return kind == 0 ? m
           : kind == 1 ? ((size_t)from * 3 + (size_t)to * 5) % (m + 1)
                       : (to == 0 ? m : 0);
}

void check_alltoall(rp_context_h ctx, size_t max_count)
{
    static const size_t ms[] = {1, 5, 1000, 70000, 300001};
    const size_t n = (size_t)g_size;
    size_t *sc = malloc(n * sizeof(*sc)), *rc = malloc(n * sizeof(*rc));
    size_t cases = 0;

    for (size_t s = 0; s < sizeof(ms) / sizeof(ms[0]); s++) {
        for (int kind = 0; kind < 3 && ms[s] <= max_count; kind++) {
            for (int nb = 0; nb < 2; nb++) {
                size_t stot = 0, rtot = 0, at = 0, bad = 0;
                int64_t *in, *out;
                char what[96];
                rp_status_t st;

                snprintf(what, sizeof(what), "alltoall%s m=%zu%s",
                         kind == 0 ? "" : "v", ms[s],
                         nb ? " non-blocking" : "");
                for (int q = 0; q < g_size; q++) {
                    sc[q] = a2a_count(kind, ms[s], g_rank, q);
                    rc[q] = a2a_count(kind, ms[s], q, g_rank);
                    stot += sc[q];
                    rtot += rc[q];
                }
                in = malloc(stot * 8 + 8);
                out = malloc(rtot * 8 + 8);
                memset(out, 0xa5, rtot * 8);
                for (int q = 0; q < g_size; q++) {
                    for (size_t i = 0; i < sc[q]; i++) {
                        in[at++] = a2a_value(g_rank, q, i);
                    }
                }
                if (kind == 0 && !nb) {
                    st = rp_alltoall(ctx, in, out, ms[s], RP_DTYPE_INT64);
                } else if (!nb) {
                    st = rp_alltoallv(ctx, in, sc, out, rc, RP_DTYPE_INT64);
                } else {
                    rp_request_h req;

                    st = kind == 0 ? rp_ialltoall(ctx, in, out, ms[s],
                                                  RP_DTYPE_INT64, &req)
                                   : rp_ialltoallv(ctx, in, sc, out, rc,
                                                   RP_DTYPE_INT64, &req);
                    if (st == RP_OK) {
                        st = rp_wait(&req);
                    }
                }
                check_status(what, st);
                at = 0;
                for (int q = 0; q < g_size; q++) {
                    for (size_t i = 0; i < rc[q]; i++) {
                        bad += out[at++] != a2a_value(q, g_rank, i);
                    }
                }
                if (bad > 0) {
                    fprintf(stderr, "coll-check: rank %d: %s: %zu of %zu "
                            "elements wrong\n", g_rank, what, bad, rtot);
                    g_errors++;
                }
                cases++;
                free(in);
                free(out);
            }
        }
    }
    /* A float16 exchange: the element size, not the type, matters. */
    {
        uint16_t *in = malloc(n * 2 * 3), *out = malloc(n * 2 * 3);
        size_t bad = 0;

        for (size_t i = 0; i < 3 * n; i++) {
            in[i] = (uint16_t)(g_rank * 1000 + (int)i);
        }
        check_status("alltoall float16",
                     rp_alltoall(ctx, in, out, 3, RP_DTYPE_FLOAT16));
        for (int q = 0; q < g_size; q++) {
            for (size_t i = 0; i < 3; i++) {
                bad += out[(size_t)q * 3 + i] !=
                       (uint16_t)(q * 1000 + g_rank * 3 + (int)i);
            }
        }
        if (bad > 0) {
            fprintf(stderr, "coll-check: rank %d: alltoall float16: %zu "
                    "wrong\n", g_rank, bad);
            g_errors++;
        }
        free(in);
        free(out);
    }
    free(sc);
    free(rc);
    if (g_rank == 0) {
        printf("coll-check: alltoall: %zu cases\n", cases + 1);
    }
}
