#!/usr/bin/env bash
# chaos.sh - interrupt a training job at random moments, many times, and
# check that it always finishes with the digest of an uninterrupted run.
#
#   scripts/chaos.sh [-n TRIALS] [-s SEED] [-e EVENTS] [-q]
#
# Needs the local cluster up with the plugin (scripts/cluster.sh up -p ...;
# its RP_CLUSTER_DIR), and ringpoint installed under RP_PREFIX (default
# /usr/local). For its run it adds requeue_failed=yes to the cluster's
# plugstack.conf (a killed rank or node must bring the job back) and puts
# the original back at the end.
#
# Each trial submits the example training job (3 ranks on 2 nodes,
# checkpoints every 2 s, async writes) and hits it with 1 to 3 events at
# random moments while it trains, each drawn from EVENTS (comma-separated;
# default all but node-crash):
#   preempt     a higher-priority job takes the nodes (GraceTime, requeue)
#   requeue     scontrol requeue
#   warn        the warning signal (what --signal=USR2@T delivers)
#   kill        SIGKILL to one random rank
#   kill-write  SIGKILL to one random rank while a checkpoint is being
#               written (as soon as an in-flight directory appears)
#   node-crash  every process of node n2 SIGKILLed at once, then the node
#               started again (slow: Slurm's srun waits for the dead node)
# It then waits for the job to finish and checks the digest, the number of
# requeues, and the work lost per interruption: the last step the job
# logged before it, minus the step the next run resumed from.
#
# Prints one line per trial and a summary; exits non-zero if any trial
# ended with a wrong digest or not at all. Reproduce a run with -s SEED.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
trials=20
seed=$(( $(date +%s) % 32768 ))
events=preempt,requeue,warn,kill,kill-write
quiet=0
while getopts ':n:s:e:qh' opt; do
    case $opt in
        n) trials=$OPTARG ;;
        s) seed=$OPTARG ;;
        e) events=$OPTARG ;;
        q) quiet=1 ;;
        h) sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "chaos.sh: bad option (see -h)" >&2; exit 2 ;;
    esac
done
[[ $trials =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] || { echo "chaos.sh: -n and -s take numbers" >&2; exit 2; }
IFS=, read -r -a kinds <<<"$events"
for k in "${kinds[@]}"; do
    case $k in preempt|requeue|warn|kill|kill-write|node-crash) ;;
        *) echo "chaos.sh: unknown event '$k' (see -h)" >&2; exit 2 ;;
    esac
done

eval "$("$top/scripts/cluster.sh" env)"
: "${RP_PREFIX:=/usr/local}"
export RP_PREFIX
export RP_WORK=$RP_CLUSTER_DIR/work/chaos
export STEPS=${RP_CHAOS_STEPS:-300}
export TRAIN_ENV="RINGPOINT_COLL_TIMEOUT=20s"
export TRAIN_ARGS="--log-every 1"
fail() { echo "chaos.sh: $*" >&2; return 1; }
# shellcheck source=../tests/lib/jobs.sh
. "$top/tests/lib/jobs.sh"

plugstack=$(sed -n 's/^PlugStackConfig=//p' "$SLURM_CONF")
plugin=$(awk '$1 == "required" {print $2; exit}' "$plugstack")
[[ -n $plugin ]] || { echo "chaos.sh: the cluster has no plugin in $plugstack" >&2; exit 2; }
cp "$plugstack" "$RP_WORK/plugstack.saved"
restore() {
    cp "$RP_WORK/plugstack.saved" "$plugstack"
    "$top/scripts/cluster.sh" start-node n2 >/dev/null 2>&1 || true
}
trap restore EXIT
echo "required $plugin requeue_failed=yes" >"$plugstack"

say() { ((quiet)) || echo "$*"; }
RANDOM=$seed
echo "chaos: $trials trials, seed $seed, events $events, $STEPS steps of 40 ms, checkpoints every 2 s"
ref=$(reference)
[[ -n $ref ]] || { echo "chaos.sh: the reference run failed" >&2; exit 1; }
say "reference digest $ref"

# runs_started NAME: how many runs of the job began training.
runs_started() {
    local n
    n=$(grep -c '^starting fresh\|^resumed from' "$RP_WORK/$1.out" 2>/dev/null)
    echo "${n:-0}"
}

# wait_runs NAME JOB N: until N runs began training, or the job ended.
wait_runs() {
    for _ in $(seq 400); do
        [ "$(runs_started "$1")" -ge "$3" ] && return 0
        case "$(state "$2")" in COMPLETED|CANCELLED|FAILED|TIMEOUT|"") return 1 ;; esac
        sleep 0.5
    done
    return 1
}

# hit KIND JOB NAME: one event.
hit() {
    local kind=$1 jid=$2 name=$3 pid rank d
    case $kind in
        preempt) sbatch -Q -p high -N2 --exclusive -o /dev/null --wrap "sleep 1" >/dev/null ;;
        requeue) scontrol requeue "$jid" ;;
        warn) scancel -s USR2 "$jid" ;;
        kill)
            rank=$((RANDOM % 3))
            pid=$(task_pid "$jid" "$rank") && kill -KILL "$pid"
            ;;
        kill-write)
            rank=$((RANDOM % 3))
            for _ in $(seq 1000); do
                d=$(compgen -G "$RP_WORK/$name.ckpt/.inflight-*" | head -n1)
                [[ -n $d ]] && break
                sleep 0.01
            done
            pid=$(task_pid "$jid" "$rank") && kill -KILL "$pid"
            [[ -n $d ]] || echo "      (no write seen in 10 s; killed anyway)"
            ;;
        node-crash)
            "$top/scripts/cluster.sh" crash-node n2 >/dev/null
            wait_restarts "$jid" "$(( $(restarts "$jid") + 1 ))" 60 >/dev/null 2>&1 || true
            wait_srun_gone "$jid" >/dev/null 2>&1 || true
            "$top/scripts/cluster.sh" start-node n2 >/dev/null
            ;;
    esac
}

# lost NAME: "max total count" of steps lost per interruption.
lost() {
    awk '
        /^start restart=/ { if (run++ > 0) pending = 1 }
        /^step [0-9]+ / { last = $2 }
        /^stopping at step/ { last = $4 + 0 }
        /^resumed from step/ {
            if (pending) { l = last - $4; if (l < 0) l = 0; n++; sum += l; if (l > max) max = l }
            pending = 0; last = $4
        }
        /^starting fresh/ { if (pending) { n++; sum += last; if (last > max) max = last } pending = 0; last = 0 }
        END { printf "%d %d %d\n", max, sum, n }' "$RP_WORK/$1.out"
}

ok=0 bad=0 worst=0 interruptions=0 total_lost=0
declare -A count=()
t_start=$(date +%s)
for t in $(seq 1 "$trials"); do
    name=trial$t
    nev=$((1 + RANDOM % 3))
    jid=$(submit "$name" --requeue --ckpt-requeue=20 --ckpt-interval=2)
    plan=()
    runs=1
    for _ in $(seq 1 "$nev"); do
        wait_runs "$name" "$jid" "$runs" || break
        kind=${kinds[RANDOM % ${#kinds[@]}]}
        delay=$((5 + RANDOM % 60)) # tenths of a second into the run
        sleep "$((delay / 10)).$((delay % 10))"
        [[ $(state "$jid") == RUNNING ]] || break
        hit "$kind" "$jid" "$name"
        plan+=("$kind@$((delay / 10)).$((delay % 10))s")
        count[$kind]=$(( ${count[$kind]:-0} + 1 ))
        runs=$((runs + 1))
    done
    wait_done "$jid" 600 >/dev/null 2>&1
    got=$(digest_in "$name")
    read -r max sum n <<<"$(lost "$name")"
    interruptions=$((interruptions + n))
    total_lost=$((total_lost + sum))
    ((max > worst)) && worst=$max
    if [[ $got == "$ref" && $(state "$jid") == COMPLETED ]]; then
        ok=$((ok + 1)); verdict=ok
    else
        bad=$((bad + 1)); verdict="WRONG (digest '${got:-none}', state $(state "$jid"); output $RP_WORK/$name.out)"
    fi
    echo "trial $t: job $jid, events ${plan[*]:-none}, restarts $(restarts "$jid"), work lost per interruption max $max steps: $verdict"
done
echo
echo "chaos summary (seed $seed, $(( $(date +%s) - t_start )) s):"
for k in "${!count[@]}"; do printf '  %-10s %d\n' "$k" "${count[$k]}"; done | sort
echo "  trials $trials: $ok finished with the reference digest, $bad did not"
echo "  interruptions $interruptions, steps lost in all $total_lost, worst $worst steps ($((worst * 40)) ms of training at 40 ms/step; checkpoint interval 2 s = 50 steps)"
((bad == 0))
