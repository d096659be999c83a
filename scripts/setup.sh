#!/usr/bin/env bash
# Installs the Debian packages gpuclean needs to build, test and benchmark — only those
# missing, so a machine that has them makes no network call. Needs root (or sudo) when
# something is missing.
set -euo pipefail

#   scripts/setup.sh              everything: build, tests, lint, fuzz, bench (./test.sh)
#   scripts/setup.sh --binary     only what building the gpuclean binary needs (./gpuclean.sh):
#                                 a newcomer's first answer must not wait for clang or Prometheus
#   scripts/setup.sh --package    that, and what scripts/package.sh needs (man page, .deb, tarball)
binary_packages=(
  build-essential cmake ninja-build pkg-config
  libcli11-dev nlohmann-json3-dev libfmt-dev
  prometheus-cpp-dev   # gpuclean metrics is part of the binary users run
  libncurses-dev       # gpuclean top, linked statically (libncursesw.a, libtinfo.a)
  libsqlite3-dev       # the flight recorder's database (src/history/)
)
package_packages=("${binary_packages[@]}"
  scdoc                    # the man page's source format (docs/man/gpuclean.1.scd)
  dpkg-dev file patchelf   # CPack's dpkg-shlibdeps; the tarball's $ORIGIN run path
  python3-pip python3-setuptools python3-wheel   # the wheel of python/, built offline
)
packages=("${package_packages[@]}"
  libgtest-dev libgmock-dev
  clang-format clang-tidy
  psmisc lsof procps util-linux time   # fuser/lsof for the bench and tests, unshare for PID namespaces
  clang libclang-rt-dev   # libFuzzer for fuzz/ci.sh and bench/fuzz_bench.sh
  prometheus shellcheck   # promtool and shellcheck for the metrics tests
  prometheus-node-exporter   # tests/prometheus/fleet.sh: a node served by its textfile collector
  libfuse3-dev fuse3   # tests/fuse: a FUSE daemon that stalls page faults (mm_lock_victim)
  lintian man-db groff-base curl   # tests/packaging: the .deb checked, installed, read, scraped
  bash-completion zsh fish         # the completion tests drive each shell's own machinery
  # tests/python: python/ installed offline (Debian's setuptools and wheel) into a venv, its
  # tests run by Debian's pytest, pyflakes over it
  python3-venv python3-pytest python3-pyflakes
  python3-pytest-xdist   # the plugin under pytest -n
  tmux   # tests/top: gpuclean top driven in a real terminal (send-keys, capture-pane)
  librsvg2-bin   # rsvg-convert: the recorder test renders plot --history's SVG (well-formed XML)
)
case "${1:-}" in
  --binary) packages=("${binary_packages[@]}") ;;
  --package) packages=("${package_packages[@]}") ;;
  "") ;;
  *)
    echo "usage: scripts/setup.sh [--binary | --package]" >&2
    exit 2
    ;;
esac

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
