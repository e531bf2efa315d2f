/*
 * Verdicts about a checkpoint and their one wording (verdict.h). Kept
 * apart from the checks so that the restore reader, which checks chunk
 * CRCs behind its own reads, judges and words a bad chunk exactly as the
 * full check does.
 */
#include "ckpt/catalog/verdict.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "ckpt/format/shard.h"
#include "util/str.h"

const char *rp__ckpt_state_name(rp__ckpt_state_t state)
{
    switch (state) {
    case RP_CKPT_COMPLETE:   return "complete";
    case RP_CKPT_INCOMPLETE: return "incomplete";
    case RP_CKPT_CORRUPT:    return "corrupt";
    case RP_CKPT_INFLIGHT:   return "in-flight";
    }
    return "invalid";
}

void rp__ckpt_verdict_init(rp__ckpt_verdict_t *v, const char *ckpt)
{
    memset(v, 0, sizeof(*v));
    v->state = RP_CKPT_COMPLETE;
    v->offset = RP_CKPT_NO_OFFSET;
    if (ckpt != NULL) {
        (void)rp__strlcpy(v->ckpt, ckpt, sizeof(v->ckpt));
    }
}

rp_status_t rp__ckpt_verdict_set(rp__ckpt_verdict_t *v, rp__ckpt_state_t state,
                                 const char *file, const char *part,
                                 uint64_t offset, const char *expected,
                                 const char *found, const char *fmt, ...)
{
    va_list ap;

    v->state = state;
    (void)rp__strlcpy(v->file, file != NULL ? file : "", sizeof(v->file));
    (void)rp__strlcpy(v->part, part != NULL ? part : "", sizeof(v->part));
    v->offset = offset;
    (void)rp__strlcpy(v->expected, expected != NULL ? expected : "",
                      sizeof(v->expected));
    (void)rp__strlcpy(v->found, found != NULL ? found : "",
                      sizeof(v->found));
    va_start(ap, fmt);
    (void)vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
    va_end(ap);
    return RP_ERR_CORRUPT;
}

const char *rp__ckpt_verdict_format(const rp__ckpt_verdict_t *v, char *buf,
                                    size_t len)
{
    if (len == 0) {
        return buf;
    }
    if (v->state == RP_CKPT_COMPLETE) {
        buf[0] = '\0';
        return buf;
    }
    /* "ckpt/file part: detail"; the directory itself is "ckpt: detail". */
    (void)snprintf(buf, len, "%s%s%s%s%s: %s", v->ckpt,
                   v->ckpt[0] != '\0' && v->file[0] != '\0' ? "/" : "",
                   v->file, v->part[0] != '\0' ? " " : "", v->part,
                   v->detail);
    return buf;
}

rp_status_t rp__ckpt_judge_chunk(rp__ckpt_verdict_t *v,
                                 const rp__ckpt_manifest_t *m, uint32_t rank,
                                 uint32_t chunk, uint32_t crc)
{
    uint32_t want = m->shards[rank].chunk_crc[chunk];
    char file[RP_CKPT_NAME_MAX], part[32], exp[48], got[48];
    /* Chunk N of a shard starts at file offset 4096 + N * chunk_size: the
     * exact bytes to inspect. */
    uint64_t off = RP_CKPT_SHARD_HEADER_SIZE + (uint64_t)chunk * m->chunk_size;

    if (crc == want) {
        return RP_OK;
    }
    rp__ckpt_name_shard(rank, file, sizeof(file));
    (void)snprintf(part, sizeof(part), "chunk %u", chunk);
    (void)snprintf(exp, sizeof(exp), "crc32c 0x%08x", want);
    (void)snprintf(got, sizeof(got), "crc32c 0x%08x", crc);
    return rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, part, off, exp, got,
                                "crc32c 0x%08x != manifest 0x%08x (at file "
                                "offset %llu)", crc, want,
                                (unsigned long long)off);
}

void rp__ckpt_verdict_report(const rp__ckpt_verdict_t *v,
                             rp__ckpt_state_t *state_p, char *msg,
                             size_t msglen)
{
    if (state_p != NULL) {
        *state_p = v->state;
    }
    if (msg != NULL && msglen > 0) {
        (void)rp__ckpt_verdict_format(v, msg, msglen);
    }
}
