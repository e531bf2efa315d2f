/*
 * Test helper: write one complete checkpoint with the format layer's
 * one-process writer, so the tool tests have real checkpoints to inspect.
 *   ckpt_fixture DIR STEP WORLD STREAM_BYTES PER_RANK_BYTES [CHUNK_BYTES]
 */
#include "config.h"

#include "ckpt/write/write_local.h"
#include "util/parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    uint64_t step, world, stream_len, per_rank_len, chunk = 0;
    rp__ckpt_region_t regions[2];
    rp__ckpt_write_opts_t opts = {0};
    const void **per_rank;
    unsigned char *stream, *ranks;
    uint32_t nregions = 0, r;
    rp_status_t status;
    uint64_t i;

    if ((argc != 6 && argc != 7) ||
        rp__parse_uint(argv[2], 0, UINT64_MAX, &step, NULL, 0) != RP_OK ||
        rp__parse_uint(argv[3], 1, 4096, &world, NULL, 0) != RP_OK ||
        rp__parse_uint(argv[4], 0, 1ull << 32, &stream_len, NULL, 0) != RP_OK ||
        rp__parse_uint(argv[5], 0, 1ull << 24, &per_rank_len, NULL, 0) != RP_OK ||
        (argc == 7 &&
         rp__parse_uint(argv[6], 4096, 1ull << 30, &chunk, NULL, 0) != RP_OK)) {
        fprintf(stderr, "usage: ckpt_fixture DIR STEP WORLD STREAM_BYTES "
                        "PER_RANK_BYTES [CHUNK_BYTES]\n");
        return 2;
    }
    memset(regions, 0, sizeof(regions));
    if (stream_len > 0) {
        strcpy(regions[nregions].name, "model");
        regions[nregions].kind = RP_CKPT_REGION_REPLICATED;
        regions[nregions++].size = stream_len;
    }
    if (per_rank_len > 0) {
        strcpy(regions[nregions].name, "rng");
        regions[nregions].kind = RP_CKPT_REGION_PER_RANK;
        regions[nregions++].size = per_rank_len;
    }
    stream = malloc(stream_len + 1);
    ranks = malloc(per_rank_len * world + 1);
    per_rank = calloc(world, sizeof(*per_rank));
    if (stream == NULL || ranks == NULL || per_rank == NULL) {
        fprintf(stderr, "ckpt_fixture: out of memory\n");
        return 2;
    }
    /* Content that depends on the step, so two fixtures differ. */
    for (i = 0; i < stream_len; i++) {
        stream[i] = (unsigned char)(i * 31 + step);
    }
    for (r = 0; r < world; r++) {
        memset(ranks + r * per_rank_len, (int)(r + step), per_rank_len);
        per_rank[r] = ranks + r * per_rank_len;
    }
    opts.chunk_size = chunk;
    opts.job_id = 4242;
    status = rp__ckpt_write_local(argv[1], step, (uint32_t)world, regions,
                                  nregions, stream_len ? stream : NULL,
                                  stream_len, per_rank_len ? per_rank : NULL,
                                  per_rank_len, &opts, NULL);
    free(per_rank);
    free(ranks);
    free(stream);
    if (status != RP_OK) {
        fprintf(stderr, "ckpt_fixture: %s\n", rp_status_string(status));
        return 1;
    }
    return 0;
}
