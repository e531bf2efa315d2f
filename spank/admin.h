/*
 * Site settings given by the admin after the plugin's path in
 * plugstack.conf, as key=value words. Parsed without any Slurm call so the
 * rules can be unit-tested; an unknown key or a bad value is an error,
 * because a typo in a site limit that silently does nothing is worse than
 * a plugin that refuses to load.
 */
#ifndef RP_SPANK_ADMIN_H
#define RP_SPANK_ADMIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ringpoint/status.h"

/* Bounds when the site sets none. */
#define RP_SPANK_KEEP_LIMIT     1000000
/* max_requeues when the site sets none: the one requeue ceiling, both the
 * largest --ckpt-requeue=MAX a job may ask for and what a bare
 * --ckpt-requeue (or none) means. The admin guide documents this value; a
 * site that wants longer chains raises max_requeues. */
#define RP_SPANK_DEFAULT_MAX_REQUEUES 3

/* How a job that stopped (or failed, with requeue_failed) is brought back. */
typedef enum rp_spank_requeue_how {
    RP_SPANK_REQUEUE_AUTO = 0, /* the plugin asks slurmctld to requeue it */
    RP_SPANK_REQUEUE_HOLD,     /* requeued held: `scontrol release` starts it */
    RP_SPANK_REQUEUE_OFF       /* never by the plugin (the site uses Slurm's
                                  RequeueExit=75, or its own tooling) */
} rp_spank_requeue_how_t;

typedef struct rp_spank_admin {
    bool has_default_interval;   /* default_interval= given */
    uint64_t default_interval_s; /* exported when the user sets none */
    uint64_t min_interval_s;     /* 0: no minimum */
    uint64_t max_keep;           /* 0: no maximum */
    bool has_max_requeues;       /* max_requeues= given */
    uint64_t max_requeues;
    char allowed_roots[1024];    /* colon-separated absolute paths; "": any */
    rp_spank_requeue_how_t requeue_how; /* requeue=auto|hold|off */
    bool requeue_failed;         /* requeue_failed=yes: also after a step
                                    failed (a task crashed or was killed, a
                                    node was lost), within the same MAX */
} rp_spank_admin_t;

/* The keys, for messages. */
#define RP_SPANK_ADMIN_KEYS \
    "default_interval, min_interval, max_keep, max_requeues, allowed_roots, " \
    "requeue, requeue_failed"

/* Parse argv[0..argc) into @admin (zeroed first). */
rp_status_t rp__spank_admin_parse(int argc, char *const argv[],
                                  rp_spank_admin_t *admin, char *err,
                                  size_t errlen);

/* The site's requeue ceiling: max_requeues, or RP_SPANK_DEFAULT_MAX_REQUEUES
 * when plugstack.conf sets none. */
uint64_t rp__spank_admin_max_requeues(const rp_spank_admin_t *admin);

/* Apply the site bounds to a user's interval. 0 (only on a signal) is always
 * allowed: it never writes more often than the user could by hand. */
rp_status_t rp__spank_admin_check_interval(const rp_spank_admin_t *admin,
                                           uint64_t interval_s, char *err,
                                           size_t errlen);

#endif /* RP_SPANK_ADMIN_H */
