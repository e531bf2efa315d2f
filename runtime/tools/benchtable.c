/*
 * The table, statistic and exact inputs of the collective benchmarks
 * (benchtable.h).
 */
#include "benchtable.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

bool bt_parse_size(const char *s, size_t *out)
{
    char *end;
    double v;

    errno = 0;
    v = strtod(s, &end);
    if (errno != 0 || end == s || v < 0) {
        return false;
    }
    switch (*end) {
    case 'k': case 'K': v *= 1024; end++; break;
    case 'm': case 'M': v *= 1024 * 1024; end++; break;
    case 'g': case 'G': v *= 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (*end == 'B' || *end == 'b') {
        end++;
    }
    if (*end != '\0' || v > 1e15) {
        return false;
    }
    *out = (size_t)v;
    return true;
}

static int bt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double bt_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

bool bt_parse_stat(const char *s, bool *mean_p, bool *loop_p)
{
    if (strcmp(s, "median") != 0 && strcmp(s, "mean") != 0 &&
        strcmp(s, "loop") != 0) {
        return false;
    }
    *mean_p = strcmp(s, "mean") == 0;
    *loop_p = strcmp(s, "loop") == 0;
    return true;
}

double bt_stat(double *times, int n, bool mean)
{
    if (mean) {
        double sum = 0;

        for (int i = 0; i < n; i++) {
            sum += times[i];
        }
        return sum / n;
    }
    /* Medians, because on a shared machine one descheduled iteration can
     * cost more than a hundred good ones. */
    qsort(times, (size_t)n, sizeof(*times), bt_cmp_double);
    return n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
}

static int64_t bt_ar_c(size_t i) { return (int64_t)(i % 7) + 2; }

static int64_t bt_ar_d(int r, int n)
{
    if (n % 2 == 1 && r == n - 1) {
        return 0;
    }
    return r % 2 == 0 ? 1 : -1;
}

int64_t bt_ar_input(int op, size_t i, int r, int n)
{
    if (op == BT_OP_PROD) {
        return (i + (size_t)r) % 2 == 0 ? 2 : 1;
    }
    return bt_ar_c(i) + bt_ar_d(r, n);
}

int64_t bt_ar_expected(int op, size_t i, int n)
{
    int64_t dmin = 0, dmax = 0, twos = 0;

    for (int r = 0; r < n && r < 3; r++) { /* d repeats with period 2 */
        dmin = bt_ar_d(r, n) < dmin ? bt_ar_d(r, n) : dmin;
        dmax = bt_ar_d(r, n) > dmax ? bt_ar_d(r, n) : dmax;
    }
    if (n == 1) {
        dmin = dmax = 0;
    }
    switch (op) {
    case BT_OP_SUM: return (int64_t)n * bt_ar_c(i);
    case BT_OP_AVG: return bt_ar_c(i);
    case BT_OP_MIN: return bt_ar_c(i) + dmin;
    case BT_OP_MAX: return bt_ar_c(i) + dmax;
    default:
        /* ranks r with (i + r) even contribute a 2 */
        twos = i % 2 == 0 ? (n + 1) / 2 : n / 2;
        return twos >= 63 ? 0 : (int64_t)1 << twos;
    }
}

int64_t bt_a2a_input(int sender, int receiver, size_t i)
{
    /* 31, 13, 7 and 31 - 13 (a sender and receiver swapped) are nonzero
     * modulo the prime 97, so any one of those mistakes, by fewer than 97
     * ranks or elements, changes the value. */
    return (int64_t)((i * 7 + (size_t)sender * 31 + (size_t)receiver * 13) %
                     97) + 1;
}

void bt_print_heads(void)
{
    printf("#                                                      "
           "  out-of-place                      in-place\n");
    printf("#        size         count      type   redop    root"
           "      time   algbw   busbw #wrong      time   algbw   "
           "busbw #wrong\n");
    printf("#         (B)    (elements)                          "
           "      (us)  (GB/s)  (GB/s)             (us)  (GB/s)  "
           "(GB/s)\n");
}

void bt_print_row_head(size_t bytes, size_t count, const char *type,
                       const char *op, int root)
{
    printf("%13zu  %12zu  %8s  %6s  %6d", bytes, count, type, op, root);
}

void bt_print_result(double time_us, int64_t wrong, size_t bytes,
                     double busbw_factor)
{
    double algbw = time_us > 0 ? (double)bytes / (time_us * 1e3) : 0;
    char w[32];

    if (wrong < 0) {
        snprintf(w, sizeof(w), "N/A");
    } else {
        snprintf(w, sizeof(w), "%" PRId64, wrong);
    }
    printf("  %8.2f  %6.2f  %6.2f  %6s", time_us, algbw, algbw * busbw_factor,
           w);
}

void bt_print_absent(void)
{
    printf("  %8s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
}

void bt_print_wrong_total(int64_t wrong_total)
{
    printf("# Out of bounds values : %" PRId64 " %s\n", wrong_total,
           wrong_total == 0 ? "OK" : "FAILED");
}

void bt_print_time_note(bool loop, bool mean)
{
    if (loop) {
        printf("# time: the iterations back to back, per call, the slowest "
               "rank's, in us\n");
    } else {
        printf("# time: %s over iterations of the slowest rank's time, in "
               "us\n", mean ? "mean" : "median");
    }
}
