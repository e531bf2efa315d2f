/*
 * Stripe arithmetic and checkpoint naming. Names are recognised by
 * re-formatting what was parsed and comparing, so exactly one spelling of
 * each name is accepted and "step-1" or "step-0000000000001" are strangers.
 */
#include "ckpt/format/layout.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "util/log.h"

rp_status_t rp__ckpt_stripe(uint64_t stream_len, uint32_t world, uint32_t rank,
                            uint64_t *off_p, uint64_t *len_p)
{
    const uint64_t unit = RP_CKPT_STRIPE_UNIT;
    uint64_t units, base, extra, first, count, rem;

    if (world == 0 || rank >= world || off_p == NULL || len_p == NULL) {
        rp_error("checkpoint stripe: invalid rank %u of world %u", rank,
                 world);
        return RP_ERR_INVALID_ARG;
    }
    /* Written without (L + unit - 1) so no step can overflow, even for a
     * stream length near UINT64_MAX. */
    units = stream_len / unit + (stream_len % unit != 0);
    base = units / world;
    extra = units % world;
    first = (uint64_t)rank * base + (rank < extra ? rank : extra);
    count = base + (rank < extra ? 1 : 0);
    if (first >= units) {
        *off_p = stream_len;
        *len_p = 0;
        return RP_OK;
    }
    *off_p = first * unit; /* < stream_len because first < units */
    rem = stream_len - *off_p;
    *len_p = count > rem / unit ? rem : count * unit;
    return RP_OK;
}

void rp__ckpt_name_committed(uint64_t step, char *buf, size_t len)
{
    snprintf(buf, len, RP_CKPT_COMMITTED_PREFIX "%012llu",
             (unsigned long long)step);
}

void rp__ckpt_name_inflight(uint64_t step, uint64_t nonce, char *buf,
                            size_t len)
{
    snprintf(buf, len, RP_CKPT_INFLIGHT_PREFIX "%012llu-%016llx",
             (unsigned long long)step, (unsigned long long)nonce);
}

void rp__ckpt_name_deleting(const char *name, uint64_t nonce, char *buf,
                            size_t len)
{
    snprintf(buf, len, RP_CKPT_DELETING_PREFIX "%.64s-%016llx", name,
             (unsigned long long)nonce);
}

void rp__ckpt_name_shard(uint32_t rank, char *buf, size_t len)
{
    snprintf(buf, len, "shard-%06u.rp", rank);
}

/* Decimal digits at *pp (1 to 20 of them, no overflow), advancing *pp. */
static bool rp_layout_digits(const char **pp, uint64_t *out)
{
    const char *p = *pp;
    uint64_t v = 0;
    unsigned n = 0;

    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (++n > 20 || v > (UINT64_MAX - d) / 10) {
            return false;
        }
        v = v * 10 + d;
        p++;
    }
    if (n == 0) {
        return false;
    }
    *pp = p;
    *out = v;
    return true;
}

bool rp__ckpt_parse_committed(const char *name, uint64_t *step_p)
{
    const size_t plen = sizeof(RP_CKPT_COMMITTED_PREFIX) - 1;
    char canon[RP_CKPT_NAME_MAX];
    const char *p;
    uint64_t step;

    if (name == NULL || strncmp(name, RP_CKPT_COMMITTED_PREFIX, plen) != 0) {
        return false;
    }
    p = name + plen;
    if (!rp_layout_digits(&p, &step) || *p != '\0') {
        return false;
    }
    rp__ckpt_name_committed(step, canon, sizeof(canon));
    if (strcmp(canon, name) != 0) {
        return false;
    }
    if (step_p != NULL) {
        *step_p = step;
    }
    return true;
}

bool rp__ckpt_parse_inflight(const char *name, uint64_t *step_p)
{
    const size_t plen = sizeof(RP_CKPT_INFLIGHT_PREFIX) - 1;
    char canon[RP_CKPT_NAME_MAX];
    const char *p;
    uint64_t step, nonce = 0;
    unsigned i;

    if (name == NULL || strncmp(name, RP_CKPT_INFLIGHT_PREFIX, plen) != 0) {
        return false;
    }
    p = name + plen;
    if (!rp_layout_digits(&p, &step) || *p++ != '-') {
        return false;
    }
    for (i = 0; i < 16; i++, p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9') {
            d = (unsigned)(*p - '0');
        } else if (*p >= 'a' && *p <= 'f') {
            d = (unsigned)(*p - 'a' + 10);
        } else {
            return false;
        }
        nonce = (nonce << 4) | d;
    }
    if (*p != '\0') {
        return false;
    }
    rp__ckpt_name_inflight(step, nonce, canon, sizeof(canon));
    if (strcmp(canon, name) != 0) {
        return false;
    }
    if (step_p != NULL) {
        *step_p = step;
    }
    return true;
}

bool rp__ckpt_is_deleting(const char *name)
{
    return name != NULL &&
           strncmp(name, RP_CKPT_DELETING_PREFIX,
                   sizeof(RP_CKPT_DELETING_PREFIX) - 1) == 0;
}

rp_status_t rp__ckpt_random(void *buf, size_t len)
{
    unsigned char *p = buf;

    while (len > 0) {
        ssize_t n = getrandom(p, len, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            rp_error("getrandom: %s", strerror(errno));
            return RP_ERR_IO;
        }
        p += n;
        len -= (size_t)n;
    }
    return RP_OK;
}
