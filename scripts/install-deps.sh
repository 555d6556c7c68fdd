#!/usr/bin/env bash
# Installs, from Debian's packages, what Loom's build, tests, demo and
# benchmarks need. Idempotent: installs only what is missing, so a second run
# touches nothing and needs no network.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git python3
  libhwloc-dev hwloc
  libucx-dev libibverbs-dev
  libopenblas-dev
  openmpi-bin libopenmpi-dev
  libgtest-dev libbenchmark-dev
  libsodium-dev
  libfmt-dev libcli11-dev nlohmann-json3-dev libpugixml-dev
  clang-format clang-tidy clang-14 libclang-rt-14-dev
  iproute2 procps strace
  python3-venv python3-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
