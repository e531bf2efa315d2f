/*
 * Parses and applies the admin's plugstack.conf arguments.
 */
#include "config.h"

#include "spank/admin.h"
#include "util/parse.h"
#include "util/str.h"

#include <stdio.h>
#include <string.h>

static bool rp_key_is(const char *arg, size_t keylen, const char *key)
{
    return keylen == strlen(key) && strncmp(arg, key, keylen) == 0;
}

/* allowed_roots=/scratch:/home: absolute paths without escapes. */
static rp_status_t rp_spank_admin_roots(const char *value,
                                        rp_spank_admin_t *admin, char *why,
                                        size_t len)
{
    const char *r = value;

    if (*value == '\0') {
        snprintf(why, len, "empty list (expected /path[:/path...])");
        return RP_ERR_INVALID_ARG;
    }
    while (*r != '\0') {
        const char *end = strchrnul(r, ':');

        if (*r != '/' || memchr(r, '%', (size_t)(end - r)) != NULL ||
            memmem(r, (size_t)(end - r), "/..", 3) != NULL) {
            snprintf(why, len, "'%.*s' is not an absolute path without %% "
                     "or .. (expected /path[:/path...])", (int)(end - r), r);
            return RP_ERR_INVALID_ARG;
        }
        r = *end == ':' ? end + 1 : end;
    }
    if (!rp__strlcpy(admin->allowed_roots, value,
                     sizeof(admin->allowed_roots))) {
        snprintf(why, len, "longer than %zu bytes",
                 sizeof(admin->allowed_roots) - 1);
        return RP_ERR_INVALID_ARG;
    }
    return RP_OK;
}

/* requeue=auto|hold|off */
static rp_status_t rp_spank_admin_how(const char *value,
                                      rp_spank_admin_t *admin, char *why,
                                      size_t len)
{
    static const char *const names[] = {"auto", "hold", "off"};
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(value, names[i]) == 0) {
            admin->requeue_how = (rp_spank_requeue_how_t)i;
            return RP_OK;
        }
    }
    snprintf(why, len, "'%s' is not auto, hold or off", value);
    return RP_ERR_INVALID_ARG;
}

/* yes|no, as slurm.conf spells booleans. */
static rp_status_t rp_spank_admin_bool(const char *value, bool *out,
                                       char *why, size_t len)
{
    if (strcmp(value, "yes") == 0 || strcmp(value, "1") == 0) {
        *out = true;
        return RP_OK;
    }
    if (strcmp(value, "no") == 0 || strcmp(value, "0") == 0) {
        *out = false;
        return RP_OK;
    }
    snprintf(why, len, "'%s' is not yes or no", value);
    return RP_ERR_INVALID_ARG;
}

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
        if (rp_key_is(arg, keylen, "default_interval")) {
            if (rp__parse_duration(value, &admin->default_interval_s, why,
                                   sizeof(why)) != RP_OK) {
                goto err_value;
            }
            admin->has_default_interval = true;
        } else if (rp_key_is(arg, keylen, "min_interval")) {
            if (rp__parse_duration(value, &admin->min_interval_s, why,
                                   sizeof(why)) != RP_OK) {
                goto err_value;
            }
        } else if (rp_key_is(arg, keylen, "max_keep")) {
            if (rp__parse_uint(value, 1, RP_SPANK_KEEP_LIMIT, &admin->max_keep,
                               why, sizeof(why)) != RP_OK) {
                goto err_value;
            }
        } else if (rp_key_is(arg, keylen, "max_requeues")) {
            /* Slurm counts restarts in 32 bits. */
            if (rp__parse_uint(value, 0, UINT32_MAX, &admin->max_requeues, why,
                               sizeof(why)) != RP_OK) {
                goto err_value;
            }
            admin->has_max_requeues = true;
        } else if (rp_key_is(arg, keylen, "allowed_roots")) {
            if (rp_spank_admin_roots(value, admin, why, sizeof(why)) != RP_OK) {
                goto err_value;
            }
        } else if (rp_key_is(arg, keylen, "requeue")) {
            if (rp_spank_admin_how(value, admin, why, sizeof(why)) != RP_OK) {
                goto err_value;
            }
        } else if (rp_key_is(arg, keylen, "requeue_failed")) {
            if (rp_spank_admin_bool(value, &admin->requeue_failed, why,
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

uint64_t rp__spank_admin_max_requeues(const rp_spank_admin_t *admin)
{
    return admin->has_max_requeues ? admin->max_requeues
                                   : RP_SPANK_DEFAULT_MAX_REQUEUES;
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
