/*
 * A planned manifest to its canonical text (manifest_encode.c).
 */
#ifndef RP_CKPT_MANIFEST_ENCODE_H
#define RP_CKPT_MANIFEST_ENCODE_H

#include <stddef.h>

#include "ringpoint/status.h"
#include "ckpt/format/manifest.h"

/*
 * Encode @m (planned, CRCs filled) into a malloc'd, NUL-terminated text in
 * *@text_p of *@len_p bytes (NUL not counted); free() it. Checks the whole
 * manifest first: RP_ERR_INVALID_ARG with a reason if it breaks a rule,
 * RP_ERR_NO_MEMORY.
 */
rp_status_t rp__ckpt_manifest_encode(const rp__ckpt_manifest_t *m,
                                     char **text_p, size_t *len_p,
                                     char *err, size_t errlen);

#endif /* RP_CKPT_MANIFEST_ENCODE_H */
