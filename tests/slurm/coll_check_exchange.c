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

#include <stdbool.h>
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

/* The grouped form: three buffers of their own block sizes (one empty on
 * some ranks), blocking and not; each buffer's result must be the bits of
 * its own reduce-scatter. */
static size_t check_rs_group(rp_context_h ctx)
{
    static const rp_dtype_t types[] = {RP_DTYPE_FLOAT32, RP_DTYPE_BFLOAT16,
                                       RP_DTYPE_INT64};
    static const rp_op_t ops[] = {RP_OP_SUM, RP_OP_AVG, RP_OP_PROD};
    const size_t n = (size_t)g_size, nb = 3;
    size_t *counts = malloc(nb * n * sizeof(*counts));
    size_t cases = 0;

    for (size_t i = 0; i < nb; i++) {
        for (size_t q = 0; q < n; q++) {
            counts[i * n + q] = i == 0 ? 5 : i == 1 ? (q % 2) * 1000
                                                    : 70001 + q;
        }
    }
    for (int k = 0; k < 3; k++) {
        const rp_dtype_t t = types[k];
        const size_t es = rp_dtype_size(t);
        char *in[3], *out[3], *ref[3];
        const void *sends[3];
        void *recvs[3];
        rp_request_h req;
        char what[96];

        snprintf(what, sizeof(what), "grouped reduce-scatter %s %s",
                 rp_dtype_name(t), rp_op_name(ops[k]));
        for (size_t i = 0; i < nb; i++) {
            size_t total = 0;

            for (size_t q = 0; q < n; q++) {
                total += counts[i * n + q];
            }
            in[i] = malloc(total * es + 8);
            out[i] = malloc(counts[i * n + (size_t)g_rank] * es + 8);
            ref[i] = malloc(counts[i * n + (size_t)g_rank] * es + 8);
            for (size_t e = 0; e < total; e++) {
                store(t, in[i], e, rs_input(t, ops[k], g_rank, e + i * 7));
            }
            check_status(what, rp_reduce_scatterv(ctx, in[i], ref[i],
                                                  counts + i * n, t, ops[k]));
            sends[i] = in[i];
            recvs[i] = out[i];
        }
        for (int nbk = 0; nbk < 2; nbk++) {
            for (size_t i = 0; i < nb; i++) {
                memset(out[i], 0xa5, counts[i * n + (size_t)g_rank] * es);
            }
            if (nbk == 0) {
                check_status(what, rp_reduce_scatter_group(
                                       ctx, sends, recvs, counts, nb, t,
                                       ops[k]));
            } else {
                check_status(what, rp_ireduce_scatter_group(
                                       ctx, sends, recvs, counts, nb, t,
                                       ops[k], &req));
                check_status(what, rp_wait(&req));
            }
            for (size_t i = 0; i < nb; i++) {
                if (memcmp(out[i], ref[i],
                           counts[i * n + (size_t)g_rank] * es) != 0) {
                    fprintf(stderr, "coll-check: rank %d: %s%s: buffer %zu "
                            "differs from its own reduce-scatter\n", g_rank,
                            what, nbk ? " (non-blocking)" : "", i);
                    g_errors++;
                }
            }
            cases++;
        }
        for (size_t i = 0; i < nb; i++) {
            free(in[i]);
            free(out[i]);
            free(ref[i]);
        }
    }
    free(counts);
    return cases;
}

/* RINGPOINT_COLL_HIER=1 forces the two-level allreduce, whose float bits
 * follow the layout (README: the one exception): the reduce-scatter then
 * need not match it. */
static bool ctx_forced_hier(void)
{
    const char *v = getenv("RINGPOINT_COLL_HIER");

    return v != NULL && strcmp(v, "1") == 0;
}

/* Must the reduce-scatter's bits be the allreduce's? */
static bool exact_order(bool forced, rp_dtype_t t, rp_op_t op)
{
    return !forced || t == RP_DTYPE_UINT8 || t == RP_DTYPE_INT32 ||
           t == RP_DTYPE_INT64 || op == RP_OP_MIN || op == RP_OP_MAX;
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
                    if ((exact_order(ctx_forced_hier(), (rp_dtype_t)t,
                                     (rp_op_t)op) &&
                         memcmp(out, all + off * es, mine * es) != 0) ||
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
    cases += check_rs_group(ctx);
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

/* Join: the last rank joins at once; the others run checked grouped
 * allreduces (blocking, several buffers, non-blocking), in which it stands
 * in with zeros, and a check that must fail while it is joined; then they
 * join too, and every rank learns the same last rank. */
void check_join(rp_context_h ctx)
{
    const int joiner = g_size - 1;
    int last = -2, all_last[2];
    rp_status_t st;

    if (g_rank == joiner) {
        check_status("rp_join (first)", rp_join(ctx, &last));
    } else {
        static const size_t counts[3] = {0, 7, 100003};
        rp_allreduce_opts_t opts = {.signature = 0x5a5a5a5a12345678ULL};
        float *fin = malloc(100003 * sizeof(float));
        float *fout = malloc(100003 * sizeof(float));
        int32_t iin[7], iout[7];
        const void *sends[3];
        void *recvs[3];
        size_t bad = 0;
        rp_request_h req;

        for (size_t i = 0; i < 100003; i++) {
            fin[i] = (float)(g_rank + 1) + (float)(i % 5);
        }
        for (int i = 0; i < 7; i++) {
            iin[i] = 10 * (g_rank + 1) + i;
        }
        sends[0] = NULL; recvs[0] = NULL;
        sends[1] = iin;  recvs[1] = iout;
        sends[2] = fin;  recvs[2] = fout;
        /* Int32 buffers and float ones need two calls (one dtype each). */
        check_status("join: grouped allreduce",
                     rp_allreduce_group_opts(ctx, &sends[2], &recvs[2],
                                             &counts[2], 1, RP_DTYPE_FLOAT32,
                                             RP_OP_SUM, &opts));
        for (size_t i = 0; i < 100003; i++) {
            /* sum over the active ranks of (q + 1) + i % 5 */
            const double want = (double)(joiner * (joiner + 1)) / 2 +
                                (double)joiner * (double)(i % 5);
            bad += fout[i] != (float)want;
        }
        opts.signature ^= 2;
        check_status("join: grouped allreduce (non-blocking)",
                     rp_iallreduce_group(ctx, sends, recvs, counts, 2,
                                         RP_DTYPE_INT32, RP_OP_AVG, &opts,
                                         &req));
        check_status("join: wait", rp_wait(&req));
        for (int i = 0; i < 7; i++) {
            /* the joined rank's zeros count in the average */
            int32_t sum = 0;

            for (int q = 0; q < joiner; q++) {
                sum += 10 * (q + 1) + i;
            }
            bad += iout[i] != sum / g_size;
        }
        st = rp_check(ctx, 0x77ULL << 1);
        if (st != RP_ERR_STATE) {
            fprintf(stderr, "coll-check: rank %d: rp_check with a rank "
                    "joined returned '%s', not 'state'\n", g_rank,
                    rp_status_string(st));
            g_errors++;
        }
        if (bad > 0) {
            fprintf(stderr, "coll-check: rank %d: join: %zu wrong results\n",
                    g_rank, bad);
            g_errors++;
        }
        free(fin);
        free(fout);
        check_status("rp_join", rp_join(ctx, &last));
    }
    all_last[0] = last;
    all_last[1] = -last;
    check_status("join: the last rank",
                 rp_allreduce(ctx, all_last, all_last, 2, RP_DTYPE_INT32,
                              RP_OP_MAX));
    if (all_last[0] != -all_last[1] ||
        last != (g_size > 1 ? g_size - 2 : 0)) {
        fprintf(stderr, "coll-check: rank %d: rp_join returned %d (ranks "
                "say %d to %d), expected %d\n", g_rank, last, -all_last[1],
                all_last[0], g_size > 1 ? g_size - 2 : 0);
        g_errors++;
    }
    if (g_rank == 0) {
        printf("coll-check: join: ok\n");
    }
}
