#!/usr/bin/env bash
# Install what ringpoint needs to build, test and run its demo on Debian 12,
# from Debian's own packages. Run as root. Idempotent.
set -euo pipefail

packages=(
    # build
    build-essential autoconf automake libtool pkg-config
    # Slurm (SPANK headers, and the daemons of the local test cluster)
    libslurm-dev slurm-wlm slurmd slurmctld slurm-client munge
    # bootstrap and transports
    libpmix-dev libucx-dev ucx-utils
    # Open MPI: mpirun as a second PMIx launcher, and the benchmark peer
    openmpi-bin libopenmpi-dev
    # unit tests; clang's libFuzzer for the fuzz targets (scripts/fuzz.sh)
    libcmocka-dev clang libclang-rt-14-dev
    # the Python package (Debian's interpreter, torch, numpy) and its tests
    python3 python3-torch python3-numpy python3-pytest
    # the cluster script and the tests (bindfs: a FUSE mount to freeze, for
    # the hung-file-system stop test)
    util-linux procps coreutils bindfs
)

if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: run as root (it installs Debian packages)" >&2
    exit 1
fi
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
        missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
    echo "deps.sh: all ${#packages[@]} packages already installed"
    exit 0
fi
echo "deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "deps.sh: done"
