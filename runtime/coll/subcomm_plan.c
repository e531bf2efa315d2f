/*
 * Sub-communicators' plan (subcomm_plan.h): ordering, list checks and the
 * tag id, from the records every rank contributed.
 */
#include "config.h"

#include "coll/subcomm_plan.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rp__subcomm_split_members(const rp__subcomm_rec_t *recs, int n, int me,
                              int undefined, int *members, int *rank_p)
{
    const int32_t color = recs[me].color;
    int m = 0;

    *rank_p = -1;
    if (color == undefined) {
        return 0;
    }
    /* Insertion by (key, parent rank): the ranks arrive in parent order,
     * so a stable insertion on the key alone gives both. */
    for (int r = 0; r < n; r++) {
        int at = m;

        if (recs[r].color != color) {
            continue;
        }
        while (at > 0 && recs[members[at - 1]].key > recs[r].key) {
            members[at] = members[at - 1];
            at--;
        }
        members[at] = r;
        m++;
    }
    for (int i = 0; i < m; i++) {
        if (members[i] == me) {
            *rank_p = i;
        }
    }
    return m;
}

int rp__subcomm_list_check(const int *ranks, int n, int size, int *at_p)
{
    *at_p = -1;
    if (ranks == NULL || n <= 0) {
        return RP__SUBCOMM_BAD_EMPTY;
    }
    for (int i = 0; i < n; i++) {
        *at_p = i;
        if (ranks[i] < 0 || ranks[i] >= size) {
            return RP__SUBCOMM_BAD_RANGE;
        }
        for (int j = 0; j < i; j++) {
            if (ranks[j] == ranks[i]) {
                return RP__SUBCOMM_BAD_DUP;
            }
        }
    }
    *at_p = -1;
    return RP__SUBCOMM_OK;
}

uint64_t rp__subcomm_list_hash(const int *ranks, int n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    const uint64_t prime = 0x100000001b3ULL;

    h = (h ^ (uint64_t)(uint32_t)n) * prime;
    for (int i = 0; ranks != NULL && i < n; i++) {
        uint32_t v = (uint32_t)ranks[i];

        for (int b = 0; b < 4; b++) {
            h = (h ^ ((v >> (8 * b)) & 0xFF)) * prime;
        }
    }
    return h;
}

int rp__subcomm_list_differs(const rp__subcomm_rec_t *recs, int n,
                             const rp__subcomm_rec_t *mine)
{
    for (int r = 0; r < n; r++) {
        if (recs[r].n != mine->n || recs[r].hash != mine->hash) {
            return r;
        }
    }
    return -1;
}

int rp__subcomm_first_bad(const rp__subcomm_rec_t *recs, int n)
{
    for (int r = 0; r < n; r++) {
        if (recs[r].bad != RP__SUBCOMM_OK) {
            return r;
        }
    }
    return -1;
}

int rp__subcomm_pick_id(const rp__subcomm_rec_t *recs, const int *members,
                        int m)
{
    for (int w = 0; w < RP__SUBCOMM_ID_WORDS; w++) {
        uint64_t taken = 0;

        for (int i = 0; i < m; i++) {
            taken |= recs[members[i]].ids[w];
        }
        if (taken != UINT64_MAX) {
            return w * 64 + __builtin_ctzll(~taken);
        }
    }
    return -1;
}

void rp__subcomm_format(const int *ranks, int n, char *buf, size_t len)
{
    size_t used = 0;

    if (len == 0) {
        return;
    }
    buf[0] = '\0';
    for (int i = 0; ranks != NULL && i < n; i++) {
        char item[16];
        int k = snprintf(item, sizeof(item), "%s%d", i > 0 ? "," : "",
                         ranks[i]);

        /* Room for this item and, should more follow, ",...". */
        if (used + (size_t)k + (i + 1 < n ? 4 : 0) + 1 > len) {
            if (used + 5 <= len) {
                memcpy(buf + used, ",...", 5);
            }
            return;
        }
        memcpy(buf + used, item, (size_t)k + 1);
        used += (size_t)k;
    }
}

const char *rp__subcomm_bad_string(int bad)
{
    switch (bad) {
    case RP__SUBCOMM_BAD_COLOR:
        return "a negative color other than RP_UNDEFINED";
    case RP__SUBCOMM_BAD_EMPTY:
        return "no ranks (empty or NULL)";
    case RP__SUBCOMM_BAD_RANGE:
        return "a rank outside 0..size-1 of ctx";
    case RP__SUBCOMM_BAD_DUP:
        return "a rank twice";
    }
    return "valid arguments";
}
