/*
 * The liveness check of remote hosts (transport/liveness.c): two checkers
 * in one process ping each other over loopback; one that goes away is lost
 * after the timeout, one that never answered is not judged. About 8 s.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "transport/liveness.h"

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    nanosleep(&ts, NULL);
}

/* The test's hosts are this one: ping at the loopback address, whatever
 * interfaces the machine has. */
static void to_loopback(rp_live_card_t *card)
{
    card->addrs[0] = htonl(INADDR_LOOPBACK);
    card->addrs[1] = 0;
}

static void test_answering_peer_then_lost(void **state)
{
    rp_live_card_t ca, cb;
    rp_live_t *a, *b;
    uint64_t silent = 0;
    double t0;

    (void)state;
    assert_int_equal(rp__live_create(0, 2, 2, &ca, &a), RP_OK);
    assert_int_equal(rp__live_create(1, 2, 2, &cb, &b), RP_OK);
    assert_int_not_equal(ca.port, 0);
    assert_int_not_equal(ca.token, cb.token);
    to_loopback(&ca);
    to_loopback(&cb);
    rp__live_watch(a, 1, &cb);
    rp__live_watch(b, 0, &ca);
    /* Longer than the timeout, answered all along. */
    for (int i = 0; i < 30; i++) {
        assert_false(rp__live_lost(a, 1, &silent));
        assert_false(rp__live_lost(b, 0, &silent));
        sleep_ms(100);
    }
    assert_false(rp__live_lost(a, 0, &silent)); /* not watched: itself */
    /* b goes away without a word: a calls it lost after the timeout. */
    rp__live_destroy(b);
    t0 = now_s();
    while (!rp__live_lost(a, 1, &silent) && now_s() - t0 < 15) {
        sleep_ms(50);
    }
    assert_true(rp__live_lost(a, 1, &silent));
    assert_true(silent >= 2000);
    assert_true(now_s() - t0 >= 1.0); /* the last answer came <= 1 ping ago */
    rp__live_destroy(a);
}

static void test_never_answered_is_not_judged(void **state)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    rp_live_card_t ca, silent_card = {0};
    uint64_t silent = 0;
    rp_live_t *a;
    int fd;

    (void)state;
    /* A socket that receives the pings and never answers: what a
     * firewall dropping the answers looks like. */
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    assert_true(fd >= 0);
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
    silent_card.port = sa.sin_port;
    silent_card.token = 42;
    to_loopback(&silent_card);
    assert_int_equal(rp__live_create(0, 2, 1, &ca, &a), RP_OK);
    rp__live_watch(a, 1, &silent_card);
    sleep_ms(2500);
    assert_false(rp__live_lost(a, 1, &silent));
    rp__live_destroy(a);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_answering_peer_then_lost),
        cmocka_unit_test(test_never_answered_is_not_judged),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
