/*
 * ringpoint-reinit-check: one process brings ringpoint up and down several
 * times (rp_init, collectives, rp_finalize, and again), as a framework does
 * that shuts its communication down and starts it again (ringpoint.torch's
 * shutdown() then init()).
 *
 * Each round checks that the new context has the rank and size of the
 * first, that an allreduce sums what every rank gave in THIS round (a peer
 * reached through an address of an earlier round would fail or hang here)
 * and that a broadcast from the round's root arrives. Under a launcher a
 * second rp_init used to fail now and then (issue 15: the PMIx client was
 * closed and opened again, racing with the other ranks' fences).
 *
 *   ringpoint-reinit-check [ROUNDS]   (default 4: the first init, 3 re-inits)
 *
 * Prints "reinit-check: ok ROUNDS rounds of SIZE ranks" on rank 0 when
 * every round passed on every rank; exits 1 on a failed check.
 */
#include <ringpoint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 1024

static int fail(int round, int rank, const char *what, rp_status_t st)
{
    printf("reinit-check: rank %d: round %d: %s (%s)\n", rank, round, what,
           rp_status_string(st));
    return 1;
}

/* One round on an initialized context; 0 when every check passed. */
static int round_check(rp_context_h ctx, int round, int rank, int size)
{
    static float buf[COUNT];
    int root = round % size;
    int32_t word;
    rp_status_t st;
    float want = 0.0f;

    for (int r = 0; r < size; r++) {
        want += (float)(r + 1 + round);
    }
    for (int i = 0; i < COUNT; i++) {
        buf[i] = (float)(rank + 1 + round);
    }
    st = rp_allreduce(ctx, buf, buf, COUNT, RP_DTYPE_FLOAT32, RP_OP_SUM);
    if (st != RP_OK) {
        return fail(round, rank, "rp_allreduce failed", st);
    }
    for (int i = 0; i < COUNT; i++) {
        if (buf[i] != want) {
            printf("reinit-check: rank %d: round %d: allreduce element %d "
                   "is %g, expected %g\n", rank, round, i, (double)buf[i],
                   (double)want);
            return 1;
        }
    }
    word = rank == root ? 1000 + round : -1;
    st = rp_broadcast(ctx, &word, 1, RP_DTYPE_INT32, root);
    if (st != RP_OK) {
        return fail(round, rank, "rp_broadcast failed", st);
    }
    if (word != 1000 + round) {
        printf("reinit-check: rank %d: round %d: broadcast from rank %d "
               "gave %d, expected %d\n", rank, round, root, (int)word,
               1000 + round);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 4;
    int rank0 = -1, size0 = -1;
    rp_context_attr_t attr;
    rp_context_h ctx;
    rp_status_t st;

    if (rounds <= 0) {
        fprintf(stderr, "usage: ringpoint-reinit-check [ROUNDS]\n");
        return 2;
    }
    for (int round = 0; round < rounds; round++) {
        st = rp_init(NULL, &ctx);
        if (st != RP_OK) {
            return fail(round, rank0, "rp_init failed", st);
        }
        memset(&attr, 0, sizeof(attr));
        attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                          RP_CONTEXT_ATTR_FIELD_SIZE;
        st = rp_context_query(ctx, &attr);
        if (st != RP_OK) {
            return fail(round, rank0, "rp_context_query failed", st);
        }
        if (round == 0) {
            rank0 = attr.rank;
            size0 = attr.size;
        } else if (attr.rank != rank0 || attr.size != size0) {
            printf("reinit-check: round %d: rank %d of %d, first round said "
                   "rank %d of %d\n", round, attr.rank, attr.size, rank0,
                   size0);
            return 1;
        }
        if (round_check(ctx, round, rank0, size0) != 0) {
            return 1;
        }
        rp_finalize(ctx);
    }
    if (rank0 == 0) {
        printf("reinit-check: ok %d rounds of %d ranks\n", rounds, size0);
    }
    return 0;
}
