/*
 * What a stalled wait logs: the state the kernel holds on this process's
 * TCP connections, which tells where a message that never came was lost.
 */
#include "config.h"

#include "transport/ucx_int.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>

/* "address:port" of @sa into @buf. */
static void rp_ucx_sockaddr_str(const struct sockaddr_storage *sa, char *buf,
                                size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;

    if (sa->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(buf, len, "%s:%u", host, port);
}

/* A wait timed out: say what the kernel holds on this process's TCP
 * connections (UCX's, and any other of the process). Bytes unread here
 * mean the worker stopped reading a connection that has data (an event
 * lost below us); bytes this side has not got rid of mean the peer stopped
 * reading; nothing anywhere means the message was never sent. A stall
 * that is rare cannot be waited for with a debugger attached: this is all
 * a log will ever say of it. */
void rp__ucx_describe_stall(rp_transport_t *tp, int peer)
{
    rp_ucx_t *ucx = tp->impl;
    DIR *d = opendir("/proc/self/fd");
    int conns = 0, busy = 0;
    struct dirent *e;

    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        struct sockaddr_storage la, pa;
        socklen_t alen = sizeof(la), plen = sizeof(pa);
        int fd, type = 0, inq = 0, outq = 0, listening = 0;
        socklen_t olen = sizeof(type);
        char lbuf[64], pbuf[64];
        struct stat st;

        if (e->d_name[0] < '0' || e->d_name[0] > '9') {
            continue;
        }
        fd = atoi(e->d_name);
        if (fd == dirfd(d) || fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
            getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) != 0 ||
            type != SOCK_STREAM ||
            getsockname(fd, (struct sockaddr *)&la, &alen) != 0 ||
            (la.ss_family != AF_INET && la.ss_family != AF_INET6)) {
            continue;
        }
        olen = sizeof(listening);
        if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) == 0 &&
            listening) {
            continue;
        }
        if (getpeername(fd, (struct sockaddr *)&pa, &plen) != 0) {
            continue;
        }
        conns++;
        if (ioctl(fd, SIOCINQ, &inq) != 0) {
            inq = 0;
        }
        if (ioctl(fd, SIOCOUTQ, &outq) != 0) {
            outq = 0;
        }
        if (inq == 0 && outq == 0) {
            continue;
        }
        busy++;
        rp_ucx_sockaddr_str(&la, lbuf, sizeof(lbuf));
        rp_ucx_sockaddr_str(&pa, pbuf, sizeof(pbuf));
        rp_warn("transport: stalled wait for rank %d: TCP %s -> %s (fd %d): "
                "%d bytes unread here, %d not yet taken by the other end",
                peer, lbuf, pbuf, fd, inq, outq);
    }
    closedir(d);
    rp_warn("transport: stalled wait for rank %d: %d of %d TCP connections "
            "of this process hold data; the UCX worker %s", peer, busy, conns,
            ucp_worker_progress(ucx->worker) != 0 ? "found work when "
            "progressed once more" : "has nothing to do");
}
