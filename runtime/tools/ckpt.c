/*
 * ringpoint-ckpt: look after a checkpoint directory by hand.
 *
 *   ringpoint-ckpt ls DIR [--full]     every checkpoint and its state
 *   ringpoint-ckpt verify DIR [STEP]   full CRC check of STEP, or of the
 *                                      newest down to the first complete
 *   ringpoint-ckpt show DIR STEP       the verdict and the manifest
 *   ringpoint-ckpt prune DIR --keep N  retention, as the runtime applies it
 *   ringpoint-ckpt bench --dir DIR --size BYTES   (under srun / mpirun)
 *
 * Everything is judged by content (manifest, shard headers, CRCs) by the
 * validator a restarting job uses (runtime/ckpt/catalog/validate.h), so what this
 * tool calls complete is what a job would resume from, and a bad
 * checkpoint is described in the same words. The commands are in
 * ckpt_cmd.c; the benchmark in ckpt_bench.c. Exit status: 0 good, 1 a
 * checkpoint is bad or missing, 2 usage or I/O errors.
 */
#include "config.h"

#include "ckpt_tool.h"

#include <stdio.h>
#include <string.h>

/* ckpt_bench.c */
int rp__ckpt_bench_main(int argc, char **argv);

int main(int argc, char **argv)
{
    int i;

    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 ||
                      strcmp(argv[1], "--help") == 0)) {
        rp__ckpt_tool_usage(stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "bench") == 0) {
        for (i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
                printf("Usage: ringpoint-ckpt bench --dir DIR --size "
                       "BYTES[K|M|G] [--iters N]\n\n"
                       "Under srun or mpirun: write and restore that much "
                       "state, sync and async,\nbeside raw O_DIRECT, and "
                       "print a table.\n");
                return 0;
            }
        }
        return rp__ckpt_bench_main(argc - 1, argv + 1);
    }
    if (argc < 2) {
        rp__ckpt_tool_usage(stderr);
        return 2;
    }
    return rp__ckpt_tool(argc - 1, argv + 1, stdout, stderr);
}
