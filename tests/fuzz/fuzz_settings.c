/*
 * The runtime's own reading of its environment (runtime/core/settings.c):
 * every RINGPOINT_* variable rp_init reads, set from the input as
 * NUL-separated (variable, value) pairs.
 *
 * Properties:
 *  - rp__settings_load accepts exactly when every variable set is
 *    acceptable alone, by the documented form and bounds (written here
 *    from settings.h and doc/user-guide.md), and reads each to the value
 *    the shared parser gives;
 *  - a refusal is logged naming a variable that is refused alone.
 */
#include "config.h"

#include "fuzz/fuzz.h"
#include "core/settings.h"
#include "util/parse.h"

typedef enum { K_DURATION, K_UINT, K_SIGNAL, K_ALGO, K_DIR } kind_t;

static const struct var {
    const char *name;
    kind_t kind;
    uint64_t min, max;
} vars[] = {
    {"RINGPOINT_CKPT_INTERVAL", K_DURATION, 0, 0},
    {"RINGPOINT_CKPT_DIR", K_DIR, 0, 0},
    {"RINGPOINT_CKPT_EVERY", K_UINT, 0, UINT64_MAX},
    {"RINGPOINT_CKPT_KEEP", K_UINT, 1, 1000000},
    {"RINGPOINT_CKPT_CHUNK_SIZE", K_UINT, 4096, 1ULL << 30},
    {"RINGPOINT_CKPT_ASYNC", K_UINT, 0, 1},
    {"RINGPOINT_CKPT_SIGNAL", K_SIGNAL, 0, 0},
    {"RINGPOINT_CKPT_REQUEUE", K_UINT, 0, 1000000},
    {"RINGPOINT_COLL_TIMEOUT", K_DURATION, 0, 0},
    {"RINGPOINT_ALLREDUCE_ALGO", K_ALGO, 0, 0},
    {"RINGPOINT_COLL_SPIN_US", K_UINT, 0, 10000000},
    {"RINGPOINT_ALLREDUCE_RD_MAX", K_UINT, 0, 1ULL << 30},
    {"RINGPOINT_COLL_SEGMENT", K_UINT, 64, 1ULL << 30},
    {"RINGPOINT_COLL_WINDOW", K_UINT, 1, 256},
};
#define NVARS (sizeof(vars) / sizeof(vars[0]))

/* Is @text acceptable for variable @i alone; its value in *@v. */
static bool alone_ok(size_t i, const char *text, uint64_t *v)
{
    int signo;

    switch (vars[i].kind) {
    case K_DURATION:
        return rp__parse_duration(text, v, NULL, 0) == RP_OK;
    case K_UINT:
        if (rp__parse_uint(text, vars[i].min, vars[i].max, v, NULL, 0) !=
            RP_OK) {
            return false;
        }
        return strcmp(vars[i].name, "RINGPOINT_CKPT_CHUNK_SIZE") != 0 ||
               *v % 4096 == 0;
    case K_SIGNAL:
        if (rp__parse_signal(text, &signo, NULL, 0) != RP_OK) {
            return false;
        }
        *v = (uint64_t)signo;
        return true;
    case K_ALGO:
        *v = strcmp(text, "auto") == 0   ? RP_COLL_ALGO_AUTO
             : strcmp(text, "ring") == 0 ? RP_COLL_ALGO_RING
                                         : RP_COLL_ALGO_RD;
        return strcmp(text, "auto") == 0 || strcmp(text, "ring") == 0 ||
               strcmp(text, "rd") == 0;
    default:
        *v = 0;
        return text[0] != '\0' && strlen(text) < RP_CKPT_DIR_LEN;
    }
}

/* What @cfg holds for variable @i. */
static uint64_t field(const rp_settings_t *cfg, size_t i)
{
    const char *n = vars[i].name;

    if (strcmp(n, "RINGPOINT_CKPT_INTERVAL") == 0) return cfg->ckpt_interval_s;
    if (strcmp(n, "RINGPOINT_CKPT_EVERY") == 0) return cfg->ckpt_every;
    if (strcmp(n, "RINGPOINT_CKPT_KEEP") == 0) return cfg->ckpt_keep;
    if (strcmp(n, "RINGPOINT_CKPT_CHUNK_SIZE") == 0) return cfg->ckpt_chunk;
    if (strcmp(n, "RINGPOINT_CKPT_ASYNC") == 0) return (uint64_t)cfg->ckpt_async;
    if (strcmp(n, "RINGPOINT_CKPT_SIGNAL") == 0) return (uint64_t)cfg->ckpt_signal;
    if (strcmp(n, "RINGPOINT_CKPT_REQUEUE") == 0) return cfg->ckpt_requeue;
    if (strcmp(n, "RINGPOINT_COLL_TIMEOUT") == 0) return cfg->coll_timeout_s;
    if (strcmp(n, "RINGPOINT_ALLREDUCE_ALGO") == 0) return (uint64_t)cfg->allreduce_algo;
    if (strcmp(n, "RINGPOINT_COLL_SPIN_US") == 0) return (uint64_t)cfg->coll_spin_us;
    if (strcmp(n, "RINGPOINT_ALLREDUCE_RD_MAX") == 0) return cfg->rd_max_bytes;
    if (strcmp(n, "RINGPOINT_COLL_SEGMENT") == 0) return cfg->segment_bytes;
    if (strcmp(n, "RINGPOINT_COLL_WINDOW") == 0) return cfg->window;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size};
    char *value[NVARS] = {NULL};
    char log[8192];
    rp_settings_t cfg;
    bool all_ok = true;
    rp_status_t st;
    int saved;

    for (size_t i = 0; i < NVARS; i++) {
        unsetenv(vars[i].name);
    }
    for (int k = 0; k < 6 && in.left > 0; k++) {
        size_t i = fuzz_u8(&in) % NVARS;

        free(value[i]);
        value[i] = fuzz_str(&in, RP_VALUE_MAX_LEN + 8);
        setenv(vars[i].name, value[i], 1);
    }
    for (size_t i = 0; i < NVARS; i++) {
        uint64_t v;

        if (value[i] != NULL && !alone_ok(i, value[i], &v)) {
            all_ok = false;
        }
    }
    saved = fuzz_capture_begin();
    st = rp__settings_load(&cfg);
    fuzz_capture_end(saved, log, sizeof(log));
    FUZZ_CHECK((st == RP_OK) == all_ok, "rp__settings_load %s, the variables "
               "alone say %s", st == RP_OK ? "accepts" : "refuses",
               all_ok ? "accept" : "refuse");
    if (st == RP_OK) {
        for (size_t i = 0; i < NVARS; i++) {
            uint64_t v;

            if (value[i] == NULL) {
                continue;
            }
            alone_ok(i, value[i], &v);
            if (vars[i].kind == K_DIR) {
                FUZZ_CHECK(strcmp(cfg.ckpt_dir, value[i]) == 0, "%s",
                           vars[i].name);
            } else {
                FUZZ_CHECK(field(&cfg, i) == v, "%s='%.80s' read as %llu, "
                           "not %llu", vars[i].name, value[i],
                           (unsigned long long)field(&cfg, i),
                           (unsigned long long)v);
            }
        }
        FUZZ_CHECK((value[7] != NULL) == (cfg.ckpt_requeue_set != 0),
                   "ckpt_requeue_set is %d", cfg.ckpt_requeue_set);
    } else {
        bool named = false;

        for (size_t i = 0; i < NVARS; i++) {
            uint64_t v;

            if (value[i] != NULL && !alone_ok(i, value[i], &v) &&
                strstr(log, vars[i].name) != NULL) {
                named = true;
            }
        }
        FUZZ_CHECK(named, "the refusal names no refused variable: %.300s",
                   log);
    }
    for (size_t i = 0; i < NVARS; i++) {
        unsetenv(vars[i].name);
        free(value[i]);
    }
    return 0;
}
