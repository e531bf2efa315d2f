/*
 * ringpoint-barrier-bench: rp_barrier timed and printed as ringpoint-bench
 * prints a row (one row, size 0), beside `mpi-allreduce-bench -C barrier`
 * in scripts/bench-allreduce.sh. ringpoint-bench itself times collectives
 * that carry data; a barrier carries none.
 *
 *   srun --mpi=pmix | mpirun -np N ringpoint-barrier-bench [-n ITERS]
 *        [-w WARMUP] [-m median|mean|loop]
 *
 * Each barrier is timed alone; the per-iteration times are combined with
 * a MAX over ranks and the row shows their median (or mean; -m loop: the
 * barriers back to back, the loop's time per call), in both the
 * out-of-place and in-place columns (a barrier has no placement: two
 * rounds, as the other rows have two).
 */
#include "config.h"

#include "ringpoint.h"
#include "tools/benchtable.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One round of @iters timed barriers: the statistic of the slowest rank's
 * times, or a negative value if a collective failed. */
static double run_round(rp_context_h ctx, int iters, int warmup, bool mean,
                        bool loop, double *times)
{
    if (loop) {
        double t0;

        for (int it = 0; it < warmup + 1; it++) { /* the last one lines up */
            if (rp_barrier(ctx) != RP_OK) {
                return -1;
            }
        }
        t0 = bt_now_us();
        for (int it = 0; it < iters; it++) {
            if (rp_barrier(ctx) != RP_OK) {
                return -1;
            }
        }
        times[0] = (bt_now_us() - t0) / iters;
        if (rp_allreduce(ctx, times, times, 1, RP_DTYPE_FLOAT64,
                         RP_OP_MAX) != RP_OK) {
            return -1;
        }
        return times[0];
    }
    for (int it = 0; it < warmup + iters; it++) {
        double t0 = bt_now_us();

        if (rp_barrier(ctx) != RP_OK) {
            return -1;
        }
        if (it >= warmup) {
            times[it - warmup] = bt_now_us() - t0;
        }
    }
    if (rp_allreduce(ctx, times, times, (size_t)iters, RP_DTYPE_FLOAT64,
                     RP_OP_MAX) != RP_OK) {
        return -1;
    }
    return bt_stat(times, iters, mean);
}

int main(int argc, char **argv)
{
    rp_context_attr_t attr;
    rp_context_h ctx;
    int iters = 1000, warmup = 100, ch, rc = 0;
    bool mean = false, loop = false;
    double *times, t[2];

    while ((ch = getopt(argc, argv, "n:w:m:")) != -1) {
        switch (ch) {
        case 'n': iters = atoi(optarg); break;
        case 'w': warmup = atoi(optarg); break;
        case 'm':
            if (!bt_parse_stat(optarg, &mean, &loop)) {
                iters = 0;
            }
            break;
        default: iters = 0; break;
        }
        if (iters <= 0 || warmup < 0) {
            fprintf(stderr, "usage: ringpoint-barrier-bench [-n ITERS] "
                    "[-w WARMUP] [-m median|mean|loop]\n");
            return 64;
        }
    }
    if (rp_init(NULL, &ctx) != RP_OK) {
        fprintf(stderr, "ringpoint-barrier-bench: rp_init failed\n");
        return 2;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE |
                      RP_CONTEXT_ATTR_FIELD_NODE_COUNT;
    times = calloc((size_t)iters, sizeof(*times));
    if (times == NULL || rp_context_query(ctx, &attr) != RP_OK) {
        fprintf(stderr, "ringpoint-barrier-bench: out of memory\n");
        rc = 2;
        goto out;
    }
    if (attr.rank == 0) {
        printf("# ringpoint-barrier-bench: rp_barrier, %d ranks on %d nodes, "
               "iters %d warmup %d\n", attr.size, attr.node_count, iters,
               warmup);
        bt_print_time_note(loop, mean);
        printf("#\n");
        bt_print_heads();
    }
    for (int i = 0; i < 2; i++) {
        t[i] = run_round(ctx, iters, warmup, mean, loop, times);
        if (t[i] < 0) {
            fprintf(stderr, "ringpoint-barrier-bench: rank %d: a collective "
                    "failed\n", attr.rank);
            rc = 2;
            goto out;
        }
    }
    if (attr.rank == 0) {
        bt_print_row_head(0, 0, "float", "none", -1);
        bt_print_result(t[0], -1, 0, 1.0);
        bt_print_result(t[1], -1, 0, 1.0);
        printf("\n");
        bt_print_wrong_total(0);
    }

out:
    free(times);
    rp_finalize(ctx);
    return rc;
}
