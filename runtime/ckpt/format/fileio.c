/*
 * EINTR- and short-transfer-safe I/O wrappers for checkpoint files.
 */
#include "ckpt/format/fileio.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"

/* Linux transfers at most this much per call; asking for less keeps the
 * count well inside ssize_t on every platform. */
#define RP_IO_MAX_XFER (1u << 30)

rp_status_t rp__ckpt_pread_full(int fd, void *buf, size_t len, uint64_t off,
                                size_t *got_p, const char *what)
{
    unsigned char *p = buf;
    size_t done = 0;

    *got_p = 0;
    while (done < len) {
        size_t want = len - done;
        ssize_t n;

        if (want > RP_IO_MAX_XFER) {
            want = RP_IO_MAX_XFER;
        }
        if (off + done > (uint64_t)INT64_MAX) {
            rp_error("read %s: offset beyond the largest file", what);
            return RP_ERR_IO;
        }
        n = pread(fd, p + done, want, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            rp_error("read %s at offset %llu: %s", what,
                     (unsigned long long)(off + done), strerror(errno));
            return RP_ERR_IO;
        }
        if (n == 0) {
            break; /* end of file */
        }
        done += (size_t)n;
    }
    *got_p = done;
    return RP_OK;
}

rp_status_t rp__ckpt_write_full(int fd, const void *buf, size_t len,
                                const char *what)
{
    const unsigned char *p = buf;

    while (len > 0) {
        size_t want = len > RP_IO_MAX_XFER ? RP_IO_MAX_XFER : len;
        ssize_t n = write(fd, p, want);

        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            rp_error("write %s: %s", what, strerror(errno));
            return RP_ERR_IO;
        }
        if (n == 0) {
            /* Should not happen for regular files; do not spin. */
            rp_error("write %s: no progress", what);
            return RP_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_fsync(int fd, const char *what)
{
    while (fsync(fd) != 0) {
        if (errno == EINTR) {
            continue;
        }
        rp_error("fsync %s: %s", what, strerror(errno));
        return RP_ERR_IO;
    }
    return RP_OK;
}

rp_status_t rp__ckpt_close(int *fd_p, const char *what)
{
    int fd = *fd_p;

    if (fd < 0) {
        return RP_OK;
    }
    *fd_p = -1;
    if (close(fd) != 0 && errno != EINTR) {
        rp_error("close %s: %s", what, strerror(errno));
        return RP_ERR_IO;
    }
    return RP_OK;
}
