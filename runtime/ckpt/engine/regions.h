/*
 * The registered region table (regions.c): registration, the stream and
 * per-rank layout, the check that every rank registered the same table,
 * and the segments a shard is written from.
 */
#ifndef RP_CKPT_REGIONS_H
#define RP_CKPT_REGIONS_H

#include <stddef.h>
#include <stdint.h>

#include "ckpt/engine/engine.h"
#include "ckpt/format/cursor.h"

rp_status_t rp__ckpt_regions_add(rp__ckpt_engine_t *e, const char *name,
                                 void *addr, size_t size,
                                 rp__ckpt_region_kind_t kind);
/* Point region @name at @addr / @size (rp_region_update). */
rp_status_t rp__ckpt_regions_update(rp__ckpt_engine_t *e, const char *name,
                                    void *addr, size_t size);
/* Drop region @name (rp_region_unregister). */
rp_status_t rp__ckpt_regions_remove(rp__ckpt_engine_t *e, const char *name);
/* Check on every rank that all registered the same table (collective,
 * always one allgather, whatever this rank's e->checked says: ranks that
 * disagree get an error, never a mismatched collective). Sets e->checked. */
rp_status_t rp__ckpt_regions_check(rp__ckpt_engine_t *e);
/* Segments of this rank's payload: stripe [@off, @off+@len) of the stream,
 * then the per-rank section. *@segs_p is malloc'd. */
rp_status_t rp__ckpt_regions_segments(const rp__ckpt_engine_t *e,
                                      uint64_t off, uint64_t len,
                                      rp__ckpt_seg_t **segs_p,
                                      size_t *nsegs_p);
long rp__ckpt_regions_find(const rp__ckpt_engine_t *e, const char *name);

#endif /* RP_CKPT_REGIONS_H */
