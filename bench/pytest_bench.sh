#!/usr/bin/env bash
# pytest_bench.sh: what the pytest plugin costs per test, against the same suite without it and
# with what a harness would otherwise do (an autouse fixture that runs `fuser` on the device
# files after each test), in one run, on the same suite of empty tests. See bench/README.md.
#
#   bench/pytest_bench.sh [BUILD_DIR] [-n TESTS] [--runs N]
# BUILD_DIR (default build) holds gpuclean and python-venv (made by tests/python/run.sh).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
n=200
runs=3
while (($#)); do
  case $1 in
    -n) n=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    -*) echo "usage: $0 [BUILD_DIR] [-n TESTS] [--runs N]" >&2; exit 2 ;;
    *) build=$(cd "$1" && pwd); shift ;;
  esac
done
python=$build/python-venv/bin/python
[ -x "$python" ] || { echo "no $python: run tests/python/run.sh $build first" >&2; exit 2; }
command -v fuser >/dev/null || { echo "fuser missing (psmisc)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/dev" "$work/plain" "$work/fuser"
: >"$work/dev/nvidia0"
for dir in plain fuser; do
  {
    echo "import pytest"
    echo "@pytest.mark.parametrize('i', range($n))"
    echo "def test_empty(i):"
    echo "    pass"
  } >"$work/$dir/test_suite.py"
done
cat >"$work/fuser/conftest.py" <<PY
import subprocess, pytest

@pytest.fixture(autouse=True)
def device_holders_after():
    yield
    subprocess.run(["fuser", "-s", "$work/dev/nvidia0"])
PY

# Best of RUNS wall-clock seconds of one pytest run.
best() {
  local dir=$1 t0 t1 s best_s=""
  shift
  for _ in $(seq "$runs"); do
    t0=$(date +%s%N)
    (cd "$work/$dir" && GPUCLEAN=$build/gpuclean "$python" -m pytest -q -p no:cacheprovider \
      "$@" >/dev/null 2>&1) || { echo "pytest failed in $dir ($*)" >&2; exit 1; }
    t1=$(date +%s%N)
    s=$(((t1 - t0) / 1000000))
    if [ -z "$best_s" ] || [ "$s" -lt "$best_s" ]; then best_s=$s; fi
  done
  echo "$best_s"
}

glob=(--gpuclean-device-glob "$work/dev/nvidia*")
none=$(best plain -p no:gpuclean)
fuser_ms=$(best fuser -p no:gpuclean)
session=$(best plain "${glob[@]}" --gpuclean-leftovers=off)
full=$(best plain "${glob[@]}")
procs=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)
per() { awk -v a="$1" -v b="$none" -v n="$n" 'BEGIN { printf "%.1f", (a - b) / n }'; }
ratio() { awk -v a="$1" -v b="$none" -v c="$fuser_ms" 'BEGIN { printf "%.2f", (a - b) / (c - b) }'; }
echo "pytest_bench: $n empty tests, best of $runs runs, $(nproc) cores, $procs processes, $(date -u +%FT%TZ)"
printf '%-46s %8s %14s\n' "suite" "wall ms" "ms per test"
printf '%-46s %8s %14s\n' "without the plugin (-p no:gpuclean)" "$none" "-"
printf '%-46s %8s %14s\n' "autouse fixture running fuser after each test" "$fuser_ms" "$(per "$fuser_ms")"
printf '%-46s %8s %14s\n' "plugin, session check only (leftovers=off)" "$session" "$(per "$session")"
printf '%-46s %8s %14s\n' "plugin, session check + leftovers after each" "$full" "$(per "$full")"
echo "plugin per test / fuser fixture per test: $(ratio "$full")"
