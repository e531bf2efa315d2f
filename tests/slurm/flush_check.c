/*
 * ringpoint-flush-check: a rank that returns from a large collective and
 * then blocks outside the library must not leave its peer waiting.
 *
 * Each iteration is one rp_allreduce of SIZE MiB, then a barrier that
 * ringpoint knows nothing of (files in DIR, polled with sleeps), as a rank
 * would wait in another library's collective (gloo, MPI) that calls nothing
 * of ringpoint's. A rendezvous receiver owes its sender an acknowledgement
 * that UCX may only queue; if the rank returned with it queued, the sender
 * stays in its rp_allreduce until RINGPOINT_COLL_TIMEOUT, and this program
 * says so and exits 1. Two ranks.
 *
 *   ringpoint-flush-check DIR [SIZE_MIB [ITERATIONS]]   (default 256, 10)
 *
 * Prints "flush-check: ok" on rank 0 when every iteration passed.
 */
#include <ringpoint.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The barrier outside the library: a file per rank and iteration. */
static int outside_barrier(const char *dir, int it, int rank)
{
    char mine[4096], theirs[4096];
    FILE *f;

    snprintf(mine, sizeof(mine), "%s/flush.%d.%d", dir, it, rank);
    snprintf(theirs, sizeof(theirs), "%s/flush.%d.%d", dir, it, 1 - rank);
    f = fopen(mine, "w");
    if (f == NULL) {
        fprintf(stderr, "flush-check: %s: %s\n", mine, strerror(errno));
        return -1;
    }
    fclose(f);
    while (access(theirs, F_OK) != 0) {
        usleep(2000);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : NULL;
    size_t mib = argc > 2 ? strtoul(argv[2], NULL, 10) : 256;
    int iters = argc > 3 ? atoi(argv[3]) : 10;
    size_t count = mib * 1024 * 1024 / sizeof(float);
    rp_context_attr_t attr;
    rp_context_h ctx;
    rp_status_t st;
    float *buf;

    if (dir == NULL || mib == 0 || iters <= 0) {
        fprintf(stderr, "usage: ringpoint-flush-check DIR [SIZE_MIB [ITERATIONS]]\n");
        return 2;
    }
    buf = malloc(count * sizeof(float));
    if (buf == NULL || rp_init(NULL, &ctx) != RP_OK) {
        return 2;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE;
    if (rp_context_query(ctx, &attr) != RP_OK || attr.size != 2) {
        fprintf(stderr, "flush-check: needs exactly 2 ranks\n");
        return 2;
    }
    for (size_t i = 0; i < count; i++) {
        buf[i] = 1.0f;
    }
    for (int it = 0; it < iters; it++) {
        double t0 = now_s();

        st = rp_allreduce(ctx, buf, buf, count, RP_DTYPE_FLOAT32, RP_OP_SUM);
        if (st != RP_OK) {
            printf("flush-check: rank %d: iteration %d: rp_allreduce failed "
                   "after %.1f s (%s): the other rank had returned from it "
                   "and was waiting outside the library\n", attr.rank, it,
                   now_s() - t0, rp_status_string(st));
            return 1;
        }
        if (outside_barrier(dir, it, attr.rank) != 0) {
            return 2;
        }
    }
    if (attr.rank == 0) {
        printf("flush-check: ok %d iterations of %zu MiB\n", iters, mib);
    }
    rp_finalize(ctx);
    free(buf);
    return 0;
}
