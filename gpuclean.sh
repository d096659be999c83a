#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine, builds, and runs gpuclean with the given
# arguments (none: the main status screen).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
"$here/scripts/setup.sh" >&2
BUILD_DIR="$here/build" "$here/scripts/build.sh" >&2
exec "$here/build/gpuclean" "$@"
