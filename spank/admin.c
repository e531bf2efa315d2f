/*
 * Parses and applies the admin's plugstack.conf arguments.
 */
#include "config.h"

#include "spank/admin.h"
#include "util/parse.h"

#include <stdio.h>
#include <string.h>

rp_status_t rp__spank_admin_parse(int argc, char *const argv[],
                                  rp_spank_admin_t *admin, char *err,
                                  size_t errlen)
{
    char why[256];
    int i;

    memset(admin, 0, sizeof(*admin));
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        const char *value;
        size_t keylen;

        if (eq == NULL || eq == arg) {
            snprintf(err, errlen, "plugstack.conf argument '%s' is not "
                     "key=value (keys: %s)", arg, RP_SPANK_ADMIN_KEYS);
            return RP_ERR_INVALID_ARG;
        }
        keylen = (size_t)(eq - arg);
        value = eq + 1;
        if (keylen == strlen("default_interval") &&
            strncmp(arg, "default_interval", keylen) == 0) {
            if (rp__parse_duration(value, &admin->default_interval_s, why,
                                   sizeof(why)) != RP_OK) {
                goto err_value;
            }
            admin->has_default_interval = true;
        } else if (keylen == strlen("min_interval") &&
                   strncmp(arg, "min_interval", keylen) == 0) {
            if (rp__parse_duration(value, &admin->min_interval_s, why,
                                   sizeof(why)) != RP_OK) {
                goto err_value;
            }
        } else {
            snprintf(err, errlen, "plugstack.conf: unknown key '%.*s' "
                     "(keys: %s)", (int)keylen, arg, RP_SPANK_ADMIN_KEYS);
            return RP_ERR_INVALID_ARG;
        }
        continue;

    err_value:
        snprintf(err, errlen, "plugstack.conf: %.*s: %s", (int)keylen, arg,
                 why);
        return RP_ERR_INVALID_ARG;
    }
    /* A default the site itself forbids would fail every job that relies
     * on it: catch it when the plugin loads, not at the first submission. */
    if (admin->has_default_interval &&
        rp__spank_admin_check_interval(admin, admin->default_interval_s, why,
                                       sizeof(why)) != RP_OK) {
        snprintf(err, errlen, "plugstack.conf: default_interval: %s", why);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

rp_status_t rp__spank_admin_check_interval(const rp_spank_admin_t *admin,
                                           uint64_t interval_s, char *err,
                                           size_t errlen)
{
    char have[32], min[32];

    if (interval_s != 0 && interval_s < admin->min_interval_s) {
        rp__format_duration(interval_s, have, sizeof(have));
        rp__format_duration(admin->min_interval_s, min, sizeof(min));
        snprintf(err, errlen, "%s is below this site's minimum of %s "
                 "(0 checkpoints only on a signal)", have, min);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}
