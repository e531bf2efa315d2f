/*
 * The manifest's words and the length of its text: the header keys in
 * their one order, the region kinds' names, and the exact size of a
 * planned manifest's canonical text (manifest_grammar.h). The lowest of
 * the manifest's files: the model's planner needs the size to refuse a
 * manifest over RP_CKPT_MANIFEST_MAX before anything is written, and the
 * encoder and the parser need the words, so they all call down here and
 * nothing here calls them.
 */
#include "ckpt/format/manifest_grammar.h"

#include <string.h>

#include "util/str.h"

const char *const rp__mf_keys[RP_MF_NKEYS] = {
    "step", "world_size", "slurm_job_id", "slurm_restart_count",
    "created_ns", "checkpoint_id", "chunk_size", "stripe_unit",
    "stream_length", "per_rank_length", "regions"
};

const char *const rp__mf_kind_names[2] = {"replicated", "per_rank"};

/* Decimal digits of @v. */
static uint64_t rp__mf_digits(uint64_t v)
{
    uint64_t d = 1;

    while (v >= 10) {
        v /= 10;
        d++;
    }
    return d;
}

/* "KEY VALUE\n" */
static uint64_t rp__mf_key_len(unsigned key, uint64_t value)
{
    return strlen(rp__mf_keys[key]) + 1 + rp__mf_digits(value) + 1;
}

/* The digits of the first chunk numbers of @nlines CRC lines (0, 8, 16,
 * ...): every number has one, and one more for each power of ten it
 * reaches; O(digits), not O(lines), so that planning 2^26 chunks is free. */
static uint64_t rp__mf_crc_line_digits(uint64_t nlines)
{
    uint64_t sum = nlines, p10 = 10;

    for (unsigned j = 1; j < 20; j++, p10 *= 10) {
        /* Lines whose first chunk number is at least 10^j. */
        uint64_t first = (p10 + RP_CKPT_CRCS_PER_LINE - 1) /
                         RP_CKPT_CRCS_PER_LINE;

        if (first >= nlines) {
            break;
        }
        sum += nlines - first;
    }
    return sum;
}

uint64_t rp__mf_encoded_size(const rp__ckpt_manifest_t *m)
{
    /* Every line the encoder writes, in its order; the fuzz target
     * manifest_build holds the two to the same byte. */
    uint64_t n = strlen(RP_CKPT_MANIFEST_MAGIC) + 1 +
                 rp__mf_digits(m->version) + 1;
    const uint64_t header[RP_MF_NKEYS] = {
        m->step, m->world_size, m->job_id, m->restart_count, m->created_ns,
        0, m->chunk_size, m->stripe_unit, m->stream_length,
        m->per_rank_length, m->nregions};
    uint32_t i, r;

    for (i = 0; i < RP_MF_NKEYS; i++) {
        n += i == RP_MF_ID ? strlen(rp__mf_keys[i]) + 1 +
                                 2 * RP_CKPT_ID_SIZE + 1
                           : rp__mf_key_len(i, header[i]);
    }
    for (i = 0; i < m->nregions; i++) {
        const rp__ckpt_region_t *rg = &m->regions[i];

        /* "region NAME KIND OFFSET SIZE FLAGS\n", the flags 8 hex */
        n += strlen("region ") + strlen(rg->name) + 1 +
             strlen(rp__mf_kind_names[rg->kind]) + 1 +
             rp__mf_digits(rg->offset) + 1 + rp__mf_digits(rg->size) + 1 +
             8 + 1;
    }
    n += strlen("shards ") + rp__mf_digits(m->world_size) + 1;
    for (r = 0; r < m->world_size; r++) {
        const rp__ckpt_shard_info_t *sh = &m->shards[r];
        const uint64_t nlines = (sh->nchunks + RP_CKPT_CRCS_PER_LINE - 1) /
                                RP_CKPT_CRCS_PER_LINE;

        /* "shard R OFFSET LENGTH SIZE NCHUNKS\n" */
        n += strlen("shard ") + rp__mf_digits(r) + 1 +
             rp__mf_digits(sh->stripe_offset) + 1 +
             rp__mf_digits(sh->stripe_length) + 1 +
             rp__mf_digits(sh->length) + 1 + rp__mf_digits(sh->nchunks) + 1;
        /* "crc R FIRST" + " XXXXXXXX" per chunk + "\n", per line */
        n += nlines * (strlen("crc ") + rp__mf_digits(r) + 1 + 1) +
             rp__mf_crc_line_digits(nlines) +
             (uint64_t)sh->nchunks * RP_MF_MIN_CRC_BYTES;
    }
    return n + RP_MF_TRAILER_LEN;
}

rp_status_t rp__mf_check_size(const rp__ckpt_manifest_t *m, uint64_t *size_p,
                              char *err, size_t errlen)
{
    uint64_t n = rp__mf_encoded_size(m);

    if (n > RP_CKPT_MANIFEST_MAX) {
        rp__errbuf(err, errlen,
                  "the manifest would be %llu bytes, more than the limit of "
                  "%u; use a larger chunk_size", (unsigned long long)n,
                  RP_CKPT_MANIFEST_MAX);
        return RP_ERR_INVALID_ARG;
    }
    if (size_p != NULL) {
        *size_p = n;
    }
    return RP_OK;
}
