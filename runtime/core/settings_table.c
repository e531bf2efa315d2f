/*
 * The table of every RINGPOINT_* variable the runtime reads, and the one
 * reader of them: rp__settings_load, called once by rp_init.
 *
 * One entry per variable says its form, bounds, default and meaning;
 * rp_init's parsing, the messages for a malformed value, `ringpoint-info
 * --settings` and the ENVIRONMENT section of libringpoint(3) all come from
 * it, so a new variable is one new entry (and a field of rp_settings_t),
 * and the unit test that tries a malformed value of every entry covers it
 * without being told.
 *
 * Values are parsed with util/parse.c, the parsers the SPANK plugin uses
 * at submit time, so what srun accepted reads the same in the tasks.
 */
#include "config.h"

#include "core/settings.h"
#include "bootstrap/bootstrap.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/str.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef enum rp_set_kind {
    RP_SK_UINT,     /* decimal in [min, max] (and a multiple of .mult) */
    RP_SK_DURATION, /* rp__parse_duration, at least min seconds */
    RP_SK_WORD,     /* one of .words */
    RP_SK_SIGNAL,   /* rp__parse_signal */
    RP_SK_PATH,     /* a non-empty path that fits the field */
    RP_SK_TEXT,     /* any text that fits the field */
    RP_SK_FLAG      /* set to anything: on */
} rp_set_kind_t;

typedef enum rp_set_field {
    RP_SF_U64, /* uint64_t */
    RP_SF_I64, /* int64_t */
    RP_SF_INT, /* int */
    RP_SF_BOOL, /* bool */
    RP_SF_STR  /* char[.size]: the text as given */
} rp_set_field_t;

/* Empty counts as unset (it always has for these). */
#define RP_SF_EMPTY_UNSET 0x1u
/* Words compare without regard to case. */
#define RP_SF_NOCASE      0x2u
/* Only the plugin exports it (the job's limits): never the user's. */
#define RP_SF_PLUGIN      0x4u
/* A test hook: parsed like the others, left out of the manual. */
#define RP_SF_HIDDEN      0x8u

typedef struct rp_set_word {
    const char *word;
    int value;
} rp_set_word_t;

typedef struct rp_set_entry {
    const char *name;
    rp_set_kind_t kind;
    rp_set_field_t field;
    size_t offset;  /* into rp_settings_t */
    size_t size;    /* RP_SF_STR: the field's size */
    uint64_t min, max, mult;
    const rp_set_word_t *words; /* NULL-terminated */
    int64_t unset;  /* stored when unset (numbers) */
    const char *dflt; /* RP_SF_STR: copied when unset */
    const char *def;  /* the default for a reader */
    const char *forms;
    const char *meaning;
    unsigned flags;
} rp_set_entry_t;

#define RP_F(member) offsetof(rp_settings_t, member)
#define RP_S(member) RP_F(member), sizeof(((rp_settings_t *)0)->member)

static const rp_set_word_t rp_w_algo[] = {
    {"auto", RP_COLL_ALGO_AUTO}, {"ring", RP_COLL_ALGO_RING},
    {"rd", RP_COLL_ALGO_RD}, {"rh", RP_COLL_ALGO_RH}, {NULL, 0}};
static const rp_set_word_t rp_w_auto01[] = {
    {"auto", -1}, {"1", 1}, {"0", 0}, {NULL, 0}};
static const rp_set_word_t rp_w_01[] = {{"1", 1}, {"0", 0}, {NULL, 0}};
/* The values of rp_compression_t (ringpoint/coll.h). */
static const rp_set_word_t rp_w_compression[] = {
    {"none", 1}, {"fp16", 2}, {"bf16", 3}, {NULL, 0}};
/* The values of rp__reduce_isa_t (reduce/reduce.h). */
static const rp_set_word_t rp_w_isa[] = {
    {"auto", 0}, {"generic", 1}, {"avx2", 2}, {NULL, 0}};
/* The values of rp_log_level_t (util/log.h). */
static const rp_set_word_t rp_w_log[] = {
    {"error", 0}, {"warn", 1}, {"info", 2}, {"debug", 3},
    {"0", 0}, {"1", 1}, {"2", 2}, {"3", 3}, {NULL, 0}};
/* The values of rp__gpu_mode_t (gpu/path.h). */
static const rp_set_word_t rp_w_gpu[] = {
    {"auto", 0}, {"on", 1}, {"1", 1}, {"off", 2}, {"0", 2}, {NULL, 0}};

#define RP_MIB (1024ull * 1024)
#define RP_GIB (1024ull * RP_MIB)

/* In the order of the manual: start-up, collectives, checkpoints, GPU. */
static const rp_set_entry_t rp_set_table[] = {
    /* ---- start-up and transport */
    {"RINGPOINT_LOG_LEVEL", RP_SK_WORD, RP_SF_INT, RP_F(log_level), 0,
     0, 0, 0, rp_w_log, 1, NULL, "warn",
     "error, warn, info or debug (or 0 to 3)",
     "What the library writes to standard error.",
     RP_SF_EMPTY_UNSET | RP_SF_NOCASE},
    {"RINGPOINT_BOOTSTRAP_TIMEOUT", RP_SK_DURATION, RP_SF_U64,
     RP_F(bootstrap_timeout_s), 0, 1, RP_DURATION_MAX_S, 0, NULL,
     RP_BOOTSTRAP_TIMEOUT_DEFAULT_S, NULL,
     "2m", "a duration of at least 1s",
     "How long the PMIx exchange at start-up waits for a peer's data.", 0},
    {"RINGPOINT_PMIX_COLLECT", RP_SK_WORD, RP_SF_BOOL, RP_F(pmix_collect), 0,
     0, 0, 0, rp_w_01, 0, NULL, "0", "1 or 0",
     "1 gathers every rank's address into every node at the start-up "
     "fence; by default each rank fetches a peer's address when it first "
     "talks to it.", RP_SF_EMPTY_UNSET},
    /* Off by default: a training script that the batch script started
     * without srun would otherwise run as one rank for hours, and one
     * process meant to run alone says so with a variable, or with
     * RP_INIT_FLAG_SINGLE. */
    {"RINGPOINT_ALLOW_SINGLE", RP_SK_WORD, RP_SF_BOOL, RP_F(allow_single), 0,
     0, 0, 0, rp_w_01, 0, NULL, "0", "1 or 0",
     "1 lets a process started without srun in a Slurm job of several "
     "tasks (by the batch script itself, or in an salloc shell) run alone "
     "as rank 0 of 1; by default rp_init() refuses, naming srun.",
     RP_SF_EMPTY_UNSET},
    {"RINGPOINT_PEER_TIMEOUT", RP_SK_DURATION, RP_SF_U64,
     RP_F(peer_timeout_s), 0, 0, RP_DURATION_MAX_S, 0, NULL, 20, NULL, "20s",
     "a duration; 0 turns the check off",
     "How long a peer on another host may stay silent to the liveness "
     "pings before it is taken for lost.", RP_SF_EMPTY_UNSET},
    {"RINGPOINT_UCX_PEER_ERRMODE", RP_SK_FLAG, RP_SF_BOOL,
     RP_F(ucx_peer_errmode), 0, 0, 0, 0, NULL, 0, NULL, "unset",
     "any value (set: on)",
     "Set: peers on the same host also get UCX's peer error handling; by "
     "default only peers on other hosts do.", 0},
    {"RINGPOINT_UCX_MODULE", RP_SK_PATH, RP_SF_STR, RP_S(ucx_module), 0, 0,
     0, NULL, 0, "", "the installed one", "a path",
     "The UCX transport module (ringpoint-ucx.so). The library links no "
     "UCX: it opens this module when a job of several ranks first "
     "communicates, so a process that only reads checkpoints never loads "
     "UCX; rp_init fails naming the path when it cannot.",
     RP_SF_EMPTY_UNSET},
    {"RINGPOINT_UCX_CONFIG_CWD", RP_SK_WORD, RP_SF_BOOL, RP_F(ucx_config_cwd),
     0, 0, 0, 0, rp_w_01, 0, NULL, "0", "1 or 0",
     "1 lets UCX read a ucx.conf in the working directory, as UCX alone "
     "does. By default the module is opened from a thread whose working "
     "directory is /, since a file in the directory a job starts in may "
     "belong to someone else and would set UCX's variables (its log file "
     "among them); UCX's other configuration files and variables apply.",
     RP_SF_EMPTY_UNSET},

    /* ---- collectives */
    {"RINGPOINT_COLL_TIMEOUT", RP_SK_DURATION, RP_SF_U64,
     RP_F(coll_timeout_s), 0, 0, RP_DURATION_MAX_S, 0, NULL,
     RP_DEFAULT_COLL_TIMEOUT_S, NULL, "5m", "a duration; 0 waits for ever",
     "How long a collective waits for a peer before it fails with "
     "RP_ERR_PEER_FAILED or RP_ERR_TIMEOUT; waits on the GPU too.", 0},
    {"RINGPOINT_ALLREDUCE_ALGO", RP_SK_WORD, RP_SF_INT,
     RP_F(allreduce_algo), 0, 0, 0, 0, rp_w_algo, RP_COLL_ALGO_AUTO, NULL,
     "auto", "auto, ring, rd or rh",
     "The allreduce algorithm over the transport (rd: recursive doubling; "
     "ring: the pipelined ring between two ranks, each block reduced at its "
     "owner then a ring allgather beyond, auto's for large messages up to 64 "
     "ranks; rh: recursive halving, auto's beyond); it changes the time, "
     "never the bits.", 0},
    {"RINGPOINT_ALLREDUCE_RD_MAX", RP_SK_UINT, RP_SF_U64,
     RP_F(rd_max_bytes), 0, 0, 1ull << 30, 0, NULL, -1, NULL,
     "8 KiB at 2 ranks, 64 KiB beyond, or the tuning table's",
     "bytes, 0 to 1073741824",
     "The largest allreduce that auto sends by recursive doubling.", 0},
    {"RINGPOINT_COLL_TUNE_FILE", RP_SK_TEXT, RP_SF_STR, RP_S(tune_file),
     0, 0, 0, NULL, 0, "", RP_SYSCONFDIR "/ringpoint/coll-tune.conf where it "
     "exists", "a path; none or empty: no table",
     "The tuning table ringpoint-bench --tune writes; rank 0 reads it for "
     "all ranks, and RINGPOINT_ALLREDUCE_RD_MAX and RINGPOINT_COLL_SHM_MAX "
     "win over it.", 0},
    {"RINGPOINT_COLL_HIER", RP_SK_WORD, RP_SF_INT, RP_F(coll_hier), 0,
     0, 0, 0, rp_w_auto01, -1, NULL, "auto", "auto, 1 or 0",
     "The hierarchy across nodes: auto only where its results are the flat "
     "algorithm's bits, 1 for every allreduce and broadcast of a job on "
     "several nodes, 0 never.", RP_SF_EMPTY_UNSET},
    {"RINGPOINT_COLL_SHM", RP_SK_WORD, RP_SF_BOOL, RP_F(coll_shm), 0,
     0, 0, 0, rp_w_01, 1, NULL, "1", "1 or 0",
     "0 turns off the node's shared segment.", RP_SF_EMPTY_UNSET},
    {"RINGPOINT_COLL_SHM_MAX", RP_SK_UINT, RP_SF_I64, RP_F(shm_max_bytes),
     0, 0, 1ull << 40, 0, NULL, -1, NULL, "128 KiB",
     "bytes, 0 to 1099511627776",
     "The largest collective that goes through the node's shared segment.",
     RP_SF_EMPTY_UNSET},
    {"RINGPOINT_COLL_CMA", RP_SK_WORD, RP_SF_BOOL, RP_F(coll_cma), 0,
     0, 0, 0, rp_w_01, 1, NULL, "1", "1 or 0",
     "0 turns off the direct reads of a peer's buffer (cross-memory "
     "attach), in the collectives and in the restore.", RP_SF_EMPTY_UNSET},
    {"RINGPOINT_COLL_SEGMENT", RP_SK_UINT, RP_SF_U64, RP_F(segment_bytes),
     0, 64, 1ull << 30, 0, NULL, RP_DEFAULT_SEGMENT_BYTES, NULL,
     "128 KiB; 512 KiB at 2 ranks; 1 MiB over TCP",
     "bytes, 64 to 1073741824", "The pipelining unit of the large allreduce, "
     "broadcast and allgather.", 0},
    {"RINGPOINT_COLL_WINDOW", RP_SK_UINT, RP_SF_U64, RP_F(window), 0,
     1, 256, 0, NULL, RP_DEFAULT_WINDOW, NULL, "4", "1 to 256",
     "Segments received ahead.", 0},
    {"RINGPOINT_COLL_SPIN_US", RP_SK_UINT, RP_SF_I64, RP_F(coll_spin_us), 0,
     0, 10000000, 0, NULL, -1, NULL,
     "200; 1000, yielding the CPU, when oversubscribed",
     "microseconds, 0 to 10000000",
     "How long a wait polls before it sleeps on the transport.", 0},
    {"RINGPOINT_COLL_OVERSUBSCRIBED", RP_SK_WORD, RP_SF_INT,
     RP_F(coll_oversubscribed), 0, 0, 0, 0, rp_w_auto01, -1, NULL,
     "auto: when the node has more ranks than online CPUs", "auto, 1 or 0",
     "Whether the ranks of a node share cores, for the collectives and the "
     "transport alike; set it where the CPU count misleads, the same on "
     "every rank.", 0},
    {"RINGPOINT_COLL_PROGRESS_SPIN_US", RP_SK_UINT, RP_SF_I64,
     RP_F(progress_spin_us), 0, 0, 10000000, 0, NULL, -1, NULL,
     "as RINGPOINT_COLL_SPIN_US", "microseconds, 0 to 10000000",
     "How long the progress thread of the non-blocking collectives polls.",
     RP_SF_EMPTY_UNSET},
    {"RINGPOINT_COMPRESSION", RP_SK_WORD, RP_SF_INT, RP_F(compression), 0,
     0, 0, 0, rp_w_compression, 1, NULL, "none", "none, fp16 or bf16",
     "The wire format of float32 grouped allreduces that do not choose "
     "one.", RP_SF_EMPTY_UNSET},
    {"RINGPOINT_REDUCE_ISA", RP_SK_WORD, RP_SF_INT, RP_F(reduce_isa), 0,
     0, 0, 0, rp_w_isa, 0, NULL, "auto: AVX2 and F16C where the CPU has them",
     "auto, generic or avx2",
     "The reduction kernels; every variant gives the same bits.",
     RP_SF_EMPTY_UNSET},

    /* ---- checkpoints */
    {"RINGPOINT_CKPT_INTERVAL", RP_SK_DURATION, RP_SF_U64,
     RP_F(ckpt_interval_s), 0, 0, RP_DURATION_MAX_S, 0, NULL,
     RP_DEFAULT_CKPT_INTERVAL_S, NULL, "30m (or the site's)",
     "a duration; 0: only on a signal",
     "Time between checkpoints (--ckpt-interval).", 0},
    {"RINGPOINT_CKPT_DIR", RP_SK_PATH, RP_SF_STR, RP_S(ckpt_dir), 0, 0, 0,
     NULL, 0, RP_DEFAULT_CKPT_DIR, RP_DEFAULT_CKPT_DIR, "a non-empty path",
     "Where checkpoints live (--ckpt-dir).", 0},
    {"RINGPOINT_CKPT_EVERY", RP_SK_UINT, RP_SF_U64, RP_F(ckpt_every), 0,
     0, UINT64_MAX, 0, NULL, 0, NULL, "0 (off)", "a step count",
     "Also checkpoint every N steps.", 0},
    {"RINGPOINT_CKPT_KEEP", RP_SK_UINT, RP_SF_U64, RP_F(ckpt_keep), 0,
     1, 1000000, 0, NULL, RP_DEFAULT_CKPT_KEEP, NULL, "2", "1 to 1000000",
     "Complete checkpoints kept (--ckpt-keep).", 0},
    {"RINGPOINT_CKPT_CHUNK_SIZE", RP_SK_UINT, RP_SF_U64, RP_F(ckpt_chunk),
     0, 4096, 1ull << 30, 4096, NULL, RP_DEFAULT_CKPT_CHUNK, NULL, "4 MiB",
     "bytes, a multiple of 4096 up to 1073741824",
     "The unit of a shard's checksums.", 0},
    {"RINGPOINT_CKPT_ASYNC", RP_SK_UINT, RP_SF_INT, RP_F(ckpt_async), 0,
     0, 1, 0, NULL, 1, NULL, "1", "1 or 0",
     "1 writes a checkpoint in the background after a snapshot; 0 writes "
     "it before rp_step() returns.", 0},
    /* USR2 by default: NCCL installs a handler of its own for USR1, so a
     * warning on USR1 would not reach ringpoint in a job that uses NCCL. */
    {"RINGPOINT_CKPT_SIGNAL", RP_SK_SIGNAL, RP_SF_INT, RP_F(ckpt_signal), 0,
     0, 0, 0, NULL, SIGUSR2, NULL, "USR2", RP_SIGNAL_FORMS,
     "The early-warning signal (--ckpt-signal).", 0},
    {"RINGPOINT_CKPT_REQUEUE", RP_SK_UINT, RP_SF_U64, RP_F(ckpt_requeue), 0,
     0, 1000000, 0, NULL, 0, NULL, "unset: the site's limit",
     "0 to 1000000", "Requeues allowed after a stop (--ckpt-requeue).", 0},
    {"RINGPOINT_CKPT_TIMEOUT", RP_SK_DURATION, RP_SF_U64,
     RP_F(ckpt_timeout_s), 0, 1, RP_DURATION_MAX_S, 0, NULL, 0, NULL,
     "the time left before Slurm's SIGKILL, less a tenth",
     "a duration of at least 1s",
     "The longest a stop, or rp_finalize() with a write in flight, waits "
     "for a checkpoint write; past it the process exits RP_EXIT_STOPPED.",
     RP_SF_EMPTY_UNSET},
    {"RINGPOINT_CKPT_COPY_THREADS", RP_SK_UINT, RP_SF_U64,
     RP_F(ckpt_copy_threads), 0, 1, 64, 0, NULL, 0, NULL,
     "the cores this rank does not share, at most 8", "1 to 64",
     "Threads that copy an async snapshot into staging: the time rp_step() "
     "holds the training loop.", RP_SF_EMPTY_UNSET},
    {"RINGPOINT_CKPT_FAULT", RP_SK_TEXT, RP_SF_STR, RP_S(ckpt_fault), 0, 0,
     0, NULL, 0, "", "unset", "KIND:RANK[:STEP], KIND write, kill or stop",
     "Test hook: a fault injected into the checkpoint writer.",
     RP_SF_EMPTY_UNSET | RP_SF_HIDDEN},
    {"RINGPOINT_SLURM_KILL_WAIT", RP_SK_UINT, RP_SF_I64,
     RP_F(slurm_kill_wait_s), 0, 0, INT64_MAX, 0, NULL, -1, NULL,
     "unknown (not under the plugin)", "seconds",
     "Slurm's KillWait, exported by the plugin.", RP_SF_PLUGIN},
    {"RINGPOINT_SLURM_GRACE_TIME", RP_SK_UINT, RP_SF_I64,
     RP_F(slurm_grace_s), 0, 0, INT64_MAX, 0, NULL, -1, NULL,
     "unknown (not under the plugin)", "seconds",
     "The partition's GraceTime, exported by the plugin.", RP_SF_PLUGIN},
    {"RINGPOINT_SLURM_END_TIME", RP_SK_UINT, RP_SF_I64,
     RP_F(slurm_end_time_s), 0, 0, INT64_MAX, 0, NULL, -1, NULL,
     "unknown (not under the plugin)", "seconds since the epoch",
     "The job's end time, exported by the plugin.", RP_SF_PLUGIN},

    /* ---- GPU path */
    {"RINGPOINT_GPU", RP_SK_WORD, RP_SF_INT, RP_F(gpu_mode), 0, 0, 0, 0,
     rp_w_gpu, 0, NULL, "auto", "auto, on (or 1) or off (or 0)",
     "auto starts the GPU path at the first device buffer, on at rp_init() "
     "(failing there if it cannot), off makes device memory an error.",
     RP_SF_EMPTY_UNSET},
    {"RINGPOINT_GPU_DEVICE", RP_SK_UINT, RP_SF_STR, RP_S(gpu_device), 0,
     1023, 0, NULL, 0, "", "from Slurm's binding",
     "an ordinal among the visible GPUs, 0 to 1023",
     "The GPU this task drives.", 0},
    {"RINGPOINT_GPU_MODULE", RP_SK_PATH, RP_SF_STR, RP_S(gpu_module), 0, 0,
     0, NULL, 0, "", "the installed one", "a path",
     "The GPU module's path.", RP_SF_EMPTY_UNSET},
};

#define RP_SET_N (sizeof(rp_set_table) / sizeof(rp_set_table[0]))
_Static_assert(sizeof(rp_set_table) / sizeof(rp_set_table[0]) <=
                   RP_SETTINGS_MAX,
               "raise RP_SETTINGS_MAX");

/* The plugin's marker: the names it exported from an option or the
 * site's defaults, comma-separated (spank/options.c). */
#define RP_PLUGIN_SET_ENV    "RINGPOINT_PLUGIN_SET"
/* The site's default interval, exported beside the interval itself. */
#define RP_SITE_INTERVAL_ENV "RINGPOINT_SITE_INTERVAL"

/* The text of entry @e in the environment; NULL when unset. */
static const char *rp_set_env(const rp_set_entry_t *e)
{
    const char *v = getenv(e->name);

    if (v != NULL && v[0] == '\0' && (e->flags & RP_SF_EMPTY_UNSET)) {
        return NULL;
    }
    return v;
}

static bool rp_set_in_list(const char *list, const char *name)
{
    size_t n = strlen(name);

    while (list != NULL && *list != '\0') {
        const char *end = strchr(list, ',');
        size_t len = end != NULL ? (size_t)(end - list) : strlen(list);

        if (len == n && strncmp(list, name, n) == 0) {
            return true;
        }
        list = end != NULL ? end + 1 : NULL;
    }
    return false;
}

static rp_setting_source_t rp_set_source(const rp_set_entry_t *e,
                                         const char *v)
{
    const char *site;

    if (v == NULL) {
        return RP_SETTING_DEFAULT;
    }
    if ((e->flags & RP_SF_PLUGIN) ||
        rp_set_in_list(getenv(RP_PLUGIN_SET_ENV), e->name)) {
        return RP_SETTING_PLUGIN;
    }
    site = getenv(RP_SITE_INTERVAL_ENV);
    if (strcmp(e->name, "RINGPOINT_CKPT_INTERVAL") == 0 && site != NULL &&
        strcmp(site, v) == 0) {
        return RP_SETTING_PLUGIN;
    }
    return RP_SETTING_ENV;
}

static void rp_set_store(const rp_set_entry_t *e, rp_settings_t *cfg,
                         int64_t n, const char *text)
{
    char *f = (char *)cfg + e->offset;

    switch (e->field) {
    case RP_SF_U64: *(uint64_t *)(void *)f = (uint64_t)n; break;
    case RP_SF_I64: *(int64_t *)(void *)f = n; break;
    case RP_SF_INT: *(int *)(void *)f = (int)n; break;
    case RP_SF_BOOL: *(bool *)(void *)f = n != 0; break;
    case RP_SF_STR: rp__strlcpy(f, text != NULL ? text : "", e->size); break;
    }
}

/* Parse @v for entry @e into *@n; on error the reason into @err. */
static rp_status_t rp_set_parse(const rp_set_entry_t *e, const char *v,
                                int64_t *n, char *err, size_t errlen)
{
    uint64_t u = 0;
    int signo;
    const rp_set_word_t *w;

    err[0] = '\0';
    if (strlen(v) > RP_VALUE_MAX_LEN) {
        snprintf(err, errlen, "longer than %d bytes", RP_VALUE_MAX_LEN);
        return RP_ERR_INVALID_ARG;
    }
    switch (e->kind) {
    case RP_SK_UINT:
        if (rp__parse_uint(v, e->min, e->max, &u, err, errlen) != RP_OK) {
            return RP_ERR_INVALID_ARG;
        }
        if (e->mult != 0 && u % e->mult != 0) {
            snprintf(err, errlen, "%llu is not a multiple of %llu",
                     (unsigned long long)u, (unsigned long long)e->mult);
            return RP_ERR_INVALID_ARG;
        }
        *n = (int64_t)u;
        return RP_OK;
    case RP_SK_DURATION:
        if (rp__parse_duration(v, &u, err, errlen) != RP_OK) {
            return RP_ERR_INVALID_ARG;
        }
        if (u < e->min) {
            snprintf(err, errlen, "must be at least %llus",
                     (unsigned long long)e->min);
            return RP_ERR_INVALID_ARG;
        }
        *n = (int64_t)u;
        return RP_OK;
    case RP_SK_WORD:
        for (w = e->words; w->word != NULL; w++) {
            if ((e->flags & RP_SF_NOCASE) ? strcasecmp(v, w->word) == 0
                                          : strcmp(v, w->word) == 0) {
                *n = w->value;
                return RP_OK;
            }
        }
        snprintf(err, errlen, "not an accepted word");
        return RP_ERR_INVALID_ARG;
    case RP_SK_SIGNAL:
        if (rp__parse_signal(v, &signo, err, errlen) != RP_OK) {
            return RP_ERR_INVALID_ARG;
        }
        *n = signo;
        return RP_OK;
    case RP_SK_PATH:
        if (v[0] == '\0') {
            snprintf(err, errlen, "empty path");
            return RP_ERR_INVALID_ARG;
        }
        /* fall through */
    case RP_SK_TEXT:
        if (strlen(v) >= e->size) {
            snprintf(err, errlen, "longer than %zu bytes", e->size - 1);
            return RP_ERR_INVALID_ARG;
        }
        *n = 0;
        return RP_OK;
    case RP_SK_FLAG:
        *n = 1;
        return RP_OK;
    }
    return RP_ERR_INVALID_ARG;
}

rp_status_t rp__settings_load(rp_settings_t *cfg)
{
    rp_status_t status = RP_OK;
    size_t i;

    memset(cfg, 0, sizeof(*cfg));
    for (i = 0; i < RP_SET_N; i++) {
        const rp_set_entry_t *e = &rp_set_table[i];
        const char *v = rp_set_env(e);
        char err[256];
        int64_t n = 0;

        cfg->source[i] = rp_set_source(e, v);
        if (v == NULL) {
            rp_set_store(e, cfg, e->unset, e->dflt);
            continue;
        }
        if (rp_set_parse(e, v, &n, err, sizeof(err)) != RP_OK) {
            /* Every malformed variable is named, not only the first, so
             * one run shows all of them. */
            /* "NAME='value': expected FORMS", then what was wrong where
             * the forms alone do not say it (a word is right or not). */
            if (e->kind == RP_SK_WORD) {
                rp_error("%s='%.64s%s': expected %s", e->name, v,
                         strlen(v) > 64 ? "..." : "", e->forms);
            } else {
                rp_error("%s='%.64s%s': expected %s (%s)", e->name, v,
                         strlen(v) > 64 ? "..." : "", e->forms, err);
            }
            status = RP_ERR_INVALID_ARG;
            continue;
        }
        rp_set_store(e, cfg, n, v);
    }
    cfg->ckpt_requeue_set = rp__settings_given(cfg, "RINGPOINT_CKPT_REQUEUE");
    cfg->tune_file_set = rp__settings_given(cfg, "RINGPOINT_COLL_TUNE_FILE");
    return status;
}

static const rp_set_entry_t *rp_set_find(const char *name, size_t *i_p)
{
    size_t i;

    for (i = 0; i < RP_SET_N; i++) {
        if (strcmp(rp_set_table[i].name, name) == 0) {
            *i_p = i;
            return &rp_set_table[i];
        }
    }
    return NULL;
}

bool rp__settings_given(const rp_settings_t *cfg, const char *name)
{
    size_t i;

    return rp_set_find(name, &i) != NULL &&
           cfg->source[i] != RP_SETTING_DEFAULT;
}

size_t rp__settings_count(void)
{
    return RP_SET_N;
}

void rp__settings_info(size_t i, rp_setting_info_t *info)
{
    static const char *const types[] = {
        [RP_SK_UINT] = "number", [RP_SK_DURATION] = "duration",
        [RP_SK_WORD] = "word",   [RP_SK_SIGNAL] = "signal",
        [RP_SK_PATH] = "path",   [RP_SK_TEXT] = "text",
        [RP_SK_FLAG] = "flag"};
    const rp_set_entry_t *e = &rp_set_table[i];

    info->name = e->name;
    info->type = types[e->kind];
    info->def = e->def;
    info->forms = e->forms;
    info->meaning = e->meaning;
    info->hidden = (e->flags & RP_SF_HIDDEN) != 0;
}

void rp__settings_value(const rp_settings_t *cfg, size_t i, char *buf,
                        size_t len)
{
    const rp_set_entry_t *e = &rp_set_table[i];
    const char *v = rp_set_env(e);

    if (cfg->source[i] == RP_SETTING_DEFAULT || v == NULL) {
        snprintf(buf, len, "%s", e->def);
    } else {
        snprintf(buf, len, "%s", v);
    }
}

const char *rp__settings_source_name(rp_setting_source_t source)
{
    switch (source) {
    case RP_SETTING_ENV: return "environment";
    case RP_SETTING_PLUGIN: return "plugin";
    default: return "default";
    }
}
