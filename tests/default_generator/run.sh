#!/usr/bin/env bash
# The recipe every C++ user types first, with CMake's default generator (Unix Makefiles, not
# Ninja): configure, build everything, install into a prefix, and find the binary, the three
# completion scripts and the manual there. Ninja makes an output's directory itself, Make does
# not: the completion rule failed under Make until 2b3c7b2 ("gpuclean completion bash failed:
# No such file or directory"), and nothing but this build would see the next such rule.
# gpuclean.sh's settings (one translation unit per library, line tables) keep it to a
# couple of minutes on 2 cores; tests off (GoogleTest is not part of the recipe).
#   tests/default_generator/run.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/gpuclean-default-generator.XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
check() { # check "what" command...
  local what=$1
  shift
  if "$@" >/dev/null 2>&1; then
    echo "PASS: $what"
  else
    echo "FAIL: $what"
    failures=$((failures + 1))
  fi
}

unset CMAKE_GENERATOR  # the default, whatever the caller's environment says
cmake -S . -B "$work/build" -DGPUCLEAN_TESTS=OFF -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  >"$work/configure.log"
check "the default generator is Unix Makefiles" \
  grep -qx 'CMAKE_GENERATOR:INTERNAL=Unix Makefiles' "$work/build/CMakeCache.txt"
start=$SECONDS
if ! cmake --build "$work/build" -j "$(nproc)" >"$work/build.log" 2>&1; then
  tail -30 "$work/build.log"
  echo "FAIL: cmake --build (Unix Makefiles)"
  exit 1
fi
echo "built every default target with Make in $((SECONDS - start)) s"
cmake --install "$work/build" --prefix "$work/prefix" >"$work/install.log"
prefix=$work/prefix
check "bin/gpuclean answers --version" "$prefix/bin/gpuclean" --version
check "the bash completion" test -s "$prefix/share/bash-completion/completions/gpuclean"
check "the zsh completion" test -s "$prefix/share/zsh/vendor-completions/_gpuclean"
check "the fish completion" test -s "$prefix/share/fish/vendor_completions.d/gpuclean.fish"
check "the manual" test -s "$prefix/share/man/man1/gpuclean.1.gz"
check "the completion is this binary's" \
  cmp -s "$prefix/share/bash-completion/completions/gpuclean" \
  <("$prefix/bin/gpuclean" completion bash)
echo "default generator: $failures failed checks"
[ "$failures" -eq 0 ]
