#!/usr/bin/env bash
# Install the built Debian packages into a clean root and use them there:
# ringpoint-info, the plugin under a local Slurm cluster, and
# `python3 -c 'import ringpoint.torch'`.
#
#   scripts/package-test.sh DEBDIR [ROOT]
#
# DEBDIR holds the .deb files of one dpkg-buildpackage run; ROOT (default
# /var/tmp/rp-pkgroot, wiped first; removed at the end unless
# RP_PKGTEST_KEEP=1) becomes the root. Its cluster listens on
# RP_CLUSTER_CTLD_PORT and RP_CLUSTER_SLURMD_PORT (n2: that + 1) where they
# are set, else on the first three free ports from 26817. Run as root on the
# Debian 12 machine that built them (after scripts/deps.sh). Takes a few
# minutes, mostly copying: not part of scripts/test.sh.
#
# What "clean" means here. No Debian mirror is reachable offline, so the
# root is not debootstrapped: it is assembled from this machine's own
# installed Debian packages, as dpkg knows them. Each package of the
# dependency closure of the ringpoint packages (their Depends, plus what the
# test itself runs: Slurm's daemons, munge, python3-torch, which
# python3-ringpoint recommends, and Essential: yes) is copied file by file
# from its `dpkg -L` list, and its dpkg status entry goes into ROOT's dpkg
# database, nothing else. So nothing that `make install` or a developer put
# outside packages (/usr/local, a ringpoint.so in Slurm's plugin directory,
# pip packages) is in ROOT, and `dpkg --root=ROOT -i` checks the ringpoint
# packages' dependencies against exactly what ROOT has. Not package files:
# /etc/passwd, /etc/group, /etc/nsswitch.conf (this machine's), and
# /etc/hosts (written here). The files are those of the installed packages
# as they are on this machine (conffiles included), not fresh from .debs.
#
# Inside ROOT, in private mount, PID and UTS namespaces, its cluster on
# ports that no other cluster on this machine listens on (a network
# namespace with only loopback would be cleaner, but Slurm resolves names
# with AI_ADDRCONFIG, which ignores loopback, and this kernel has no dummy
# interfaces):
#   1. the shipped plugstack snippet leaves the plugin disabled (srun --help
#      under Debian's /etc/slurm/plugstack.conf shows no --ckpt option), and
#      uncommenting its line, as README.Debian says, enables it;
#   2. ringpoint-info describes the build;
#   3. python3 -c 'import ringpoint.torch' loads the packaged library;
#   4. scripts/cluster.sh (copied in) starts a 2-node cluster with the
#      packaged plugin; a bad --ckpt-interval is refused at submit time;
#      `srun --mpi=pmix -N2 -n2 --ckpt-interval=10m ringpoint-info` prints
#      both ranks with ckpt_interval=600; ringpoint.torch allreduces across
#      the two nodes; ringpoint-example-train checkpoints, and
#      ringpoint-ckpt verifies what it wrote.
# Prints TAP-like "ok/not ok" lines and ends with "N passed, N failed".
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
debdir=$(realpath "${1:?usage: package-test.sh DEBDIR [ROOT]}")
root=${2:-/var/tmp/rp-pkgroot}
[ "$(id -u)" -eq 0 ] || { echo "package-test.sh: run as root" >&2; exit 1; }
case $(realpath -m "$root") in
/ | /usr* | /etc* | /var | /tmp | /tmp/*) echo "package-test.sh: refusing ROOT $root" >&2; exit 1 ;;
esac
t0=$(date +%s)
say() { printf '== %s (%ss)\n' "$*" $(($(date +%s) - t0)); }

debs=()
for d in "$debdir"/*.deb; do
    case $d in *-dbgsym_*) continue ;; esac
    debs+=("$d")
done
[ ${#debs[@]} -gt 0 ] || { echo "package-test.sh: no .deb in $debdir" >&2; exit 1; }

# ---- the package set: the closure of the ringpoint packages' dependencies
say "resolving dependencies among this machine's installed packages"
# libpmix-dev: Debian's Slurm (mpi_pmix_v4.so) dlopens the unversioned
# pmix2/lib/libpmix.so, which only the -dev package ships; without it
# `srun --mpi=pmix` fails with "can not load PMIx library".
extra="slurmd slurmctld slurm-client munge libpmix-dev python3-torch bash \
coreutils procps util-linux mount iproute2 sed grep findutils"
deps=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Depends; done | tr '\n' ',')
own=$(for d in "${debs[@]}"; do dpkg-deb -f "$d" Package; done)
pkgs=$(/usr/bin/python3 - "$deps" "$extra" "$own" <<'EOF'
import re, subprocess, sys
deps, extra, own = sys.argv[1], sys.argv[2].split(), set(sys.argv[3].split())
fmt = "${Package}\t${db:Status-Abbrev}\t${Provides}\t${Depends}\t${Pre-Depends}\t${Essential}\n"
out = subprocess.run(["dpkg-query", "-W", "-f=" + fmt], capture_output=True,
                     text=True, check=True).stdout
inst, prov = {}, {}
for line in out.splitlines():
    p, st, pv, d, pd, ess = line.split("\t")
    if not st.startswith("ii"):
        continue
    inst[p] = (d + "," + pd, ess)
    for x in pv.split(","):
        x = x.strip().split(" ")[0]
        if x:
            prov.setdefault(x, []).append(p)
def resolve(name):
    name = name.split(":")[0]
    if name in inst:
        return name
    return (prov.get(name) or [None])[0]
todo = extra + [p for p, v in inst.items() if v[1] == "yes"]
for dep in deps.split(","):
    alts = [re.sub(r"\s*\(.*?\)", "", a).strip() for a in dep.split("|")]
    alts = [a for a in alts if a and a.split(":")[0] not in own]
    if alts:
        todo.append(next((a for a in alts if resolve(a)), alts[0]))
seen, bad = set(), []
while todo:
    name = todo.pop()
    p = resolve(name)
    if p is None:
        bad.append(name)
        continue
    if p in seen:
        continue
    seen.add(p)
    for dep in inst[p][0].split(","):
        alts = [re.sub(r"\s*\(.*?\)", "", a).strip() for a in dep.split("|")]
        alts = [a for a in alts if a]
        if alts:
            todo.append(next((a for a in alts if resolve(a)), alts[0]))
if bad:
    sys.exit("not installed here: " + " ".join(sorted(set(bad))))
print("\n".join(sorted(seen)))
EOF
)
echo "$(echo "$pkgs" | wc -l) packages"

# ---- ROOT from those packages' files and dpkg entries
say "assembling $root"
rm -rf "$root"
mkdir -p "$root"
# Debian 12's merged /usr: these links belong to no package.
for l in bin sbin lib lib64 lib32; do
    if [ -L "/$l" ]; then
        mkdir -p "$root/$(readlink "/$l")"
        ln -s "$(readlink "/$l")" "$root/$l"
    fi
done
for p in $pkgs; do dpkg-query -L "$p"; done | grep '^/' | sort -u >"$root.files"
tar -C / --no-recursion --ignore-failed-read -cf - -T "$root.files" 2>/dev/null |
    tar -C "$root" --keep-directory-symlink -xf -
rm -f "$root.files"
# update-alternatives' links (libblas.so.3, slurmd, ...) belong to no
# package either: copy those whose chosen target ROOT has.
cp -a /etc/alternatives "$root/etc/"
mkdir -p "$root/var/lib/dpkg/alternatives"
cp -a /var/lib/dpkg/alternatives/. "$root/var/lib/dpkg/alternatives/"
find /usr -path /usr/local -prune -o -lname '/etc/alternatives/*' -print |
    while read -r l; do
        [ -e "$root$(readlink -f "$l")" ] || continue
        mkdir -p "$root$(dirname "$l")"
        cp -P "$l" "$root$l"
    done
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" \
    "$root/var/lib/dpkg/triggers" "$root/proc" "$root/sys" "$root/dev" \
    "$root/run" "$root/tmp" "$root/root" "$root/var/tmp"
chmod 1777 "$root/tmp" "$root/var/tmp"
cp /var/lib/dpkg/arch "$root/var/lib/dpkg/" 2>/dev/null || true
: >"$root/var/lib/dpkg/available"
: >"$root/var/lib/dpkg/diversions"
: >"$root/var/lib/dpkg/statoverride"
: >"$root/var/lib/dpkg/status"
for p in $pkgs; do
    dpkg-query -s "$p" >>"$root/var/lib/dpkg/status"
    echo >>"$root/var/lib/dpkg/status"
    for x in list md5sums conffiles shlibs symbols triggers templates config \
        preinst postinst prerm postrm; do
        for f in /var/lib/dpkg/info/"$p.$x" /var/lib/dpkg/info/"$p":*."$x"; do
            [ -e "$f" ] && cp -a "$f" "$root/var/lib/dpkg/info/"
        done
    done
done
cp /etc/passwd /etc/group /etc/shadow /etc/gshadow /etc/nsswitch.conf "$root/etc/" 2>/dev/null || true
printf '127.0.0.1\tlocalhost\n127.0.1.1\trp-pkgtest\n' >"$root/etc/hosts"
echo rp-pkgtest >"$root/etc/hostname"
chroot "$root" /sbin/ldconfig
echo "$(du -sm "$root" | cut -f1) MiB"

# ---- the ringpoint packages, installed as an admin would
say "dpkg --root=$root -i ${debs[*]##*/}"
dpkg --root="$root" -i "${debs[@]}"
dpkg --root="$root" -l 'ringpoint*' 'libringpoint*' 'python3-ringpoint' | grep '^ii'

# ---- the checks, inside ROOT
cp "$top/scripts/cluster.sh" "$root/root/cluster.sh"
cat >"$root/root/inside.sh" <<'INSIDE'
#!/bin/bash
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
n=0 failed=0
check() { # check NAME COMMAND...: run, show the output, one result
    local name=$1 out rc
    shift
    n=$((n + 1))
    out=$("$@" 2>&1) && rc=0 || rc=$?
    printf '%s\n' "$out" | sed 's/^/    /'
    if [ $rc -eq 0 ]; then echo "ok $n - $name"; else echo "not ok $n - $name (exit $rc)"; failed=$((failed + 1)); fi
}
plugin=/usr/lib/x86_64-linux-gnu/slurm-wlm/ringpoint.so
snippet=/etc/slurm/plugstack.conf.d/ringpoint.conf

t_no_local_install() {
    ! ls /usr/local/lib/libringpoint* /usr/local/bin/ringpoint-* 2>/dev/null &&
    dpkg -S "$plugin" /usr/bin/ringpoint-info /usr/lib/python3/dist-packages/ringpoint/_config.py
}
t_info() { ringpoint-info && ringpoint-info --version; }
t_import() {
    python3 -c 'import ringpoint.torch, ringpoint._config as c, os
print(ringpoint.torch.__file__); print(c.LIBRINGPOINT, os.path.exists(c.LIBRINGPOINT))
assert ringpoint.torch.__file__.startswith("/usr/lib/python3/dist-packages/")'
}
# Debian's slurm.conf-less srun needs some slurm.conf to read plugstack.conf.
client_conf() {
    sed 's|^PlugStackConfig=.*|PlugStackConfig=/etc/slurm/plugstack.conf|' "$SLURM_CONF" >/root/client.conf
}
t_disabled() {
    local out
    cat "$snippet" && client_conf &&
    out=$(SLURM_CONF=/root/client.conf srun --help) &&
    echo "$out" | grep -q -- '--ntasks' && ! echo "$out" | grep -- --ckpt
}
t_enable() {
    sed -i 's|^# required |required |' "$snippet" &&
    grep '^required ' "$snippet" &&
    SLURM_CONF=/root/client.conf srun --help | grep -- '--ckpt-interval'
}
t_refused() {
    local out
    out=$(srun -N1 -n1 --ckpt-interval=bogus true 2>&1) && return 1
    echo "$out"
    echo "$out" | grep -q 'ringpoint: --ckpt-interval=bogus'
}
t_ranks() {
    local out
    out=$(srun --mpi=pmix -N2 -n2 -t 2 --ckpt-interval=10m ringpoint-info) || return 1
    echo "$out"
    [ "$(echo "$out" | grep -c 'ckpt_interval=600')" = 2 ] &&
    echo "$out" | grep -q 'node=n2'
}
t_torch() {
    local out
    out=$(srun --mpi=pmix -N2 -n2 -t 2 python3 -c '
import torch, ringpoint.torch as hvd
hvd.init()
x = hvd.allreduce(torch.full((4,), float(hvd.rank() + 1)), op=hvd.Sum)
print("rank", hvd.rank(), "of", hvd.size(), "sum", x.tolist())
assert x.tolist() == [3.0] * 4') || return 1
    echo "$out" | sort
}
t_train() {
    local dir=$RP_CLUSTER_SHARED/ckpt out
    out=$(srun --mpi=pmix -N2 -n2 -t 3 --ckpt-interval=0 --ckpt-dir="$dir" \
        --export=ALL,RINGPOINT_CKPT_EVERY=50 ringpoint-example-train --steps 200 --log-every 100) || return 1
    echo "$out"
    echo "$out" | grep -q 'final step=200 digest=' &&
    ringpoint-ckpt ls "$dir" && ringpoint-ckpt verify "$dir"
}

mount -t tmpfs tmpfs /tmp && chmod 1777 /tmp
check "nothing of ringpoint outside the packages" t_no_local_install
check "ringpoint-info describes the packaged build" t_info
check "python3 -c 'import ringpoint.torch' loads the packaged library" t_import
export RP_CLUSTER_DIR=/var/tmp/rp-pkgtest-cluster $(cat /root/ports)
if check "cluster.sh up -n 2 -p $plugin" /root/cluster.sh up -n 2 -p "$plugin"; then
    eval "$(/root/cluster.sh env)"
    check "the shipped snippet leaves the plugin disabled" t_disabled
    check "uncommenting the snippet's line enables it" t_enable
    check "a bad --ckpt-interval is refused at submit time" t_refused
    check "srun --mpi=pmix -N2 -n2 --ckpt-interval=10m ringpoint-info" t_ranks
    check "ringpoint.torch allreduce across 2 nodes under srun" t_torch
    check "ringpoint-example-train checkpoints; ringpoint-ckpt verifies" t_train
    /root/cluster.sh down >/dev/null 2>&1 || true
fi
echo "$((n - failed)) passed, $failed failed"
[ $failed -eq 0 ]
INSIDE
chmod +x "$root/root/inside.sh"

# The caller's ports (RP_CLUSTER_CTLD_PORT for slurmctld,
# RP_CLUSTER_SLURMD_PORT and the next one for n1's and n2's slurmd), as
# scripts/cluster.sh takes them; else three free ports in a row.
busy() { ss -Htan | awk '{print $4}' | grep -Eq ":($1)\$"; }
if [ -n "${RP_CLUSTER_CTLD_PORT:-}" ] || [ -n "${RP_CLUSTER_SLURMD_PORT:-}" ]; then
    cport=${RP_CLUSTER_CTLD_PORT:?package-test.sh: RP_CLUSTER_SLURMD_PORT needs RP_CLUSTER_CTLD_PORT}
    dport=${RP_CLUSTER_SLURMD_PORT:?package-test.sh: RP_CLUSTER_CTLD_PORT needs RP_CLUSTER_SLURMD_PORT}
    if busy "$cport|$dport|$((dport + 1))"; then
        echo "package-test.sh: port $cport, $dport or $((dport + 1)) is in use" >&2
        exit 1
    fi
else
    cport=26817
    while busy "$cport|$((cport + 1))|$((cport + 2))"; do
        cport=$((cport + 100))
    done
    dport=$((cport + 1))
fi
echo "RP_CLUSTER_CTLD_PORT=$cport RP_CLUSTER_SLURMD_PORT=$dport" >"$root/root/ports"

say "running the checks in $root (private mount, PID and UTS namespaces; ports $cport, $dport-$((dport + 1)))"
rc=0
unshare --mount --pid --uts --fork --propagation private /bin/bash -c '
    set -e
    root=$1
    hostname rp-pkgtest
    # ROOT as a mount point of its own: cluster.sh makes each slurmd'"'"'s
    # "/" private, which needs "/" to be a mount.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /dev "$root/dev"
    mount -t tmpfs tmpfs "$root/run"
    exec chroot "$root" /root/inside.sh
' bash "$root" || rc=$?
if [ "${RP_PKGTEST_KEEP:-0}" = 1 ]; then
    say "done (exit $rc); $root kept"
else
    rm -rf "$root"
    say "done (exit $rc); $root removed (RP_PKGTEST_KEEP=1 keeps it)"
fi
exit $rc
