/*
 * Writing the files of one checkpoint: a shard from a list of memory
 * segments (checksummed on the way), the manifest (temp, fsync, rename),
 * and the commit rename. Both writers use these: the one-process writer
 * (write_local.c) and the parallel engine (commit.c), so the order of the
 * durable steps is written down once.
 *
 * Shards are written with O_DIRECT where the file system accepts it: the
 * payload goes from 4 KiB aligned buffers straight to the device, which is
 * several times faster here than the page cache plus fsync, and it does
 * not evict the job's working set. When the file system refuses O_DIRECT
 * (tmpfs, some network file systems) the write falls back to buffered I/O
 * with the same fsync, silently: the result is the same bytes on disk.
 */
#ifndef RP_CKPT_SHARDIO_H
#define RP_CKPT_SHARDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/format/cursor.h"
#include "ckpt/format/manifest.h"
#include "ckpt/format/shard.h"

/* Test hook: what rp__ckpt_shard_write does when RINGPOINT_CKPT_FAULT
 * names this rank (see engine.c). */
typedef enum rp__ckpt_fault {
    RP_CKPT_FAULT_NONE = 0,
    RP_CKPT_FAULT_WRITE = 1, /* fail with an I/O error half way */
    RP_CKPT_FAULT_KILL = 2,  /* SIGKILL this process half way */
    RP_CKPT_FAULT_STOP = 3   /* not a write fault: request a stop (engine) */
} rp__ckpt_fault_t;

/* Timings and how the bytes went, for logs and the benchmark. */
typedef struct rp__ckpt_write_stats {
    uint64_t bytes;   /* payload bytes written */
    uint64_t ns;      /* open to close, fsync included */
    /* Phases of @ns, for ringpoint-ckpt bench: the copy + CRC of the
     * payload into the bounce buffer (cursor path only), time in pwrite,
     * time in the final fsync. */
    uint64_t fill_ns, pwrite_ns, fsync_ns;
    bool direct;      /* O_DIRECT was used for the payload */
} rp__ckpt_write_stats_t;

/*
 * Create shard file @hdr->rank in the directory open at @cfd (label
 * @label for messages: the checkpoint directory's path) and write the
 * header and the payload, then fsync and close. The payload comes either
 * from @cur (copied through an internal bounce buffer, CRCs computed) or,
 * when @cur is NULL, from @buf (@hdr->payload_length bytes, 4 KiB aligned,
 * CRCs already known). A failed write leaves the partial file for the
 * caller's cleanup of the whole in-flight directory. Returns RP_OK,
 * RP_ERR_IO (logged), RP_ERR_NO_MEMORY.
 */
rp_status_t rp__ckpt_shard_write(int cfd, const char *label,
                                 const rp__ckpt_shard_header_t *hdr,
                                 rp__ckpt_cursor_t *cur, const void *buf,
                                 rp__ckpt_fault_t fault,
                                 rp__ckpt_write_stats_t *stats);

/* Commit step 3: encode @m, write .MANIFEST.tmp in @cfd, fsync, close,
 * rename to MANIFEST. */
rp_status_t rp__ckpt_manifest_write_at(int cfd, const char *label,
                                       const rp__ckpt_manifest_t *m);

/*
 * Commit steps 4 to 6: fsync the in-flight directory @cfd (closed here,
 * *@cfd_p set to -1), rename @inflight to @committed inside @dfd, fsync
 * @dfd. @dir names @dfd in messages. Returns RP_ERR_STATE if @committed
 * exists already. *@renamed_p tells the caller whether the rename
 * happened (then the in-flight name is gone even if the last fsync
 * failed).
 */
rp_status_t rp__ckpt_commit_at(int dfd, const char *dir, int *cfd_p,
                               const char *inflight, const char *committed,
                               bool *renamed_p);

/* Aligned allocation helpers for I/O buffers (4 KiB aligned, so O_DIRECT
 * can use them). rp__ckpt_io_alloc touches every page once so the first
 * checkpoint does not pay the page faults. */
void *rp__ckpt_io_alloc(size_t len);
/* The same without touching the pages, for a buffer whose first writer
 * maps them ahead of itself (the restore's reads, reader_shard.c). */
void *rp__ckpt_io_alloc_lazy(size_t len);
void rp__ckpt_io_free(void *p);

/* Nanoseconds of CLOCK_MONOTONIC. */
uint64_t rp__ckpt_now_ns(void);

#endif /* RP_CKPT_SHARDIO_H */
