/*
 * The tuning table (tune.h): read, write, and applied at init.
 */
#include "config.h"

#include "coll/comm.h"
#include "coll/select.h"
#include "coll/tune.h"
#include "util/log.h"
#include "util/parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef RP_SYSCONFDIR
#define RP_SYSCONFDIR "/etc"
#endif

/* The largest switch point accepted: 1 TiB, as RINGPOINT_COLL_SHM_MAX. */
#define RP_TUNE_VALUE_MAX (UINT64_C(1) << 40)
#define RP_TUNE_LINE_MAX  256

typedef struct rp_tune_key {
    const char *name;
    size_t off;
} rp_tune_key_t;

static const rp_tune_key_t rp_tune_keys[] = {
    {"allreduce_rd_max", offsetof(rp__tune_t, rd_max)},
    {"shm_max", offsetof(rp__tune_t, shm_max)},
    {"hier_max", offsetof(rp__tune_t, hier_max)},
};
#define RP_TUNE_NKEYS (sizeof(rp_tune_keys) / sizeof(rp_tune_keys[0]))

static uint64_t *rp_tune_field(rp__tune_t *t, size_t k)
{
    return (uint64_t *)((char *)t + rp_tune_keys[k].off);
}

static void rp_tune_clear(rp__tune_t *t)
{
    t->rd_max = t->shm_max = t->hier_max = UINT64_MAX;
}

/* One line without its comment and surrounding blanks: NULL if empty. */
static char *rp_tune_strip(char *line)
{
    char *hash = strchr(line, '#'), *end;

    if (hash != NULL) {
        *hash = '\0';
    }
    while (*line == ' ' || *line == '\t') {
        line++;
    }
    end = line + strlen(line);
    while (end > line && (end[-1] == ' ' || end[-1] == '\t' ||
                          end[-1] == '\n' || end[-1] == '\r')) {
        *--end = '\0';
    }
    return *line != '\0' ? line : NULL;
}

/* "key value" of a known key, each at most once. */
static rp_status_t rp_tune_line(char *line, rp__tune_t *t, char *err,
                                size_t errlen)
{
    char *save = NULL, *key = strtok_r(line, " \t", &save);
    char *val = strtok_r(NULL, " \t", &save), why[128];
    uint64_t v;

    for (size_t k = 0; k < RP_TUNE_NKEYS; k++) {
        if (strcmp(key, rp_tune_keys[k].name) != 0) {
            continue;
        }
        if (val == NULL || strtok_r(NULL, " \t", &save) != NULL) {
            snprintf(err, errlen, "expected '%s BYTES'", key);
            return RP_ERR_INVALID_ARG;
        }
        if (rp__parse_uint(val, 0, RP_TUNE_VALUE_MAX, &v, why,
                           sizeof(why)) != RP_OK) {
            snprintf(err, errlen, "%s '%s': %s (bytes)", key, val, why);
            return RP_ERR_INVALID_ARG;
        }
        if (*rp_tune_field(t, k) != UINT64_MAX) {
            snprintf(err, errlen, "%s given twice", key);
            return RP_ERR_INVALID_ARG;
        }
        *rp_tune_field(t, k) = v;
        return RP_OK;
    }
    snprintf(err, errlen, "unknown key '%s' (expected allreduce_rd_max, "
             "shm_max or hier_max)", key);
    return RP_ERR_INVALID_ARG;
}

rp_status_t rp__tune_read(const char *path, rp__tune_t *t, char *err,
                          size_t errlen)
{
    char buf[RP_TUNE_LINE_MAX + 2], what[160], *line;
    rp_status_t status = RP_OK;
    bool header = false;
    unsigned lineno = 0;
    FILE *f;

    rp_tune_clear(t);
    f = fopen(path, "re");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return RP_ERR_IO;
    }
    while (status == RP_OK && fgets(buf, sizeof(buf), f) != NULL) {
        lineno++;
        if (strlen(buf) > RP_TUNE_LINE_MAX && strchr(buf, '\n') == NULL) {
            snprintf(what, sizeof(what), "a line longer than %d characters",
                     RP_TUNE_LINE_MAX);
            status = RP_ERR_INVALID_ARG;
            break;
        }
        line = rp_tune_strip(buf);
        if (line == NULL) {
            continue;
        }
        if (!header) {
            /* The first line that says anything names the format. */
            char magic[32];
            unsigned version;
            int used = 0;

            if (sscanf(line, "%31s %u%n", magic, &version, &used) != 2 ||
                line[used] != '\0' || strcmp(magic, RP_TUNE_MAGIC) != 0) {
                snprintf(what, sizeof(what), "expected '%s %d' first, not a "
                         "ringpoint tuning table", RP_TUNE_MAGIC,
                         RP_TUNE_VERSION);
                status = RP_ERR_INVALID_ARG;
            } else if (version != RP_TUNE_VERSION) {
                snprintf(what, sizeof(what), "version %u; this ringpoint "
                         "reads version %d (run ringpoint-bench --tune "
                         "again)", version, RP_TUNE_VERSION);
                status = RP_ERR_INVALID_ARG;
            }
            header = true;
            continue;
        }
        status = rp_tune_line(line, t, what, sizeof(what));
    }
    if (status == RP_OK && ferror(f)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        status = RP_ERR_IO;
    } else if (status == RP_OK && !header) {
        snprintf(err, errlen, "%s: empty, expected '%s %d' first", path,
                 RP_TUNE_MAGIC, RP_TUNE_VERSION);
        status = RP_ERR_INVALID_ARG;
    } else if (status != RP_OK) {
        snprintf(err, errlen, "%s:%u: %s", path, lineno, what);
    }
    fclose(f);
    if (status != RP_OK) {
        rp_tune_clear(t);
    }
    return status;
}

rp_status_t rp__tune_write(const char *path, const rp__tune_t *t,
                           const char *comment)
{
    char tmp[4096];
    rp__tune_t copy = *t;
    FILE *f;
    int n, err = 0;

    n = snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        rp_error("tune: the path %s is too long", path);
        return RP_ERR_INVALID_ARG;
    }
    f = fopen(tmp, "we");
    if (f == NULL) {
        rp_error("tune: cannot write %s: %s", tmp, strerror(errno));
        return RP_ERR_IO;
    }
    fprintf(f, "# %s\n%s %d\n", comment, RP_TUNE_MAGIC, RP_TUNE_VERSION);
    for (size_t k = 0; k < RP_TUNE_NKEYS; k++) {
        if (*rp_tune_field(&copy, k) != UINT64_MAX) {
            fprintf(f, "%s %llu\n", rp_tune_keys[k].name,
                    (unsigned long long)*rp_tune_field(&copy, k));
        }
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
        err = errno;
    }
    if (fclose(f) != 0 && err == 0) {
        err = errno;
    }
    if (err == 0 && rename(tmp, path) != 0) {
        err = errno;
    }
    if (err != 0) {
        rp_error("tune: cannot write %s: %s", path, strerror(err));
        unlink(tmp);
        return RP_ERR_IO;
    }
    return RP_OK;
}

const char *rp__tune_path(const char *given)
{
    static char def[4096];

    if (given != NULL) {
        return *given == '\0' || strcmp(given, "none") == 0 ? NULL : given;
    }
    snprintf(def, sizeof(def), "%s/%s", RP_SYSCONFDIR, RP_TUNE_DEFAULT_NAME);
    return access(def, F_OK) == 0 ? def : NULL;
}

rp_status_t rp__tune_setup(rp_comm_t *c, bool rd_env, bool shm_env,
                           const char *given)
{
    rp__tune_t t;
    rp_status_t status;
    const char *path = NULL;
    char err[512];

    rp_tune_clear(&t);
    if (c->rank == 0) {
        path = rp__tune_path(given);
        if (path != NULL && rp__tune_read(path, &t, err, sizeof(err)) != RP_OK) {
            rp_warn("coll: tuning table refused, the built-in switch points "
                    "stay: %s", err);
        }
    }
    /* Over the transport, flat (no segment, no hierarchy yet). */
    status = rp__comm_broadcast(c, &t, sizeof(t), 0);
    if (status != RP_OK) {
        return status;
    }
    if (t.rd_max != UINT64_MAX && !rd_env) {
        c->rd_max_bytes = (size_t)t.rd_max;
    }
    if (t.shm_max != UINT64_MAX && !shm_env) {
        /* As RINGPOINT_COLL_SHM_MAX would: one switch for every
         * collective, single-copy above it. */
        c->shm_max = c->shm_ar_max = c->shm_ag_max = (size_t)t.shm_max;
    }
    if (t.hier_max != UINT64_MAX) {
        c->hier_max = (size_t)t.hier_max;
    }
    if (c->rank == 0 && path != NULL) {
        char hier[32] = "unlimited";

        if (c->hier_max != SIZE_MAX) {
            snprintf(hier, sizeof(hier), "%zu", c->hier_max);
        }
        rp_debug("coll: tuning table %s: allreduce_rd_max %zu%s, shm_max "
                 "%zu%s, hier_max %s", path, c->rd_max_bytes,
                 t.rd_max == UINT64_MAX ? " (built in)"
                 : rd_env ? " (RINGPOINT_ALLREDUCE_RD_MAX)" : "",
                 c->shm_max,
                 t.shm_max == UINT64_MAX ? " (built in)"
                 : shm_env ? " (RINGPOINT_COLL_SHM_MAX)" : "",
                 hier);
    }
    return RP_OK;
}
