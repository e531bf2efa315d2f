/*
 * A manifest's text, hostile input, to a checked manifest
 * (manifest_parse.c).
 */
#ifndef RP_CKPT_MANIFEST_PARSE_H
#define RP_CKPT_MANIFEST_PARSE_H

#include <stddef.h>

#include "ringpoint/status.h"
#include "ckpt/format/manifest.h"

/*
 * Parse @len bytes at @buf (need not be NUL-terminated, may contain
 * anything) into @m, which the caller frees with rp__ckpt_manifest_free on
 * success; on failure @m is left zeroed. Never reads outside the buffer.
 * Returns RP_OK; RP_ERR_CORRUPT with "line N: reason" in @err when the text
 * is not a valid manifest (bad CRC, truncated, out-of-range value,
 * missing/duplicate/unknown key, trailing data, ...);
 * RP_ERR_NOT_SUPPORTED for a manifest of another format version;
 * RP_ERR_NO_MEMORY. Does not log errors: a bad manifest is a finding about
 * the data, reported by the caller with the path it came from.
 */
rp_status_t rp__ckpt_manifest_parse(const void *buf, size_t len,
                                    rp__ckpt_manifest_t *m,
                                    char *err, size_t errlen);

#endif /* RP_CKPT_MANIFEST_PARSE_H */
