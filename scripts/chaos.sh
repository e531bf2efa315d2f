#!/usr/bin/env bash
# chaos.sh - interrupt training jobs at random moments, many times, and
# check that each always finishes with the digest of an uninterrupted run.
#
#   scripts/chaos.sh [-n TRIALS] [-s SEED] [-e EVENTS] [-o RESULTS] [-r]
#                    [-u HH:MM] [-q]
#
# Needs the local cluster up with the plugin (scripts/cluster.sh up -p ...;
# its RP_CLUSTER_DIR), and ringpoint installed under RP_PREFIX (default
# /usr/local). For its run it adds requeue_failed=yes (a killed rank or
# node must bring the job back) and max_requeues=20 (a trial may come back
# more often than the default 3 allows) to the cluster's plugstack.conf,
# and puts the original back at the end.
#
# Each trial draws its shape from its own seed: 2 to 4 nodes (as many as
# the cluster has), 3 to 2 x nodes ranks (at most 8), sync or async
# writes, checkpoints every 2 s. Most trials are one job that is hit by 1
# to 3 events at random moments while it trains, each drawn from EVENTS
# (comma-separated; default all):
#   preempt     a higher-priority job takes the job's nodes (GraceTime)
#   requeue     scontrol requeue
#   warn        the warning signal (what --signal=USR2@T delivers)
#   kill        SIGKILL to one random rank
#   kill-write  SIGKILL to one random rank while a checkpoint is being
#               written (as soon as an in-flight directory appears)
#   node-crash  every process of one of the job's nodes but the first
#               SIGKILLed at once, then the node started again (slow)
#   scancel     the job is cancelled: it must end CANCELLED and stay so
#               (ends the trial's events). A cancel sent with under 100
#               steps to go may reach the ranks after their last step:
#               then it must not bring the job back either, and the job
#               may end COMPLETED with the right digest (scancel@S(late))
#   enospc      the checkpoint file system is filled for 1-4 s, then
#               freed: the checkpoints of that time fail, training goes on
#               (only where RP_CLUSTER_DIR/work/chaos-fs is a tmpfs that was
#               mounted before the cluster came up, so that the nodes'
#               private mount namespaces hold it; otherwise skipped)
# One trial in 20 is a job array of 2 tasks (2 nodes each) where only task 1 is hit
# (preempt, requeue, warn or kill): task 0 must never restart. One in 20
# runs 2500 steps (100 s) under a 1-minute time limit (the limit is the
# event; a run that trains to the end as Slurm enforces the limit, late,
# ends TIMEOUT with the right digest, which counts as finished).
# After the events the trial waits for the job to finish and checks the
# digest, the state, and the work lost per interruption: the last step the
# job logged before it, minus the step the next run resumed from.
#
# Every trial appends one tab-separated row to RESULTS (default
# RP_CLUSTER_DIR/work/chaos/results.tsv; a header when the file is new):
#   trial seed job shape nodes ranks async events resumed_from digest_ok
#   state restarts interruptions lost_max lost_sum wall_s verdict
# events are KIND@SECONDS-into-the-run (KIND@S(missed): the job had ended
# or was between runs; a kill-write that saw no write in 10 s is logged as
# a kill), resumed_from the first step of each run. A trial that fails keeps its output and checkpoints under
# RP_CLUSTER_DIR/work/chaos/failed/. -r resumes a soak: it continues after
# the last trial in RESULTS (each trial's seed is SEED*1000+TRIAL, so the
# trials are the same whether run in one go or resumed). -u HH:MM starts
# no trial after that time of day. A summary over all rows of RESULTS is
# printed at the end (scripts/chaos.sh -S prints only that).
#
# Exits non-zero if any trial of this run ended wrong. Reproduce a trial
# with -s SEED -n 1 after -r on a results file that ends just before it,
# or simply rerun the soak with the same -s.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
trials=20
seed=$(( $(date +%s) % 32768 ))
events=preempt,requeue,warn,kill,kill-write,node-crash,scancel,enospc
quiet=0 resume=0 until= summary_only=0 results=
while getopts ':n:s:e:o:ru:qSh' opt; do
    case $opt in
        n) trials=$OPTARG ;;
        s) seed=$OPTARG ;;
        e) events=$OPTARG ;;
        o) results=$OPTARG ;;
        r) resume=1 ;;
        u) until=$OPTARG ;;
        q) quiet=1 ;;
        S) summary_only=1 ;;
        h) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
        *) echo "chaos.sh: bad option (see -h)" >&2; exit 2 ;;
    esac
done
[[ $trials =~ ^[0-9]+$ && $seed =~ ^[0-9]+$ ]] || { echo "chaos.sh: -n and -s take numbers" >&2; exit 2; }
[[ -z $until || $until =~ ^[0-2][0-9]:[0-5][0-9]$ ]] || { echo "chaos.sh: -u takes HH:MM, got '$until'" >&2; exit 2; }
IFS=, read -r -a kinds <<<"$events"
for k in "${kinds[@]}"; do
    case $k in preempt|requeue|warn|kill|kill-write|node-crash|scancel|enospc) ;;
        *) echo "chaos.sh: unknown event '$k' (see -h)" >&2; exit 2 ;;
    esac
done

eval "$("$top/scripts/cluster.sh" env)"
: "${RP_PREFIX:=/usr/local}"
export RP_PREFIX
export RP_WORK=$RP_CLUSTER_DIR/work/chaos
: "${results:=$RP_WORK/results.tsv}"
fail() { echo "chaos.sh: $*" >&2; return 1; }
# shellcheck source=../tests/lib/jobs.sh
. "$top/tests/lib/jobs.sh"

# summary: totals over every row of $results.
summary() {
    awk -F'\t' '
        NR == 1 || $1 == "trial" { next }
        {
            n++; shape[$4]++; if ($17 == "ok") ok++; else { bad++; badlist = badlist " " $1 }
            if ($16 > 0) wall += $16
            k = split($8, ev, ",")
            for (i = 1; i <= k; i++) {
                if (ev[i] == "none") continue
                m = ev[i] ~ /missed|late/; sub(/@.*/, "", ev[i])
                if (m) missed[ev[i]]++; else kind[ev[i]]++
            }
            kind["mode-" ($7 == 1 ? "async" : "sync")]++
            inter += $13; lost += $15; if ($14 > worst) { worst = $14; worstt = $1 }
            if ($14 > 50) over++
            hist[$14 <= 0 ? "0" : $14 <= 10 ? "1-10" : $14 <= 25 ? "11-25" : $14 <= 50 ? "26-50" : ">50"]++
            ranks[$6]++; nodes[$5]++
        }
        END {
            printf "chaos results %s: %d trials in %.1f h: %d ok, %d wrong%s\n", FILENAME, n, wall / 3600, ok, bad, bad ? " (trials" badlist ")" : ""
            printf "  shapes:"; for (s in shape) printf " %s %d", s, shape[s]; printf "\n"
            printf "  nodes:"; for (s in nodes) printf " %s:%d", s, nodes[s]; printf "   ranks:"; for (s in ranks) printf " %s:%d", s, ranks[s]; printf "\n"
            printf "  events:"; for (s in kind) printf " %s %d", s, kind[s]; printf "\n"
            printf "  missed (the rank was gone when the event came) or late (a cancel as training ended):"; for (s in missed) printf " %s %d", s, missed[s]; printf "\n"
            printf "  interruptions %d, steps lost in all %d, worst %d (trial %s), over one interval (50 steps): %d\n", inter, lost, worst, worstt, over
            printf "  steps lost per trial (worst interruption): 0: %d, 1-10: %d, 11-25: %d, 26-50: %d, >50: %d\n", hist["0"], hist["1-10"], hist["11-25"], hist["26-50"], hist[">50"]
        }' "$results"
    # The goals: no wrong digest, no hang, no cancelled job back, array
    # task 0 never restarted, the worst loss within one interval.
    awk -F'\t' '
        NR == 1 || $1 == "trial" { next }
        {
            if ($10 == "0") wd++
            if ($11 !~ /^(COMPLETED|CANCELLED|TIMEOUT)(\/(COMPLETED|CANCELLED|TIMEOUT))?$/) hang++
            if ($8 ~ /scancel@[0-9.]+(\(late\))?(,|$)/) { c++; if ($17 != "ok") cbad++ }
            if ($4 == "array") { a++; split($12, r, "/"); if (r[1] != 0) a0++ }
            if ($13 > 0 && $8 !~ /enospc@[0-9.]+(,|$)/ && $14 > nostore) nostore = $14
        }
        END {
            printf "  wrong digests %d, jobs not ended %d, cancelled jobs brought back or not ended CANCELLED %d of %d, array task 0 restarted %d of %d\n", wd, hang, cbad, c, a0, a
            printf "  worst loss of a trial without a storage fault: %d steps\n", nostore
        }' "$results"
    awk -F'\t' 'NR > 1 && $1 != "trial" && $13 > 0 { print $14 }' "$results" | sort -n |
        awk '{ v[NR] = $1 }
            END {
                if (NR == 0) exit
                p = int(NR * 0.9); if (p < NR * 0.9) p++
                printf "  worst loss per interrupted trial (%d trials): median %d, 90th percentile %d, max %d steps\n", NR, v[int((NR + 1) / 2)], v[p], v[NR]
            }'
}
if ((summary_only)); then summary; exit; fi

plugstack=$(sed -n 's/^PlugStackConfig=//p' "$SLURM_CONF")
plugin=$(awk '$1 == "required" {print $2; exit}' "$plugstack")
[[ -n $plugin ]] || { echo "chaos.sh: the cluster has no plugin in $plugstack" >&2; exit 2; }
cp "$plugstack" "$RP_WORK/plugstack.saved"
fsdir=$RP_CLUSTER_DIR/work/chaos-fs
restore() {
    cp "$RP_WORK/plugstack.saved" "$plugstack"
    rm -f "$fsdir/fill"
    for n in $(seq 1 "$RP_CLUSTER_NNODES"); do
        "$top/scripts/cluster.sh" start-node "n$n" >/dev/null 2>&1 || true
    done
}
trap restore EXIT
trap 'exit 143' TERM INT
echo "required $plugin requeue_failed=yes max_requeues=20" >"$plugstack"

# The checkpoints go to the small tmpfs when there is one (enospc needs
# it); else next to the output.
if mountpoint -q "$fsdir" && [[ $(stat -f -c %T "$fsdir") == tmpfs ]]; then
    ckroot=$fsdir
else
    ckroot=$RP_WORK
    kinds=("${kinds[@]/enospc/}")
    mapfile -t kinds < <(printf '%s\n' "${kinds[@]}" | grep .)
    ((${#kinds[@]})) || { echo "chaos.sh: no event left to draw (enospc needs $fsdir, see -h)" >&2; exit 2; }
fi
maxnodes=$RP_CLUSTER_NNODES
((maxnodes > 4)) && maxnodes=4
((maxnodes >= 2)) || { echo "chaos.sh: the cluster needs 2 nodes or more" >&2; exit 2; }
cpus=$(scontrol show node n1 | sed -n 's/.*CPUTot=\([0-9]*\).*/\1/p')

say() { ((quiet)) || echo "$*"; }

# ref RANKS STEPS: the digest of an uninterrupted run, cached in $RP_WORK.
ref() {
    local f=$RP_WORK/ref-$1-$2 d
    if [[ ! -s $f ]]; then
        srun -N2 -n"$1" --overcommit --ckpt-dir="$RP_WORK/ref.$$" --ckpt-interval=0 \
            ringpoint-example-train --steps "$2" --log-every 0 |
            sed -n 's/^final step=[0-9]* digest=//p' >"$f.tmp"
        rm -rf "$RP_WORK/ref.$$"
        d=$(cat "$f.tmp")
        [[ -n $d ]] || { rm -f "$f.tmp"; return 1; }
        mv "$f.tmp" "$f"
    fi
    cat "$f"
}

# runs_started OUT: how many runs of the job began training.
runs_started() {
    local n
    n=$(grep -c '^starting fresh\|^resumed from' "$1" 2>/dev/null)
    echo "${n:-0}"
}

# wait_runs OUT JOB N: until N runs began training, or the job ended.
wait_runs() {
    for _ in $(seq 400); do
        [ "$(runs_started "$1")" -ge "$3" ] && return 0
        case "$(state "$2")" in COMPLETED|CANCELLED|FAILED|TIMEOUT|"") return 1 ;; esac
        sleep 0.5
    done
    return 1
}

# hit KIND JOB CKPTDIR: one event against JOB (a job or an array task).
# Sets did to the kind of what was done: KIND; kill for a kill-write that
# saw no write in flight; empty when nothing could be done (the rank was
# gone: the job had ended or was between runs).
hit() {
    local kind=$1 jid=$2 ck=$3 pid rank d id nodes node
    did=$kind
    id=$(squeue -h -j "$jid" -o %A 2>/dev/null | head -n1)
    nodes=$(squeue -h -j "$jid" -o %N 2>/dev/null | head -n1)
    case $kind in
        preempt) sbatch -Q -p high -w "$nodes" --exclusive -o /dev/null --wrap "sleep 1" >/dev/null ;;
        requeue) scontrol requeue "$jid" ;;
        warn) scancel -s USR2 "$jid" ;;
        scancel) scancel "$jid" ;;
        kill)
            rank=$((RANDOM % ranks))
            pid=$(task_pid "$id" "$rank") && kill -KILL "$pid" || did=
            ;;
        kill-write)
            rank=$((RANDOM % ranks))
            for _ in $(seq 1000); do
                d=$(compgen -G "$ck/.inflight-*" | head -n1)
                [[ -n $d ]] && break
                sleep 0.01
            done
            [[ -n $d ]] || did=kill # no write seen in 10 s: a plain kill
            pid=$(task_pid "$id" "$rank") && kill -KILL "$pid" || did=
            ;;
        node-crash)
            mapfile -t hosts < <(scontrol show hostnames "$nodes")
            ((${#hosts[@]} > 1)) || return 0
            node=${hosts[1 + RANDOM % (${#hosts[@]} - 1)]}
            "$top/scripts/cluster.sh" crash-node "$node" >/dev/null
            wait_restarts "$jid" "$(( $(restarts "$jid") + 1 ))" 60 >/dev/null 2>&1 || true
            wait_srun_gone "$id" >/dev/null 2>&1 || true
            "$top/scripts/cluster.sh" start-node "$node" >/dev/null
            ;;
        enospc)
            dd if=/dev/zero of="$fsdir/fill" bs=64k 2>/dev/null
            sleep "$((1 + RANDOM % 4))"
            rm -f "$fsdir/fill"
            ;;
    esac
}

# lost OUT: "max total count" of steps lost per interruption.
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
        END { printf "%d %d %d\n", max, sum, n }' "$1"
}

# logged_step OUT LINES: the step the last run had reached in the first
# LINES lines of OUT (its last step logged, the step it resumed from, or
# the final step).
logged_step() {
    head -n "$2" "$1" | awk '
        /^starting fresh/ { s = 0 }
        /^resumed from step/ { s = $4 + 0 }
        /^step [0-9]+ / { s = $2 }
        /^final step=/ { split($2, f, "="); s = f[2] }
        END { print s + 0 }'
}

# A cancel sent with fewer steps than this to go may come after the last
# one (its signal reaches the ranks through slurmctld and slurmd: seconds
# on a loaded machine; 100 steps are 4 s at the trainer's 40 ms delay).
CANCEL_LATE=100

# resumed_from OUT: the first step of each run, comma-separated.
resumed_from() {
    awk '/^starting fresh/ { s = s sep 0; sep = "," }
         /^resumed from step/ { s = s sep ($4 + 0); sep = "," }
         END { print (s == "" ? "-" : s) }' "$1"
}

# trial_submit NAME OUT CKPTDIR [sbatch options]: the training job as a
# batch job (as submit in tests/lib/jobs.sh, with its output and checkpoint
# paths given: an array's tasks each have their own); prints its id.
trial_submit() {
    local name=$1 out=$2 ck=$3
    shift 3
    cat >"$RP_WORK/$name.sh" <<SCRIPT
#!/bin/bash
echo "start restart=\${SLURM_RESTART_COUNT:-0}"
$TRAIN_ENV srun ringpoint-example-train --steps $STEPS --log-every 1 --step-delay-ms 40
echo "srun exit \$?"
SCRIPT
    rm -rf "$RP_WORK/$name".out "$RP_WORK/$name"-*.out "$ckroot/$name".ckpt "$ckroot/$name"-*.ckpt
    sbatch --parsable --exclusive --open-mode=append -o "$out" --ckpt-dir="$ck" "$@" "$RP_WORK/$name.sh"
}

# keep_failed NAME: the trial's output and checkpoints, kept for a look.
keep_failed() {
    mkdir -p "$RP_WORK/failed"
    cp -a "$RP_WORK/$1"*.out "$RP_WORK/$1.sh" "$RP_WORK/failed/" 2>/dev/null
    cp -a "$ckroot/$1"*.ckpt "$RP_WORK/failed/" 2>/dev/null
    scontrol show job "$jid" >"$RP_WORK/failed/$1.job" 2>&1
    # A job that did not end (a hang) must not hold the nodes for the
    # next trial: its state is kept above, its processes go.
    if [[ -n $(squeue -h -j "$jid" 2>/dev/null) ]]; then
        ps -eo pid,etimes,args | grep -E 'ringpoint-example|srun|slurmstepd' >"$RP_WORK/failed/$1.ps"
        scancel "$jid"
        wait_done "$jid" 120 >/dev/null 2>&1
    fi
}

[[ -s $results ]] || printf 'trial\tseed\tjob\tshape\tnodes\tranks\tasync\tevents\tresumed_from\tdigest_ok\tstate\trestarts\tinterruptions\tlost_max\tlost_sum\twall_s\tverdict\n' >"$results"
first=1
if ((resume)); then
    first=$(awk -F'\t' '$1 ~ /^[0-9]+$/ { t = $1 } END { print t + 1 }' "$results")
fi
echo "chaos: trials $first..$((first + trials - 1)), seed $seed, events ${kinds[*]}, up to $maxnodes nodes, checkpoints every 2 s, results in $results"

bad=0 ran=0
for t in $(seq "$first" "$((first + trials - 1))"); do
    if [[ -n $until && $(date +%H:%M) > $until ]]; then
        echo "chaos: it is past $until; stopping before trial $t"
        break
    fi
    tseed=$((seed * 1000 + t))
    RANDOM=$tseed
    nodes=$((2 + RANDOM % (maxnodes - 1)))
    ranks=$((3 + RANDOM % (2 * nodes - 2)))
    ((ranks > nodes * cpus)) && ranks=$((nodes * cpus))
    async=$((RANDOM % 2))
    shape=job steps=300
    case $((RANDOM % 20)) in
        0) shape=timelimit steps=2500 ;; # 100 s of training: the limit hits mid-way
        1) shape=array nodes=2 ranks=$((3 + ranks % 2)) ;; # both tasks at once
    esac
    export STEPS=$steps
    export TRAIN_ENV="RINGPOINT_COLL_TIMEOUT=20s RINGPOINT_CKPT_ASYNC=$async"
    want=$(ref "$ranks" "$steps") || { echo "chaos.sh: the reference run of $ranks ranks failed" >&2; exit 1; }
    name=trial$t
    t0=$(date +%s)
    plan=()
    opts=(--requeue --ckpt-requeue=20 --ckpt-interval=2 -N"$nodes" -n"$ranks")
    case $shape in
        job|timelimit)
            [[ $shape == timelimit ]] && opts+=(--time=1)
            jid=$(trial_submit "$name" "$RP_WORK/$name.out" "$ckroot/$name.ckpt" "${opts[@]}")
            outs=("$RP_WORK/$name.out")
            target=$jid ck=$ckroot/$name.ckpt nev=0
            [[ $shape == job ]] && nev=$((1 + RANDOM % 3))
            ;;
        array)
            jid=$(trial_submit "$name" "$RP_WORK/$name-%a.out" "$ckroot/$name-%a.ckpt" "${opts[@]}" -a 0-1)
            outs=("$RP_WORK/$name-0.out" "$RP_WORK/$name-1.out")
            target=${jid}_1 ck=$ckroot/$name-1.ckpt nev=1
            ;;
    esac
    runs=1 cancelled=0
    for _ in $(seq 1 "$nev"); do
        wait_runs "${outs[-1]}" "$target" "$runs" || break
        if [[ $shape == array ]]; then
            akinds=()
            for k in "${kinds[@]}"; do
                case $k in preempt|requeue|warn|kill) akinds+=("$k") ;; esac
            done
            ((${#akinds[@]})) || break
            kind=${akinds[RANDOM % ${#akinds[@]}]}
        else
            kind=${kinds[RANDOM % ${#kinds[@]}]}
        fi
        delay=$((5 + RANDOM % 60)) # tenths of a second into the run
        sleep "$((delay / 10)).$((delay % 10))"
        [[ $(state "$target") == RUNNING ]] || break
        if [[ $kind == scancel ]]; then
            # Where the output and the job stood as the cancel was sent:
            # nothing after that may be a new run.
            cut_lines=$(wc -l <"${outs[-1]}")
            cut_step=$(logged_step "${outs[-1]}" "$cut_lines")
            cut_restarts=$(restarts "$target")
        fi
        hit "$kind" "$target" "$ck"
        if [[ -z $did ]]; then
            plan+=("$kind@$((delay / 10)).$((delay % 10))(missed)")
            continue
        fi
        plan+=("$did@$((delay / 10)).$((delay % 10))")
        case $did in
            scancel) cancelled=1; break ;;
            enospc) ;;
            *) runs=$((runs + 1)) ;;
        esac
    done
    if [[ $shape == array ]]; then
        wait_done "${jid}_0" 600 >/dev/null 2>&1
        wait_done "${jid}_1" 600 >/dev/null 2>&1
    else
        wait_done "$jid" 600 >/dev/null 2>&1
    fi
    ((cancelled)) && sleep 8 # long enough for a wrongful requeue to show
    verdict=ok note= digest_ok=1 st= rs= inter=0 lmax=0 lsum=0 from=
    for i in "${!outs[@]}"; do
        o=${outs[$i]}
        j=$jid
        [[ $shape == array ]] && j=${jid}_$i
        s=$(state "$j") r=$(restarts "$j")
        got=$(sed -n 's/^final step=[0-9]* digest=//p' "$o" 2>/dev/null | tail -1)
        read -r max sum n <<<"$(lost "$o")"
        inter=$((inter + n)) lsum=$((lsum + sum))
        ((max > lmax)) && lmax=$max
        st+=${st:+/}$s rs+=${rs:+/}$r from+=${from:+/}$(resumed_from "$o")
        if ((cancelled)); then
            # Cancelled: never brought back (no run after the cancel), and
            # ended CANCELLED without training to the end, unless the
            # cancel came as training ended: less than CANCEL_LATE steps
            # to go as it was sent (the signal takes a moment to reach the
            # ranks, a step at least 40 ms), the final digest right, and
            # Slurm then says CANCELLED or COMPLETED.
            digest_ok=-
            # The final digest of the run the cancel hit (an earlier run
            # may have printed one before an event brought it back).
            got=$(awk '/^start restart=/ { d = "" } /^final step=/ { d = $3 } END { sub(/^digest=/, "", d); print d }' "$o")
            if tail -n +"$((cut_lines + 1))" "$o" | grep -q '^start restart=\|^starting fresh\|^resumed from' ||
                [[ $r != "$cut_restarts" ]]; then
                verdict="WRONG (cancelled job came back: restarts $cut_restarts -> $r)"
            elif [[ -z $got ]]; then
                [[ $s == CANCELLED ]] || verdict="WRONG (cancelled job ended $s)"
            elif ((cut_step < steps - CANCEL_LATE)); then
                verdict="WRONG (cancelled at step $cut_step, the job trained to the end)"
            elif [[ $got != "$want" ]]; then
                digest_ok=0 verdict="WRONG (digest '$got' != $want)"
            elif [[ $s == CANCELLED || $s == COMPLETED ]]; then
                digest_ok=1 plan[-1]+="(late)"
                note=" (the cancel came at step $cut_step of $steps, as training ended)"
            else
                verdict="WRONG (cancelled job ended $s)"
            fi
            continue
        fi
        if [[ $got != "$want" ]]; then
            digest_ok=0 verdict="WRONG (digest '${got:-none}' != $want)"
        fi
        if [[ $s == TIMEOUT && -n $got && $(tail -n1 "$o") == "srun exit 0" ]]; then
            # The last run trained to the end just as Slurm enforced the
            # limit (it does so up to 30 s late): Slurm's word for a job
            # that finished, with the right digest.
            note=" (finished as the time limit was enforced)"
        elif [[ $s != COMPLETED ]]; then
            verdict="WRONG (state $s)"
        fi
        if [[ $shape == array && $i == 0 && $r != 0 ]]; then
            verdict="WRONG (array task 0 restarted $r times)"
        fi
    done
    if [[ $shape == timelimit ]]; then
        plan=("timelimit@60")
        [[ $rs == 0 ]] && plan=("timelimit@60(missed)") # trained to the end first
    fi
    wall=$(( $(date +%s) - t0 ))
    ev=$(IFS=,; echo "${plan[*]:-none}")
    printf '%d\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n' \
        "$t" "$tseed" "$jid" "$shape" "$nodes" "$ranks" "$async" "$ev" "$from" "$digest_ok" \
        "$st" "$rs" "$inter" "$lmax" "$lsum" "$wall" "${verdict%% *}" >>"$results"
    ran=$((ran + 1))
    if [[ $verdict != ok ]]; then
        bad=$((bad + 1))
        keep_failed "$name"
    fi
    rm -rf "$ckroot/$name".ckpt "$ckroot/$name"-*.ckpt
    echo "trial $t: job $jid, $shape $nodes nodes $ranks ranks $([[ $async == 1 ]] && echo async || echo sync), events $ev, state $st, restarts $rs, resumed from $from, lost max $lmax steps, ${wall}s: $verdict$note"
done
echo
summary
echo "this run: $ran trials, $bad wrong"
((bad == 0))
