/*
 * Lexical checks and expansion of --ckpt-dir. Pure string work: no call
 * here touches the file system.
 */
#include "config.h"

#include "spank/ckpt_dir.h"
#include "util/str.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static bool rp_ckpt_dir_escape_ok(char c)
{
    return c != '\0' && strchr("jAaux", c) != NULL;
}

rp_status_t rp__ckpt_dir_normalize(const char *base, const char *text,
                                   char *out, size_t len, char *err,
                                   size_t errlen)
{
    const char *p;
    size_t used = 0;

    if (text == NULL || *text == '\0') {
        rp__errbuf(err, errlen, "empty path (accepted: %s)", RP_CKPT_DIR_FORMS);
        return RP_ERR_INVALID_ARG;
    }
    for (p = text; *p != '\0'; p++) {
        if ((unsigned char)*p < 0x20 || *p == 0x7f) {
            rp__errbuf(err, errlen, "the path contains a control character");
            return RP_ERR_INVALID_ARG;
        }
        if (*p == '%') {
            if (!rp_ckpt_dir_escape_ok(p[1])) {
                rp__errbuf(err, errlen, "unknown escape '%%%.1s' (accepted: %s)",
                           p[1] != '\0' ? p + 1 : "", RP_CKPT_DIR_FORMS);
                return RP_ERR_INVALID_ARG;
            }
            p++;
        }
    }
    if (text[0] != '/' && (base == NULL || base[0] != '/')) {
        rp__errbuf(err, errlen, "relative path '%s' but no absolute submit "
                   "directory to resolve it against", text);
        return RP_ERR_INVALID_ARG;
    }
    if (len < 2) {
        goto err_long;
    }
    out[used++] = '/';
    /* Walk components of base (if relative) then text, keeping a stack in
     * @out: a component is appended after a '/', ".." pops one. */
    for (int pass = 0; pass < 2; pass++) {
        const char *s = pass == 0 ? (text[0] == '/' ? "" : base) : text;

        while (*s != '\0') {
            const char *end;
            size_t n;

            while (*s == '/') {
                s++;
            }
            end = strchrnul(s, '/');
            n = (size_t)(end - s);
            if (n == 0 || (n == 1 && s[0] == '.')) {
                s = end;
                continue;
            }
            if (n == 2 && s[0] == '.' && s[1] == '.') {
                if (used == 1) {
                    rp__errbuf(err, errlen, "'%s' goes above /", text);
                    return RP_ERR_INVALID_ARG;
                }
                while (used > 1 && out[used - 1] != '/') {
                    used--;
                }
                if (used > 1) {
                    used--; /* the separator before the popped component */
                }
                s = end;
                continue;
            }
            if (used > 1) {
                if (used + 1 >= len) {
                    goto err_long;
                }
                out[used++] = '/';
            }
            if (used + n >= len) {
                goto err_long;
            }
            memcpy(out + used, s, n);
            used += n;
            s = end;
        }
    }
    out[used] = '\0';
    return RP_OK;

err_long:
    rp__errbuf(err, errlen, "the path is longer than %zu bytes", len - 1);
    return RP_ERR_INVALID_ARG;
}

rp_status_t rp__ckpt_dir_check_roots(const char *path, const char *roots,
                                     char *err, size_t errlen)
{
    const char *r = roots, *esc;
    size_t fixed;

    if (roots == NULL || *roots == '\0') {
        return RP_OK;
    }
    esc = strchr(path, '%');
    fixed = esc != NULL ? (size_t)(esc - path) : strlen(path);
    while (*r != '\0') {
        const char *end = strchrnul(r, ':');
        size_t n = (size_t)(end - r);

        while (n > 1 && r[n - 1] == '/') {
            n--; /* "/scratch/" means "/scratch" */
        }
        if (n == 1 && r[0] == '/') {
            return RP_OK;
        }
        /* The root must be a whole leading run of components that the
         * escapes cannot touch: "/scratch" allows "/scratch/x" and
         * "/scratch/%u", not "/scratchpad" nor "/scr%u". */
        if (n > 0 && n <= fixed && strncmp(path, r, n) == 0 &&
            (path[n] == '\0' || path[n] == '/')) {
            return RP_OK;
        }
        r = *end == ':' ? end + 1 : end;
    }
    rp__errbuf(err, errlen, "'%s' is outside this site's checkpoint roots (%s)",
               path, roots);
    return RP_ERR_INVALID_ARG;
}

/* Append @value to out, making it a single safe path component. */
static bool rp_ckpt_dir_put(char *out, size_t len, size_t *used,
                            const char *value, bool component_start)
{
    size_t i;

    for (i = 0; value[i] != '\0'; i++) {
        char c = value[i];

        /* '%' too: the exported value is read back as a pattern by every
         * srun inside the job, where it must not expand a second time. */
        if (c == '/' || c == '%' || (c == '.' && i == 0 && component_start)) {
            c = '_';
        }
        if (*used + 1 >= len) {
            return false;
        }
        out[(*used)++] = c;
    }
    return true;
}

rp_status_t rp__ckpt_dir_expand(const char *path, const rp_ckpt_dir_vars_t *vars,
                                char *out, size_t len, char *err,
                                size_t errlen)
{
    size_t used = 0;
    const char *p;
    char num[16];

    if (len == 0) {
        goto err_long;
    }
    for (p = path; *p != '\0'; p++) {
        bool start = used > 0 && out[used - 1] == '/';
        const char *value;

        if (*p != '%') {
            if (used + 1 >= len) {
                goto err_long;
            }
            out[used++] = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'j':
            snprintf(num, sizeof(num), "%" PRIu32, vars->job_id);
            value = num;
            break;
        case 'A':
            snprintf(num, sizeof(num), "%" PRIu32,
                     vars->array_job_id != 0 ? vars->array_job_id : vars->job_id);
            value = num;
            break;
        case 'a':
            snprintf(num, sizeof(num), "%" PRIu32,
                     vars->array_job_id != 0 ? vars->array_task_id : 0);
            value = num;
            break;
        case 'u':
            value = vars->user != NULL && *vars->user ? vars->user : "unknown";
            break;
        case 'x':
            value = vars->job_name != NULL && *vars->job_name ? vars->job_name : "job";
            break;
        default:
            rp__errbuf(err, errlen, "unknown escape in '%s'", path);
            return RP_ERR_INVALID_ARG;
        }
        if (!rp_ckpt_dir_put(out, len, &used, value, start)) {
            goto err_long;
        }
    }
    out[used] = '\0';
    return RP_OK;

err_long:
    rp__errbuf(err, errlen, "the expanded path is longer than %zu bytes",
               len > 0 ? len - 1 : 0);
    return RP_ERR_INVALID_ARG;
}
