#!/usr/bin/env bash
# The hierarchy across nodes against the flat ring (issue 16): allreduce
# at N nodes x P ranks, RINGPOINT_COLL_HIER=1 against =0, each with UCX's
# default transports and with UCX_TLS=tcp,self, interleaved rounds; prints
# every round's rows and the median per size. Run inside a cluster's
# environment (eval "$(scripts/cluster.sh env)"), from a directory the
# nodes can see.
#   scripts/bench-hier.sh [-r ROUNDS] [-N NODES] [-p PER_NODE] [-e MAXBYTES]
#                         [-C COLL] [-x PREFIX]
set -euo pipefail
rounds=3 nodes=2 per=2 max=64M coll=allreduce prefix=${RP_PREFIX:-/usr/local}
while getopts r:N:p:e:C:x: o; do
    case $o in
    r) rounds=$OPTARG ;; N) nodes=$OPTARG ;; p) per=$OPTARG ;;
    e) max=$OPTARG ;; C) coll=$OPTARG ;; x) prefix=$OPTARG ;;
    *) exit 2 ;;
    esac
done
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-hier.XXXXXX")
for r in $(seq "$rounds"); do
    for tls in default tcp; do
        for hier in 1 0; do
            if [ "$tls" = tcp ]; then t=(env UCX_TLS=tcp,self); else t=(env); fi
            "${t[@]}" RINGPOINT_COLL_HIER=$hier srun --mpi=pmix -N"$nodes" \
                -n$((nodes * per)) --ntasks-per-node="$per" \
                "$prefix/bin/ringpoint-bench" "$coll" -b 4 -e "$max" -f 4 \
                -n 20 -w 5 -c 0 2>&1 |
                awk -v r="$r" -v tls="$tls" -v h="$hier" \
                    '$1 ~ /^[0-9]+$/ && NF >= 10 {print tls, h, r, $1, $6}' |
                tee -a "$out/rows"
        done
    done
done
echo "# median time (us) of $rounds rounds, $coll, $nodes nodes x $per ranks"
echo "# tls size hier flat flat/hier"
sort -k1,1 -k4,4n -k2,2 "$out/rows" |
    awk '{k = $1 " " $4 " " $2; v[k] = v[k] " " $5} END {for (k in v) print k, v[k]}' |
    while read -r tls size hier vals; do
        med=$(printf '%s\n' $vals | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
        echo "$tls $size $hier $med"
    done | sort -k1,1 -k2,2n -k3,3 |
    awk '{m[$1 " " $2, $3] = $4; keys[$1 " " $2] = 1}
         END {for (k in keys) printf "%s %s %s %.2f\n", k, m[k, 1], m[k, 0], m[k, 0] / m[k, 1]}' |
    sort -k1,1 -k2,2n
echo "# rows in $out/rows"
