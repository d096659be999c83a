#!/usr/bin/env bash
# Installs the Debian packages gpuclean needs to build, test and benchmark — only those
# missing, so a machine that has them makes no network call. Needs root (or sudo) when
# something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev nlohmann-json3-dev libfmt-dev libgtest-dev libgmock-dev
  clang-format clang-tidy
  psmisc lsof procps util-linux time   # fuser/lsof for the bench and tests, unshare for PID namespaces
  clang libclang-rt-dev   # libFuzzer for fuzz/ci.sh and bench/fuzz_bench.sh
  prometheus-cpp-dev prometheus shellcheck   # gpuclean metrics; promtool and shellcheck for its tests
  libfuse3-dev fuse3   # tests/fuse: a FUSE daemon that stalls page faults (mm_lock_victim)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
