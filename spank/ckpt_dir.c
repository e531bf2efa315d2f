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

/* Would @base, made part of a resolved path, not read back as itself? */
static bool rp_ckpt_dir_base_unsafe(const char *base)
{
    for (const char *p = base; *p != '\0'; p++) {
        if (*p == '%' || (unsigned char)*p < 0x20 || *p == 0x7f) {
            return true;
        }
    }
    return false;
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
    /* The base is taken literally, never expanded; but a resolved path is
     * read back as a template by every srun inside the job, where a '%'
     * would be an escape and a control character is refused. So no
     * resolved path contains either (found by tests/fuzz/fuzz_ckpt_dir). */
    if (text[0] != '/' && rp_ckpt_dir_base_unsafe(base)) {
        rp__errbuf(err, errlen, "relative path '%s' in submit directory "
                   "'%s', which contains '%%' or a control character: give "
                   "an absolute path", text, base);
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
    const char *r = roots;

    if (roots == NULL || *roots == '\0') {
        return RP_OK;
    }
    while (*r != '\0') {
        const char *end = strchrnul(r, ':');
        size_t n = (size_t)(end - r);

        while (n > 1 && r[n - 1] == '/') {
            n--; /* "/scratch/" means "/scratch" */
        }
        if (n == 1 && r[0] == '/') {
            return RP_OK;
        }
        /* The root must be a whole leading run of components: "/scratch"
         * allows "/scratch/x", not "/scratchpad". Roots hold no '%', so a
         * component with an unexpanded escape never matches one. */
        if (n > 0 && strncmp(path, r, n) == 0 &&
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
        /* A control character in a job name would pass srun (which sees
         * only "%x") and be refused here: it becomes '_' as well. */
        if (c == '/' || c == '%' || (unsigned char)c < 0x20 || c == 0x7f ||
            (c == '.' && i == 0 && component_start)) {
            c = '_';
        }
        if (*used + 1 >= len) {
            return false;
        }
        out[(*used)++] = c;
    }
    return true;
}

/* Is out[from, to) "." or ".."? */
static bool rp_ckpt_dir_is_dots(const char *out, size_t from, size_t to)
{
    return (to - from == 1 && out[from] == '.') ||
           (to - from == 2 && out[from] == '.' && out[from + 1] == '.');
}

rp_status_t rp__ckpt_dir_expand(const char *path, const rp_ckpt_dir_vars_t *vars,
                                char *out, size_t len, char *err,
                                size_t errlen)
{
    size_t used = 0, comp = 0; /* where the current component starts */
    bool escaped = false;      /* it holds an expansion */
    const char *p;
    char num[16];

    if (len == 0) {
        goto err_long;
    }
    for (p = path;; p++) {
        bool start = used == comp;
        const char *value;

        if (*p == '\0' || *p == '/') {
            /* ".%x" with the job name "." would make "..": an expansion
             * never adds or removes a directory level. */
            if (escaped && rp_ckpt_dir_is_dots(out, comp, used)) {
                rp__errbuf(err, errlen, "'%s' expands to a '%.*s' component",
                           path, (int)(used - comp), out + comp);
                return RP_ERR_INVALID_ARG;
            }
            if (*p == '\0') {
                break;
            }
            escaped = false;
            comp = used + 1;
        }
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
            rp__errbuf(err, errlen, "unknown escape '%%%.1s' in '%s' "
                       "(accepted: %s)", *p != '\0' ? p : "", path,
                       RP_CKPT_DIR_FORMS);
            return RP_ERR_INVALID_ARG;
        }
        escaped = true;
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

rp_status_t rp__ckpt_dir_resolve(const char *base, const char *text,
                                 const rp_ckpt_dir_vars_t *vars,
                                 const char *roots, char *out, size_t len,
                                 char *err, size_t errlen)
{
    char expanded[RP_CKPT_DIR_MAX + 1];

    if (strnlen(text, RP_CKPT_DIR_MAX + 1) > RP_CKPT_DIR_MAX) {
        rp__errbuf(err, errlen, "the value is longer than %d bytes",
                   RP_CKPT_DIR_MAX);
        return RP_ERR_INVALID_ARG;
    }
    /* The escapes and the characters are checked on the user's text
     * before anything is expanded, so both sides refuse the same texts. */
    if (rp__ckpt_dir_normalize(base, text, out, len, err, errlen) != RP_OK) {
        return RP_ERR_INVALID_ARG;
    }
    if (vars != NULL) {
        if (rp__ckpt_dir_expand(text, vars, expanded, sizeof(expanded), err,
                                errlen) != RP_OK ||
            rp__ckpt_dir_normalize(base, expanded, out, len, err, errlen) !=
                RP_OK) {
            return RP_ERR_INVALID_ARG;
        }
    }
    return rp__ckpt_dir_check_roots(out, roots, err, errlen);
}
