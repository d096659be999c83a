#!/usr/bin/env bash
# Sets up a fresh Debian machine, builds the gpuclean binary alone, and runs it with the given
# arguments (none: the main status screen). Only what the binary needs is installed and only
# the binary is built (./test.sh installs and builds everything else): the first answer does
# not wait for the tests (README "Two commands" gives the measured time).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/scripts/setup.sh" --binary >&2
# Tests and the man page off: their packages (GoogleTest, scdoc) are not installed here.
# ./test.sh turns them back on in the same build directory.
cmake -S "$here" -B "$here/build" -G Ninja -DGPUCLEAN_TESTS=OFF -DGPUCLEAN_MAN=OFF >/dev/null
cmake --build "$here/build" -j "$(nproc)" --target gpuclean >&2
exec "$here/build/gpuclean" "$@"
