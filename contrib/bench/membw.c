/*
 * ringpoint-membw: the memory roofline a host-memory ring runs against.
 *
 *   ringpoint-membw [-s MIB] [-p PROCS] [-r REPS]
 *
 * PROCS processes (default 2: the ranks of a 2-rank allreduce), started
 * together, each time on private, pre-touched buffers of MIB MiB (default
 * 128, far beyond the caches): memcpy (glibc's; on this VM glibc believes
 * the 480 MiB L3 the hypervisor reports and never switches to streaming
 * stores), memcpy with non-temporal stores, and the vectorised a += b the
 * reduction kernels do. Each prints the best of REPS runs in GB/s of
 * destination bytes. A 2-rank ring moves, per rank, half the buffer by
 * copy (reduce-scatter), half by a += b and half by copy (allgather), so
 * its busbw cannot exceed 1 / (0.5/copy + 0.5/add + 0.5/copy).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Copy with streaming stores: no read-for-ownership of the destination. */
static void copy_nt(void *dst, const void *src, size_t n)
{
#ifdef __SSE2__
    __m128i *d = dst;
    const __m128i *s = src;

    for (size_t i = 0; i < n / 16; i++) {
        _mm_stream_si128(d + i, _mm_load_si128(s + i));
    }
    _mm_sfence();
#else
    memcpy(dst, src, n);
#endif
}

/* Vectorised like the reduction kernels, whatever -O the build uses. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("O3")))
#endif
static void add(float *restrict a, const float *restrict b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        a[i] += b[i];
    }
}

static int child(size_t bytes, int reps, int id)
{
    float *a = aligned_alloc(4096, bytes), *b = aligned_alloc(4096, bytes);
    double best[3] = {1e9, 1e9, 1e9};

    if (a == NULL || b == NULL) {
        fprintf(stderr, "ringpoint-membw: out of memory\n");
        return 1;
    }
    memset(a, 0, bytes);
    for (size_t i = 0; i < bytes / 4; i++) {
        b[i] = (float)(i % 7);
    }
    for (int r = 0; r < reps; r++) {
        double t0 = now(), t1;

        memcpy(a, b, bytes);
        t1 = now();
        best[0] = t1 - t0 < best[0] ? t1 - t0 : best[0];
        t0 = now();
        copy_nt(a, b, bytes);
        t1 = now();
        best[1] = t1 - t0 < best[1] ? t1 - t0 : best[1];
        t0 = now();
        add(a, b, bytes / 4);
        t1 = now();
        best[2] = t1 - t0 < best[2] ? t1 - t0 : best[2];
    }
    printf("proc %d: %zu MiB  memcpy %.2f GB/s  memcpy-nt %.2f GB/s  a+=b %.2f GB/s"
           "  => 2-rank ring roofline %.2f GB/s busbw%s\n",
           id, bytes >> 20, bytes / best[0] / 1e9, bytes / best[1] / 1e9,
           bytes / best[2] / 1e9,
           1.0 / (0.5 * best[0] / (bytes / 1e9) * 2 + 0.5 * best[2] / (bytes / 1e9)),
           a[1] == -1.0f ? "" : "");
    free(a);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    size_t mib = 128;
    int procs = 2, reps = 5, ch, rc = 0;

    while ((ch = getopt(argc, argv, "s:p:r:")) != -1) {
        switch (ch) {
        case 's': mib = (size_t)atol(optarg); break;
        case 'p': procs = atoi(optarg); break;
        case 'r': reps = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: ringpoint-membw [-s MIB] [-p PROCS] [-r REPS]\n");
            return 64;
        }
    }
    if (mib == 0 || procs < 1 || reps < 1) {
        return 64;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    for (int p = 0; p < procs; p++) {
        pid_t pid = fork();

        if (pid == 0) {
            _exit(child(mib << 20, reps, p));
        }
        if (pid < 0) {
            perror("fork");
            return 1;
        }
    }
    for (int p = 0; p < procs; p++) {
        int st;

        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            rc = 1;
        }
    }
    return rc;
}
