#!/usr/bin/env bash
# The demo: build and install ringpoint, start a real two-node Slurm cluster
# on this machine with the plugin enabled, and train the PyTorch example job
# (contrib/examples/train_torch.py: a small CNN, DistributedOptimizer,
# ringpoint.torch.Checkpoint) twice: once undisturbed, once while it is
# preempted by a higher-priority job and then requeued by an admin. The
# second run is stopped and resumed twice and still ends with exactly the
# same model (the same digest). The C API's example is
# ringpoint-example-train (contrib/examples/train.c).
# Run as root after scripts/deps.sh. The cluster stays up afterwards;
# scripts/cluster.sh down stops it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
export RP_CLUSTER_DIR=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}
steps=${RP_DEMO_STEPS:-200}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "build and install"
"$top/scripts/build.sh" "$top/build"
make -C "$top/build" -s install >/dev/null
ldconfig
plugindir=$(sed -n 's/^SLURM_PLUGINDIR = //p' "$top/build/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$top/build/Makefile")
export PATH=$prefix/bin:$PATH
# The PyTorch example as installed, run by Debian's interpreter (the one
# python3-torch is built for).
train="/usr/bin/python3 $prefix/share/ringpoint/examples/train_torch.py"

step "a local Slurm cluster with the plugin"
"$top/scripts/cluster.sh" up -n 2 -p "$plugindir/ringpoint.so"
eval "$("$top/scripts/cluster.sh" env)"
show sinfo
work=$RP_CLUSTER_DIR/demo
rm -rf "$work"
mkdir -p "$work"
cd "$work"

step "a bad option is refused before anything is queued"
show sbatch --ckpt-interval=banana --wrap=true || true

step "run 1: $steps steps of a PyTorch job on 2 nodes x 3 ranks, undisturbed"
show srun -N2 -n3 --ckpt-dir=undisturbed --ckpt-interval=0 \
    $train --steps "$steps" --log-every 40 | tee run1.out
digest1=$(sed -n 's/^final step=[0-9]* digest=//p' run1.out)

step "run 2: the same job as a batch job in the low-priority partition"
cat >train.sh <<SCRIPT
#!/bin/bash
#SBATCH --requeue --open-mode=append
echo "[\$(date +%T)] job starts (restart \${SLURM_RESTART_COUNT:-0})"
srun $train --steps $steps --log-every 40
echo "[\$(date +%T)] srun returned"
SCRIPT
show cat train.sh
jid=$(sbatch --parsable -p low -N2 -n3 --exclusive -o run2.out \
    --ckpt-dir=preempted --ckpt-interval=5s --ckpt-signal=USR2 train.sh)
echo "submitted job $jid"

wait_running() { # until training is under way in restart $2
    for _ in $(seq 600); do
        n=$(grep -c '^starting fresh\|^resumed from' run2.out 2>/dev/null || true)
        [ "${n:-0}" -gt "$1" ] && break
        sleep 0.2
    done
    sleep 4
}

wait_running 0
step "a higher-priority job preempts it"
show sbatch -p high -N2 --exclusive --wrap="sleep 2"
wait_running 1
step "an admin requeues it"
show scontrol requeue "$jid"
wait_running 2
step "let it finish"
while [ -n "$(squeue -h -j "$jid" 2>/dev/null)" ]; do
    sleep 1
done
show cat run2.out
digest2=$(sed -n 's/^final step=[0-9]* digest=//p' run2.out | tail -1)

step "the story"
awk '
    BEGIN { why[1] = "preempted by the higher-priority job"; why[2] = "requeued by the admin" }
    /job starts/           { print }
    /^starting fresh/      { print "    trains from step 0" }
    /^stopping at step/    { n++; s = $4; sub(/:.*/, "", s); print "    " why[n] ": SIGTERM, all ranks stop at step " s ", checkpoint committed, job requeued" }
    /^resumed from step/   { s = $4; print "    resumes from step " s ": no step lost" }
    /^final step/          { print "    finishes: " $0 }
' run2.out
show scontrol show job "$jid" | grep -E 'JobState|Restarts'
show ringpoint-ckpt ls preempted

step "result"
echo "undisturbed run:           digest=$digest1"
echo "preempted + requeued run:  digest=$digest2"
if [ -n "$digest1" ] && [ "$digest1" = "$digest2" ]; then
    echo "identical: the interrupted job finished with exactly the model of the undisturbed one"
else
    echo "DIFFERENT digests" >&2
    exit 1
fi
echo
echo "The cluster is still up: eval \"\$($top/scripts/cluster.sh env)\" to use it,"
echo "$top/scripts/cluster.sh down to stop it."
