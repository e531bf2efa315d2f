/*
 * A checkpoint's file opened for judgement (checkfile.c), for the
 * manifest's and the shards' checks.
 */
#ifndef RP_CKPT_CHECKFILE_H
#define RP_CKPT_CHECKFILE_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"
#include "ckpt/catalog/verdict.h"

/* "ckpt/file", for log lines about reading @file. */
void rp__val_what(const rp__ckpt_verdict_t *v, const char *file, char *buf,
                  size_t len);
/* Record and log a failure to @op (read, open, fstat) @file: not a
 * finding about it, so logged where met, and a CORRUPT verdict so that a
 * listing shows it. Returns RP_ERR_IO. */
rp_status_t rp__val_ioerr(rp__ckpt_verdict_t *v, const char *file,
                          const char *op, int err);

/*
 * Open @file of the checkpoint at @cfd for reading, as a regular file that
 * is no symbolic link; its size in *@size_p. A finding when it is missing
 * (INCOMPLETE) or not a regular file.
 */
rp_status_t rp__val_open(int cfd, rp__ckpt_verdict_t *v, const char *file,
                         int *fd_p, uint64_t *size_p);

#endif /* RP_CKPT_CHECKFILE_H */
