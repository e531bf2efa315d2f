/*
 * Reads the RINGPOINT_* settings from the environment.
 */
#include "config.h"

#include "core/settings.h"
#include "util/log.h"
#include "util/parse.h"

#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A RINGPOINT_* byte count or microsecond count in [min, max]. */
static rp_status_t rp_settings_uint(const char *name, uint64_t min,
                                    uint64_t max, uint64_t *value_p)
{
    const char *value = getenv(name);
    char err[256];

    if (value != NULL &&
        rp__parse_uint(value, min, max, value_p, err, sizeof(err)) != RP_OK) {
        rp_error("%s: %s", name, err);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

static rp_status_t rp_settings_coll(rp_settings_t *cfg)
{
    const char *value;
    uint64_t spin;
    char err[256];

    cfg->coll_timeout_s = RP_DEFAULT_COLL_TIMEOUT_S;
    cfg->coll_spin_us = -1;
    cfg->coll_oversubscribed = -1;
    cfg->allreduce_algo = RP_COLL_ALGO_AUTO;
    cfg->rd_max_bytes = RP_RD_MAX_AUTO;
    cfg->segment_bytes = RP_DEFAULT_SEGMENT_BYTES;
    cfg->window = RP_DEFAULT_WINDOW;

    value = getenv("RINGPOINT_COLL_TIMEOUT");
    if (value != NULL &&
        rp__parse_duration(value, &cfg->coll_timeout_s, err, sizeof(err)) !=
            RP_OK) {
        rp_error("RINGPOINT_COLL_TIMEOUT: %s", err);
        return RP_ERR_INVALID_ARG;
    }
    value = getenv("RINGPOINT_ALLREDUCE_ALGO");
    if (value != NULL) {
        if (strcmp(value, "auto") == 0) {
            cfg->allreduce_algo = RP_COLL_ALGO_AUTO;
        } else if (strcmp(value, "ring") == 0) {
            cfg->allreduce_algo = RP_COLL_ALGO_RING;
        } else if (strcmp(value, "rd") == 0) {
            cfg->allreduce_algo = RP_COLL_ALGO_RD;
        } else {
            rp_error("RINGPOINT_ALLREDUCE_ALGO: '%s' is not one of auto, "
                     "ring, rd", value);
            return RP_ERR_INVALID_ARG;
        }
    }
    value = getenv("RINGPOINT_COLL_OVERSUBSCRIBED");
    if (value != NULL) {
        if (strcmp(value, "auto") == 0) {
            cfg->coll_oversubscribed = -1;
        } else if (strcmp(value, "1") == 0 || strcmp(value, "0") == 0) {
            cfg->coll_oversubscribed = value[0] - '0';
        } else {
            rp_error("RINGPOINT_COLL_OVERSUBSCRIBED: '%s' is not one of "
                     "auto, 1, 0", value);
            return RP_ERR_INVALID_ARG;
        }
    }
    if (getenv("RINGPOINT_COLL_SPIN_US") != NULL) {
        if (rp_settings_uint("RINGPOINT_COLL_SPIN_US", 0, 10000000, &spin) !=
            RP_OK) {
            return RP_ERR_INVALID_ARG;
        }
        cfg->coll_spin_us = (int64_t)spin;
    }
    if (rp_settings_uint("RINGPOINT_ALLREDUCE_RD_MAX", 0, 1ULL << 30,
                         &cfg->rd_max_bytes) != RP_OK ||
        rp_settings_uint("RINGPOINT_COLL_SEGMENT", 64, 1ULL << 30,
                         &cfg->segment_bytes) != RP_OK ||
        rp_settings_uint("RINGPOINT_COLL_WINDOW", 1, 256, &cfg->window) !=
            RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

static rp_status_t rp_settings_ckpt(rp_settings_t *cfg)
{
    const char *value;
    uint64_t async = 1;

    snprintf(cfg->ckpt_dir, sizeof(cfg->ckpt_dir), "%s", RP_DEFAULT_CKPT_DIR);
    cfg->ckpt_every = 0;
    cfg->ckpt_keep = RP_DEFAULT_CKPT_KEEP;
    cfg->ckpt_chunk = RP_DEFAULT_CKPT_CHUNK;
    value = getenv("RINGPOINT_CKPT_DIR");
    if (value != NULL) {
        if (value[0] == '\0' || strlen(value) >= sizeof(cfg->ckpt_dir)) {
            rp_error("RINGPOINT_CKPT_DIR: %s", value[0] == '\0'
                     ? "empty path" : "path too long");
            return RP_ERR_INVALID_ARG;
        }
        snprintf(cfg->ckpt_dir, sizeof(cfg->ckpt_dir), "%s", value);
    }
    if (rp_settings_uint("RINGPOINT_CKPT_EVERY", 0, UINT64_MAX,
                         &cfg->ckpt_every) != RP_OK ||
        rp_settings_uint("RINGPOINT_CKPT_KEEP", 1, 1000000,
                         &cfg->ckpt_keep) != RP_OK ||
        rp_settings_uint("RINGPOINT_CKPT_CHUNK_SIZE", 4096, 1ULL << 30,
                         &cfg->ckpt_chunk) != RP_OK ||
        rp_settings_uint("RINGPOINT_CKPT_ASYNC", 0, 1, &async) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    if (cfg->ckpt_chunk % 4096 != 0) {
        rp_error("RINGPOINT_CKPT_CHUNK_SIZE: %llu is not a multiple of 4096",
                 (unsigned long long)cfg->ckpt_chunk);
        return RP_ERR_INVALID_ARG;
    }
    cfg->ckpt_async = (int)async;

    /* USR2 by default: NCCL handles USR1 (nccl #704). */
    cfg->ckpt_signal = SIGUSR2;
    value = getenv("RINGPOINT_CKPT_SIGNAL");
    if (value != NULL) {
        char err[512];

        if (rp__parse_signal(value, &cfg->ckpt_signal, err, sizeof(err)) !=
            RP_OK) {
            rp_error("RINGPOINT_CKPT_SIGNAL: %s", err);
            return RP_ERR_INVALID_ARG;
        }
    }
    cfg->ckpt_requeue_set = getenv("RINGPOINT_CKPT_REQUEUE") != NULL;
    cfg->ckpt_requeue = 0;
    if (rp_settings_uint("RINGPOINT_CKPT_REQUEUE", 0, 1000000,
                         &cfg->ckpt_requeue) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

rp_status_t rp__settings_load(rp_settings_t *cfg)
{
    const char *value;
    char err[256];

    cfg->ckpt_interval_s = RP_DEFAULT_CKPT_INTERVAL_S;

    value = getenv("RINGPOINT_CKPT_INTERVAL");
    if (value != NULL &&
        rp__parse_duration(value, &cfg->ckpt_interval_s, err, sizeof(err)) !=
            RP_OK) {
        rp_error("RINGPOINT_CKPT_INTERVAL: %s", err);
        return RP_ERR_INVALID_ARG;
    }
    if (rp_settings_ckpt(cfg) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    return rp_settings_coll(cfg);
}
