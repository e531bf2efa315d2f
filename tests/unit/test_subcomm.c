/*
 * Sub-communicators: the pure plan behind their creation (split order,
 * list checks, the tag id), the tags' carving, and the API on a
 * single-rank job (the multi-rank behaviour: tests/slurm/subcomm_check.c
 * under mpirun, tests/slurm/test_subcomm.sh on the cluster).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "ringpoint.h"
#include "coll/comm.h"
#include "coll/subcomm_plan.h"
#include "core/context.h"

static void test_split_order(void **state)
{
    /* color, key per parent rank */
    static const int32_t cols[8] = {0, 1, 0, 1, RP_UNDEFINED, 0, 1, 0};
    static const int32_t keys[8] = {5, 0, 5, 9, 0, -1, 0, 2};
    rp__subcomm_rec_t recs[8];
    int members[8], rank, m;
    (void)state;

    memset(recs, 0, sizeof(recs));
    for (int r = 0; r < 8; r++) {
        recs[r].color = cols[r];
        recs[r].key = keys[r];
    }
    /* color 0: ranks 0,2,5,7 with keys 5,5,-1,2: 5, 7, then 0 before 2
     * (equal keys keep the parent order). */
    m = rp__subcomm_split_members(recs, 8, 2, RP_UNDEFINED, members, &rank);
    assert_int_equal(m, 4);
    assert_int_equal(members[0], 5);
    assert_int_equal(members[1], 7);
    assert_int_equal(members[2], 0);
    assert_int_equal(members[3], 2);
    assert_int_equal(rank, 3);
    /* color 1: ranks 1,3,6 with keys 0,9,0: 1, 6, 3. */
    m = rp__subcomm_split_members(recs, 8, 6, RP_UNDEFINED, members, &rank);
    assert_int_equal(m, 3);
    assert_int_equal(members[0], 1);
    assert_int_equal(members[1], 6);
    assert_int_equal(members[2], 3);
    assert_int_equal(rank, 1);
    m = rp__subcomm_split_members(recs, 8, 4, RP_UNDEFINED, members, &rank);
    assert_int_equal(m, 0);
    assert_int_equal(rank, -1);
}

static void test_list_checks(void **state)
{
    static const int ok[3] = {2, 0, 1}, dup[3] = {0, 1, 0},
                     range[2] = {0, 4}, neg[2] = {-1, 0}, other[3] = {2, 1, 0};
    int at;
    (void)state;

    assert_int_equal(rp__subcomm_list_check(ok, 3, 4, &at), RP__SUBCOMM_OK);
    assert_int_equal(at, -1);
    assert_int_equal(rp__subcomm_list_check(dup, 3, 4, &at),
                     RP__SUBCOMM_BAD_DUP);
    assert_int_equal(at, 2);
    assert_int_equal(rp__subcomm_list_check(range, 2, 4, &at),
                     RP__SUBCOMM_BAD_RANGE);
    assert_int_equal(at, 1);
    assert_int_equal(rp__subcomm_list_check(neg, 2, 4, &at),
                     RP__SUBCOMM_BAD_RANGE);
    assert_int_equal(at, 0);
    assert_int_equal(rp__subcomm_list_check(NULL, 2, 4, &at),
                     RP__SUBCOMM_BAD_EMPTY);
    assert_int_equal(rp__subcomm_list_check(ok, 0, 4, &at),
                     RP__SUBCOMM_BAD_EMPTY);
    /* The order is part of the list; so is its length. */
    assert_true(rp__subcomm_list_hash(ok, 3) !=
                rp__subcomm_list_hash(other, 3));
    assert_true(rp__subcomm_list_hash(ok, 3) != rp__subcomm_list_hash(ok, 2));
    assert_true(rp__subcomm_list_hash(ok, 3) == rp__subcomm_list_hash(ok, 3));
}

static void test_list_differs_and_bad(void **state)
{
    static const int a[3] = {0, 1, 2}, b[3] = {0, 2, 1};
    rp__subcomm_rec_t recs[4], mine = {0};
    (void)state;

    memset(recs, 0, sizeof(recs));
    mine.n = 3;
    mine.hash = rp__subcomm_list_hash(a, 3);
    for (int r = 0; r < 4; r++) {
        recs[r] = mine;
    }
    assert_int_equal(rp__subcomm_list_differs(recs, 4, &mine), -1);
    assert_int_equal(rp__subcomm_first_bad(recs, 4), -1);
    recs[2].hash = rp__subcomm_list_hash(b, 3);
    assert_int_equal(rp__subcomm_list_differs(recs, 4, &mine), 2);
    recs[2] = mine;
    recs[3].n = 2;
    assert_int_equal(rp__subcomm_list_differs(recs, 4, &mine), 3);
    recs[1].bad = RP__SUBCOMM_BAD_DUP;
    assert_int_equal(rp__subcomm_first_bad(recs, 4), 1);
    assert_non_null(strstr(rp__subcomm_bad_string(RP__SUBCOMM_BAD_DUP),
                           "twice"));
}

static void test_pick_id(void **state)
{
    rp__subcomm_rec_t recs[3];
    const int all[3] = {0, 1, 2}, two[2] = {0, 2};
    (void)state;

    memset(recs, 0, sizeof(recs));
    assert_int_equal(rp__subcomm_pick_id(recs, all, 3), 0);
    /* Taken anywhere among the members: taken. */
    recs[0].ids[0] = 0x1; /* 0 */
    recs[1].ids[0] = 0x2; /* 1 */
    recs[2].ids[0] = 0x5; /* 0, 2 */
    assert_int_equal(rp__subcomm_pick_id(recs, all, 3), 3);
    assert_int_equal(rp__subcomm_pick_id(recs, two, 2), 1);
    /* Across a word. */
    recs[0].ids[0] = UINT64_MAX;
    recs[2].ids[1] = 0x3;
    assert_int_equal(rp__subcomm_pick_id(recs, two, 2), 66);
    /* All taken. */
    for (int w = 0; w < RP__SUBCOMM_ID_WORDS; w++) {
        recs[0].ids[w] = UINT64_MAX;
    }
    assert_int_equal(rp__subcomm_pick_id(recs, two, 2), -1);
}

static void test_format(void **state)
{
    static const int r[6] = {0, 2, 4, 100, 1000, 7};
    char buf[32];
    (void)state;

    rp__subcomm_format(r, 3, buf, sizeof(buf));
    assert_string_equal(buf, "0,2,4");
    rp__subcomm_format(r, 6, buf, 12);
    assert_string_equal(buf, "0,2,4,...");
    assert_true(strlen(buf) < 12);
    rp__subcomm_format(r, 6, buf, sizeof(buf));
    assert_string_equal(buf, "0,2,4,100,1000,7");
}

/* The 28-bit sequence field of @c's tag at sequence @seq. */
static uint32_t field(rp_comm_t *c, uint32_t seq)
{
    c->seq = seq;
    return (uint32_t)(rp__comm_tag(c, 0) >> 16);
}

static void test_tag_carving(void **state)
{
    rp_comm_t job, hier, a, b;
    /* 0x04030005: with bit 26 in the job's tags it would read as
     * sub-communicator 3's sequence 5. */
    static const uint32_t seqs[] = {0, 1, 2, 5, 0xFFFF, 0x10000, 0x10001,
                                    0x03FFFFFF, 0x04000000, 0x04000001,
                                    0x04030005, 0x07FFFFFE};
    const size_t ns = sizeof(seqs) / sizeof(seqs[0]);
    (void)state;

    memset(&job, 0, sizeof(job));
    memset(&hier, 0, sizeof(hier));
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    hier.seq_base = RP_COMM_SEQ_SUB;
    a.seq_base = rp__comm_user_base(3);
    b.seq_base = rp__comm_user_base(RP_COMM_SEQ_ID_MAX - 1);
    for (size_t i = 0; i < ns; i++) {
        const uint32_t fj = field(&job, seqs[i]), fh = field(&hier, seqs[i]);
        const uint32_t fa = field(&a, seqs[i]), fb = field(&b, seqs[i]);

        assert_true(fj <= RP_COMM_SEQ_MASK && fa <= RP_COMM_SEQ_MASK);
        /* Never the notices'. */
        assert_true(fj != RP_COMM_NOTICE_SEQ && fh != RP_COMM_NOTICE_SEQ &&
                    fa != RP_COMM_NOTICE_SEQ && fb != RP_COMM_NOTICE_SEQ);
        /* Never another communicator's, at any pair of sequences. */
        for (size_t k = 0; k < ns; k++) {
            assert_true(fj != field(&hier, seqs[k]));
            assert_true(fj != field(&a, seqs[k]));
            assert_true(fh != field(&a, seqs[k]));
            assert_true(fa != field(&b, seqs[k]));
            assert_true(fb != field(&job, seqs[k]));
        }
        /* A sub-communicator keeps its id in every tag. */
        assert_int_equal((fa >> RP_COMM_SEQ_ID_SHIFT) & 0x3FF, 3);
        assert_int_equal(fa & 0xFFFF, seqs[i] & 0xFFFF);
    }
    /* The message index stays apart from the sequence. */
    a.seq = 5;
    assert_int_equal(rp__comm_tag(&a, 0xFFFF) & 0xFFFF, 0xFFFF);
    assert_int_equal(rp__comm_tag(&a, 0x1FFFF) >> 16,
                     rp__comm_tag(&a, 0) >> 16);
}

static rp_context_h single(void)
{
    rp_init_params_t params = {.field_mask = RP_INIT_FIELD_FLAGS,
                               .flags = RP_INIT_FLAG_SINGLE};
    rp_context_h ctx = NULL;

    assert_int_equal(rp_init(&params, &ctx), RP_OK);
    return ctx;
}

static void test_single_rank_api(void **state)
{
    rp_context_h ctx = single(), sub = NULL, sub2 = NULL, none = (void *)1;
    rp_context_attr_t attr = {.field_mask = RP_CONTEXT_ATTR_FIELD_RANK |
                                            RP_CONTEXT_ATTR_FIELD_SIZE |
                                            RP_CONTEXT_ATTR_FIELD_PARENT};
    int32_t in[4] = {1, 2, 3, 4}, out[4] = {0};
    char g[3];
    rp_request_h req = NULL;
    static const int one[1] = {0}, bad[2] = {0, 0};
    (void)state;

    assert_int_equal(rp_context_query(ctx, &attr), RP_OK);
    assert_int_equal(attr.parent_rank, -1);
    assert_int_equal(attr.job_rank, 0);

    assert_int_equal(rp_comm_split(ctx, RP_UNDEFINED, 0, &none), RP_OK);
    assert_null(none);
    assert_int_equal(rp_comm_split(ctx, -5, 0, &none), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_comm_split(NULL, 0, 0, &sub), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_comm_split(ctx, 0, 0, NULL), RP_ERR_INVALID_ARG);
    assert_int_equal(rp_comm_create_group(ctx, bad, 2, &none),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_comm_create_group(ctx, NULL, 1, &none),
                     RP_ERR_INVALID_ARG);

    assert_int_equal(rp_comm_split(ctx, 7, 0, &sub), RP_OK);
    assert_non_null(sub);
    assert_ptr_not_equal(sub, ctx);
    attr.rank = attr.size = attr.parent_rank = -9;
    assert_int_equal(rp_context_query(sub, &attr), RP_OK);
    assert_int_equal(attr.rank, 0);
    assert_int_equal(attr.size, 1);
    assert_int_equal(attr.parent_rank, 0);

    /* Every collective, blocking and not: copies. */
    assert_int_equal(rp_allreduce(sub, in, out, 4, RP_DTYPE_INT32, RP_OP_SUM),
                     RP_OK);
    assert_memory_equal(in, out, sizeof(in));
    assert_int_equal(rp_allgather(sub, "ab", g, 2, RP_DTYPE_UINT8), RP_OK);
    assert_memory_equal(g, "ab", 2);
    assert_int_equal(rp_broadcast(sub, in, 4, RP_DTYPE_INT32, 0), RP_OK);
    assert_int_equal(rp_broadcast(sub, in, 4, RP_DTYPE_INT32, 1),
                     RP_ERR_INVALID_ARG); /* the sub's size, not the job's */
    assert_int_equal(rp_barrier(sub), RP_OK);
    memset(out, 0, sizeof(out));
    assert_int_equal(rp_iallreduce(sub, in, out, 4, RP_DTYPE_INT32,
                                   RP_OP_MAX, &req), RP_OK);
    assert_int_equal(rp_wait(&req), RP_OK);
    assert_memory_equal(in, out, sizeof(in));

    /* Checkpoints are the job's. */
    assert_int_equal(rp_region_register(sub, "x", in, sizeof(in),
                                        RP_REGION_REPLICATED),
                     RP_ERR_INVALID_ARG);
    assert_int_equal(rp_checkpoint(sub, 1), RP_ERR_INVALID_ARG);
    /* The GPU path is the job's: a stream set on a sub is the process's. */
    assert_int_equal(rp_cuda_set_stream(sub, NULL), RP_OK);

    /* A sub of the sub, and an explicit group of it. */
    assert_int_equal(rp_comm_split(sub, 0, 0, &sub2), RP_OK);
    assert_non_null(sub2);
    assert_int_equal(rp_allreduce(sub2, in, out, 4, RP_DTYPE_INT32,
                                  RP_OP_SUM), RP_OK);
    none = NULL;
    assert_int_equal(rp_comm_create_group(sub, one, 1, &none), RP_OK);
    assert_non_null(none);
    rp_comm_free(none);

    /* Refused: the job's context to rp_comm_free, a sub to rp_finalize;
     * both leave the context working. */
    rp_comm_free(ctx);
    rp_finalize(sub);
    assert_int_equal(rp_barrier(sub), RP_OK);
    assert_int_equal(rp_barrier(ctx), RP_OK);

    /* A request of a freed sub is complete and still released. */
    assert_int_equal(rp_iallreduce(sub2, in, out, 4, RP_DTYPE_INT32,
                                   RP_OP_SUM, &req), RP_OK);
    rp_comm_free(sub2);
    assert_int_equal(rp_wait(&req), RP_OK);
    assert_null(req);

    /* The job's rp_finalize frees the subs still live (sub, and one of
     * it): ASan reports a leak or a double free otherwise. */
    assert_int_equal(rp_comm_split(sub, 1, 0, &sub2), RP_OK);
    rp_finalize(ctx);
}

static void test_many_create_free(void **state)
{
    rp_context_h ctx = single(), sub;
    (void)state;

    /* More creations than ids: freeing gives the id back. */
    for (int i = 0; i < 2 * (int)RP_COMM_SEQ_ID_MAX + 5; i++) {
        sub = NULL;
        assert_int_equal(rp_comm_split(ctx, 0, 0, &sub), RP_OK);
        assert_non_null(sub);
        rp_comm_free(sub);
    }
    rp_finalize(ctx);
}

/* A sub-communicator that broke is freed only after the transport (its
 * abandoned requests may point into it): rp_comm_free parks it and gives
 * its id back, rp_finalize frees it (ASan reports a leak otherwise). */
static void test_broken_sub_parked(void **state)
{
    rp_context_h ctx = single(), sub = NULL, again = NULL;
    int32_t v = 1;
    (void)state;

    assert_int_equal(rp_comm_split(ctx, 0, 0, &sub), RP_OK);
    assert_int_equal(sub->sub->id, 0);
    sub->comm->broken = RP_ERR_PEER_FAILED;
    assert_int_equal(rp_allreduce(sub, &v, &v, 1, RP_DTYPE_INT32, RP_OP_SUM),
                     RP_ERR_PEER_FAILED);
    rp_comm_free(sub);
    assert_ptr_equal(ctx->sub_dead, sub);
    assert_null(ctx->subs);
    assert_int_equal(rp_comm_split(ctx, 0, 0, &again), RP_OK);
    assert_int_equal(again->sub->id, 0);
    rp_finalize(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_order),
        cmocka_unit_test(test_list_checks),
        cmocka_unit_test(test_list_differs_and_bad),
        cmocka_unit_test(test_pick_id),
        cmocka_unit_test(test_format),
        cmocka_unit_test(test_tag_carving),
        cmocka_unit_test(test_single_rank_api),
        cmocka_unit_test(test_many_create_free),
        cmocka_unit_test(test_broken_sub_parked),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
