/*
 * What ringpoint-bench and contrib/bench/mpi-allreduce-bench share, so
 * that their tables line up column for column and their inputs, checks
 * and statistic are the same: scripts/bench-allreduce.sh sets one beside
 * the other. Plain C and libc only: the MPI benchmark links neither
 * libringpoint nor its headers.
 */
#ifndef RP_TOOLS_BENCHTABLE_H
#define RP_TOOLS_BENCHTABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Reduction operations, numbered as rp_op_t (ringpoint/types.h). */
enum { BT_OP_SUM = 0, BT_OP_PROD = 1, BT_OP_MIN = 2, BT_OP_MAX = 3,
       BT_OP_AVG = 4 };

/* "8", "1.5K", "64M", "1G", with an optional trailing B. */
bool bt_parse_size(const char *s, size_t *out);

/* The row's figure from the per-iteration times (already the MAX over
 * ranks): their median, or with @mean their mean. Sorts @times. */
double bt_stat(double *times, int n, bool mean);

/* Allreduce inputs: rank r gives c_i + d_r, c_i in 2..8, and d_r in
 * {+1, -1, 0} summing to zero over the ranks, so sums are n*c_i and
 * averages c_i exactly. PROD uses 1s and 2s so products are powers of
 * two. Every type, bfloat16 included, holds every input and result. */
int64_t bt_ar_input(int op, size_t i, int r, int n);
int64_t bt_ar_expected(int op, size_t i, int n);

/* All-to-all inputs: element @i of the block that rank @sender sends to
 * rank @receiver, in 1..97. A block moved to the wrong receiver, read from
 * the wrong sender, swapped between the two or shifted within itself
 * changes the value (for fewer than 97 ranks and shifts of fewer than 97
 * elements), and every type, uint8 and bfloat16 included, holds it. */
int64_t bt_a2a_input(int sender, int receiver, size_t i);

/* CLOCK_MONOTONIC in microseconds: what every tool times with. */
double bt_now_us(void);

/* -m's argument: median, mean or loop into *@mean_p and *@loop_p; false
 * (both untouched) for anything else. */
bool bt_parse_stat(const char *s, bool *mean_p, bool *loop_p);

/* The "# time:" line that says which statistic the rows show: the loop's
 * time per call (-m loop), or the median or mean of the calls timed alone. */
void bt_print_time_note(bool loop, bool mean);

/* nccl-tests' table: the column heads (out of place, then in place), a
 * row's first columns, one placement's columns, the closing count. */
void bt_print_heads(void);
void bt_print_row_head(size_t bytes, size_t count, const char *type,
                       const char *op, int root);
void bt_print_result(double time_us, int64_t wrong /* -1: N/A */,
                     size_t bytes, double busbw_factor);
void bt_print_wrong_total(int64_t wrong_total);
/* The columns of a placement the collective does not have (reduce-scatter
 * and all-to-all have no in-place form): "N/A" in each, one word per
 * column as every other row, so that a reader of the table (bench-
 * allreduce.sh) finds no number there and counts none. */
void bt_print_absent(void);

#endif /* RP_TOOLS_BENCHTABLE_H */
