/*
 * Liveness of remote peers' hosts: a UDP ping thread (see liveness.h).
 */
#include "config.h"

#include "transport/liveness.h"
#include "util/log.h"
#include "util/parse.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define RP_LIVE_MAGIC 0x72706c76u /* "rplv" */
#define RP_LIVE_PING 1u
#define RP_LIVE_PONG 2u

/* One datagram. A ping carries the token and rank of the process it is
 * for (so that a stray one, or one for an earlier process on the same
 * port, goes unanswered); the pong echoes them. */
typedef struct rp_live_msg {
    uint32_t magic;
    uint32_t kind;
    uint64_t token;
    int32_t rank;
    int32_t pad;
} rp_live_msg_t;

struct rp_live {
    int rank;
    int size;
    int fd;
    int wake_fd; /* eventfd: a new peer to ping, or quit */
    uint64_t timeout_ms;
    uint64_t interval_ms;
    uint64_t token;
    pthread_t thread;
    bool started;
    atomic_bool quit;
    /* When the thread last went round its loop: a thread that has not run
     * for a while (the process was stopped) blames no one. */
    _Atomic uint64_t tick_ms;
    atomic_bool *watched;   /* set after cards[i], read before it */
    rp_live_card_t *cards;
    _Atomic uint64_t *heard_ms; /* last answer, or when watching began */
    /* Whether a peer ever answered: one that never did is not judged (a
     * firewall that drops UDP between the hosts must not make every run
     * fail after the timeout); the application's thread warns once. */
    atomic_bool *answered;
    bool *warned;
};

static uint64_t rp_live_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* This host's IPv4 addresses that another host could reach: up, not
 * loopback. */
static void rp_live_addrs(rp_live_card_t *card)
{
    struct ifaddrs *ifs, *ifa;
    int n = 0;

    if (getifaddrs(&ifs) != 0) {
        rp_debug("liveness: getifaddrs: %s", strerror(errno));
        return;
    }
    for (ifa = ifs; ifa != NULL && n < RP_LIVE_MAX_ADDRS; ifa = ifa->ifa_next) {
        if (ifa->ifa_addr == NULL || ifa->ifa_addr->sa_family != AF_INET ||
            !(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK)) {
            continue;
        }
        card->addrs[n++] =
            ((const struct sockaddr_in *)(const void *)ifa->ifa_addr)
                ->sin_addr.s_addr;
    }
    freeifaddrs(ifs);
}

void rp__live_addr_str(const rp_live_card_t *card, char *buf, size_t len)
{
    struct in_addr a = {.s_addr = card->addrs[0]};

    if (card->addrs[0] == 0 || inet_ntop(AF_INET, &a, buf, (socklen_t)len) ==
                                   NULL) {
        snprintf(buf, len, "no address");
    }
}

static void rp_live_send(rp_live_t *l, uint32_t addr, uint16_t port,
                         uint32_t kind, uint64_t token, int rank)
{
    struct sockaddr_in to;
    rp_live_msg_t m = {RP_LIVE_MAGIC, kind, token, rank, 0};

    memset(&to, 0, sizeof(to));
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = addr;
    to.sin_port = port;
    /* Lost datagrams are what this counts; a failed send is one more. */
    (void)sendto(l->fd, &m, sizeof(m), MSG_DONTWAIT,
                 (const struct sockaddr *)&to, sizeof(to));
}

static void rp_live_ping_all(rp_live_t *l)
{
    for (int i = 0; i < l->size; i++) {
        const rp_live_card_t *c = &l->cards[i];

        if (!atomic_load_explicit(&l->watched[i], memory_order_acquire)) {
            continue;
        }
        for (int a = 0; a < RP_LIVE_MAX_ADDRS && c->addrs[a] != 0; a++) {
            rp_live_send(l, c->addrs[a], c->port, RP_LIVE_PING, c->token, i);
        }
    }
}

static void rp_live_receive(rp_live_t *l, uint64_t now)
{
    struct sockaddr_in from;
    socklen_t flen;
    rp_live_msg_t m;
    ssize_t n;

    for (;;) {
        flen = sizeof(from);
        n = recvfrom(l->fd, &m, sizeof(m), MSG_DONTWAIT,
                     (struct sockaddr *)&from, &flen);
        if (n < 0) {
            return; /* EAGAIN: drained; anything else: next round */
        }
        if ((size_t)n != sizeof(m) || m.magic != RP_LIVE_MAGIC ||
            from.sin_family != AF_INET) {
            continue;
        }
        if (m.kind == RP_LIVE_PING && m.token == l->token &&
            m.rank == l->rank) {
            rp_live_send(l, from.sin_addr.s_addr, from.sin_port, RP_LIVE_PONG,
                         l->token, l->rank);
        } else if (m.kind == RP_LIVE_PONG && m.rank >= 0 && m.rank < l->size &&
                   atomic_load_explicit(&l->watched[m.rank],
                                        memory_order_acquire) &&
                   m.token == l->cards[m.rank].token) {
            atomic_store(&l->heard_ms[m.rank], now);
            atomic_store(&l->answered[m.rank], true);
        }
    }
}

/* The count starts again for everyone: no answer could have come while
 * this thread did not run. */
static void rp_live_restart_counts(rp_live_t *l, uint64_t now)
{
    for (int i = 0; i < l->size; i++) {
        atomic_store(&l->heard_ms[i], now);
    }
}

static void *rp_live_main(void *arg)
{
    rp_live_t *l = arg;
    uint64_t now, prev, next_ping, wake;
    struct pollfd pfd[2];
    bool any = false;

    prev = next_ping = rp_live_now_ms();
    while (!atomic_load(&l->quit)) {
        now = rp_live_now_ms();
        if (now - prev > 2 * l->interval_ms + 1000) {
            rp_debug("liveness: this process did not run for %llu ms",
                     (unsigned long long)(now - prev));
            rp_live_restart_counts(l, now);
        }
        prev = now;
        atomic_store(&l->tick_ms, now);
        if (now >= next_ping) {
            rp_live_ping_all(l);
            next_ping = now + l->interval_ms;
        }
        pfd[0].fd = l->fd;
        pfd[0].events = POLLIN;
        pfd[1].fd = l->wake_fd;
        pfd[1].events = POLLIN;
        pfd[0].revents = pfd[1].revents = 0;
        /* Nothing watched: sleep until a peer is added, still answering
         * pings from others. */
        for (int i = 0; !any && i < l->size; i++) {
            any = atomic_load_explicit(&l->watched[i], memory_order_relaxed);
        }
        if (poll(pfd, 2, any ? (int)(next_ping - now) + 1 : -1) < 0 &&
            errno != EINTR) {
            rp_debug("liveness: poll: %s", strerror(errno));
        }
        if (pfd[1].revents & POLLIN) {
            if (read(l->wake_fd, &wake, sizeof(wake)) < 0) {
                wake = 0; /* another thread read it: no matter */
            }
            next_ping = 0; /* ping a new peer at once */
            prev = rp_live_now_ms();
        }
        if (pfd[0].revents & POLLIN) {
            rp_live_receive(l, rp_live_now_ms());
        }
    }
    return NULL;
}

/* The memory of @l (its socket and thread are gone). */
static void rp_live_free(rp_live_t *l)
{
    free(l->warned);
    free(l->answered);
    free(l->heard_ms);
    free(l->cards);
    free(l->watched);
    free(l);
}

rp_status_t rp__live_create(int rank, int size, uint64_t timeout_s,
                            rp_live_card_t *card, rp_live_t **live_p)
{
    struct sockaddr_in sa;
    socklen_t salen = sizeof(sa);
    rp_live_t *l;

    memset(card, 0, sizeof(*card));
    l = calloc(1, sizeof(*l));
    if (l == NULL) {
        rp_error("liveness: out of memory");
        return RP_ERR_NO_MEMORY;
    }
    l->rank = rank;
    l->size = size;
    l->fd = l->wake_fd = -1;
    l->timeout_ms = timeout_s * 1000u;
    /* About ten pings per timeout: one lost datagram, or a second's
     * scheduling delay on a loaded machine, is far from a verdict. */
    l->interval_ms = l->timeout_ms / 10;
    l->interval_ms = l->interval_ms < 100   ? 100
                     : l->interval_ms > 1000 ? 1000
                                             : l->interval_ms;
    l->watched = calloc((size_t)size, sizeof(*l->watched));
    l->cards = calloc((size_t)size, sizeof(*l->cards));
    l->heard_ms = calloc((size_t)size, sizeof(*l->heard_ms));
    l->answered = calloc((size_t)size, sizeof(*l->answered));
    l->warned = calloc((size_t)size, sizeof(*l->warned));
    if (l->watched == NULL || l->cards == NULL || l->heard_ms == NULL ||
        l->answered == NULL || l->warned == NULL) {
        rp_error("liveness: out of memory for %d peers", size);
        goto err_free;
    }
    if (getrandom(&l->token, sizeof(l->token), GRND_NONBLOCK) !=
        (ssize_t)sizeof(l->token)) {
        l->token = rp_live_now_ms() ^ ((uint64_t)getpid() << 32);
    }
    l->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->fd < 0) {
        rp_error("liveness: socket: %s", strerror(errno));
        goto err_free;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(l->fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        getsockname(l->fd, (struct sockaddr *)&sa, &salen) != 0) {
        rp_error("liveness: binding a UDP socket: %s", strerror(errno));
        goto err_close;
    }
    l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (l->wake_fd < 0) {
        rp_error("liveness: eventfd: %s", strerror(errno));
        goto err_close;
    }
    atomic_store(&l->tick_ms, rp_live_now_ms());
    if (pthread_create(&l->thread, NULL, rp_live_main, l) != 0) {
        rp_error("liveness: cannot start its thread");
        goto err_close;
    }
    l->started = true;
    card->token = l->token;
    card->port = sa.sin_port;
    rp_live_addrs(card);
    *live_p = l;
    return RP_OK;

err_close:
    if (l->wake_fd >= 0) {
        close(l->wake_fd);
    }
    close(l->fd);
err_free:
    rp_live_free(l);
    return RP_ERR_TRANSPORT;
}

/* An eventfd write fails only when the counter is full: awake anyway. */
static void rp_live_wake(rp_live_t *l)
{
    uint64_t one = 1;

    if (write(l->wake_fd, &one, sizeof(one)) < 0) {
        rp_debug("liveness: waking the thread: %s", strerror(errno));
    }
}

void rp__live_watch(rp_live_t *l, int peer, const rp_live_card_t *card)
{
    if (l == NULL || peer < 0 || peer >= l->size || card->port == 0 ||
        card->addrs[0] == 0 ||
        atomic_load_explicit(&l->watched[peer], memory_order_relaxed)) {
        return;
    }
    l->cards[peer] = *card;
    atomic_store(&l->heard_ms[peer], rp_live_now_ms());
    atomic_store_explicit(&l->watched[peer], true, memory_order_release);
    rp_live_wake(l);
}

bool rp__live_lost(rp_live_t *l, int peer, uint64_t *silent_ms)
{
    uint64_t now, heard;

    if (l == NULL || peer < 0 || peer >= l->size ||
        !atomic_load_explicit(&l->watched[peer], memory_order_acquire)) {
        return false;
    }
    now = rp_live_now_ms();
    heard = atomic_load(&l->heard_ms[peer]);
    if (now <= heard || now - heard <= l->timeout_ms) {
        return false;
    }
    /* Our own thread has not run lately: it may not have seen answers
     * that came (this process was stopped and just went on). */
    if (now - atomic_load(&l->tick_ms) > 2 * l->interval_ms + 1000) {
        return false;
    }
    if (!atomic_load(&l->answered[peer])) {
        if (!l->warned[peer]) {
            char addr[INET_ADDRSTRLEN];

            rp__live_addr_str(&l->cards[peer], addr, sizeof(addr));
            rp_warn("liveness: rank %d (%s) never answered a probe in %llu "
                    "s: UDP between these hosts is blocked? A lost host "
                    "there is noticed only after RINGPOINT_COLL_TIMEOUT",
                    peer, addr, (unsigned long long)(now - heard) / 1000u);
            l->warned[peer] = true;
        }
        return false;
    }
    *silent_ms = now - heard;
    return true;
}

void rp__live_destroy(rp_live_t *l)
{
    if (l == NULL) {
        return;
    }
    if (l->started) {
        atomic_store(&l->quit, true);
        rp_live_wake(l);
        pthread_join(l->thread, NULL);
    }
    close(l->wake_fd);
    close(l->fd);
    rp_live_free(l);
}
