/*
 * What ringpoint-bench and mpi-allreduce-bench check reduce-scatter and
 * all-to-all against (runtime/tools/benchtable.c): the all-to-all input
 * tells every misrouted block from the right one, the reduce-scatter's
 * expected block is the reduction of the inputs at its indices, and a
 * row without an in-place form keeps the table's column count with no
 * number where the in-place figures stand.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/benchtable.h"

/* The check counts an element wrong when its value differs from the one
 * expected: every mistake of one kind, by fewer than 97 ranks or
 * elements, must change the value, and every value must fit uint8 and
 * bfloat16 exactly (1..256). */
static void test_a2a_input_tells_misrouted_blocks(void **state)
{
    (void)state;
    for (int s = 0; s < 96; s++) {
        for (int r = 0; r < 96; r++) {
            for (size_t i = 0; i < 4; i++) {
                int64_t v = bt_a2a_input(s, r, i);

                assert_true(v >= 1 && v <= 97);
                for (int d = 1; s + d < 96; d++) {
                    /* read from the wrong sender */
                    assert_int_not_equal(v, bt_a2a_input(s + d, r, i));
                }
                for (int d = 1; r + d < 96; d++) {
                    /* delivered to the wrong receiver */
                    assert_int_not_equal(v, bt_a2a_input(s, r + d, i));
                }
                if (s != r) {
                    /* sender and receiver swapped */
                    assert_int_not_equal(v, bt_a2a_input(r, s, i));
                }
                for (size_t d = 1; d < 97; d++) {
                    /* shifted within the block */
                    assert_int_not_equal(v, bt_a2a_input(s, r, i + d));
                }
            }
        }
    }
}

/* Reduce-scatter's block q of @per elements at n ranks is the allreduce's
 * expected result at indices q*per.., and that is the reduction of the
 * ranks' inputs there: checked against the inputs themselves. */
static void test_reduce_scatter_blocks_are_the_reduction(void **state)
{
    (void)state;
    for (int n = 1; n <= 9; n++) {
        const size_t per = 13;

        for (int op = BT_OP_SUM; op <= BT_OP_AVG; op++) {
            for (size_t i = 0; i < per * (size_t)n; i++) {
                int64_t acc = bt_ar_input(op, i, 0, n);

                for (int r = 1; r < n; r++) {
                    int64_t x = bt_ar_input(op, i, r, n);

                    acc = op == BT_OP_PROD ? acc * x
                          : op == BT_OP_MIN ? (x < acc ? x : acc)
                          : op == BT_OP_MAX ? (x > acc ? x : acc)
                                            : acc + x;
                }
                if (op == BT_OP_AVG) {
                    assert_int_equal(acc % n, 0); /* exact in every type */
                    acc /= n;
                }
                assert_int_equal(bt_ar_expected(op, i, n), acc);
            }
        }
    }
}

/* One row as the tools print it, read back as bench-allreduce.sh's awk
 * reads it: 13 words, the in-place ones ($10-$13) no number. */
static void test_absent_columns_keep_the_row_shape(void **state)
{
    char path[] = "/tmp/rp-test-benchtable.XXXXXX";
    char line[512], *words[32], *save = NULL;
    int fd = mkstemp(path), saved, n = 0;
    FILE *f;

    (void)state;
    assert_true(fd >= 0);
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fd, STDOUT_FILENO) >= 0);
    bt_print_row_head(4092, 1023, "float", "sum", -1);
    bt_print_result(12.5, 0, 4092, 2.0 / 3);
    bt_print_absent();
    printf("\n");
    fflush(stdout);
    assert_true(dup2(saved, STDOUT_FILENO) >= 0);
    close(saved);
    close(fd);
    f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof(line), f));
    fclose(f);
    unlink(path);
    for (char *w = strtok_r(line, " \n", &save); w != NULL && n < 32;
         w = strtok_r(NULL, " \n", &save)) {
        words[n++] = w;
    }
    assert_int_equal(n, 13);
    assert_string_equal(words[0], "4092");
    assert_string_equal(words[8], "0");
    for (int k = 9; k < 13; k++) {
        char *end;

        (void)strtod(words[k], &end);
        assert_true(end == words[k]); /* no number to average or plot */
        assert_string_equal(words[k], "N/A");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a2a_input_tells_misrouted_blocks),
        cmocka_unit_test(test_reduce_scatter_blocks_are_the_reduction),
        cmocka_unit_test(test_absent_columns_keep_the_row_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
