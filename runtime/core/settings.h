/*
 * Runtime settings: every RINGPOINT_* variable the runtime reads, parsed
 * once by rp_init into one rp_settings_t that the layers are handed.
 *
 * The variables themselves (name, form, bounds, default, meaning) are
 * declared once, in the table of settings_table.c; nothing else in the
 * runtime calls getenv on a RINGPOINT_* name. The SPANK plugin validates
 * its options at submit time and exports the resolved values as
 * RINGPOINT_* variables; the table reads them back with the same parsers
 * (util/parse.h), so a value that passed srun is never read differently
 * by the tasks.
 *
 * The lower layers (bootstrap/, transport/, reduce/, util/) never see this
 * struct: rp_init copies their part into small structs of their own.
 */
#ifndef RP_CORE_SETTINGS_H
#define RP_CORE_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* Used when neither the plugin nor the user set an interval. */
#define RP_DEFAULT_CKPT_INTERVAL_S (30 * 60)

/* Defaults of the collectives' settings (RINGPOINT_COLL_*, _ALLREDUCE_*). */
#define RP_DEFAULT_COLL_TIMEOUT_S   300
/* rd_max_bytes when RINGPOINT_ALLREDUCE_RD_MAX is unset: the communicator
 * picks from measurements (coll/comm_create.c). */
#define RP_RD_MAX_AUTO              UINT64_MAX
#define RP_DEFAULT_SEGMENT_BYTES    (128u * 1024)
#define RP_DEFAULT_WINDOW           4

typedef enum rp_coll_algo {
    RP_COLL_ALGO_AUTO = 0, /* by message size */
    RP_COLL_ALGO_RING = 1, /* reduce-scatter to owners + ring allgather */
    RP_COLL_ALGO_RD   = 2, /* recursive doubling */
    RP_COLL_ALGO_RH   = 3  /* recursive halving, doubling back */
} rp_coll_algo_t;

/* Checkpoint engine defaults (RINGPOINT_CKPT_*). */
#define RP_DEFAULT_CKPT_DIR   "./ringpoint-ckpt"
#define RP_DEFAULT_CKPT_KEEP  2
#define RP_DEFAULT_CKPT_CHUNK (4u << 20)
#define RP_CKPT_DIR_LEN       4096

/* Room for a path-valued setting (the module, the tuning table). */
#define RP_SETTING_PATH_LEN   4096
/* Room for the test hook RINGPOINT_CKPT_FAULT (KIND:RANK[:STEP]). */
#define RP_SETTING_FAULT_LEN  64

/* Upper bound on the table's length, for the per-setting arrays below;
 * settings_table.c checks at compile time that the table fits. */
#define RP_SETTINGS_MAX 48

/* Where a setting's value came from. */
typedef enum rp_setting_source {
    RP_SETTING_DEFAULT = 0, /* unset: the table's default */
    RP_SETTING_ENV     = 1, /* the user's environment */
    RP_SETTING_PLUGIN  = 2  /* exported by the SPANK plugin (an option,
                               the site's default, the job's limits) */
} rp_setting_source_t;

typedef struct rp_settings {
    /* Checkpoints. */
    uint64_t ckpt_interval_s; /* 0: checkpoint only on a signal */
    char ckpt_dir[RP_CKPT_DIR_LEN]; /* RINGPOINT_CKPT_DIR */
    uint64_t ckpt_every;      /* also every N steps; 0: off */
    uint64_t ckpt_keep;       /* complete checkpoints kept, >= 1 */
    uint64_t ckpt_chunk;      /* CRC chunk size, RINGPOINT_CKPT_CHUNK_SIZE */
    int ckpt_async;           /* 1: background writes (default) */
    int ckpt_signal;          /* early-warning signal (RINGPOINT_CKPT_SIGNAL) */
    uint64_t ckpt_requeue;    /* requeues allowed (RINGPOINT_CKPT_REQUEUE) */
    int ckpt_requeue_set;     /* RINGPOINT_CKPT_REQUEUE was given */
    uint64_t ckpt_timeout_s;  /* bound of a stop's waits; 0: from the budget */
    uint64_t ckpt_copy_threads; /* snapshot copy threads; 0: by the cores */
    char ckpt_fault[RP_SETTING_FAULT_LEN]; /* test hook; "": none */
    int64_t slurm_kill_wait_s;  /* the job's limits, exported by the */
    int64_t slurm_grace_s;      /* plugin; -1: unknown (not under it) */
    int64_t slurm_end_time_s;

    /* Collectives. */
    uint64_t coll_timeout_s;  /* silence from a peer before failing; 0: never */
    int64_t coll_spin_us;     /* busy-poll before sleeping; -1: decide from the CPU count */
    int coll_oversubscribed;  /* 1/0: ranks outnumber cores or not; -1: count */
    rp_coll_algo_t allreduce_algo;
    uint64_t rd_max_bytes;    /* auto picks recursive doubling up to this;
                                 RP_RD_MAX_AUTO: by measurement */
    uint64_t segment_bytes;   /* pipelining unit of the ring and the chain */
    uint64_t window;          /* segments received ahead */
    int64_t progress_spin_us; /* the progress thread's; -1: as coll_spin_us */
    int64_t shm_max_bytes;    /* through the node's segment; -1: default */
    bool coll_shm;            /* the node's shared segment */
    bool coll_cma;            /* direct reads of a peer's buffer */
    int coll_hier;            /* -1 auto, 0 never, 1 always */
    int compression;          /* rp_compression_t; never _DEFAULT */
    bool tune_file_set;       /* RINGPOINT_COLL_TUNE_FILE given */
    char tune_file[RP_SETTING_PATH_LEN]; /* "": none (when given) */
    int reduce_isa;           /* rp__reduce_isa_t (reduce/reduce.h) */

    /* Start-up and transport. */
    int log_level;            /* rp_log_level_t (util/log.h) */
    uint64_t bootstrap_timeout_s;
    bool pmix_collect;        /* gather every address at the fence */
    bool allow_single;        /* alone in an allocation of several tasks */
    uint64_t peer_timeout_s;  /* liveness pings; 0: off */
    bool ucx_peer_errmode;    /* peer error mode on the same host too */

    /* GPU path. */
    int gpu_mode;             /* rp__gpu_mode_t (gpu/path.h) */
    char gpu_device[16];      /* "": from Slurm's binding */
    char gpu_module[RP_SETTING_PATH_LEN]; /* "": the installed one */
    char ucx_module[RP_SETTING_PATH_LEN]; /* "": the installed one */
    bool ucx_config_cwd;      /* UCX may read ./ucx.conf */

    /* Where each entry of the table came from, by its index. */
    rp_setting_source_t source[RP_SETTINGS_MAX];
} rp_settings_t;

/* Defaults, then RINGPOINT_* from the environment, every entry of the
 * table. A malformed variable is RP_ERR_INVALID_ARG, logged with the
 * variable's name and its accepted forms. Allocates nothing. */
rp_status_t rp__settings_load(rp_settings_t *cfg);

/* Was @name (a RINGPOINT_* variable of the table) set, by the user or the
 * plugin? False for a name the table lacks. */
bool rp__settings_given(const rp_settings_t *cfg, const char *name);

/* The table, for ringpoint-info, the man page and the tests. */
typedef struct rp_setting_info {
    const char *name;    /* RINGPOINT_... */
    const char *type;    /* a word: duration, count, bytes, word, ... */
    const char *def;     /* the default, as a reader would write it */
    const char *forms;   /* the accepted forms */
    const char *meaning; /* one line */
    bool hidden;         /* a test hook: not in the manual */
} rp_setting_info_t;

/* Entries in the table. */
size_t rp__settings_count(void);

/* Entry @i (< rp__settings_count()) into *@info. */
void rp__settings_info(size_t i, rp_setting_info_t *info);

/* The effective value of entry @i as text into @buf: the environment's
 * value when set, else the default. */
void rp__settings_value(const rp_settings_t *cfg, size_t i, char *buf,
                        size_t len);

/* "default", "environment" or "plugin". */
const char *rp__settings_source_name(rp_setting_source_t source);

#endif /* RP_CORE_SETTINGS_H */
