#!/usr/bin/env bash
# The demo: build and install ringpoint, start a real two-node Slurm cluster
# on this machine with the plugin enabled, and run the thread that exists so
# far: srun validates --ckpt-interval, every task bootstraps through PMIx,
# exchanges addresses with its ring neighbours and sees the interval.
# (Later versions grow this into a training job that is preempted and
# resumes.) Run as root after scripts/deps.sh. The cluster stays up
# afterwards; scripts/cluster.sh down stops it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
export RP_CLUSTER_DIR=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
show() { printf '$ %s\n' "$*"; "$@"; }

step "build and install"
"$top/scripts/build.sh" "$top/build"
make -C "$top/build" -s install >/dev/null
ldconfig
plugindir=$(sed -n 's/^SLURM_PLUGINDIR = //p' "$top/build/Makefile")
prefix=$(sed -n 's/^prefix = //p' "$top/build/Makefile")
export PATH=$prefix/bin:$PATH

step "a local Slurm cluster with the plugin"
"$top/scripts/cluster.sh" up -n 2 -p "$plugindir/ringpoint.so"
eval "$("$top/scripts/cluster.sh" env)"
show sinfo

step "what was built"
show ringpoint-info

step "a bad option is refused before anything starts"
show srun -N1 --ckpt-interval=banana true || true

step "2 nodes x 2 tasks: PMIx bootstrap, ring address exchange, the interval"
show srun --mpi=pmix -N2 -n4 --ckpt-interval=10m ringpoint-info

step "the same under Open MPI's mpirun, without Slurm"
show env -u SLURM_CONF mpirun --allow-run-as-root --oversubscribe -np 4 \
    -x RINGPOINT_CKPT_INTERVAL=15m ringpoint-info

step "done"
echo "The cluster is still up: eval \"\$($top/scripts/cluster.sh env)\" to use it,"
echo "$top/scripts/cluster.sh down to stop it."
