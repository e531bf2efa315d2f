/*
 * The site's plugstack.conf key=value settings (spank/admin.c) and the
 * requeue allowance derived from them (spank/requeue_policy.c). The input
 * is NUL-separated words, as Slurm splits the plugstack.conf line; a last
 * word is the job's RINGPOINT_CKPT_REQUEUE.
 *
 * Properties:
 *  - accepted settings are within the documented limits (max_keep 1 to
 *    1000000, max_requeues up to 1000, durations up to 366 days,
 *    default_interval not below min_interval, roots absolute without '%'
 *    or "..");
 *  - written back as key=value words they parse to the same settings;
 *  - a list is refused exactly when one of its words is refused alone, or
 *    the default is below the minimum, with that word's message, which
 *    names the key;
 *  - the requeue allowance never exceeds the site's maximum, whatever the
 *    job's text says.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "spank/admin.h"
#include "spank/requeue.h"
#include "util/parse.h"

#include <inttypes.h>

#define MAX_WORDS 16

static bool admin_equal(const rp_spank_admin_t *a, const rp_spank_admin_t *b)
{
    return a->has_default_interval == b->has_default_interval &&
           (!a->has_default_interval ||
            a->default_interval_s == b->default_interval_s) &&
           a->min_interval_s == b->min_interval_s &&
           a->max_keep == b->max_keep &&
           a->has_max_requeues == b->has_max_requeues &&
           (!a->has_max_requeues || a->max_requeues == b->max_requeues) &&
           strcmp(a->allowed_roots, b->allowed_roots) == 0 &&
           a->requeue_how == b->requeue_how &&
           a->requeue_failed == b->requeue_failed;
}

static void check_limits(const rp_spank_admin_t *a)
{
    const char *r = a->allowed_roots;

    FUZZ_CHECK(a->max_keep <= RP_SPANK_KEEP_LIMIT, "max_keep %" PRIu64,
               a->max_keep);
    FUZZ_CHECK(!a->has_max_requeues || a->max_requeues <= UINT32_MAX,
               "max_requeues %" PRIu64, a->max_requeues);
    FUZZ_CHECK(a->min_interval_s <= RP_DURATION_MAX_S &&
                   a->default_interval_s <= RP_DURATION_MAX_S,
               "an interval over 366 days");
    FUZZ_CHECK(!a->has_default_interval || a->default_interval_s == 0 ||
                   a->default_interval_s >= a->min_interval_s,
               "default_interval %" PRIu64 " below min_interval %" PRIu64,
               a->default_interval_s, a->min_interval_s);
    FUZZ_CHECK(a->requeue_how <= RP_SPANK_REQUEUE_OFF, "requeue %d",
               (int)a->requeue_how);
    while (*r != '\0') {
        const char *end = strchrnul(r, ':');

        FUZZ_CHECK(*r == '/' && memchr(r, '%', (size_t)(end - r)) == NULL,
                   "root '%.*s'", (int)(end - r), r);
        r = *end == ':' ? end + 1 : end;
    }
}

/* The settings as key=value words again. */
static int admin_words(const rp_spank_admin_t *a, char buf[][1100])
{
    static const char *const how[] = {"auto", "hold", "off"};
    int n = 0;

    if (a->has_default_interval) {
        snprintf(buf[n++], 1100, "default_interval=%" PRIu64,
                 a->default_interval_s);
    }
    snprintf(buf[n++], 1100, "min_interval=%" PRIu64, a->min_interval_s);
    if (a->max_keep != 0) {
        snprintf(buf[n++], 1100, "max_keep=%" PRIu64, a->max_keep);
    }
    if (a->has_max_requeues) {
        snprintf(buf[n++], 1100, "max_requeues=%" PRIu64, a->max_requeues);
    }
    if (a->allowed_roots[0] != '\0') {
        snprintf(buf[n++], 1100, "allowed_roots=%s", a->allowed_roots);
    }
    snprintf(buf[n++], 1100, "requeue=%s", how[a->requeue_how]);
    snprintf(buf[n++], 1100, "requeue_failed=%s",
             a->requeue_failed ? "yes" : "no");
    return n;
}

static void check_message(const char *word, const char *err)
{
    const char *eq = strchr(word, '=');
    char key[64];

    if (eq == NULL || eq == word) {
        FUZZ_CHECK(strstr(err, "is not key=value") != NULL, "'%s' for '%s'",
                   err, word);
        return;
    }
    snprintf(key, sizeof(key), "%.*s", (int)(eq - word), word);
    /* The key itself, or (unknown) the text typed; a key longer than
     * the message can hold is at least started. */
    FUZZ_CHECK(strstr(err, key) != NULL ||
                   strncmp(err, "plugstack.conf: unknown key '", 29) == 0,
               "'%s' does not name '%s'", err, key);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    char *words[MAX_WORDS + 1], canon[8][1100], *cargv[8], *job;
    rp_spank_admin_t a, b, one;
    char err[2048] = "", err1[2048];
    int n = 0, first_bad = -1, nc;
    rp_status_t st;
    uint64_t max;

    while (n < MAX_WORDS && in.left > 1) {
        words[n++] = fuzz_str(&in, 1200);
    }
    job = fuzz_str(&in, 64);
    words[n] = NULL;
    st = rp__spank_admin_parse(n, words, &a, err, sizeof(err));
    for (int i = 0; i < n && first_bad < 0; i++) {
        if (rp__spank_admin_parse(1, &words[i], &one, err1, sizeof(err1)) !=
            RP_OK) {
            first_bad = i;
        }
    }
    if (st != RP_OK) {
        FUZZ_CHECK(err[0] != '\0', "a refusal without a reason");
        if (first_bad >= 0) {
            rp__spank_admin_parse(1, &words[first_bad], &one, err1,
                                  sizeof(err1));
            FUZZ_CHECK(strcmp(err, err1) == 0,
                       "refused with '%s', its first bad word '%s' alone "
                       "with '%s'", err, words[first_bad], err1);
            check_message(words[first_bad], err);
        } else {
            FUZZ_CHECK(strncmp(err, "plugstack.conf: default_interval: ",
                               34) == 0 &&
                           strstr(err, "below this site's minimum") != NULL,
                       "every word is fine alone, refused with '%s'", err);
        }
        goto out;
    }
    FUZZ_CHECK(first_bad < 0, "accepted, but '%s' alone is refused",
               words[first_bad]);
    check_limits(&a);
    nc = admin_words(&a, canon);
    for (int i = 0; i < nc; i++) {
        cargv[i] = canon[i];
    }
    FUZZ_CHECK(rp__spank_admin_parse(nc, cargv, &b, err, sizeof(err)) ==
                   RP_OK && admin_equal(&a, &b),
               "the settings written back do not parse the same (%s)", err);
    max = rp__requeue_max(job, &a);
    FUZZ_CHECK(max <= rp__spank_admin_max_requeues(&a) &&
                   (a.has_max_requeues ||
                    max <= RP_SPANK_DEFAULT_MAX_REQUEUES),
               "job '%s' allowed %" PRIu64 " requeues", job, max);
    for (uint64_t s = 0; s < 3; s++) {
        uint64_t x = s == 0 ? 0 : s == 1 ? a.min_interval_s
                                         : a.min_interval_s - 1;
        bool ok = rp__spank_admin_check_interval(&a, x, err, sizeof(err)) ==
                  RP_OK;

        FUZZ_CHECK(ok == (x == 0 || x >= a.min_interval_s),
                   "interval %" PRIu64 " under min %" PRIu64 ": %s", x,
                   a.min_interval_s, ok ? "accepted" : "refused");
    }
out:
    for (int i = 0; i < n; i++) {
        free(words[i]);
    }
    free(job);
    return 0;
}
