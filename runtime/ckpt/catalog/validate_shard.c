/*
 * The judgement of one shard (validate_shard.h) against its verified
 * manifest: present, of the recorded length, a header that belongs to
 * this checkpoint, rank and step, and (full) every chunk's CRC32C. The
 * whole-checkpoint check runs it on every shard; a restoring rank on the
 * shards it reads.
 */
#include "ckpt/catalog/validate_shard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt/catalog/catalog_int.h"
#include "ckpt/catalog/checkfile.h"
#include "ckpt/format/crc32c.h"
#include "ckpt/format/fileio.h"
#include "ckpt/format/shard.h"
#include "util/log.h"

/* Read size for full verification: large enough for streaming rates,
 * small enough to not matter next to a training job's memory. */
#define RP_VAL_READ_BUF (4u << 20)

/* Re-read every chunk of an open shard and judge its CRC. */
static rp_status_t rp__val_chunks(int fd, rp__ckpt_verdict_t *v,
                                  const char *file, const char *what,
                                  const rp__ckpt_manifest_t *m, uint32_t rank)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    size_t buflen = m->chunk_size < RP_VAL_READ_BUF ? (size_t)m->chunk_size
                                                    : RP_VAL_READ_BUF;
    uint64_t pos = 0;
    uint32_t c;
    unsigned char *buf;
    rp_status_t rc = RP_OK;

    if (sh->nchunks == 0) {
        return RP_OK;
    }
    buf = malloc(buflen);
    if (buf == NULL) {
        rp_error("%s: out of memory for a %zu byte read buffer", what, buflen);
        return RP_ERR_NO_MEMORY;
    }
    /* Advice only; failure changes nothing but speed. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    for (c = 0; c < sh->nchunks && rc == RP_OK; c++) {
        uint64_t left = sh->length - pos;
        uint64_t chunk = left < m->chunk_size ? left : m->chunk_size;
        uint64_t off = RP_CKPT_SHARD_HEADER_SIZE + pos;
        char part[32];
        uint32_t crc = 0;

        (void)snprintf(part, sizeof(part), "chunk %u", c);
        while (chunk > 0) {
            size_t want = chunk < buflen ? (size_t)chunk : buflen, got;

            rc = rp__ckpt_pread_full(fd, buf, want,
                                     RP_CKPT_SHARD_HEADER_SIZE + pos, &got,
                                     what);
            if (rc != RP_OK) {
                (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, part,
                                           off, NULL, NULL, "read error");
                break;
            }
            if (got != want) {
                rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, part, off,
                                          NULL, NULL,
                                          "shrank while being read");
                break;
            }
            crc = rp__crc32c(crc, buf, got);
            pos += got;
            chunk -= got;
        }
        if (rc == RP_OK) {
            rc = rp__ckpt_judge_chunk(v, m, rank, c, crc);
        }
    }
    /* A verified checkpoint is usually not read again soon; do not let a
     * scrub push the job's working set out of the page cache. */
    (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    free(buf);
    return rc;
}

/* Strip the decoder's "shard header " lead: the verdict's part says it. */
static const char *rp__val_header_why(const char *why)
{
    static const char lead[] = "shard header ";

    return strncmp(why, lead, sizeof(lead) - 1) == 0 ? why + sizeof(lead) - 1
                                                     : why;
}

/* The header field at byte @off (the layout in shard.h). */
static const char *rp__val_header_field(size_t off)
{
    static const struct {
        size_t end;
        const char *name;
    } fields[] = {
        {8, "magic"}, {12, "version"}, {16, "header size"},
        {32, "checkpoint id"}, {40, "step"}, {44, "rank"},
        {48, "world size"}, {56, "payload length"}, {60, "reserved"},
        {64, "crc32c"},
    };
    size_t i;

    for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        if (off < fields[i].end) {
            return fields[i].name;
        }
    }
    return "padding";
}

/*
 * A bad header of rank @rank's shard, judged against the header the
 * manifest says belongs there (encoded by shard.c, so the layout is not
 * restated): the decoder's reason, and the first byte that differs, its
 * field, and what was expected and found there.
 */
static rp_status_t rp__val_bad_header(rp__ckpt_verdict_t *v, const char *file,
                                      const unsigned char *hbuf,
                                      const rp__ckpt_manifest_t *m,
                                      uint32_t rank, const char *why)
{
    rp__ckpt_shard_header_t want;
    uint8_t *wbuf = malloc(RP_CKPT_SHARD_HEADER_SIZE);
    char exp[48], got[48];
    size_t i = 0;
    rp_status_t rc;

    if (wbuf != NULL) {
        rp__ckpt_manifest_shard_header(m, rank, &want);
        rp__ckpt_shard_header_encode(&want, wbuf);
        while (i < RP_CKPT_SHARD_HEADER_SIZE && hbuf[i] == wbuf[i]) {
            i++;
        }
    }
    if (wbuf == NULL || i == RP_CKPT_SHARD_HEADER_SIZE) {
        /* No memory for the comparison: the reason alone says enough. */
        free(wbuf);
        return rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header",
                                    0, NULL, NULL, "%s",
                                    rp__val_header_why(why));
    }
    (void)snprintf(exp, sizeof(exp), "byte 0x%02x", wbuf[i]);
    (void)snprintf(got, sizeof(got), "byte 0x%02x", hbuf[i]);
    rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header", i,
                              exp, got, "%s (field %s, byte %zu: 0x%02x, "
                              "expected 0x%02x)", rp__val_header_why(why),
                              rp__val_header_field(i), i, hbuf[i], wbuf[i]);
    free(wbuf);
    return rc;
}

rp_status_t rp__val_shard(int cfd, rp__ckpt_verdict_t *v,
                          const rp__ckpt_manifest_t *m, uint32_t rank,
                          bool full)
{
    const rp__ckpt_shard_info_t *sh = &m->shards[rank];
    unsigned char *hbuf;
    char file[RP_CKPT_NAME_MAX], what[2 * RP_CKPT_NAME_MAX], why[256];
    char exp[48], got_s[48];
    rp__ckpt_shard_header_t hdr;
    uint64_t want_size = RP_CKPT_SHARD_HEADER_SIZE + sh->length, fsize;
    size_t got;
    int fd;
    rp_status_t rc;

    rp__ckpt_name_shard(rank, file, sizeof(file));
    rp__val_what(v, file, what, sizeof(what));
    rc = rp__val_open(cfd, v, file, &fd, &fsize);
    if (rc != RP_OK) {
        return rc;
    }
    if (fsize != want_size) {
        /* Checked before the header: a file cut inside its header is
         * "truncated", which says more than a bad header would. */
        (void)snprintf(exp, sizeof(exp), "%llu bytes",
                       (unsigned long long)want_size);
        (void)snprintf(got_s, sizeof(got_s), "%llu bytes",
                       (unsigned long long)fsize);
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, NULL,
                                  fsize < want_size ? fsize : want_size, exp,
                                  got_s, "%s: %llu bytes, expected %llu",
                                  fsize < want_size ? "truncated"
                                                    : "too long",
                                  (unsigned long long)fsize,
                                  (unsigned long long)want_size);
        goto err_fd;
    }
    hbuf = malloc(RP_CKPT_SHARD_HEADER_SIZE);
    if (hbuf == NULL) {
        rp_error("%s: out of memory", what);
        rc = RP_ERR_NO_MEMORY;
        goto err_fd;
    }
    rc = rp__ckpt_pread_full(fd, hbuf, RP_CKPT_SHARD_HEADER_SIZE, 0, &got,
                             what);
    if (rc != RP_OK) {
        (void)rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header",
                                   0, NULL, NULL, "read error");
        goto err_hbuf;
    }
    if (got != RP_CKPT_SHARD_HEADER_SIZE) {
        rc = rp__ckpt_verdict_set(v, RP_CKPT_CORRUPT, file, "shard header",
                                  0, NULL, NULL, "shrank while being read");
        goto err_hbuf;
    }
    why[0] = '\0';
    rc = rp__ckpt_shard_header_decode(hbuf, got, &hdr, why, sizeof(why));
    if (rc == RP_OK) {
        rc = rp__ckpt_shard_header_check(&hdr, m->ckpt_id, m->step,
                                         m->world_size, rank, sh->length,
                                         why, sizeof(why));
    }
    if (rc != RP_OK) {
        rc = rp__val_bad_header(v, file, hbuf, m, rank, why);
        goto err_hbuf;
    }
    free(hbuf);
    hbuf = NULL;
    if (full) {
        rc = rp__val_chunks(fd, v, file, what, m, rank);
        if (rc != RP_OK) {
            goto err_fd;
        }
    }
    rp__cat_close_ro(&fd);
    return RP_OK;

err_hbuf:
    free(hbuf);
err_fd:
    rp__cat_close_ro(&fd);
    return rc;
}

rp_status_t rp__ckpt_verify_shard(int ckptfd, const char *label,
                                  const rp__ckpt_manifest_t *m, uint32_t rank,
                                  bool full, rp__ckpt_state_t *state_p,
                                  char *msg, size_t msglen)
{
    rp__ckpt_verdict_t v;
    rp_status_t rc;

    if (msg != NULL && msglen > 0) {
        msg[0] = '\0';
    }
    if (m == NULL || m->shards == NULL || rank >= m->world_size ||
        state_p == NULL) {
        return RP_ERR_INVALID_ARG;
    }
    rp__ckpt_verdict_init(&v, label);
    rc = rp__val_shard(ckptfd, &v, m, rank, full);
    rp__ckpt_verdict_report(&v, state_p, msg, msglen);
    return rc;
}
