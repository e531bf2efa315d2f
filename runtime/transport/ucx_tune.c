/*
 * The UCX transport's choices for TCP networks, made before ucp_init from
 * UCX_TLS, the job's layout and this host's devices: where the rendezvous
 * protocol starts, which network devices UCX may use, and the pipelining
 * unit the collectives should cut messages into. The measurements behind
 * them are in doc/benchmarks.md and doc/reliability.md.
 */
#include "config.h"

#include "transport/ucx_int.h"
#include "util/log.h"

#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>


/* Does UCX_TLS (the same on every rank: launchers pass the environment
 * on) confine the job to TCP, with no shared memory and no RDMA? That is
 * the inter-node emulation, and a cluster on plain Ethernet. A list that
 * starts with '^' excludes, so says nothing of the kind. */
static bool rp_ucx_tls_tcp_only(void)
{
    static const char *const others[] = {
        "all", "sm", "shm", "posix", "sysv", "cma", "knem", "xpmem",
        "rc", "rc_v", "rc_x", "rc_verbs", "rc_mlx5", "dc", "dc_x",
        "dc_mlx5", "ud", "ud_v", "ud_x", "ud_verbs", "ud_mlx5", "ib",
        "mlx5", "ugni", "gga", "rdmacm",
    };
    const char *tls = getenv("UCX_TLS");
    char buf[256], *tok, *save = NULL;
    bool tcp = false;

    if (tls == NULL || tls[0] == '^' || strlen(tls) >= sizeof(buf)) {
        return false;
    }
    strcpy(buf, tls);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (strcmp(tok, "tcp") == 0) {
            tcp = true;
            continue;
        }
        for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
            if (strncmp(tok, others[i], strlen(others[i])) == 0) {
                return false;
            }
        }
    }
    return tcp;
}

/* Does this host have an RDMA device (that UCX could use)? */
static bool rp_ucx_has_rdma(void)
{
    struct stat st;

    return stat("/sys/class/infiniband", &st) == 0;
}

/* The network between nodes is TCP: UCX_TLS says so, or the job spans
 * nodes and this one has no RDMA device. (Only the rendezvous threshold
 * hangs on the second test, and it need not agree between ranks.) */
static bool rp_ucx_net_is_tcp(const rp_bootstrap_t *bs)
{
    if (rp_ucx_tls_tcp_only()) {
        return true;
    }
    if (getenv("UCX_TLS") != NULL || bs->local_size <= 0 ||
        bs->local_size >= bs->size) {
        return false;
    }
    return !rp_ucx_has_rdma();
}

/* Whether network interface @name is a Linux bridge. */
static bool rp_ucx_is_bridge(const char *name)
{
    char path[64 + IF_NAMESIZE];
    struct stat st;

    snprintf(path, sizeof(path), "/sys/class/net/%s/bridge", name);
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The network interfaces UCX may use, as a UCX_NET_DEVICES list into
 * @buf: those that are up and have an address, bridges left out. False
 * (use UCX's default, every interface) when no bridge has an address, or
 * when leaving them out would leave no interface but loopback (a host whose
 * only address is on its bridge, as virtual machine hosts often are).
 *
 * Why: UCX 1.13 opens a TCP interface on every network device it finds at
 * ucp_init and spreads a peer's lanes over them, and a bridge is often
 * made and removed by others while a job runs (container and virtual
 * network tools; on the test machine, other sessions' emulated hosts, whose
 * bridge 10.x.y.254 in the root namespace lives as long as their cluster).
 * When it goes, the connections over its address lose their route: the
 * kernel retransmits into the void and every rank of the ring waits until
 * RINGPOINT_COLL_TIMEOUT, or until TCP gives up and UCX reports "Endpoint
 * timeout". Removing a bridge while a job ran reproduced that stall, and
 * leaving bridges out cured it (doc/reliability.md). UCX itself leaves
 * bridges out by
 * default from 1.17 on (UCX_TCP_BRIDGE_ENABLE=n); this is that choice for
 * the UCX this library runs with. A user's UCX_NET_DEVICES is kept. */
static bool rp_ucx_net_devices(char *buf, size_t len)
{
    struct ifaddrs *ifs, *ifa;
    bool bridges = false, other = false;
    size_t used = 0;

    if (getifaddrs(&ifs) != 0) {
        return false;
    }
    buf[0] = '\0';
    for (ifa = ifs; ifa != NULL; ifa = ifa->ifa_next) {
        const char *name = ifa->ifa_name;
        size_t n = strlen(name);
        const char *p;

        if (ifa->ifa_addr == NULL || !(ifa->ifa_flags & IFF_UP) ||
            (ifa->ifa_addr->sa_family != AF_INET &&
             ifa->ifa_addr->sa_family != AF_INET6)) {
            continue;
        }
        if (rp_ucx_is_bridge(name)) {
            bridges = true;
            continue;
        }
        other = other || !(ifa->ifa_flags & IFF_LOOPBACK);
        /* Once each (an interface has an entry per address). */
        for (p = strstr(buf, name); p != NULL; p = strstr(p + 1, name)) {
            if ((p == buf || p[-1] == ',') && (p[n] == ',' || p[n] == '\0')) {
                break;
            }
        }
        if (p != NULL || used + n + 2 > len) {
            continue;
        }
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 used > 0 ? "," : "", name);
    }
    freeifaddrs(ifs);
    return bridges && other && used > 0;
}

/* More ranks on this node than CPUs, as the collectives judge it: the
 * count, unless RINGPOINT_COLL_OVERSUBSCRIBED (@forced: 1, 0; -1 unset)
 * says where it misleads. */
static bool rp_ucx_oversubscribed(const rp_bootstrap_t *bs, int forced)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (forced >= 0) {
        return forced == 1;
    }
    return cpus > 0 && bs->local_size > cpus;
}

/* May another rank of the job share this host, and so be reached through
 * shared memory? What the bootstrap learnt from PMIx where it could tell
 * (the ranks of this node; in jobs of one rank per node the host names the
 * ranks traded: several slurmd of one machine, slurmd -N, are several
 * nodes). Where it could not (a launcher that names nodes otherwise than
 * after their hosts, an uneven job whose node holds one rank), a guess:
 * yes when the Slurm node is not named after the host. A node named
 * otherwise on a real cluster then only costs the TCP threshold below (a
 * 128 KiB message by rendezvous over TCP). *@why_p says which. */
static bool rp_ucx_may_share_host(const rp_bootstrap_t *bs, const char **why_p)
{
    const char *node = getenv("SLURMD_NODENAME");
    char host[256], *dot;

    if (bs->host_share != RP_HOST_SHARE_UNKNOWN) {
        *why_p = bs->host_share_why;
        return bs->host_share == RP_HOST_SHARE_YES;
    }
    if (node == NULL || *node == '\0' ||
        gethostname(host, sizeof(host) - 1) != 0) {
        *why_p = "no facts from PMIx and no Slurm node name: guessed alone";
        return false;
    }
    host[sizeof(host) - 1] = '\0';
    dot = strchr(host, '.');
    if (dot != NULL && strchr(node, '.') == NULL) {
        *dot = '\0'; /* node001.cluster is node001 */
    }
    if (strcmp(node, host) != 0) {
        *why_p = "no facts from PMIx, and the Slurm node is not named after "
                 "its host: guessed shared";
        return true;
    }
    *why_p = "no facts from PMIx, and the Slurm node is named after its "
             "host: guessed alone";
    return false;
}

/* Where UCX's rendezvous protocol should start, or NULL for UCX's own
 * choice; *@why_p says what decided it.
 *
 * Over TCP, a rendezvous (an RTS, then the data pulled by emulated RDMA)
 * costs round trips that an eager send does not, and UCX's automatic
 * threshold sends small messages that way. Only for large messages does
 * the rendezvous' zero-copy send win its round trips back (eager copies
 * every byte through UCX's bounce buffers), and a message just under that
 * point still pays the handshake and the flush's round trip for nothing:
 * so rendezvous from 512 KiB where every link is TCP.
 *
 * Within a node with more ranks than cores, each rendezvous handshake
 * waits for the peer to be scheduled: eager up to 64 KiB. A local choice:
 * a receiver takes either protocol.
 *
 * Where shared memory may carry some of the traffic, 64 KiB too, not 512:
 * a ring segment sent eagerly through UCX's shared-memory FIFO stalled
 * the sender until some later event woke it. */
static const char *rp_ucx_rndv_thresh(const rp_bootstrap_t *bs, bool shared,
                                      int oversubscribed, const char **why_p)
{
    bool tcp = rp_ucx_net_is_tcp(bs);

    if (tcp && (rp_ucx_tls_tcp_only() || !shared)) {
        *why_p = rp_ucx_tls_tcp_only() ? "UCX_TLS confines UCX to TCP"
                                       : "TCP between nodes";
        return "512k";
    }
    if (tcp || rp_ucx_oversubscribed(bs, oversubscribed)) {
        *why_p = tcp ? "TCP between nodes"
                     : "more ranks on this node than cores";
        return "64k";
    }
    *why_p = NULL;
    return NULL;
}

/* Where TCP may carry the job's traffic and no RDMA device could be left
 * out by the list (UCX_NET_DEVICES names every kind of network device):
 * no bridges, see rp_ucx_net_devices. */
static void rp_ucx_tune_devices(ucp_config_t *config)
{
    char devices[512];
    ucs_status_t st;

    if (getenv("UCX_NET_DEVICES") != NULL ||
        (!rp_ucx_tls_tcp_only() && rp_ucx_has_rdma()) ||
        !rp_ucx_net_devices(devices, sizeof(devices))) {
        return;
    }
    st = ucp_config_modify(config, "NET_DEVICES", devices);
    rp_debug("transport: UCX network devices %s (bridges left out: one "
             "that goes away mid-job stalls the connections over it)%s%s",
             devices, st == UCS_OK ? "" : ": not set, ",
             st == UCS_OK ? "" : ucs_status_string(st));
}

size_t rp__ucx_tune_config(const rp_bootstrap_t *bs, int oversubscribed,
                           ucp_config_t *config)
{
    const char *rndv, *why, *share_why;
    bool shared;
    ucs_status_t st;

    shared = rp_ucx_may_share_host(bs, &share_why);
    rndv = rp_ucx_rndv_thresh(bs, shared, oversubscribed, &why);
    rp_ucx_tune_devices(config);
    if (getenv("UCX_RNDV_THRESH") != NULL) {
        rp_debug("transport: UCX rendezvous from UCX_RNDV_THRESH=%s, the "
                 "user's", getenv("UCX_RNDV_THRESH"));
        return RP_UCX_OWED_MIN_BYTES;
    }
    if (rndv == NULL) {
        rp_debug("transport: UCX rendezvous threshold left to UCX (no TCP "
                 "network, not oversubscribed); peers on this host: %s "
                 "(%s)", shared ? "yes" : "no", share_why);
        return RP_UCX_OWED_MIN_BYTES;
    }
    st = ucp_config_modify(config, "RNDV_THRESH", rndv);
    if (st != UCS_OK) {
        rp_debug("transport: cannot set UCX_RNDV_THRESH: %s",
                 ucs_status_string(st));
        return RP_UCX_OWED_MIN_BYTES;
    }
    rp_debug("transport: UCX rendezvous from %s (%s); peers on this host: "
             "%s (%s)", rndv, why, shared ? "yes" : "no", share_why);
    return (size_t)atoi(rndv) * 1024;
}

/* Over TCP a segment costs a system call and a few headers whatever its
 * size, so bigger ones pay: 1 MiB measured best (doc/benchmarks.md). From
 * UCX_TLS alone, which every rank sees alike. */
size_t rp__ucx_seg_hint(void)
{
    return rp_ucx_tls_tcp_only() ? 1024 * 1024 : 0;
}
