/*
 * Runtime settings. The SPANK plugin validates options at submit time and
 * exports the resolved values as RINGPOINT_* variables; the runtime reads
 * them back here with the same parsers, so a value that passed srun can
 * never be read differently by the tasks.
 */
#ifndef RP_CORE_SETTINGS_H
#define RP_CORE_SETTINGS_H

#include <stdint.h>

#include "ringpoint/status.h"

/* Used when neither the plugin nor the user set an interval. */
#define RP_DEFAULT_CKPT_INTERVAL_S (30 * 60)

typedef struct rp_settings {
    uint64_t ckpt_interval_s; /* 0: checkpoint only on a signal */
} rp_settings_t;

/* Defaults, then RINGPOINT_* from the environment. A malformed variable is
 * an error naming the variable and the accepted forms. */
rp_status_t rp__settings_load(rp_settings_t *cfg);

#endif /* RP_CORE_SETTINGS_H */
