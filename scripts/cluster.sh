#!/usr/bin/env bash
#
# cluster.sh - bring a real Slurm cluster up on this one machine, and tear it
# down again, for ringpoint's integration tests.
#
# Everything runs as root from Debian's slurm-wlm 22.05 packages: a private
# munged, one slurmctld and NODES slurmd daemons (slurmd -N nK), all with
# their configuration, logs, spool, state and pid files kept in STATEDIR.
# Each slurmd runs in its own mount namespace with a private /tmp (a bind
# mount of STATEDIR/tmp/<node>), because several slurmd daemons sharing one
# /tmp make `srun --mpi=pmix` collide on /tmp/spmix_appdir_*.
#
# With RP_CLUSTER_NETNS=1 each slurmd also gets its own network namespace
# (an emulated host): one address per node on a bridge of its own, so that
# a node's link can be cut (`net-down`) and its ranks talk over TCP as real
# hosts do. Without it nothing of the network is touched.
#
# Run `cluster.sh help` for usage.

set -euo pipefail
umask 022

readonly PROG=cluster.sh
# Set only by command-line options (never inherited from the environment).
OPT_NODES=
OPT_PLUGIN=

# ---------------------------------------------------------------- messages

# A reader that goes away (`cluster.sh down | head -1`) must not kill us
# half-way through starting or stopping daemons.
trap '' PIPE
msg() { printf '%s: %s\n' "$PROG" "$*" >&2 2>/dev/null || true; }
die() {
    msg "error: $*"
    exit 1
}

usage() {
    cat <<EOF
Usage: scripts/cluster.sh COMMAND [OPTIONS]

Bring up / tear down a local Slurm cluster (one slurmctld, NODES slurmd
daemons named n1..nNODES, a private munged) on this machine, as root.

Commands:
  up [-n NODES] [-p PLUGIN_SO] [-a KEY=VALUE]... [-d STATEDIR]
        Start the cluster (or restart it if its configuration changed; a
        no-op when it is already up with the same configuration). Returns
        success only once all nodes are idle and 'srun -N NODES hostname'
        works. With -p, plugstack.conf holds 'required <abs PLUGIN_SO>'
        followed by the -a arguments; without -p it is empty.
  down [-d STATEDIR]
        Stop every daemon (and any job processes) this script started.
  status [-d STATEDIR]
        Show daemons and nodes; exit 0 if the cluster is fully up.
  env [-d STATEDIR]
        Print 'export' lines for a test harness:
          eval "\$(scripts/cluster.sh env)"
        SLURM_CONF, RP_CLUSTER_DIR, RP_CLUSTER_LOGDIR, RP_CLUSTER_SHARED,
        RP_CLUSTER_NNODES, RP_CLUSTER_NODELIST, RP_CLUSTER_GRACE_SECS,
        RP_CLUSTER_KILL_WAIT_SECS, RP_CLUSTER_CRED_EXPIRE_SECS. Of these only
        RP_CLUSTER_DIR is also read by 'up'.
  crash-node NODE [-d STATEDIR]
        SIGKILL everything of node NODE (slurmd, slurmstepd, job tasks) at
        once, as if it lost power (for failure tests).
  start-node NODE [-d STATEDIR]
        Start NODE's slurmd again after crash-node (a reboot) or after
        kill-slurmd (a restart: the steps still running are left alone).
  kill-slurmd NODE [-d STATEDIR]
        SIGKILL only NODE's slurmd; its slurmstepd and job tasks live on
        (for failure tests).
  net-down NODE [-d STATEDIR]
        (RP_CLUSTER_NETNS=1 clusters) Set NODE's link down: the host
        vanishes from the network without a word, its processes live on.
  net-up NODE [-d STATEDIR]
        Set NODE's link up again.
  help  Show this text.

Options:
  -n NODES      number of slurmd nodes (default ${RP_CLUSTER_NODES:-2})
  -p PLUGIN_SO  SPANK plugin to load as 'required'
  -a KEY=VALUE  plugin argument for plugstack.conf (repeatable)
  -d STATEDIR   all cluster state lives here (default
                \${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}); never under /tmp

Environment overrides (defaults in brackets):
  RP_CLUSTER_DIR          state directory [/var/tmp/ringpoint-cluster]
  RP_CLUSTER_NODES        node count [2]
  RP_CLUSTER_PLUGIN       plugin .so, like -p []
  RP_CLUSTER_PLUGIN_ARGS  space-separated plugin args; -a replaces them []
  RP_CLUSTER_HOST         host name for SlurmctldHost/NodeHostname [\$(hostname -s)]
  RP_CLUSTER_CPUS         CPUs per fake node [4]
  RP_CLUSTER_MEMORY       RealMemory per node, MB [1024]
  RP_CLUSTER_CTLD_PORT    SlurmctldPort [16817]
  RP_CLUSTER_SLURMD_PORT  port of n1; nK uses this+K-1 [16830]
  RP_CLUSTER_GRACE_TIME   GraceTime of partition 'low', s [30]
  RP_CLUSTER_KILL_WAIT    KillWait, s [10]
  RP_CLUSTER_CRED_EXPIRE  AuthInfo cred_expire, s (Slurm minimum 5) [10]
  RP_CLUSTER_SCHED_PARAMS SchedulerParameters [sched_interval=2,bf_interval=2]
  RP_CLUSTER_DEBUG        SlurmctldDebug/SlurmdDebug level [info]
  RP_CLUSTER_EXTRA_CONF   extra lines appended verbatim to slurm.conf []
  RP_CLUSTER_PRIVATE_TMP  1: each slurmd gets its own /tmp (needed for pmix) [1]
  RP_CLUSTER_TIMEOUT      seconds to wait for each start-up step [60]
  RP_CLUSTER_PLUGIN_HASH  1: a rebuilt PLUGIN_SO counts as a config change [1]
  RP_CLUSTER_KEEP_FAILED  1: leave daemons running when 'up' fails [0]
  RP_CLUSTER_NETNS        1: each slurmd in its own network namespace, an
                          emulated host with its own address [0]
  RP_CLUSTER_NETNS_NET    the first three octets of the nodes' /24 (node K
                          is .K, this machine .254) [10.X.Y from CTLD_PORT]

Layout of STATEDIR: etc/ (slurm.conf, plugstack.conf, cluster.env),
log/ (all daemon logs; log.prev/ holds the previous run's), state/, spool/<node>,
run/ (pid files), tmp/<node> (each node's /tmp), munge/, shared/ (a
directory all nodes see, for files tasks on different nodes must share).
Every 'up' that (re)starts the cluster begins with empty job state.

Emulated hosts (RP_CLUSTER_NETNS=1): bridge rp<CTLD_PORT>br holds NET.254
(slurmctld, srun and sbatch on this machine are reached there); node nK runs
in network namespace rp<CTLD_PORT>-nK, address NET.K on its eth0, whose
other end on the bridge is rp<CTLD_PORT>vK. slurm.conf names each node's
NodeAddr. The munge socket is a file, reachable from every namespace; /dev/shm
is shared (set UCX_TLS=tcp,self to keep ranks off shared memory). 'env' adds
RP_CLUSTER_NODE_ADDRS (n1=NET.1 ...). run/netns lists what was created;
'down' removes it.
EOF
}

# ---------------------------------------------------------------- settings

# load_settings: fill in defaults for everything not given by option or env.
load_settings() {
    NODES=${OPT_NODES:-${RP_CLUSTER_NODES:-2}}
    PLUGIN=${OPT_PLUGIN:-${RP_CLUSTER_PLUGIN:-}}
    HOST=${RP_CLUSTER_HOST:-$(hostname -s)}
    CPUS=${RP_CLUSTER_CPUS:-4}
    MEMORY=${RP_CLUSTER_MEMORY:-1024}
    CTLD_PORT=${RP_CLUSTER_CTLD_PORT:-16817}
    SLURMD_PORT=${RP_CLUSTER_SLURMD_PORT:-16830}
    GRACE_TIME=${RP_CLUSTER_GRACE_TIME:-30}
    KILL_WAIT=${RP_CLUSTER_KILL_WAIT:-10}
    CRED_EXPIRE=${RP_CLUSTER_CRED_EXPIRE:-10}
    SCHED_PARAMS=${RP_CLUSTER_SCHED_PARAMS-sched_interval=2,bf_interval=2}
    DEBUG_LEVEL=${RP_CLUSTER_DEBUG:-info}
    EXTRA_CONF=${RP_CLUSTER_EXTRA_CONF:-}
    PRIVATE_TMP=${RP_CLUSTER_PRIVATE_TMP:-1}
    TIMEOUT=${RP_CLUSTER_TIMEOUT:-60}
    PLUGIN_HASH=${RP_CLUSTER_PLUGIN_HASH:-1}
    KEEP_FAILED=${RP_CLUSTER_KEEP_FAILED:-0}
    NETNS=${RP_CLUSTER_NETNS:-0}
    NETNS_NET=${RP_CLUSTER_NETNS_NET:-10.$(((${CTLD_PORT//[^0-9]/0} >> 8) & 255)).$((${CTLD_PORT//[^0-9]/0} & 255))}
    NETNS_TAG=rp${CTLD_PORT}
}

# set_statedir DIR: resolve STATEDIR and every path derived from it.
set_statedir() {
    local dir=$1 tmp_real
    [[ -n $dir ]] || die "empty state directory"
    dir=$(realpath -m -- "$dir")
    tmp_real=$(realpath -m /tmp)
    # The slurmd daemons bind-mount STATEDIR/tmp/<node> over /tmp, so a
    # STATEDIR under /tmp would be hidden from (or recursively mounted into)
    # the nodes; it also must never be / since 'up' wipes subdirectories.
    case $dir in
        / | /tmp | /tmp/* | "$tmp_real" | "$tmp_real"/*)
            die "state directory '$dir' is not allowed (must not be / or under /tmp)"
            ;;
    esac
    STATEDIR=$dir
    ETC=$STATEDIR/etc
    LOGDIR=$STATEDIR/log
    RUNDIR=$STATEDIR/run
    SPOOL=$STATEDIR/spool
    STATE_SAVE=$STATEDIR/state
    NODE_TMP=$STATEDIR/tmp
    SHARED=$STATEDIR/shared
    MUNGE_DIR=$STATEDIR/munge
    MUNGE_KEY=$MUNGE_DIR/key/munge.key
    MUNGE_SOCKET=$MUNGE_DIR/munge.socket
    CONF=$ETC/slurm.conf
    PLUGSTACK=$ETC/plugstack.conf
    SAVED_ENV=$ETC/cluster.env
    FINGERPRINT=$ETC/fingerprint
    NETNS_LIST=$RUNDIR/netns
    # Client commands run by this script talk to this cluster only, even if
    # we are called from inside some other Slurm job.
    local v
    for v in $(compgen -e); do
        [[ $v == SLURM_* ]] && unset "$v"
    done
    export SLURM_CONF=$CONF
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

validate_settings() {
    if ! is_uint "$NODES" || ((NODES < 1 || NODES > 64)); then
        die "NODES must be 1..64 (got '$NODES')"
    fi
    local name
    for name in CPUS MEMORY CTLD_PORT SLURMD_PORT GRACE_TIME KILL_WAIT CRED_EXPIRE TIMEOUT; do
        is_uint "${!name}" || die "$name must be a non-negative integer (got '${!name}')"
    done
    ((CRED_EXPIRE >= 5)) ||
        die "CRED_EXPIRE must be >= 5 (Slurm 22.05 rejects smaller values and silently uses 120)"
    ((SLURMD_PORT + NODES - 1 <= 65535 && CTLD_PORT <= 65535)) || die "ports out of range"
    if ((CTLD_PORT >= SLURMD_PORT && CTLD_PORT < SLURMD_PORT + NODES)); then
        die "SlurmctldPort $CTLD_PORT overlaps slurmd ports $SLURMD_PORT..$((SLURMD_PORT + NODES - 1))"
    fi
    [[ $NETNS == 0 || $NETNS == 1 ]] || die "RP_CLUSTER_NETNS must be 0 or 1 (got '$NETNS')"
    if [[ $NETNS == 1 ]]; then
        [[ $NETNS_NET =~ ^[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}$ ]] ||
            die "RP_CLUSTER_NETNS_NET must be three octets like 10.67.148 (got '$NETNS_NET')"
        ((NODES <= 64)) || die "RP_CLUSTER_NETNS=1 takes at most 64 nodes"
    fi
    if [[ -n $PLUGIN ]]; then
        [[ -f $PLUGIN ]] || die "plugin '$PLUGIN' does not exist"
        PLUGIN=$(realpath -- "$PLUGIN")
    fi
    local arg
    for arg in "${PLUGIN_ARGS[@]}"; do
        [[ -n $PLUGIN ]] || die "-a/RP_CLUSTER_PLUGIN_ARGS given without -p PLUGIN_SO"
        [[ $arg =~ ^[^[:space:]]+$ ]] || die "plugin argument '$arg' must not contain whitespace"
    done
}

require_tools() {
    local t missing=()
    for t in munged mungekey munge unmunge slurmctld slurmd srun sinfo scontrol \
        unshare mount flock timeout ss sha256sum realpath $([[ $NETNS == 1 ]] && echo ip nsenter); do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    ((${#missing[@]} == 0)) || die "missing tools: ${missing[*]}"
    ((EUID == 0)) || die "must run as root (the cluster runs everything as root)"
}

# node_list: n1 n2 ... nNODES
node_list() {
    local i
    for ((i = 1; i <= NODES; i++)); do printf 'n%d\n' "$i"; done
}

# node_expr: Slurm hostlist expression for all nodes.
node_expr() {
    if ((NODES == 1)); then echo n1; else echo "n[1-$NODES]"; fi
}

# ---------------------------------------------------------------- config

render_slurm_conf() {
    local ports=$SLURMD_PORT
    ((NODES > 1)) && ports="$SLURMD_PORT-$((SLURMD_PORT + NODES - 1))"
    cat <<EOF
# Generated by scripts/cluster.sh - do not edit; rerun 'cluster.sh up'.
ClusterName=ringpoint
SlurmctldHost=$HOST$([[ $NETNS == 1 ]] && echo "($NETNS_NET.254)")
SlurmctldPort=$CTLD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# cred_expire is also how long a requeued job must wait before it may start.
AuthInfo=socket=$MUNGE_SOCKET,cred_expire=$CRED_EXPIRE
StateSaveLocation=$STATE_SAVE
SlurmdSpoolDir=$SPOOL/%n
SlurmctldPidFile=$RUNDIR/slurmctld.pid
SlurmdPidFile=$RUNDIR/slurmd-%n.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd-%n.log
SlurmctldDebug=$DEBUG_LEVEL
SlurmdDebug=$DEBUG_LEVEL
PlugStackConfig=$PLUGSTACK
# No cgroups in this container: track processes by parentage, no binding.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
JobRequeue=1
ReturnToService=2
KillWait=$KILL_WAIT
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
SchedulerType=sched/backfill
${SCHED_PARAMS:+SchedulerParameters=$SCHED_PARAMS}
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# The fake nodes claim more CPUs than this machine has; trust slurm.conf.
SlurmdParameters=config_overrides
MailProg=/bin/true

$(render_node_lines "$ports")
PartitionName=low Nodes=ALL Default=YES PriorityTier=1 GraceTime=$GRACE_TIME OverSubscribe=NO MaxTime=UNLIMITED State=UP
PartitionName=high Nodes=ALL Default=NO PriorityTier=2 OverSubscribe=NO MaxTime=UNLIMITED State=UP
EOF
    if [[ -n $EXTRA_CONF ]]; then
        printf '\n# RP_CLUSTER_EXTRA_CONF\n%s\n' "$EXTRA_CONF"
    fi
}

# render_node_lines PORTS: the NodeName line(s); one per node with its own
# NodeAddr for emulated hosts.
render_node_lines() {
    local i
    if [[ $NETNS != 1 ]]; then
        echo "NodeName=$(node_expr) NodeHostname=$HOST Port=$1 CPUs=$CPUS RealMemory=$MEMORY State=UNKNOWN"
        return
    fi
    for ((i = 1; i <= NODES; i++)); do
        echo "NodeName=n$i NodeAddr=$NETNS_NET.$i NodeHostname=$HOST Port=$((SLURMD_PORT + i - 1)) CPUs=$CPUS RealMemory=$MEMORY State=UNKNOWN"
    done
}

render_plugstack() {
    echo "# Generated by scripts/cluster.sh - do not edit."
    if [[ -n $PLUGIN ]]; then
        local line="required $PLUGIN"
        ((${#PLUGIN_ARGS[@]} > 0)) && line+=" ${PLUGIN_ARGS[*]}"
        echo "$line"
    fi
}

# render_saved_env: what 'env' exports. Apart from RP_CLUSTER_DIR (so that
# later commands find the same cluster) these names are deliberately NOT ones
# that 'up' reads, so evaluating them never changes what a later plain 'up'
# builds.
render_saved_env() {
    printf 'SLURM_CONF=%q\n' "$CONF"
    printf 'RP_CLUSTER_DIR=%q\n' "$STATEDIR"
    printf 'RP_CLUSTER_LOGDIR=%q\n' "$LOGDIR"
    printf 'RP_CLUSTER_SHARED=%q\n' "$SHARED"
    printf 'RP_CLUSTER_NNODES=%q\n' "$NODES"
    printf 'RP_CLUSTER_NODELIST=%q\n' "$(node_expr)"
    printf 'RP_CLUSTER_GRACE_SECS=%q\n' "$GRACE_TIME"
    printf 'RP_CLUSTER_KILL_WAIT_SECS=%q\n' "$KILL_WAIT"
    printf 'RP_CLUSTER_CRED_EXPIRE_SECS=%q\n' "$CRED_EXPIRE"
    if [[ $NETNS == 1 ]]; then
        local i addrs=
        for ((i = 1; i <= NODES; i++)); do addrs+=" n$i=$NETNS_NET.$i"; done
        printf 'RP_CLUSTER_NODE_ADDRS=%q\n' "${addrs# }"
    fi
}

# render_fingerprint: everything whose change requires a restart.
render_fingerprint() {
    render_slurm_conf
    echo "--- plugstack"
    render_plugstack
    echo "--- private_tmp=$PRIVATE_TMP"
    [[ $NETNS != 1 ]] || echo "--- netns=$NETNS_NET"
    if [[ -n $PLUGIN && $PLUGIN_HASH == 1 ]]; then
        # slurmd keeps SPANK plugins loaded, so a rebuilt .so needs a restart.
        echo "--- plugin sha256 $(sha256sum <"$PLUGIN" | cut -d' ' -f1)"
    fi
}

# ---------------------------------------------------------------- processes

# pid_of NAME: print the pid from RUNDIR/NAME.pid if that process is alive
# and is the expected daemon (guards against recycled pids); else fail.
pid_of() {
    local name=$1 file=$RUNDIR/$1.pid pid comm
    [[ -r $file ]] || return 1
    read -r pid <"$file" 2>/dev/null || return 1
    is_uint "$pid" && ((pid > 1)) || return 1
    alive "$pid" || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "${name%%-*}" ]] || return 1
    echo "$pid"
}

# alive PID: the process exists and is not a zombie. (PID 1 of this machine
# reaps orphaned daemons only after a few seconds, so dead daemons linger as
# zombies that kill -0 still finds.)
alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}

# wait_gone PID SECONDS: wait for PID to exit; fail if it is still there.
wait_gone() {
    local pid=$1 deadline=$((SECONDS + $2))
    while alive "$pid"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# stop_pid NAME: SIGTERM the daemon of RUNDIR/NAME.pid, SIGKILL if stubborn.
stop_pid() {
    local name=$1 pid
    if pid=$(pid_of "$name"); then
        msg "stopping $name (pid $pid)"
        kill -TERM "$pid" 2>/dev/null || true
        if ! wait_gone "$pid" 30; then
            msg "$name (pid $pid) ignored SIGTERM for 30s; killing it"
            kill -KILL "$pid" 2>/dev/null || true
            wait_gone "$pid" 10 || die "$name (pid $pid) does not die"
        fi
    fi
    rm -f "$RUNDIR/$name.pid"
}

# leftover_pids NS...: pids of every process in one of the given mount
# namespaces (the nodes' slurmstepd and job tasks, which outlive slurmd), plus
# srun/salloc clients of this cluster (SLURM_CONF=$CONF in their environment),
# which would otherwise wait for a controller that is gone.
leftover_pids() {
    local p ns comm
    for p in /proc/[0-9]*; do
        ns=$(readlink "$p/ns/mnt" 2>/dev/null) || continue
        if (($# > 0)) && [[ " $* " == *" $ns "* ]]; then
            echo "${p#/proc/}"
            continue
        fi
        comm=$(cat "$p/comm" 2>/dev/null) || continue
        if [[ $comm == srun || $comm == salloc ]] &&
            tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; then
            echo "${p#/proc/}"
        fi
    done
    return 0
}

# sweep_leftovers NS...: SIGTERM, then SIGKILL, everything leftover_pids finds.
sweep_leftovers() {
    local sig pids deadline self_ns ns nss=()
    self_ns=$(readlink /proc/self/ns/mnt)
    # Never, ever sweep the namespace this script itself runs in.
    for ns in "$@"; do
        [[ -n $ns && $ns != "$self_ns" ]] && nss+=("$ns")
    done
    for sig in TERM KILL; do
        pids=$(leftover_pids "${nss[@]}")
        [[ -n $pids ]] || return 0
        msg "sending SIG$sig to leftover job processes: ${pids//$'\n'/ }"
        # shellcheck disable=SC2086 # word splitting of the pid list is wanted
        kill -"$sig" $pids 2>/dev/null || true
        deadline=$((SECONDS + 3))
        while [[ -n $(leftover_pids "${nss[@]}") ]] && ((SECONDS < deadline)); do sleep 0.2; done
    done
    pids=$(leftover_pids "${nss[@]}")
    [[ -z $pids ]] || msg "warning: processes survive SIGKILL: ${pids//$'\n'/ }"
}

# any_running: true if any daemon recorded in RUNDIR is alive.
any_running() {
    local f name
    [[ -d $RUNDIR ]] || return 1
    for f in "$RUNDIR"/*.pid; do
        [[ -e $f ]] || continue
        name=$(basename "$f" .pid)
        pid_of "$name" >/dev/null && return 0
    done
    return 1
}

# all_running: true if munged, slurmctld and every configured slurmd are alive.
all_running() {
    local node
    pid_of munged >/dev/null && pid_of slurmctld >/dev/null || return 1
    while read -r node; do
        pid_of "slurmd-$node" >/dev/null || return 1
    done < <(node_list)
}

stop_all() {
    local f ns nss=()
    # slurmd first so that nothing launches more tasks, then whatever is left
    # in the nodes' namespaces, then the controller, then munge which all use.
    if [[ -d $RUNDIR ]]; then
        for f in "$RUNDIR"/slurmd-*.pid; do
            [[ -e $f ]] && stop_pid "$(basename "$f" .pid)"
        done
        for f in "$RUNDIR"/slurmd-*.mntns; do
            [[ -e $f ]] || continue
            read -r ns <"$f" && nss+=("$ns")
        done
    fi
    sweep_leftovers "${nss[@]}"
    rm -f "$RUNDIR"/slurmd-*.mntns
    stop_pid slurmctld
    stop_pid munged
    net_teardown
}

# ---------------------------------------------------------------- emulated hosts

# net_setup: the bridge with this machine's address, and per node a network
# namespace whose eth0 is one end of a veth pair on the bridge. Recorded in
# NETNS_LIST ("node netns veth address" per line, "bridge NAME" first) before
# anything is created, so that 'down' removes even a half-made setup.
net_setup() {
    local br=${NETNS_TAG}br i ns veth
    net_teardown
    mkdir -p "$RUNDIR"
    {
        echo "bridge $br"
        for ((i = 1; i <= NODES; i++)); do
            echo "n$i $NETNS_TAG-n$i ${NETNS_TAG}v$i $NETNS_NET.$i"
        done
    } >"$NETNS_LIST"
    ip link add "$br" type bridge || die "cannot create bridge $br (CAP_NET_ADMIN?)"
    ip addr add "$NETNS_NET.254/24" dev "$br"
    ip link set "$br" up
    for ((i = 1; i <= NODES; i++)); do
        ns=$NETNS_TAG-n$i veth=${NETNS_TAG}v$i
        ip netns add "$ns" || die "cannot create network namespace $ns"
        ip link add "$veth" type veth peer name eth0 netns "$ns"
        ip link set "$veth" master "$br" up
        ip -n "$ns" addr add "$NETNS_NET.$i/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        ip -n "$ns" route add default via "$NETNS_NET.254"
    done
    msg "emulated hosts: $NETNS_NET.1..$NETNS_NET.$NODES on bridge $br ($NETNS_NET.254)"
}

# net_teardown: remove what NETNS_LIST names (the veth pairs go with their
# namespaces), then the list.
net_teardown() {
    local node ns veth
    [[ -r ${NETNS_LIST:-} ]] || return 0
    while read -r node ns veth _; do
        if [[ $node == bridge ]]; then
            ip link del "$ns" 2>/dev/null || true
        elif [[ -n $ns ]]; then
            ip link del "$veth" 2>/dev/null || true
            ip netns del "$ns" 2>/dev/null || true
        fi
    done < <(tac "$NETNS_LIST")
    rm -f "$NETNS_LIST"
}

# node_netns NODE: print NODE's network namespace if it is an emulated host.
node_netns() {
    [[ -r $NETNS_LIST ]] && awk -v n="$1" '$1 == n { print $2; f = 1 } END { exit !f }' "$NETNS_LIST"
}

# ---------------------------------------------------------------- start-up

# fail_with_logs WHAT LOG...: report a start-up failure with log excerpts.
fail_with_logs() {
    local what=$1 log
    shift
    msg "error: $what"
    for log in "$@"; do
        [[ -s $log ]] || continue
        msg "---- last lines of $log"
        tail -n 25 "$log" | sed "s/^/$PROG:   /" >&2
    done
    msg "all logs are in $LOGDIR"
    if [[ $KEEP_FAILED == 1 ]]; then
        msg "RP_CLUSTER_KEEP_FAILED=1: leaving daemons running"
    else
        msg "stopping what was started"
        stop_all || true
    fi
    exit 1
}

# check_ports_free: all our ports must be free before anything starts (a
# foreign daemon on them would answer in place of ours).
check_ports_free() {
    local port who busy=0
    for port in "$CTLD_PORT" $(seq "$SLURMD_PORT" $((SLURMD_PORT + NODES - 1))); do
        who=$(ss -Hltnp "sport = :$port" 2>/dev/null || true)
        if [[ -n $who ]]; then
            msg "error: TCP port $port is already in use: $who"
            busy=1
        fi
    done
    ((busy == 0)) || die "ports busy; choose others with RP_CLUSTER_CTLD_PORT / RP_CLUSTER_SLURMD_PORT"
}

prepare_dirs() {
    local node
    mkdir -p "$STATEDIR" "$ETC" "$RUNDIR" "$SHARED" "$MUNGE_DIR" "$MUNGE_DIR/key"
    # munged refuses keys readable by others and sockets in dirs others
    # cannot enter.
    chmod 0755 "$STATEDIR" "$MUNGE_DIR"
    chmod 0700 "$MUNGE_DIR/key"
    chmod 1777 "$SHARED"
    # A (re)start begins from empty job state; keep the previous logs once.
    rm -rf "$STATE_SAVE" "$SPOOL" "$NODE_TMP" "$STATEDIR/log.prev"
    [[ -d $LOGDIR ]] && mv "$LOGDIR" "$STATEDIR/log.prev"
    rm -f "$RUNDIR"/*.pid "$RUNDIR"/*.mntns "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
    mkdir -p "$STATE_SAVE" "$SPOOL" "$NODE_TMP" "$LOGDIR"
    while read -r node; do
        mkdir -p "$SPOOL/$node" "$NODE_TMP/$node"
        chmod 0755 "$SPOOL/$node"
        chmod 1777 "$NODE_TMP/$node"
    done < <(node_list)
}

start_munged() {
    if [[ ! -s $MUNGE_KEY ]]; then
        mungekey --create --keyfile="$MUNGE_KEY" >/dev/null 2>&1 ||
            dd if=/dev/urandom of="$MUNGE_KEY" bs=1024 count=1 status=none
    fi
    chmod 0600 "$MUNGE_KEY"
    local log=$LOGDIR/munged.log
    # 9>&- : daemons must not inherit (and keep holding) our lock.
    munged --socket="$MUNGE_SOCKET" --key-file="$MUNGE_KEY" \
        --pid-file="$RUNDIR/munged.pid" --log-file="$log" \
        --seed-file="$MUNGE_DIR/munged.seed" \
        </dev/null >>"$LOGDIR/munged.out" 2>&1 9>&- ||
        fail_with_logs "munged failed to start" "$LOGDIR/munged.out" "$log"
    local deadline=$((SECONDS + TIMEOUT))
    until munge -S "$MUNGE_SOCKET" -n 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1; do
        ((SECONDS < deadline)) || fail_with_logs "munged does not answer on $MUNGE_SOCKET" "$LOGDIR/munged.out" "$log"
        sleep 0.2
    done
    msg "munged up (pid $(pid_of munged || echo '?'), socket $MUNGE_SOCKET)"
}

start_slurmctld() {
    local log=$LOGDIR/slurmctld.log out=$LOGDIR/slurmctld.out
    slurmctld -f "$CONF" </dev/null >>"$out" 2>&1 9>&- ||
        fail_with_logs "slurmctld failed to start" "$out" "$log"
    local deadline=$((SECONDS + TIMEOUT))
    until scontrol ping 2>/dev/null | grep -q ' is UP'; do
        if ((SECONDS >= deadline)); then
            fail_with_logs "slurmctld did not come up within ${TIMEOUT}s" "$out" "$log"
        fi
        if [[ -s $RUNDIR/slurmctld.pid ]] && ! pid_of slurmctld >/dev/null; then
            fail_with_logs "slurmctld died" "$out" "$log"
        fi
        sleep 0.3
    done
    msg "slurmctld up (pid $(pid_of slurmctld || echo '?'), port $CTLD_PORT)"
}

# start_slurmd NODE  (its port comes from the NodeName line in slurm.conf)
start_slurmd() {
    local node=$1 log=$LOGDIR/slurmd-$1.log out=$LOGDIR/slurmd-$1.out
    local argv=(slurmd -f "$CONF" -N "$node")
    if [[ $PRIVATE_TMP == 1 ]]; then
        # New mount namespace, private propagation so the bind mount stays
        # inside it; slurmd daemonizes and keeps the namespace alive, and its
        # slurmstepd/tasks inherit it.
        # shellcheck disable=SC2016 # $1/$@ are for the inner sh
        argv=(unshare --mount --propagation private -- /bin/sh -c
            'mount --bind "$1" /tmp && shift && exec "$@"' sh "$NODE_TMP/$node" "${argv[@]}")
    fi
    local ns
    if ns=$(node_netns "$node"); then
        # An emulated host. A sysfs mounted from inside its network
        # namespace, so that /sys/class/net (which UCX lists) shows the
        # host's own interfaces, with this machine's cgroup mounts moved
        # onto it (slurmd refuses to start without /sys/fs/cgroup; `ip netns
        # exec` loses them).
        mkdir -p "$RUNDIR/sys-$node"
        # shellcheck disable=SC2016 # $1/$@ are for the inner sh
        argv=(nsenter --net="/run/netns/$ns" unshare --mount --propagation private -- /bin/sh -c
            'mount --rbind /sys/fs/cgroup "$1" && mount -t sysfs sysfs /sys &&
             mount --move "$1" /sys/fs/cgroup && shift && exec "$@"'
            sh "$RUNDIR/sys-$node" "${argv[@]}")
    fi
    "${argv[@]}" </dev/null >>"$out" 2>&1 9>&- ||
        fail_with_logs "slurmd $node failed to start" "$out" "$log"
    record_namespace "$node"
}

# record_namespace NODE: wait for NODE's slurmd pid file and remember its
# mount namespace, so that 'down' can sweep slurmstepd and tasks left in it.
record_namespace() {
    local node=$1 pid ns deadline=$((SECONDS + TIMEOUT))
    until pid=$(pid_of "slurmd-$node"); do
        if [[ -s $RUNDIR/slurmd-$node.pid ]] || ((SECONDS >= deadline)); then
            # Give a dying slurmd a moment so that its pid file is not just
            # half-written, then report.
            sleep 0.5
            pid=$(pid_of "slurmd-$node") && break
            fail_with_logs "slurmd $node died or wrote no pid file" \
                "$LOGDIR/slurmd-$node.out" "$LOGDIR/slurmd-$node.log"
        fi
        sleep 0.1
    done
    ns=$(readlink "/proc/$pid/ns/mnt") || ns=
    if [[ ($PRIVATE_TMP == 1 || -r $NETNS_LIST) && -n $ns && $ns != "$(readlink /proc/self/ns/mnt)" ]]; then
        echo "$ns" >"$RUNDIR/slurmd-$node.mntns"
    fi
}

# node_states: "name state" per node of partition low.
node_states() { sinfo -h -N -p low -o '%N %T' 2>/dev/null; }

wait_nodes_idle() {
    local deadline=$((SECONDS + TIMEOUT)) idle node logs=()
    while :; do
        idle=$(node_states | awk '$2 == "idle"' | wc -l)
        ((idle == NODES)) && break
        while read -r node; do
            pid_of "slurmd-$node" >/dev/null ||
                fail_with_logs "slurmd $node died" "$LOGDIR/slurmd-$node.out" "$LOGDIR/slurmd-$node.log"
        done < <(node_list)
        if ((SECONDS >= deadline)); then
            msg "node states:"
            node_states | sed "s/^/$PROG:   /" >&2 || true
            while read -r node; do logs+=("$LOGDIR/slurmd-$node.log"); done < <(node_list)
            fail_with_logs "only $idle of $NODES nodes idle after ${TIMEOUT}s" \
                "$LOGDIR/slurmctld.log" "${logs[@]}"
        fi
        sleep 0.5
    done
    msg "all $NODES nodes idle"
}

smoke_test() {
    local out rc=0 logs=() node errf=$LOGDIR/smoke-srun.err
    # stdout only: a SPANK plugin may legitimately chat on srun's stderr.
    out=$(timeout "$TIMEOUT" srun -N "$NODES" -n "$NODES" -t 1 -J rp-smoke hostname 2>"$errf") || rc=$?
    if ((rc != 0)) || (($(grep -c . <<<"$out") != NODES)); then
        msg "srun stdout (rc $rc):"
        printf '%s\n' "$out" | sed "s/^/$PROG:   /" >&2
        msg "srun stderr:"
        sed "s/^/$PROG:   /" "$errf" >&2
        while read -r node; do logs+=("$LOGDIR/slurmd-$node.log"); done < <(node_list)
        fail_with_logs "smoke test 'srun -N $NODES hostname' failed" \
            "$LOGDIR/slurmctld.log" "${logs[@]}"
    fi
    msg "smoke test 'srun -N $NODES -n $NODES hostname' ok"
}

# healthy: controller answers and no node is down/drained/not responding.
healthy() {
    scontrol ping 2>/dev/null | grep -q ' is UP' || return 1
    local states
    states=$(node_states) || return 1
    (($(grep -c . <<<"$states") == NODES)) || return 1
    ! awk '$2 ~ /down|drain|fail|inval|unknown|not_responding|\*/' <<<"$states" | grep -q .
}

# ---------------------------------------------------------------- commands

lock_statedir() {
    mkdir -p "$STATEDIR"
    exec 9>"$STATEDIR/.lock"
    flock -w 300 9 || die "another cluster.sh holds $STATEDIR/.lock"
}

print_where() {
    msg "logs: $LOGDIR (slurmctld.log, slurmd-<node>.log, munged.log)"
    msg "use:  eval \"\$($0 env -d $STATEDIR)\""
}

cmd_up() {
    local opt opt_args=() dir=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}
    OPTIND=1
    while getopts ':n:p:a:d:h' opt; do
        case $opt in
            n) OPT_NODES=$OPTARG ;;
            p) OPT_PLUGIN=$OPTARG ;;
            a) opt_args+=("$OPTARG") ;;
            d) dir=$OPTARG ;;
            h) usage; exit 0 ;;
            :) die "option -$OPTARG needs an argument (see '$PROG help')" ;;
            *) die "unknown option -$OPTARG for 'up' (see '$PROG help')" ;;
        esac
    done
    shift $((OPTIND - 1))
    (($# == 0)) || die "unexpected argument '$1' for 'up'"
    # -a replaces RP_CLUSTER_PLUGIN_ARGS rather than adding to it.
    PLUGIN_ARGS=()
    if ((${#opt_args[@]} > 0)); then
        PLUGIN_ARGS=("${opt_args[@]}")
    elif [[ -n ${RP_CLUSTER_PLUGIN_ARGS:-} ]]; then
        read -r -a PLUGIN_ARGS <<<"$RP_CLUSTER_PLUGIN_ARGS"
    fi
    load_settings
    set_statedir "$dir"
    require_tools
    validate_settings
    lock_statedir

    local want
    want=$(render_fingerprint)
    # Same config = same rendered fingerprint AND nobody edited the files
    # the daemons read.
    if all_running && [[ -f $FINGERPRINT && "$(cat "$FINGERPRINT")" == "$want" &&
        "$(cat "$CONF")" == "$(render_slurm_conf)" &&
        "$(cat "$PLUGSTACK")" == "$(render_plugstack)" ]]; then
        if healthy; then
            msg "already up with the same configuration ($NODES nodes, $STATEDIR)"
            print_where
            return 0
        fi
        msg "running but unhealthy; restarting"
    elif any_running; then
        msg "configuration changed or cluster incomplete; restarting"
    fi
    if any_running || [[ -d $RUNDIR ]]; then stop_all; fi
    rm -f "$FINGERPRINT"

    local t0=$SECONDS node
    check_ports_free
    prepare_dirs
    [[ $NETNS != 1 ]] || net_setup
    render_slurm_conf >"$CONF"
    render_plugstack >"$PLUGSTACK"
    render_saved_env >"$SAVED_ENV"
    msg "starting $NODES-node cluster in $STATEDIR (logs: $LOGDIR)"
    start_munged
    start_slurmctld
    while read -r node; do
        start_slurmd "$node"
    done < <(node_list)
    msg "slurmd $(node_expr) started (ports $SLURMD_PORT..$((SLURMD_PORT + NODES - 1)))"
    wait_nodes_idle
    smoke_test
    echo "$want" >"$FINGERPRINT"
    msg "cluster up in $((SECONDS - t0))s: $NODES node(s) $(node_expr), partitions low (default) and high"
    print_where
}

# parse_dir_only CMD ARGS...: commands that only take -d.
parse_dir_only() {
    local cmd=$1 opt dir=${RP_CLUSTER_DIR:-/var/tmp/ringpoint-cluster}
    shift
    OPTIND=1
    while getopts ':d:h' opt; do
        case $opt in
            d) dir=$OPTARG ;;
            h) usage; exit 0 ;;
            :) die "option -$OPTARG needs an argument" ;;
            *) die "unknown option -$OPTARG for '$cmd' (see '$PROG help')" ;;
        esac
    done
    shift $((OPTIND - 1))
    (($# == 0)) || die "unexpected argument '$1' for '$cmd'"
    PLUGIN_ARGS=()
    load_settings
    set_statedir "$dir"
}

# load_saved_env: adopt the node count etc. of the cluster last configured.
load_saved_env() {
    if [[ -r $SAVED_ENV ]]; then
        local n
        n=$(sed -n 's/^RP_CLUSTER_NNODES=//p' "$SAVED_ENV")
        is_uint "$n" && NODES=$n
    fi
    return 0
}

cmd_down() {
    parse_dir_only down "$@"
    if [[ ! -d $STATEDIR ]]; then
        msg "already down (no $STATEDIR)"
        return 0
    fi
    ((EUID == 0)) || die "must run as root"
    lock_statedir
    if ! any_running && ! compgen -G "$RUNDIR/*.mntns" >/dev/null; then
        rm -f "$FINGERPRINT"
        msg "already down ($STATEDIR)"
        return 0
    fi
    stop_all
    rm -f "$FINGERPRINT"
    msg "down; logs kept in $LOGDIR"
}

# node_arg CMD ARGS...: NODE first, then -d; sets NODE_ARG.
node_arg() {
    local cmd=$1
    shift
    NODE_ARG=${1:-}
    [[ $NODE_ARG =~ ^n[0-9]+$ ]] || die "usage: $PROG $cmd NODE [-d STATEDIR] (NODE like n2)"
    shift
    parse_dir_only "$cmd" "$@"
    load_saved_env
    ((EUID == 0)) || die "must run as root"
    node_list | grep -qxF "$NODE_ARG" || die "no node $NODE_ARG in this cluster"
}

# node_namespaces NODE: the mount namespaces of NODE: its slurmd's, and
# that of a slurmd killed by kill-slurmd whose steps may still run.
node_namespaces() {
    local f ns
    for f in "$RUNDIR/slurmd-$1.mntns" "$RUNDIR/slurmd-$1.stepd.mntns"; do
        [[ -r $f ]] && read -r ns <"$f" && [[ $ns != "$(readlink /proc/self/ns/mnt)" ]] && echo "$ns"
    done
    return 0
}

# ns_pids NS...: the processes in one of the mount namespaces NS.
ns_pids() {
    local p
    (($# > 0)) || return 0
    for p in /proc/[0-9]*; do
        [[ " $* " == *" $(readlink "$p/ns/mnt" 2>/dev/null) "* ]] && echo "${p#/proc/}"
    done
    return 0
}

# crash-node NODE: what a node losing power looks like to the others. Its
# slurmd, slurmstepd and job tasks (everything in its mount namespaces) get
# SIGKILL at once: no clean-up, no messages to slurmctld or to srun.
cmd_crash_node() {
    local pids nss
    node_arg crash-node "$@"
    nss=$(node_namespaces "$NODE_ARG")
    [[ -n $nss ]] || die "$NODE_ARG has no recorded namespace (is it up, with a private /tmp?)"
    # shellcheck disable=SC2086 # one word per namespace
    pids=$(ns_pids $nss)
    [[ -n $pids ]] || die "nothing runs on $NODE_ARG"
    # shellcheck disable=SC2086 # word splitting of the pid list is wanted
    kill -KILL $pids 2>/dev/null || true
    rm -f "$RUNDIR/slurmd-$NODE_ARG.pid" "$RUNDIR/slurmd-$NODE_ARG.mntns" \
        "$RUNDIR/slurmd-$NODE_ARG.stepd.mntns"
    msg "$NODE_ARG crashed: killed ${pids//$'\n'/ }"
}

# kill-slurmd NODE: only the node's slurmd dies (SIGKILL: no goodbye to
# slurmctld); slurmstepd and the tasks of running steps live on, as when
# slurmd crashes or is killed by the OOM killer. Their namespace is kept
# as NODE's, for start-node, crash-node and down.
cmd_kill_slurmd() {
    local pid
    node_arg kill-slurmd "$@"
    pid=$(pid_of "slurmd-$NODE_ARG") || die "$NODE_ARG's slurmd is not running"
    kill -KILL "$pid"
    wait_gone "$pid" 10 || die "slurmd of $NODE_ARG (pid $pid) does not die"
    rm -f "$RUNDIR/slurmd-$NODE_ARG.pid"
    if [[ -f $RUNDIR/slurmd-$NODE_ARG.mntns ]]; then
        mv "$RUNDIR/slurmd-$NODE_ARG.mntns" "$RUNDIR/slurmd-$NODE_ARG.stepd.mntns"
    fi
    msg "$NODE_ARG: slurmd (pid $pid) killed; its steps live on"
}

# start-node NODE: start NODE's slurmd again (a rebooted node rejoining).
cmd_start_node() {
    node_arg start-node "$@"
    if pid_of "slurmd-$NODE_ARG" >/dev/null; then
        msg "$NODE_ARG is already running"
        return 0
    fi
    local nss
    nss=$(node_namespaces "$NODE_ARG")
    # shellcheck disable=SC2086 # one word per namespace
    if [[ -n $nss && -n $(ns_pids $nss) ]]; then
        # Only slurmd died (kill-slurmd): its steps still use the node's
        # /tmp and sockets; the new slurmd finds them in the spool.
        msg "$NODE_ARG: steps still run there; restarting slurmd only"
    else
        # What a reboot clears: the node's /tmp, and the sockets of the
        # step daemons that died with it (Slurm 22.05's pmix plugin does
        # not unlink a stale one, and the requeued job's step has the same
        # id).
        rm -f "$RUNDIR/slurmd-$NODE_ARG.stepd.mntns"
        rm -rf "${NODE_TMP:?}/$NODE_ARG"/* "$SPOOL/$NODE_ARG"/stepd.slurm.pmix.* \
            "$SPOOL/$NODE_ARG"/pmix.*
    fi
    start_slurmd "$NODE_ARG"
    msg "$NODE_ARG started again (pid $(pid_of "slurmd-$NODE_ARG" || echo '?'))"
}

# net-down/net-up NODE: set the host end of NODE's link down or up. Down,
# packets to and from the node are dropped; nothing is closed or reset.
cmd_net_link() {
    local cmd=$1 state=$2 ns veth
    shift 2
    node_arg "$cmd" "$@"
    ns=$(node_netns "$NODE_ARG") || die "$NODE_ARG is not an emulated host (RP_CLUSTER_NETNS=1)"
    veth=$(awk -v n="$NODE_ARG" '$1 == n { print $3 }' "$NETNS_LIST")
    ip link set "$veth" "$state" || die "cannot set $veth $state"
    msg "$NODE_ARG ($ns): link $veth $state"
}

cmd_status() {
    parse_dir_only status "$@"
    load_saved_env
    local name pid node up=1
    echo "state dir: $STATEDIR"
    for name in munged slurmctld $(node_list | sed 's/^/slurmd-/'); do
        if pid=$(pid_of "$name"); then
            printf '  %-14s running (pid %s)\n' "$name" "$pid"
        else
            printf '  %-14s stopped\n' "$name"
            up=0
        fi
    done
    if pid_of slurmctld >/dev/null; then
        sinfo 2>&1 | sed 's/^/  /' || true
        squeue 2>&1 | sed 's/^/  /' || true
    fi
    echo "logs: $LOGDIR"
    if ((up)) && healthy; then
        echo "cluster: up ($NODES nodes)"
        return 0
    fi
    if ((up)) || any_running; then echo "cluster: degraded"; else echo "cluster: down"; fi
    return 1
}

cmd_env() {
    parse_dir_only env "$@"
    local line
    if [[ -r $SAVED_ENV ]]; then
        while IFS= read -r line; do echo "export $line"; done <"$SAVED_ENV"
    else
        # Not configured yet: print what 'up' would use.
        render_saved_env | while IFS= read -r line; do echo "export $line"; done
    fi
}

main() {
    local cmd=${1:-}
    (($# > 0)) && shift
    case $cmd in
        up) cmd_up "$@" ;;
        down) cmd_down "$@" ;;
        status) cmd_status "$@" ;;
        env) cmd_env "$@" ;;
        crash-node) cmd_crash_node "$@" ;;
        start-node) cmd_start_node "$@" ;;
        kill-slurmd) cmd_kill_slurmd "$@" ;;
        net-down) cmd_net_link net-down down "$@" ;;
        net-up) cmd_net_link net-up up "$@" ;;
        help | -h | --help) usage ;;
        '') usage >&2; exit 2 ;;
        *) msg "unknown command '$cmd'"; usage >&2; exit 2 ;;
    esac
}

main "$@"
