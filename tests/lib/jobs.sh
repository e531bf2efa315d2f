# Helpers for tests that run the example training job as a batch job on
# the real cluster (sourced after harness.sh). Needs RP_PREFIX, RP_WORK and
# STEPS; the job trains 3 ranks on 2 nodes. TRAIN_CMD is the program (the
# C example by default) and TRAIN_DELAY its option that slows a step down.

export PATH=$RP_PREFIX/bin:$PATH
RP_PLUGSTACK=$(sed -n 's/^PlugStackConfig=//p' "${SLURM_CONF:-/dev/null}")
export RP_PLUGSTACK
mkdir -p "$RP_WORK"

# with_site_args ARGS...: for the rest of this test, the plugin gets ARGS
# from plugstack.conf (slurmstepd reads it at each step); the original
# comes back when the test ends.
with_site_args() {
    cp "$RP_PLUGSTACK" "$RP_WORK/plugstack.saved"
    trap 'cp "$RP_WORK/plugstack.saved" "$RP_PLUGSTACK"' EXIT
    echo "required $RP_PLUGIN $*" >"$RP_PLUGSTACK"
}

slurmd_log() { cat "$RP_CLUSTER_LOGDIR"/slurmd-n*.log; }

# reference: the digest of an uninterrupted run with the same ranks and
# $STEPS steps.
reference() {
    srun -N2 -n3 --chdir="$RP_WORK" --ckpt-dir="$RP_WORK/ref.$$" --ckpt-interval=0 \
        ${TRAIN_CMD:-ringpoint-example-train} --steps "$STEPS" --log-every 0 |
        sed -n 's/^final step=[0-9]* digest=//p'
}

# submit NAME [sbatch options]: a batch job that trains with srun; prints
# the job id. Its output goes to $RP_WORK/NAME.out (appended across
# requeues), its checkpoints to $RP_WORK/NAME.ckpt. $TRAIN_ENV is put
# before srun, $TRAIN_ARGS after the program.
submit() {
    local name=$1
    shift
    cat >"$RP_WORK/$name.sh" <<SCRIPT
#!/bin/bash
echo "start restart=\${SLURM_RESTART_COUNT:-0}"
${TRAIN_ENV:-} srun ${TRAIN_CMD:-ringpoint-example-train} --steps $STEPS --log-every 0 ${TRAIN_DELAY:---step-delay-ms 40} ${TRAIN_ARGS:-}
echo "srun exit \$?"
SCRIPT
    rm -rf "$RP_WORK/$name.out" "$RP_WORK/$name.ckpt"
    # --chdir: the nodes have a /tmp of their own, and a test run from a
    # checkout under /tmp would leave slurmstepd an error line about it.
    sbatch --parsable -N2 -n3 --exclusive --open-mode=append --chdir="$RP_WORK" \
        -o "$RP_WORK/$name.out" --ckpt-dir="$RP_WORK/$name.ckpt" \
        --ckpt-interval=0 "$@" "$RP_WORK/$name.sh"
}

state() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
restarts() { scontrol show job "$1" 2>/dev/null | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p'; }

# wait_training NAME: until the job's output shows training under way.
wait_training() {
    for _ in $(seq 300); do
        grep -q "^starting fresh\|^resumed from" "$RP_WORK/$1.out" 2>/dev/null && { sleep 2; return 0; }
        sleep 0.2
    done
    fail "the job never started training"
}

# wait_done JOB [SECONDS]: until the job has left the queue for good.
wait_done() {
    local s
    for _ in $(seq $(( ${2:-180} * 2 ))); do
        s=$(state "$1")
        case "$s" in COMPLETED|CANCELLED|FAILED|TIMEOUT|PREEMPTED|NODE_FAIL|"") return 0 ;; esac
        sleep 0.5
    done
    fail "job $1 still $s"
}

# wait_restarts JOB N [SECONDS]: until the job was requeued N times.
wait_restarts() {
    for _ in $(seq $(( ${3:-120} * 2 ))); do
        [ "$(restarts "$1")" = "$2" ] && return 0
        sleep 0.5
    done
    fail "job $1 has restarts=$(restarts "$1"), expected $2"
}

# wait_checkpoint NAME: until the job committed a periodic checkpoint.
wait_checkpoint() {
    for _ in $(seq 300); do
        compgen -G "$RP_WORK/$1.ckpt/step-*" >/dev/null && return 0
        sleep 0.2
    done
    fail "job $1 never committed a checkpoint"
}

digest_in() { sed -n 's/^final step=[0-9]* digest=//p' "$RP_WORK/$1.out" | tail -1; }

# env_has PID VAR=VALUE...: the process's environment has all of them.
env_has() {
    local env p=$1
    shift
    env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null) || return 1
    for kv in "$@"; do
        grep -qxF -- "$kv" <<<"$env" || return 1
    done
}

# task_pid JOB RANK: the pid of the training task of RANK of JOB.
task_pid() {
    local p
    for p in /proc/[0-9]*; do
        [ "$(cat "$p/comm" 2>/dev/null)" = ringpoint-examp ] || continue
        # Job ids are per cluster: this cluster's jobs carry its SLURM_CONF.
        env_has "${p#/proc/}" "SLURM_CONF=$SLURM_CONF" "SLURM_JOB_ID=$1" "SLURM_PROCID=$2" || continue
        echo "${p#/proc/}"
        return 0
    done
    return 1
}

# wait_srun_gone JOB: until no srun of JOB is left. With proctrack/linuxproc
# (no cgroups here) an srun whose batch script was killed by a requeue
# escapes to init; while its step cannot finish (a crashed node) it waits
# 12 s and then cancels "its" step id, which the requeued run reuses. A
# node that crashed stays down until this srun is gone, so that a test
# never sees this artifact of the test cluster.
wait_srun_gone() {
    local p found
    for _ in $(seq 120); do
        found=
        for p in /proc/[0-9]*; do
            [ "$(cat "$p/comm" 2>/dev/null)" = srun ] || continue
            env_has "${p#/proc/}" "SLURM_CONF=$SLURM_CONF" "SLURM_JOB_ID=$1" && found=1
        done
        [ -z "$found" ] && return 0
        sleep 0.5
    done
    fail "an srun of job $1 is still there after 60 s"
}
