/*
 * What the tasks of a ringpoint job learn from slurmctld about the time a
 * stop will have: KillWait, the partition's preemption GraceTime and the
 * job's end time. The runtime weighs them against its measured checkpoint
 * times when a stop comes (runtime/ckpt/budget.c). (Slurm 22.05 does not
 * show a job's --signal to anyone but slurmctld, so it cannot be checked
 * against --ckpt-signal here.)
 *
 * Exported on the step's first node only, where rank 0 runs, and only for
 * jobs that use ringpoint: three RPCs per step, not per task or node.
 */
#ifndef RP_SPANK_JOB_LIMITS_H
#define RP_SPANK_JOB_LIMITS_H

#include <slurm/spank.h>

/* slurm_spank_user_init: set RINGPOINT_SLURM_KILL_WAIT, _GRACE_TIME and
 * _END_TIME. Failing RPCs are logged and leave them unset; the
 * step starts either way. */
void rp__spank_job_limits_export(spank_t sp);

#endif /* RP_SPANK_JOB_LIMITS_H */
