/*
 * ringpoint-bench: collective performance in nccl-tests' shape.
 *
 *   ringpoint-bench [allreduce|broadcast|allgather|reduce_scatter|alltoall]
 *                   [-b MIN] [-e MAX]
 *                   [-f FACTOR] [-n ITERS] [-w WARMUP] [-c 0|1] [-o OP]
 *                   [-d DTYPE] [-r ROOT] [-m median|mean|loop] [-G N]
 *                   [-Z fp16|bf16] [-O cpu|sleep] [-D host|cuda]
 *
 * Started by a PMIx launcher (srun --mpi=pmix, mpirun); rank 0 prints one
 * row per size, out of place then in place, with nccl-tests' columns, so
 * that tables from ringpoint, nccl-tests and contrib/bench/ line up.
 *
 * Timing: every iteration is timed on its own on every rank, the
 * per-iteration times are combined with a MAX allreduce after the loop
 * (the collective is done when its slowest rank is), and the row shows
 * the median of those (or their mean with -m mean). Medians, because on a
 * shared 2-core VM one descheduled iteration can cost more than a hundred
 * good ones. Iterations run back to back, with no barrier between them,
 * like a training loop; in place, the input is restored before each
 * iteration, outside the timed region, so every iteration reduces the
 * same values.
 *
 * -m loop times the iterations back to back instead, as nccl-tests does:
 * one clock read each side of the loop, after a barrier, the loop's time
 * per call (its MAX over ranks), the input prepared once. For the smallest
 * operations that is the sustained rate of calls, where one call's time
 * alone mostly shows which rank arrived first (a broadcast's root returns
 * before its readers have the data); in place, the values of later
 * iterations drift, so the checked call runs after the loop, prepared.
 *
 * Reduce-scatter and all-to-all follow nccl-tests: the row's size is a
 * rank's whole send buffer (n blocks; reduce-scatter's output is one
 * block, all-to-all's n), busbw = algbw * (n-1)/n. The library has no
 * in-place form of either (the buffers must not overlap), so their
 * in-place columns say N/A and the average takes the out-of-place figure.
 *
 * Checking (-c 1, the default): inputs are small integers chosen so that
 * every type, bfloat16 included, holds every result exactly, sums and
 * averages included (the ranks' offsets cancel); #wrong counts the elements
 * of the last iteration's result, summed over ranks, whose bits differ from
 * the exact expected value. The exit status is 1 if any is wrong, 2 if a
 * call failed, 64 for a usage error. With -Z (wire compression) sums of
 * those integers stay exact in fp16 and bf16, so the check still holds.
 *
 * Overlap (-O cpu|sleep): per size, the blocking out-of-place time (comm),
 * then the non-blocking call alone (start + wait), "compute" lasting as
 * long as comm alone, and the two together: start, compute, wait (total).
 * cpu: a calibrated arithmetic loop on the application's core; sleep: the
 * application's thread sleeps, as it waits on a GPU kernel, leaving the
 * CPU to the collective. The fraction of communication hidden is OSU's measure,
 * 1 - (total - compute) / comm, clamped to [0, 1]: 1 when the
 * communication vanished behind the computation, 0 when it added its full
 * time.
 *
 * Device mode (-D cuda): the buffers are on the task's GPU, allocated,
 * filled and read back through the GPU module (runtime/gpu/devbuf.h), so
 * this tool never links CUDA; the collectives go to NCCL on a stream of
 * the context's own. Each iteration is timed from the enqueue to the end
 * of a wait on that stream, so times are the GPU's, not the enqueue's;
 * input copies are waited for before the clock starts. The check copies
 * the result back to the host and compares it as the host mode does.
 * Where there is no GPU path (no module, no driver, no device) the tool
 * exits 77, automake's code for a skip, with one line saying why.
 */
#include "config.h"

#include "bench.h"
#include "benchtable.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int g_rank, g_size;
rp_context_h g_ctx;

static double bus_factor(coll_t c, int n)
{
    switch (c) {
    case COLL_ALLREDUCE: return 2.0 * (n - 1) / n;
    case COLL_ALLGATHER:
    case COLL_REDUCE_SCATTER:
    case COLL_ALLTOALL: return (double)(n - 1) / n;
    default: return 1.0;
    }
}

int main(int argc, char **argv)
{
    rp_context_attr_t attr;
    opts_t o;
    rp_status_t st;
    int rc, exit_status = 0;
    double bw_sum = 0, bf;
    int bw_rows = 0;
    int64_t wrong_total = 0;

    setvbuf(stdout, NULL, _IOLBF, 0);
    rc = parse_args(argc, argv, &o);
    if (rc != 0) {
        return rc == 1 ? 0 : rc;
    }
    st = rp_init(NULL, &g_ctx);
    if (st != RP_OK) {
        fprintf(stderr, "ringpoint-bench: rp_init: %s\n", rp_status_string(st));
        return 2;
    }
    memset(&attr, 0, sizeof(attr));
    attr.field_mask = RP_CONTEXT_ATTR_FIELD_RANK | RP_CONTEXT_ATTR_FIELD_SIZE |
                      RP_CONTEXT_ATTR_FIELD_NODE_COUNT;
    rp_context_query(g_ctx, &attr);
    g_rank = attr.rank;
    g_size = attr.size;
    if (o.tune_path != NULL) {
        exit_status = bench_tune(&o);
        rp_finalize(g_ctx);
        return exit_status;
    }
    if (o.coll == COLL_BROADCAST && o.root >= g_size) {
        if (g_rank == 0) {
            fprintf(stderr, "ringpoint-bench: root %d is not a rank (0..%d)\n",
                    o.root, g_size - 1);
        }
        rp_finalize(g_ctx);
        return 64;
    }
    if (o.device) {
        rc = device_open();
        if (rc != 0) {
            rp_finalize(g_ctx);
            return rc;
        }
    }
    bf = bus_factor(o.coll, g_size);

    if (g_rank == 0) {
        const char *cname = coll_name(o.coll);
        printf("# ringpoint-bench %s: %s, %d ranks on %d nodes, minBytes %zu "
               "maxBytes %zu step %g iters %d warmup %d check %d%s%s\n",
               PACKAGE_VERSION, cname, g_size, attr.node_count, o.min_bytes,
               o.max_bytes, o.factor, o.iters, o.warmup, o.check ? 1 : 0,
               o.groups > 1 && o.coll == COLL_ALLREDUCE ? " grouped" : "",
               o.device ? " device cuda" : "");
        if (o.device) {
            int dev = -1;

            (void)rp_cuda_device(g_ctx, &dev);
            printf("# device: buffers on each task's GPU (rank 0: CUDA device "
                   "%d), NCCL; time: enqueue to the end of a stream wait\n",
                   dev);
        }
        if (o.groups > 1 && o.coll == COLL_ALLREDUCE) {
            printf("# each row: %d buffers in one rp_allreduce_group\n", o.groups);
        }
        bt_print_time_note(o.loop, o.mean);
        if (o.compression != RP_COMPRESSION_DEFAULT) {
            printf("# wire compression: %s\n",
                   o.compression == RP_COMPRESSION_FP16   ? "fp16"
                   : o.compression == RP_COMPRESSION_BF16 ? "bf16"
                                                          : "none");
        }
        printf("#\n");
        if (o.overlap) {
            printf("# overlap: comm = blocking, nb = non-blocking start+wait, "
                   "compute = %s as long as comm, total = start, compute, "
                   "wait;\n# hidden = 1 - (total - compute) / comm\n",
                   o.overlap == OV_SLEEP ? "a sleep" : "a loop");
            printf("#        size         count      type   redop    root"
                   "      comm        nb   compute     total  hidden #wrong\n");
            printf("#         (B)    (elements)                          "
                   "      (us)      (us)      (us)      (us)     (%%)\n");
        } else {
            bt_print_heads();
        }
    }
    if (o.overlap == OV_CPU) {
        calibrate();
    }

    for (int ti = 0; ti < (o.all_types ? N_PRINTED_TYPES : 1); ti++) {
        rp_dtype_t t = o.all_types ? bench_type(ti) : o.dtype;
        size_t es = rp_dtype_size(t);
        bool rooted = o.coll == COLL_BROADCAST;
        int nops = coll_has_op(o.coll) && o.all_ops ? RP_OP_COUNT : 1;
        /* Allgather, reduce-scatter and all-to-all cut the buffer into one
         * block per rank: whole elements per block. */
        bool blocks = o.coll == COLL_ALLGATHER ||
                      o.coll == COLL_REDUCE_SCATTER || o.coll == COLL_ALLTOALL;
        const char *oname;

        for (int oi = 0; oi < nops; oi++) {
            rp_op_t op = o.all_ops ? (rp_op_t)oi : o.op;
            size_t last = (size_t)-1;

            oname = coll_has_op(o.coll) ? op_name(op) : "none";
            for (double sz = (double)o.min_bytes; sz <= (double)o.max_bytes;
                 sz *= o.factor) {
                /* Whole elements, whole blocks per rank. Size and the
                 * printed count are nccl-tests': the whole buffer (for
                 * allgather the output, for reduce-scatter and all-to-all
                 * the send buffer); per_rank is the call's count. */
                size_t unit = es * (blocks ? (size_t)g_size : 1);
                size_t bytes = (size_t)sz / unit * unit;
                size_t count = bytes / es;
                size_t per_rank = blocks ? count / (size_t)g_size : count;
                size_t out_bytes =
                    coll_out_count(o.coll, per_rank, g_size) * es;
                result_t res[2];
                bufs_t b;
                double *times;
                int ip_avg;

                if (bytes == last) {
                    continue;
                }
                last = bytes;
                times = calloc((size_t)o.iters, sizeof(*times));
                if (times == NULL ||
                    !bufs_prepare(&o, t, op,
                                  coll_in_count(o.coll, per_rank, g_size),
                                  out_bytes, &b)) {
                    fprintf(stderr, "ringpoint-bench: rank %d: out of %s "
                            "memory at %zu B\n", g_rank,
                            o.device ? "device" : "host", bytes);
                    exit_status = 2;
                    free(times);
                    goto out;
                }
                for (int ip = 0; ip < 2; ip++) {
                    if (ip == 1 && o.overlap) {
                        overlap_t ov;

                        res[1].failed = false;

                        if (!run_overlap(&o, t, op, per_rank, b.in, b.out,
                                         res[0].time_us, times, &ov)) {
                            res[1].failed = true;
                        } else if (g_rank == 0) {
                            printf("%13zu  %12zu  %8s  %6s  %6d  %8.2f  %8.2f"
                                   "  %8.2f  %8.2f  %6.1f  %5" PRId64 "\n",
                                   bytes, count, type_name(t), oname,
                                   rooted ? o.root : -1, res[0].time_us,
                                   ov.nb, ov.compute, ov.total,
                                   100 * ov.hidden, res[0].wrong);
                        }
                        res[1].time_us = 0;
                        res[1].wrong = -1;
                    } else if (ip == 1 && !coll_has_inplace(o.coll)) {
                        /* No in-place form: nothing to time or check. */
                        res[1] = (result_t){.time_us = 0, .wrong = -1};
                    } else {
                        run_row(&o, t, op, per_rank, ip == 1, &b, times,
                                &res[ip]);
                    }
                    if (res[ip].failed) {
                        exit_status = 2;
                        free(times);
                        bufs_free(&o, &b);
                        goto out;
                    }
                    if (res[ip].wrong > 0) {
                        wrong_total += res[ip].wrong;
                    }
                }
                if (g_rank == 0 && !o.overlap) {
                    bt_print_row_head(bytes, count, type_name(t), oname,
                                      rooted ? o.root : -1);
                    bt_print_result(res[0].time_us, res[0].wrong, bytes, bf);
                    if (coll_has_inplace(o.coll)) {
                        bt_print_result(res[1].time_us, res[1].wrong, bytes,
                                        bf);
                    } else {
                        bt_print_absent();
                    }
                    printf("\n");
                }
                /* The average is of the in-place figures, as nccl-tests'
                 * (the last placement run); without an in-place form, of
                 * the out-of-place ones. */
                ip_avg = coll_has_inplace(o.coll) ? 1 : 0;
                if (!o.overlap && res[ip_avg].time_us > 0) {
                    bw_sum += (double)bytes / (res[ip_avg].time_us * 1e3) * bf;
                    bw_rows++;
                }
                free(times);
                bufs_free(&o, &b);
                if (sz == 0) {
                    sz = 1.0 / o.factor; /* 0 then 1, 2, ... */
                }
            }
        }
    }
    if (g_rank == 0) {
        bt_print_wrong_total(wrong_total);
        printf("# Avg bus bandwidth    : %g\n", bw_rows ? bw_sum / bw_rows : 0.0);
        printf("#\n");
    }
    if (wrong_total > 0 && exit_status == 0) {
        exit_status = 1;
    }
out:
    if (o.device) {
        device_close();
    }
    rp_finalize(g_ctx);
    return exit_status;
}

