/*
 * Small, careful wrappers around the file system calls the checkpoint code
 * makes: they retry on EINTR and on short transfers, and log failures with
 * the name of the file involved (the caller passes it, since a file
 * descriptor has none), so that every call site checks one status instead
 * of reasoning about errno, partial counts and interrupted calls.
 */
#ifndef RP_CKPT_FILEIO_H
#define RP_CKPT_FILEIO_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/*
 * Read up to @len bytes at offset @off. *@got_p is set to the bytes read,
 * which is less than @len only at end of file. Returns RP_ERR_IO (logged,
 * naming @what) on a read error.
 */
rp_status_t rp__ckpt_pread_full(int fd, void *buf, size_t len, uint64_t off,
                                size_t *got_p, const char *what);

/* Write all @len bytes at the current offset. RP_ERR_IO (logged) on error,
 * including a write that makes no progress (ENOSPC reported as such). */
rp_status_t rp__ckpt_write_full(int fd, const void *buf, size_t len,
                                const char *what);

/* fsync(2), logged on failure. */
rp_status_t rp__ckpt_fsync(int fd, const char *what);

/* close(2) *@fd_p if it is >= 0 and set it to -1. An error is logged and
 * returned (after fsync it means data may be lost, e.g. on NFS); EINTR is
 * not an error on Linux, where the descriptor is closed regardless. */
rp_status_t rp__ckpt_close(int *fd_p, const char *what);

#endif /* RP_CKPT_FILEIO_H */
