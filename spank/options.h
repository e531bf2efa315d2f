/*
 * The srun/sbatch/salloc options the plugin adds, and the values they
 * resolved to. Values are validated in the submitting process, where a
 * clear error can still reach the user's terminal before anything starts.
 */
#ifndef RP_SPANK_OPTIONS_H
#define RP_SPANK_OPTIONS_H

#include <slurm/spank.h>
#include <stdbool.h>
#include <stdint.h>

#include "spank/admin.h"

typedef struct rp_spank_state {
    rp_spank_admin_t admin;
    bool interval_set;   /* --ckpt-interval was given */
    uint64_t interval_s;
} rp_spank_state_t;

/* The one plugin-wide state: SPANK loads a plugin once per process. */
extern rp_spank_state_t rp_spank_state;

/* Register the options with Slurm (local, allocator and remote contexts). */
int rp__spank_options_register(spank_t sp);

/* Check settings that came from the environment rather than an option, in
 * the submitting process (init_post_opt). */
int rp__spank_options_check_env(void);

/* Export the resolved values to the job's environment (slurmstepd). */
int rp__spank_options_export(spank_t sp);

#endif /* RP_SPANK_OPTIONS_H */
