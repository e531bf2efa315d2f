/*
 * The restore reader's shared types (internal to runtime/ckpt/read/): one
 * candidate checkpoint being read, the verdicts the ranks reduce, and the
 * sizes of its reads; each file declares its functions in its own header.
 *
 *   reader.c        rp__ckpt_restore: candidates, agreement, apply
 *   reader_plan.c   one candidate: the read plan, this rank's stripe
 *   reader_shard.c  shard bytes by whole chunks, CRC-checked, O_DIRECT
 *   reader_find.c   rp__ckpt_find: the table of the checkpoint restore
 *                   would choose
 */
#ifndef RP_CKPT_READER_INT_H
#define RP_CKPT_READER_INT_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ckpt/engine/engine.h"
#include "ckpt/format/layout.h"
#include "ckpt/format/manifest.h"

struct iovec;

#define RP_RD_DIR_FLAGS  (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define RP_RD_FILE_FLAGS (O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
/* Read unit for bytes outside the wanted range (still CRC-checked). */
#define RP_RD_BUF (4u << 20)
/* Bytes received per allgather round when rebuilding the stream (all
 * ranks' pieces together; each rank sends its share, at most
 * RP_RD_ROUND_MAX and at least RP_RD_ROUND_MIN). Small enough that the
 * receive buffer stays in cache for the scatter copy that reads it, and
 * below the sizes where the transport's allgather slows down (past a few
 * MiB received per round, ringpoint-bench allgather shows it). */
#define RP_RD_ROUND_BYTES (2u << 20)
#define RP_RD_ROUND_MAX (1u << 20)
#define RP_RD_ROUND_MIN (64u << 10)
/* Longest single read of whole chunks: long requests for the device, and
 * the bytes still in cache for their CRC (where a hypervisor copies
 * O_DIRECT reads through the CPU); longer runs gained nothing once the
 * CRCs followed each read on the same thread. */
#define RP_RD_RUN (16u << 20)
/* Direct reads need the file offset, length and buffer on this. */
#define RP_RD_ALIGN 4096u

/* Verdicts, reduced with MIN. */
#define RP_RD_SKIP  (-2) /* a shard failed its check on some rank: the
                            checkpoint is incomplete or corrupt, whatever
                            its table, so this dominates FATAL: try an
                            older one, as when the catalog skipped it */
#define RP_RD_FATAL (-1) /* does not fit the registered regions */
#define RP_RD_BAD   0    /* unreadable or corrupt: try an older one */
#define RP_RD_OK    1

typedef struct rp__rd_rep {
    uint64_t old_off; /* in the checkpoint's stream */
    uint64_t voff;    /* in the restore stream */
    uint64_t size;
    void *addr;
    bool device;      /* GPU memory (ckpt/engine/devstage.h) */
} rp__rd_rep_t;

/* The part of restore-stream bytes [@v, @v + @n) that lies in region @p:
 * false if none, else [*@s_p, *@t_p). The one region walk of the stripe
 * read (reader_plan.c) and the scatter of the exchange (reader.c). */
static inline bool rp__rd_clip(const rp__rd_rep_t *p, uint64_t v, uint64_t n,
                               uint64_t *s_p, uint64_t *t_p)
{
    const uint64_t end = p->voff + p->size;

    if (v + n <= p->voff || v >= end) {
        return false;
    }
    *s_p = v < p->voff ? p->voff : v;
    *t_p = v + n > end ? end : v + n;
    return true;
}

typedef struct rp__rd_perrank {
    uint64_t off;     /* in the per-rank section */
    uint64_t size;
    void *addr;
    bool device;
    unsigned char *tmp; /* where it is read before the agreement */
} rp__rd_perrank_t;

/* One candidate checkpoint being read. */
typedef struct rp_rd {
    rp__ckpt_engine_t *e;
    const bool *want;
    char name[RP_CKPT_NAME_MAX];
    char label[RP_CKPT_LABEL_MAX];
    int cfd;
    rp__ckpt_manifest_t m;
    rp__rd_rep_t *reps;
    uint32_t nreps;
    uint64_t rlen;         /* R: bytes of the restore stream */
    uint64_t voff, vlen;   /* this rank's stripe of it */
    unsigned char *vbuf;
    rp__rd_perrank_t *pers;
    uint32_t npers;
    int shard_fd;          /* the shard file open now, and its rank */
    int shard_dfd;         /* the same with O_DIRECT; -1: refused */
    uint32_t shard_rank;
    unsigned char *tmp;    /* RP_RD_BUF */
    uint64_t round;        /* bytes per rank per allgather round */
    uint64_t maxlen;       /* longest stripe of the restore stream */
    unsigned char *send, *recv;
    struct iovec **iov;    /* [size][niov[j]]: stripe j's pieces in the */
    size_t *niov;          /* regions, for the one-copy exchange */
    bool direct;           /* the stripes went that way */
    uint64_t bytes_read;
    uint64_t read_ns, crc_ns, gather_ns, scatter_ns; /* phases */
} rp__rd_t;

#endif /* RP_CKPT_READER_INT_H */
