/*
 * The snapshot copy on several threads (pcopy.c). One thread's copy is
 * bound by the latency of its own cache misses, far below what a
 * server's memory gives; the async stall is that copy, so where a rank has cores to
 * spare it splits the copy between them. Where it has none (ranks as
 * many as cores) it copies alone.
 *
 * The pool's threads (format/worker.h) are the engine's for its lifetime,
 * idle between checkpoints, and inherit the rank's CPU binding.
 */
#ifndef RP_CKPT_PCOPY_H
#define RP_CKPT_PCOPY_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* @len bytes to @dst: from @src, or zeros where @src is NULL. */
typedef struct rp__ckpt_span {
    unsigned char *dst;
    const void *src;
    size_t len;
} rp__ckpt_span_t;

typedef struct rp__ckpt_pcopy rp__ckpt_pcopy_t;

/*
 * How many threads a rank's snapshot copy uses: @asked when not 0
 * (RINGPOINT_CKPT_COPY_THREADS, 1 to 64, checked by the settings table),
 * else the cores this rank may use and does not share (its CPU binding's
 * when the launcher bound it; else the machine's divided by @local_size,
 * the ranks of this node), at most 8 (the memory saturates before).
 */
void rp__ckpt_pcopy_threads(uint64_t asked, int local_size, unsigned *n_p);

/* A pool of @n - 1 threads beside the caller's; NULL for @n <= 1 or when
 * no thread could be made (the caller then copies alone). */
rp__ckpt_pcopy_t *rp__ckpt_pcopy_new(unsigned n);

/* Copy @spans on the pool (or on the caller alone when @p is NULL or the
 * bytes are too few to share); returns when every byte is in place. */
void rp__ckpt_pcopy_run(rp__ckpt_pcopy_t *p, const rp__ckpt_span_t *spans,
                        size_t nspans);

/* End the threads; NULL is fine. */
void rp__ckpt_pcopy_free(rp__ckpt_pcopy_t *p);

#endif /* RP_CKPT_PCOPY_H */
