#!/usr/bin/env bash
# The SPANK plugin on the real local cluster: its options are offered,
# bad values are refused in the submitting process before any task starts,
# and resolved values reach every task and the steps inside a batch job.
# Run by scripts/test.sh with the cluster up (RP_CLUSTER_DIR, SLURM_CONF,
# RP_PREFIX set).
. "$(dirname "$0")/../lib/harness.sh"

export PATH=$RP_PREFIX/bin:$PATH
export RP_WORK=$RP_CLUSTER_DIR/work/plugin
export RP_PLUGSTACK=$(sed -n 's/^PlugStackConfig=//p' "$SLURM_CONF")
mkdir -p "$RP_WORK"

# with_site_args ARGS...: for the rest of this test, the plugin gets ARGS
# from plugstack.conf; the original file comes back when the test ends.
with_site_args() {
    cp "$RP_PLUGSTACK" "$RP_WORK/plugstack.saved"
    trap 'cp "$RP_WORK/plugstack.saved" "$RP_PLUGSTACK"' EXIT
    echo "required $RP_PLUGIN $*" >"$RP_PLUGSTACK"
}

# expect_refused WHAT CMD...: CMD must fail, name WHAT, and start nothing.
expect_refused() {
    local what=$1 out marker
    shift
    marker=$RP_WORK/ran.$$.$RANDOM
    if out=$("$@" touch "$marker" 2>&1); then
        fail "accepted: $*"
    fi
    assert_contains "$out" "$what" "the error of '$*'"
    [ ! -e "$marker" ] || fail "a task ran although '$*' was refused"
    echo "$out"
}

test_srun_help_lists_option() {
    local out
    out=$(srun --help 2>&1)
    assert_contains "$out" "--ckpt-interval=DURATION"
    assert_contains "$out" "[ringpoint]"
}

test_sbatch_and_salloc_help_list_option() {
    assert_contains "$(sbatch --help 2>&1)" "--ckpt-interval=DURATION"
    assert_contains "$(salloc --help 2>&1)" "--ckpt-interval=DURATION"
}

test_bad_interval_refused_before_any_task() {
    local v out
    for v in banana 15x 1.5h -5 10:60 1-10 "15 m" ""; do
        out=$(expect_refused "--ckpt-interval" srun -N1 --ckpt-interval="$v")
        # The message says what is accepted, not just that it failed.
        assert_contains "$out" "15m" "the error for '$v'"
        assert_contains "$out" "[[D-]HH:]MM:SS" "the error for '$v'"
    done
}

test_too_long_interval_refused() {
    local out
    out=$(expect_refused "--ckpt-interval=400d" srun -N1 --ckpt-interval=400d)
    assert_contains "$out" "maximum of 366 days"
}

test_sbatch_refuses_bad_interval() {
    local out
    if out=$(sbatch --ckpt-interval=banana --wrap=true 2>&1); then
        fail "sbatch accepted --ckpt-interval=banana: $out"
    fi
    assert_contains "$out" "--ckpt-interval=banana"
    assert_not_contains "$out" "Submitted batch job"
}

test_interval_reaches_every_task() {
    local spec want out
    for spec in 15m:900 90s:90 1:30:00:5400 0:0 3600:3600 1-00:00:00:86400; do
        want=${spec##*:}
        out=$(srun -N2 -n4 --ckpt-interval="${spec%:*}" printenv RINGPOINT_CKPT_INTERVAL)
        assert_eq "$(echo "$out" | sort | uniq -c | awk '{print $1" "$2}')" "4 $want" \
            "RINGPOINT_CKPT_INTERVAL of 4 tasks for ${spec%:*}"
    done
}

test_no_option_exports_nothing() {
    local out
    out=$(srun -N1 sh -c 'echo "[${RINGPOINT_CKPT_INTERVAL-unset}]"')
    assert_eq "$out" "[unset]"
}

# A plain step gets neither the stop marker's variable nor its pipe: the
# plugin acts only on ringpoint steps. fds 0-2 are Slurm's own pipes; the
# marker would sit above them. A step with an option has both (the
# positive control: the listing would show it).
marker_fds() { # SRUN_ARGS...: "var=..." of each task, and "fd N -> WHAT"
    # for each of the task's fds above 2 (listed by a child, ls, so that
    # the shell opens nothing of its own to look)
    srun "$@" sh -c 'echo "var=${RINGPOINT_STEP_FD:-none}"; ls -l /proc/$$/fd' |
        awk '/^var=/ { print; next } $(NF-1) == "->" && $(NF-2) > 2 { print "fd", $(NF-2), "->", $NF }'
}
test_plain_step_has_no_marker() {
    local out
    # Nothing of ringpoint's in a plain step's environment at all.
    out=$(srun -N2 -n2 env | grep '^RINGPOINT_' || true)
    assert_eq "$out" "" "RINGPOINT_* variables in a plain step"
    out=$(marker_fds -N2 -n2)
    echo "plain: $out"
    assert_eq "$(grep -c 'var=none' <<<"$out")" 2 "tasks without RINGPOINT_STEP_FD"
    case $out in *pipe:*) fail "a pipe fd leaked into a plain step: $out" ;; esac
    out=$(marker_fds -N1 --ckpt-interval=0)
    echo "ringpoint step: $out"
    case $out in *var=none*) fail "no RINGPOINT_STEP_FD in a ringpoint step: $out" ;; esac
    assert_contains "$out" "pipe:" "the marker pipe of a ringpoint step"
}

test_bad_environment_value_refused_at_submit() {
    local out
    out=$(RINGPOINT_CKPT_INTERVAL=soon expect_refused RINGPOINT_CKPT_INTERVAL srun -N1)
    assert_contains "$out" "'soon'"
    # The command line wins over the environment, bad or not.
    out=$(RINGPOINT_CKPT_INTERVAL=soon srun -N1 --ckpt-interval=2m printenv RINGPOINT_CKPT_INTERVAL)
    assert_eq "$out" "120"
}

test_site_minimum_interval() {
    local out
    with_site_args min_interval=5m
    out=$(expect_refused "--ckpt-interval" srun -N1 --ckpt-interval=1m)
    assert_contains "$out" "minimum of 5m"
    assert_eq "$(srun -N1 --ckpt-interval=10m printenv RINGPOINT_CKPT_INTERVAL)" "600"
    # Checkpointing only on a signal is always allowed.
    assert_eq "$(srun -N1 --ckpt-interval=0 printenv RINGPOINT_CKPT_INTERVAL)" "0"
}

test_site_default_interval() {
    with_site_args default_interval=20m
    assert_eq "$(srun -N2 -n2 printenv RINGPOINT_CKPT_INTERVAL | sort -u)" "1200"
    assert_eq "$(srun -N1 --ckpt-interval=5m printenv RINGPOINT_CKPT_INTERVAL)" "300"
    # A value the user exported wins over the site default.
    assert_eq "$(RINGPOINT_CKPT_INTERVAL=600 srun -N1 printenv RINGPOINT_CKPT_INTERVAL)" "600"
}

test_site_unknown_key_refused() {
    local out
    with_site_args default_intervall=20m
    out=$(expect_refused "default_intervall" srun -N1)
    assert_contains "$out" "unknown key"
}

test_all_options_listed() {
    local out o
    out=$(srun --help 2>&1)
    for o in --ckpt-interval=DURATION --ckpt-dir=PATH --ckpt-keep=N \
             "--ckpt-requeue=[MAX]" --no-ckpt-requeue --ckpt-signal=SIG; do
        assert_contains "$out" "$o"
    done
}

test_options_reach_every_task() {
    local out
    cd "$RP_WORK"
    out=$(srun -N2 -n2 --ckpt-dir=ck/%u-%j --ckpt-keep=3 --ckpt-requeue=2 \
        --ckpt-signal=sigusr2 sh -c 'env | grep ^RINGPOINT_CKPT_ | sort' | sort -u)
    echo "$out"
    assert_eq "$(echo "$out" | wc -l)" 4 "distinct lines from 2 tasks"
    assert_contains "$out" "RINGPOINT_CKPT_KEEP=3"
    assert_contains "$out" "RINGPOINT_CKPT_REQUEUE=2"
    assert_contains "$out" "RINGPOINT_CKPT_SIGNAL=USR2"
    # Relative to the submit directory, escapes expanded with the job's ids.
    echo "$out" | grep -Eq "^RINGPOINT_CKPT_DIR=$RP_WORK/ck/$(id -un)-[0-9]+\$" ||
        fail "RINGPOINT_CKPT_DIR not expanded as expected"
}

# The job's limits, for the stop budget: from slurmctld, on the first node
# only (where rank 0 runs), and only for jobs that use ringpoint.
test_job_limits_reach_the_first_node() {
    local out
    out=$(srun -N2 -n2 --ckpt-interval=5m sh -c \
        'echo "$SLURM_NODEID ${RINGPOINT_SLURM_KILL_WAIT:-none} ${RINGPOINT_SLURM_GRACE_TIME:-none} ${RINGPOINT_SLURM_END_TIME:-none}"' | sort)
    echo "$out"
    assert_eq "$(echo "$out" | head -n1)" "0 $RP_CLUSTER_KILL_WAIT_SECS $RP_CLUSTER_GRACE_SECS 0" "node 0"
    assert_eq "$(echo "$out" | tail -n1)" "1 none none none" "node 1"
    out=$(srun -N1 --time=5 sh -c 'echo ${RINGPOINT_SLURM_KILL_WAIT:-none}')
    assert_eq "$out" none "a job without ringpoint options"
    out=$(srun -N1 --time=5 --ckpt-interval=0 sh -c 'echo $RINGPOINT_SLURM_END_TIME')
    # A 5-minute limit: the end time is about 300 s from now.
    [ $((out - $(date +%s))) -gt 240 ] && [ $((out - $(date +%s))) -le 300 ] ||
        fail "RINGPOINT_SLURM_END_TIME=$out is not about 5 minutes ahead"
}

test_bare_requeue_and_no_requeue() {
    assert_eq "$(srun -N1 --ckpt-requeue printenv RINGPOINT_CKPT_REQUEUE)" "3"
    assert_eq "$(srun -N1 --no-ckpt-requeue printenv RINGPOINT_CKPT_REQUEUE)" "0"
    expect_refused "contradict" srun -N1 --no-ckpt-requeue --ckpt-requeue=2 >/dev/null
}

# ringpoint-info --settings tells the plugin's values from the user's.
test_info_settings_names_the_plugin() {
    local out
    out=$(RINGPOINT_COLL_WINDOW=8 srun -N1 --ckpt-interval=5m ringpoint-info --settings)
    echo "$out" | grep -E 'CKPT_INTERVAL|COLL_WINDOW|CKPT_KEEP'
    grep -qE '^RINGPOINT_CKPT_INTERVAL +plugin +300$' <<<"$out" ||
        fail "--ckpt-interval=5m is not reported as the plugin's"
    grep -qE '^RINGPOINT_COLL_WINDOW +environment +8' <<<"$out" ||
        fail "RINGPOINT_COLL_WINDOW=8 is not reported as the user's"
    grep -qE '^RINGPOINT_CKPT_KEEP +default ' <<<"$out" ||
        fail "RINGPOINT_CKPT_KEEP is not reported as the default"
}

# No max_requeues in plugstack.conf: the admin guide's default of 3 is the
# ceiling, at submit time and through the environment alike.
test_default_requeue_ceiling() {
    local out
    assert_eq "$(srun -N1 --ckpt-requeue=3 printenv RINGPOINT_CKPT_REQUEUE)" "3"
    out=$(expect_refused "--ckpt-requeue=4" srun -N1 --ckpt-requeue=4)
    assert_contains "$out" "maximum of 3 requeues"
    out=$(RINGPOINT_CKPT_REQUEUE=1000 expect_refused RINGPOINT_CKPT_REQUEUE srun -N1)
    assert_contains "$out" "maximum of 3 requeues"
}

test_bad_options_refused_before_any_task() {
    local out
    out=$(expect_refused "--ckpt-dir=/x/%q" srun -N1 --ckpt-dir=/x/%q)
    assert_contains "$out" "%j (job id)"
    expect_refused "goes above /" srun -N1 --ckpt-dir=/a/../.. >/dev/null
    out=$(expect_refused "--ckpt-signal=KILL" srun -N1 --ckpt-signal=KILL)
    assert_contains "$out" "cannot be caught"
    expect_refused "--ckpt-signal=SEGV" srun -N1 --ckpt-signal=SEGV >/dev/null
    out=$(expect_refused "--ckpt-keep=0" srun -N1 --ckpt-keep=0)
    assert_contains "$out" "at least 1"
    expect_refused "--ckpt-keep=many" srun -N1 --ckpt-keep=many >/dev/null
    expect_refused "--ckpt-requeue=-1" srun -N1 --ckpt-requeue=-1 >/dev/null
    out=$(RINGPOINT_CKPT_DIR=/y/%z expect_refused RINGPOINT_CKPT_DIR srun -N1)
    assert_contains "$out" "unknown escape"
}

test_usr1_warns() {
    local out
    out=$(srun -N1 --ckpt-signal=USR1 printenv RINGPOINT_CKPT_SIGNAL 2>&1)
    assert_contains "$out" "NCCL"
    assert_contains "$out" "USR1"
}

test_sbatch_options_reach_steps() {
    local jid out
    cd "$RP_WORK"
    printf '#!/bin/bash\nsrun -N1 sh -c "env | grep ^RINGPOINT_ | sort"\n' >job.sh
    jid=$(sbatch --parsable -J rpjob --ckpt-interval=5m --ckpt-dir=runs/%x-%j \
        --ckpt-keep=2 -o "$RP_WORK/sbatch-%j.out" job.sh)
    for _ in $(seq 60); do
        squeue -h -j "$jid" 2>/dev/null | grep -q . || break
        sleep 0.5
    done
    out=$(cat "$RP_WORK/sbatch-$jid.out")
    echo "$out"
    assert_contains "$out" "RINGPOINT_CKPT_INTERVAL=300"
    assert_contains "$out" "RINGPOINT_CKPT_KEEP=2"
    assert_contains "$out" "RINGPOINT_CKPT_DIR=$RP_WORK/runs/rpjob-$jid"
}

test_site_limits_on_options() {
    local out
    with_site_args max_keep=5 max_requeues=2 allowed_roots=/var/tmp:/scratch
    out=$(expect_refused "--ckpt-keep=6" srun -N1 --ckpt-keep=6)
    assert_contains "$out" "maximum of 5"
    out=$(expect_refused "--ckpt-requeue=3" srun -N1 --ckpt-requeue=3)
    assert_contains "$out" "maximum of 2"
    out=$(expect_refused "--ckpt-dir=/etc/ck" srun -N1 --ckpt-dir=/etc/ck)
    assert_contains "$out" "outside this site's checkpoint roots"
    expect_refused "--ckpt-dir=/scratchpad" srun -N1 --ckpt-dir=/scratchpad >/dev/null
    # A bare --ckpt-requeue means the site's maximum.
    assert_eq "$(srun -N1 --ckpt-requeue printenv RINGPOINT_CKPT_REQUEUE)" "2"
    assert_eq "$(srun -N1 --ckpt-dir=/var/tmp/x/%j printenv RINGPOINT_CKPT_DIR | grep -c '^/var/tmp/x/[0-9]')" "1"
}

# ---- Issue 15, section 0: the options as a new user meets them. Every
# option, bare and with a value, reaches the steps inside a batch job; an
# inner srun's option overrides what the job inherited; a value has one
# length limit on every side; --ckpt-dir templates cannot leave the roots.

# wait_gone JOB...: until the jobs have left the queue.
wait_gone() {
    local j
    for j in "$@"; do
        for _ in $(seq 120); do
            squeue -h -j "$j" 2>/dev/null | grep -q . || break
            sleep 0.5
        done
    done
}

# The whole option table, each given to sbatch and read back by two srun
# steps inside (one after the script changed directory): OPTION|VARIABLE|
# VALUE, where VALUE may name JOB (the job id) and DIR (the submit dir).
export OPTION_TABLE='--ckpt-interval=5m|RINGPOINT_CKPT_INTERVAL|300
--ckpt-interval=1:30:00|RINGPOINT_CKPT_INTERVAL|5400
--ckpt-dir=ck/%x-%j|RINGPOINT_CKPT_DIR|DIR/ck/rpopt-JOB
--ckpt-dir=DIR/abs/%u|RINGPOINT_CKPT_DIR|DIR/abs/USER
--ckpt-keep=4|RINGPOINT_CKPT_KEEP|4
--ckpt-requeue|RINGPOINT_CKPT_REQUEUE|3
--ckpt-requeue=2|RINGPOINT_CKPT_REQUEUE|2
--ckpt-requeue=0|RINGPOINT_CKPT_REQUEUE|0
--no-ckpt-requeue|RINGPOINT_CKPT_REQUEUE|0
--ckpt-signal=term|RINGPOINT_CKPT_SIGNAL|TERM
--ckpt-signal=12|RINGPOINT_CKPT_SIGNAL|USR2'

# Issue 15: a bare `sbatch --ckpt-requeue` made every srun inside fail
# with "--ckpt-requeue=(null)... not a whole number".
test_every_option_round_trips_sbatch_to_steps() {
    local dir=$RP_WORK/rt opt var want jid out i=0 jids=()
    rm -rf "$dir"; mkdir -p "$dir/elsewhere"; cd "$dir"
    printf '#!/bin/bash\nsrun -N1 printenv "$1"; echo "rc=$?"\ncd elsewhere\nsrun -N1 printenv "$1"; echo "rc=$?"\n' >job.sh
    while IFS='|' read -r opt var want; do
        opt=${opt//DIR/$dir}
        # stderr apart: srun's "step creation temporarily disabled" notices
        # (a step still ending on the node, under load) are not the answer.
        jid=$(sbatch --parsable -J rpopt -o "$dir/out.$i" -e "$dir/err.$i" "$opt" job.sh "$var") ||
            fail "sbatch $opt refused"
        jids+=("$jid"); i=$((i + 1))
    done <<<"$OPTION_TABLE"
    wait_gone "${jids[@]}"
    i=0
    while IFS='|' read -r opt var want; do
        opt=${opt//DIR/$dir}
        want=${want//DIR/$dir}; want=${want//JOB/${jids[$i]}}; want=${want//USER/$(id -un)}
        out=$(cat "$dir/out.$i")
        echo "== sbatch $opt"; echo "$out"
        assert_eq "$out" "$want"$'\n'"rc=0"$'\n'"$want"$'\n'"rc=0" "the steps of sbatch $opt"
        i=$((i + 1))
    done <<<"$OPTION_TABLE"
}

test_bare_requeue_round_trips_salloc_to_steps() {
    local out
    out=$(salloc -N1 --ckpt-requeue srun -N1 printenv RINGPOINT_CKPT_REQUEUE 2>&1)
    assert_contains "$out" $'\n3' "salloc --ckpt-requeue, srun inside"
    assert_not_contains "$out" "(null)"
}

# Issue 15: `sbatch --no-ckpt-requeue` with `srun --ckpt-requeue=1` inside
# failed "contradict each other": the inner srun's option wins.
test_inner_srun_overrides_inherited() {
    local dir=$RP_WORK/ovr j1 j2 j3 j4
    rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
    j1=$(sbatch --parsable -o "$dir/1.out" -e "$dir/1.err" --no-ckpt-requeue --wrap \
        'srun -N1 --ckpt-requeue=1 printenv RINGPOINT_CKPT_REQUEUE; srun -N1 printenv RINGPOINT_CKPT_REQUEUE')
    j2=$(sbatch --parsable -o "$dir/2.out" -e "$dir/2.err" --ckpt-requeue=2 --wrap \
        'srun -N1 --no-ckpt-requeue printenv RINGPOINT_CKPT_REQUEUE; srun -N1 --ckpt-requeue printenv RINGPOINT_CKPT_REQUEUE')
    j3=$(sbatch --parsable -o "$dir/3.out" -e "$dir/3.err" --ckpt-requeue --ckpt-interval=5m --wrap \
        'srun -N1 --ckpt-interval=10m --ckpt-requeue=1 sh -c "echo \$RINGPOINT_CKPT_INTERVAL \$RINGPOINT_CKPT_REQUEUE"')
    # (stderr apart: srun's "step creation temporarily disabled" notices
    # under load are not part of the answer.)
    # Both on the inner srun's own command line still contradict.
    j4=$(sbatch --parsable -o "$dir/4.out" --no-ckpt-requeue --wrap \
        'srun -N1 --ckpt-requeue=1 --no-ckpt-requeue true; echo "rc=$?"')
    wait_gone "$j1" "$j2" "$j3" "$j4"
    head -n 20 "$dir"/*.out
    assert_eq "$(cat "$dir/1.out")" $'1\n0' "sbatch --no-ckpt-requeue, srun --ckpt-requeue=1"
    assert_eq "$(cat "$dir/2.out")" $'0\n3' "sbatch --ckpt-requeue=2, srun --no-ckpt-requeue"
    assert_eq "$(cat "$dir/3.out")" "600 1" "sbatch --ckpt-requeue --ckpt-interval=5m, srun overrides both"
    assert_contains "$(cat "$dir/4.out")" "contradict each other"
    assert_not_contains "$(cat "$dir/4.out")" "rc=0"
}

# Issue 15: a RINGPOINT_* value of 4096 bytes or more was treated as unset by
# slurmstepd (no site check) and read by the runtime (4100 zeros then 1 is
# an interval of 1 s under min_interval=5m).
test_long_value_one_verdict() {
    local dir=$RP_WORK/long zeros jid out
    with_site_args min_interval=5m
    rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
    zeros=$(head -c 4100 /dev/zero | tr '\0' 0)
    out=$(RINGPOINT_CKPT_INTERVAL=${zeros}1 srun -N1 touch "$dir/srun-ran" 2>&1) &&
        fail "srun accepted a 4101-byte RINGPOINT_CKPT_INTERVAL"
    assert_contains "$out" "longer than 4095 bytes"
    [ ! -e "$dir/srun-ran" ] || fail "a task ran"
    # --export skips the submit-time check: slurmstepd must refuse it too.
    jid=$(sbatch --parsable -o "$dir/job.out" --export="ALL,RINGPOINT_CKPT_INTERVAL=${zeros}1" \
        --wrap "touch $dir/job-ran")
    wait_gone "$jid"
    cat "$dir/job.out"
    assert_contains "$(cat "$dir/job.out")" "RINGPOINT_CKPT_INTERVAL: the value is longer than 4095 bytes"
    [ ! -e "$dir/job-ran" ] || fail "the batch script ran"
    # Refused in the task, not at launch: a failed batch launch drains nodes.
    assert_eq "$(sinfo -h -R)" "" "nodes drained by a refused batch job"
    # 4095 bytes is a value like any other: read, and checked.
    out=$(RINGPOINT_CKPT_INTERVAL=${zeros:0:4094}1 srun -N1 true 2>&1) &&
        fail "srun accepted a 1 s interval under min_interval=5m"
    assert_contains "$out" "minimum of 5m"
}

# Issue 15: --ckpt-dir=<root>/.%x with the job name "." left the roots.
test_ckpt_dir_template_cannot_leave_roots() {
    local root=$RP_WORK/root out jid
    with_site_args "allowed_roots=$root"
    rm -rf "$root"; mkdir -p "$root"; cd "$root"
    out=$(srun -N1 -J . --ckpt-dir="$root/.%x/.%x/etc" touch "$root/ran" 2>&1) || true
    echo "$out"
    assert_contains "$out" "expands to a '..' component"
    [ ! -e "$root/ran" ] || fail "a task ran with a ckpt dir outside the roots"
    # The same template with an ordinary name stays inside.
    assert_eq "$(srun -N1 -J n --ckpt-dir="$root/.%x" printenv RINGPOINT_CKPT_DIR)" "$root/.n"
    # Relative paths of an srun inside a batch job are the job's submit
    # directory's, wherever the script has gone.
    jid=$(sbatch --parsable -o "$root/cd.out" --ckpt-dir=ck --wrap \
        'cd /; srun -N1 printenv RINGPOINT_CKPT_DIR')
    wait_gone "$jid"
    assert_eq "$(cat "$root/cd.out")" "$root/ck" "an srun after cd /"
}

# Issue 15: '%' in the submit directory was expanded, and an unknown escape
# there passed srun and failed only in slurmstepd.
test_percent_in_submit_dir() {
    local dir=$RP_WORK/a%zb out
    rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
    out=$(expect_refused "contains '%'" srun -N1 --ckpt-dir=ck)
    assert_contains "$out" "srun: error: ringpoint"
    assert_eq "$(srun -N1 --ckpt-dir="$RP_WORK/abs-%j" printenv RINGPOINT_CKPT_DIR | grep -c "^$RP_WORK/abs-[0-9]*\$")" 1
    expect_refused "unknown escape '%z'" srun -N1 --ckpt-dir=/x/%z >/dev/null
}

# rpc_count NAME: how many NAME RPCs slurmctld has served (sdiag).
rpc_count() {
    sdiag | awk -v n="$1" '$1 == n { sub(/^count:/, "", $4); print $4; f=1 } END { if (!f) print 0 }'
}

# Issue 15: with a site default_interval every step of every job counted as
# a ringpoint step: a job that handles its own failing step was requeued
# (requeue_failed=yes), and each step start cost ~3 RPCs to slurmctld.
test_site_default_is_not_a_ringpoint_step() {
    local dir=$RP_WORK/sitedef jid b0 p0 j0 out
    with_site_args default_interval=30m requeue_failed=yes
    rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
    b0=$(rpc_count REQUEST_BUILD_INFO); p0=$(rpc_count REQUEST_PARTITION_INFO)
    j0=$(rpc_count REQUEST_JOB_INFO_SINGLE)
    jid=$(sbatch --parsable --requeue -N1 -o "$dir/job.out" --wrap \
        'for i in $(seq 10); do srun -N1 true; done
         srun -N1 printenv RINGPOINT_CKPT_INTERVAL; srun -N1 false || echo handled
         touch done')
    # Waited for without asking slurmctld, which counts every RPC.
    for _ in $(seq 120); do [ -e "$dir/done" ] && break; sleep 0.5; done
    sleep 2
    out=$(cat "$dir/job.out")
    echo "$out"
    echo "RPCs: build $(( $(rpc_count REQUEST_BUILD_INFO) - b0 )) partition" \
        "$(( $(rpc_count REQUEST_PARTITION_INFO) - p0 )) job $(( $(rpc_count REQUEST_JOB_INFO_SINGLE) - j0 ))"
    assert_contains "$out" "handled"
    assert_contains "$out" "1800" "the site default still reaches the steps"
    assert_eq "$(( $(rpc_count REQUEST_BUILD_INFO) - b0 ))" 0 "BUILD_INFO RPCs for 13 steps"
    assert_eq "$(( $(rpc_count REQUEST_PARTITION_INFO) - p0 ))" 0 "PARTITION_INFO RPCs for 13 steps"
    [ $(( $(rpc_count REQUEST_JOB_INFO_SINGLE) - j0 )) -le 2 ] ||
        fail "JOB_INFO_SINGLE RPCs for 13 steps: $(( $(rpc_count REQUEST_JOB_INFO_SINGLE) - j0 ))"
    wait_gone "$jid"
    assert_eq "$(scontrol show job "$jid" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')" 0 "restarts"
    # A step that asks for ringpoint is one.
    out=$(srun -N1 --ckpt-keep=2 sh -c 'echo ${RINGPOINT_SLURM_KILL_WAIT:-none}')
    assert_eq "$out" "$RP_CLUSTER_KILL_WAIT_SECS" "the limits of a step with an option"
}

# Issue 15: the site's limits through the environment, on both sides:
# RINGPOINT_CKPT_REQUEUE above max_requeues (kept as a regression test),
# and RINGPOINT_CKPT_EVERY, which was never checked, under min_interval.
test_site_limits_through_the_environment() {
    local dir=$RP_WORK/envlim out jid v
    with_site_args max_requeues=1 min_interval=5m
    rm -rf "$dir"; mkdir -p "$dir"; cd "$dir"
    out=$(RINGPOINT_CKPT_REQUEUE=5 expect_refused RINGPOINT_CKPT_REQUEUE srun -N1)
    assert_contains "$out" "maximum of 1"
    out=$(RINGPOINT_CKPT_EVERY=1 expect_refused RINGPOINT_CKPT_EVERY srun -N1)
    assert_contains "$out" "minimum interval of 5m"
    out=$(RINGPOINT_CKPT_EVERY=x1 expect_refused RINGPOINT_CKPT_EVERY srun -N1)
    assert_contains "$out" "not a whole number"
    assert_eq "$(RINGPOINT_CKPT_EVERY=00 srun -N1 printenv RINGPOINT_CKPT_EVERY)" 0
    # --export skips the submit-time check; slurmstepd refuses the same.
    for v in RINGPOINT_CKPT_REQUEUE=5 RINGPOINT_CKPT_EVERY=1; do
        rm -f "$dir/ran"
        jid=$(sbatch --parsable -o "$dir/job.out" --export="ALL,$v" --wrap "touch $dir/ran")
        wait_gone "$jid"
        cat "$dir/job.out"
        assert_contains "$(cat "$dir/job.out")" "ringpoint: ${v%%=*}=" "the job's output for $v"
        [ ! -e "$dir/ran" ] || fail "the batch script ran with $v"
    done
    assert_eq "$(sinfo -h -R)" "" "nodes drained by a refused batch job"
}

run_all
