/*
 * Reads the RINGPOINT_* settings from the environment.
 */
#include "config.h"

#include "core/settings.h"
#include "util/log.h"
#include "util/parse.h"

#include <stdlib.h>

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
    return RP_OK;
}
