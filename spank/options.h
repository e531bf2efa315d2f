/*
 * The srun/sbatch/salloc options the plugin adds, and the values they
 * resolve to. Each option has a RINGPOINT_* twin in the environment: the
 * command line wins, the environment is the user's default, and the
 * resolved value is exported under the same name so that steps inside a
 * batch script inherit it.
 */
#ifndef RP_SPANK_OPTIONS_H
#define RP_SPANK_OPTIONS_H

#include <slurm/spank.h>
#include <stdbool.h>

#include "spank/admin.h"

/* The site's settings, parsed in slurm_spank_init. SPANK loads a plugin
 * once per process, so one instance serves the whole process. */
extern rp_spank_admin_t rp_spank_admin;

/* Register the options with Slurm (local, allocator and remote contexts). */
int rp__spank_options_register(spank_t sp);

/* In the submitting process, after option parsing: check the settings that
 * come from the environment rather than the command line. */
int rp__spank_options_check_env(void);

/* In slurmstepd: resolve every setting for this job (expanding --ckpt-dir)
 * and export it to the tasks' environment. */
int rp__spank_options_export(spank_t sp);

/* Did the user ask for ringpoint in this step: an option, or a RINGPOINT_*
 * setting of the user's (a site default alone, even inherited from the
 * batch step, is not asking)? Only such steps cost RPCs to slurmctld at
 * start (the job's limits) and are requeued for failing. */
bool rp__spank_options_requested(void);

#endif /* RP_SPANK_OPTIONS_H */
