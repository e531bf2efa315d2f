/*
 * Whether another rank runs on this host (bootstrap/bootstrap.c), from the
 * facts PMIx gives: the ranks of this node, the host names the ranks
 * traded, the node's name. The transport's rendezvous threshold hangs on
 * it (transport/ucx.c); a wrong "no" stalled a restore 10x (issue 13), a
 * wrong "yes" costs TCP throughput.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "bootstrap/bootstrap.h"

static rp_host_share_t decide(int rank, int size, int local_size,
                              const char *host, const char *node,
                              const char *const *hosts, char *why)
{
    rp_host_facts_t f = {
        .rank = rank, .size = size, .local_size = local_size,
        .host = host, .node = node, .hosts = hosts,
    };

    why[0] = '\0';
    return rp__bootstrap_host_share(&f, why, 160);
}

static void test_ranks_of_this_node_share_it(void **state)
{
    char why[160];

    (void)state;
    /* Whatever the names say: PMIx put two ranks on this node. */
    assert_int_equal(decide(0, 4, 2, "vm", "n1", NULL, why),
                     RP_HOST_SHARE_YES);
    assert_non_null(strstr(why, "2 ranks on this node"));
}

static void test_two_slurm_nodes_of_one_host(void **state)
{
    const char *hosts[] = {"vm", "vm"};
    char why[160];

    (void)state;
    /* slurmd -N n1 and -N n2 on one machine: one rank each. */
    assert_int_equal(decide(1, 2, 1, "vm", "n2", hosts, why),
                     RP_HOST_SHARE_YES);
    assert_non_null(strstr(why, "rank 0 of another node"));
    assert_non_null(strstr(why, "traded through PMIx"));
}

static void test_nodes_named_otherwise_than_hosts(void **state)
{
    const char *hosts[] = {"host-a7", "host-b2", "host-c9"};
    char why[160];

    (void)state;
    /* The case the old guess got wrong: Slurm calls the node gpu02, the
     * host is host-b2, and every other rank is elsewhere. */
    assert_int_equal(decide(1, 3, 1, "host-b2", "gpu02", hosts, why),
                     RP_HOST_SHARE_NO);
    assert_non_null(strstr(why, "no other rank on this host"));
}

static void test_a_rank_whose_name_is_missing_leaves_it_open(void **state)
{
    const char *hosts[] = {"host-a7", NULL, "host-c9"};
    char why[160];

    (void)state;
    /* Rank 1 might be here: no answer from the trade, and the node is not
     * named after the host. */
    assert_int_equal(decide(0, 3, 1, "host-a7", "gpu01", hosts, why),
                     RP_HOST_SHARE_UNKNOWN);
    /* But a rank seen on this host settles it even so. */
    hosts[2] = "host-a7";
    assert_int_equal(decide(0, 3, 1, "host-a7", "gpu01", hosts, why),
                     RP_HOST_SHARE_YES);
}

static void test_node_named_after_host_without_trade(void **state)
{
    char why[160];

    (void)state;
    /* mpirun names nodes after their hosts; so do most Slurm sites. */
    assert_int_equal(decide(2, 3, 1, "node007", "node007", NULL, why),
                     RP_HOST_SHARE_NO);
    /* The domain does not count. */
    assert_int_equal(decide(2, 3, 1, "node007.cluster", "node007", NULL, why),
                     RP_HOST_SHARE_NO);
    /* A prefix is not the name. */
    assert_int_equal(decide(2, 3, 1, "node0071", "node007", NULL, why),
                     RP_HOST_SHARE_UNKNOWN);
}

static void test_no_facts_is_unknown(void **state)
{
    char why[160];

    (void)state;
    /* An old server without PMIX_HOSTNAME, no trade: the transport keeps
     * its fallback. */
    assert_int_equal(decide(0, 2, 1, "vm", NULL, NULL, why),
                     RP_HOST_SHARE_UNKNOWN);
    assert_int_equal(decide(0, 2, 1, NULL, "n1", NULL, why),
                     RP_HOST_SHARE_UNKNOWN);
    assert_true(strlen(why) > 0);
}

static void test_alone_in_the_job(void **state)
{
    char why[160];

    (void)state;
    assert_int_equal(decide(0, 1, 1, "vm", "n1", NULL, why),
                     RP_HOST_SHARE_NO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ranks_of_this_node_share_it),
        cmocka_unit_test(test_two_slurm_nodes_of_one_host),
        cmocka_unit_test(test_nodes_named_otherwise_than_hosts),
        cmocka_unit_test(test_a_rank_whose_name_is_missing_leaves_it_open),
        cmocka_unit_test(test_node_named_after_host_without_trade),
        cmocka_unit_test(test_no_facts_is_unknown),
        cmocka_unit_test(test_alone_in_the_job),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
