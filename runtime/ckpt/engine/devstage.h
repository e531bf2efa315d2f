/*
 * Checkpoint regions in GPU memory. At the safe point this rank's device
 * bytes (its stripe's share of replicated device regions, and its whole
 * per-rank device regions) are copied into one page-locked host buffer by
 * async copies on a stream of the runtime's own, ordered after the work
 * the application enqueued on its stream; the checkpoint then reads them
 * from there exactly as it reads host regions (the segments of
 * rp__ckpt_regions_segments point into it), so the format and the commit
 * protocol do not change. Restore copies back to the device.
 *
 * The staging layout is pure arithmetic (rp__ckpt_devstage_plan) and
 * unit-tested without a GPU; the copies need the GPU module.
 */
#ifndef RP_CKPT_DEVSTAGE_H
#define RP_CKPT_DEVSTAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* Each copy starts on this boundary in the staging buffer (DMA-friendly). */
#define RP_CKPT_DEVSTAGE_ALIGN 256u

struct rp__ckpt_reg;
struct rp__ckpt_engine;
struct rp__gpu_ops;

/* One device-to-host copy: bytes [@src_off, @src_off+@len) of region
 * @reg go to [@dst_off, @dst_off+@len) of the staging buffer. */
typedef struct rp__ckpt_devcopy {
    uint32_t reg;
    uint64_t src_off;
    uint64_t dst_off;
    uint64_t len;
} rp__ckpt_devcopy_t;

typedef struct rp__ckpt_devstage {
    const struct rp__gpu_ops *ops;
    void *stream;               /* the runtime's copy stream */
    unsigned char *pinned;      /* page-locked staging */
    uint64_t pinned_len;
    rp__ckpt_devcopy_t *copies; /* one per device region at most */
    uint32_t ncopies;
    bool planned;
    uint64_t plan_off, plan_len; /* the stripe the plan is for */
    uint64_t plan_gen;          /* and the engine's layout_gen */
    rp_status_t failed;         /* a restore copy that failed */
} rp__ckpt_devstage_t;

/* The copies for stripe [@stripe_off, @stripe_off+@stripe_len) of the
 * replicated stream plus every per-rank device region, into @copies
 * (@nregs entries), and the staging bytes they need. Pure. */
void rp__ckpt_devstage_plan(const struct rp__ckpt_reg *regs, uint32_t nregs,
                            uint64_t stripe_off, uint64_t stripe_len,
                            rp__ckpt_devcopy_t *copies, uint32_t *ncopies_p,
                            uint64_t *bytes_p);

/* Where byte @off of device region @reg is staged; NULL if not planned. */
const void *rp__ckpt_devstage_at(const rp__ckpt_devstage_t *d, uint32_t reg,
                                 uint64_t off);

/* Registration of a device region: the GPU path must work on this task. */
rp_status_t rp__ckpt_devstage_register(struct rp__ckpt_engine *e,
                                       const char *name);

/* Snapshot this rank's device bytes of the pending checkpoint into
 * staging; waits for the application's stream within the collective
 * timeout (aborting NCCL past it, so a stop never hangs). */
rp_status_t rp__ckpt_devstage_out(struct rp__ckpt_engine *e);

/* Restore: @n bytes from host @src to device @dst (synchronous). A failure
 * is logged and kept in the stage's @failed. */
void rp__ckpt_devstage_in(struct rp__ckpt_engine *e, void *dst,
                          const void *src, size_t n);

void rp__ckpt_devstage_free(struct rp__ckpt_engine *e);

#endif /* RP_CKPT_DEVSTAGE_H */
