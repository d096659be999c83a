#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds the gpuclean binary alone, and runs it with the given
# arguments (none: the main status screen). Only what the binary needs is installed and only
# the binary is built (./test.sh installs and builds everything else): the first answer does
# not wait for the tests (README "Two commands" gives the measured time).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/scripts/setup.sh" --binary >&2
# Its own build directory, so that ./test.sh's (build/: per-file objects for clang-tidy, full
# debug info) and this one never undo each other's settings. Every feature is built (metrics,
# top); tests and the man page are off (their packages, GoogleTest and scdoc, are not installed
# here). Each library is one translation unit (CLI11, nlohmann/json and fmt parsed once per
# library, not per file) and the debug info is line tables only (the backtraces keep file and
# line; the packages are stripped anyway): bench/build_bench.sh has the figures.
cmake -S "$here" -B "$here/build-release" -G Ninja -DGPUCLEAN_TESTS=OFF -DGPUCLEAN_MAN=OFF \
  -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=0 \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" >/dev/null
cmake --build "$here/build-release" -j "$(nproc)" --target gpuclean >&2
exec "$here/build-release/gpuclean" "$@"
