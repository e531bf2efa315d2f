/*
 * Sub-communicators' plan (subcomm_plan.c): the pure decisions behind
 * rp_comm_split and rp_comm_create_group, apart from any transport so
 * that unit tests check them. Every rank contributes one record (an
 * allgather over the parent, coll/subcomm.c) and every rank then decides
 * alike from all of them: who is in which sub-communicator, in what
 * order, under which tag id, or which rank's arguments are wrong.
 */
#ifndef RP_COLL_SUBCOMM_PLAN_H
#define RP_COLL_SUBCOMM_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

#define RP__SUBCOMM_ID_WORDS 16 /* 1024 tag ids (coll/comm.h), a bit each */

/* Why a rank's arguments are refused (the same on every rank). */
enum {
    RP__SUBCOMM_OK = 0,
    RP__SUBCOMM_BAD_COLOR,  /* a negative color other than RP_UNDEFINED */
    RP__SUBCOMM_BAD_EMPTY,  /* an empty list, or NULL */
    RP__SUBCOMM_BAD_RANGE,  /* a rank outside 0..size-1 */
    RP__SUBCOMM_BAD_DUP,    /* a rank twice */
};

/* One rank's contribution; fixed size, so one allgather carries all. */
typedef struct rp__subcomm_rec {
    int32_t color; /* split: the color; group: unused */
    int32_t key;   /* split: the key */
    int32_t bad;   /* RP__SUBCOMM_* of this rank's arguments */
    int32_t n;     /* group: the list's length */
    uint64_t hash; /* group: the list's hash */
    uint64_t ids[RP__SUBCOMM_ID_WORDS]; /* tag ids held by this process */
} rp__subcomm_rec_t;

/* The members of @me's color in the split described by @recs[0..n), as
 * parent ranks in the new rank order (key, then parent rank), into
 * @members; returns their count (0 for RP_UNDEFINED) and @me's place. */
int rp__subcomm_split_members(const rp__subcomm_rec_t *recs, int n, int me,
                              int undefined, int *members, int *rank_p);

/* A group list's own check against a parent of @size ranks:
 * RP__SUBCOMM_OK or why not, with the offending entry's index. */
int rp__subcomm_list_check(const int *ranks, int n, int size, int *at_p);

/* FNV-1a over the list's length and entries. */
uint64_t rp__subcomm_list_hash(const int *ranks, int n);

/* The first rank whose record differs from @mine in the list (length or
 * hash), or -1 when every rank passed the same list. */
int rp__subcomm_list_differs(const rp__subcomm_rec_t *recs, int n,
                             const rp__subcomm_rec_t *mine);

/* The first rank that reported bad arguments, or -1. */
int rp__subcomm_first_bad(const rp__subcomm_rec_t *recs, int n);

/* The lowest tag id that none of @members[0..m) (parent ranks into @recs)
 * holds, or -1 when all are taken. */
int rp__subcomm_pick_id(const rp__subcomm_rec_t *recs, const int *members,
                        int m);

/* "0,2,4" into @buf (at most @len bytes with the NUL), shortened with
 * ",..." when it does not fit. */
void rp__subcomm_format(const int *ranks, int n, char *buf, size_t len);

/* What RP__SUBCOMM_* says, for messages. */
const char *rp__subcomm_bad_string(int bad);

#endif /* RP_COLL_SUBCOMM_PLAN_H */
