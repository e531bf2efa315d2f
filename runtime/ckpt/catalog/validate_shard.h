/*
 * The judgement of one shard (validate_shard.c).
 */
#ifndef RP_CKPT_VALIDATE_SHARD_H
#define RP_CKPT_VALIDATE_SHARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/catalog/verdict.h"
#include "ckpt/format/manifest.h"

/* Judge rank @rank's shard of the checkpoint open at @cfd against the
 * verified manifest @m into @v (with @full, every chunk's CRC). */
rp_status_t rp__val_shard(int cfd, rp__ckpt_verdict_t *v,
                          const rp__ckpt_manifest_t *m, uint32_t rank,
                          bool full);

/*
 * Check rank @rank's shard in the checkpoint directory open at @ckptfd
 * against the verified manifest @m: present, exact length, header
 * matching; with @full, every chunk's CRC. @label prefixes the message
 * (the checkpoint's name; may be NULL). Same returns as rp__ckpt_verify.
 * This is what a restarting rank runs on its own shard.
 */
rp_status_t rp__ckpt_verify_shard(int ckptfd, const char *label,
                                  const rp__ckpt_manifest_t *m, uint32_t rank,
                                  bool full, rp__ckpt_state_t *state_p,
                                  char *msg, size_t msglen);

#endif /* RP_CKPT_VALIDATE_SHARD_H */
