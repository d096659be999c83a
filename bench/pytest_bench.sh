#!/usr/bin/env bash
# pytest_bench.sh: what the pytest plugin costs per test, against the same suite without it and
# with what a harness would otherwise do (an autouse fixture that runs `fuser` on the device
# files after each test), in one run, on the same suite of empty tests. See bench/README.md.
#
#   bench/pytest_bench.sh [BUILD_DIR] [-n TESTS] [--runs N] [--crowd PROCS] [--python PYTHON]
#                         [--fuser-tests N]
# BUILD_DIR (default build) holds gpuclean and python-venv (made by tests/python/run.sh).
# --crowd PROCS: after the machine as it is, the same measurement with PROCS more processes
#   (bench/crowd.c, 50 descriptors each, none on the device file) and a background loop that
#   starts about 50 short processes a second (a static crowd would flatter a check that looks
#   only at new processes).
# --python: the interpreter whose gpuclean package is measured (default BUILD_DIR's venv; give
#   another venv's to measure an older plugin against the same binary and load).
# --fuser-tests: the fuser fixture's suite has N tests (default TESTS): it is compared per test.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$repo/build
n=200
runs=3
crowd=0
python=""
fuser_n=""
while (($#)); do
  case $1 in
    -n) n=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --crowd) crowd=$2; shift 2 ;;
    --python) python=$2; shift 2 ;;
    --fuser-tests) fuser_n=$2; shift 2 ;;
    -*) echo "usage: $0 [BUILD_DIR] [-n TESTS] [--runs N] [--crowd PROCS] [--python PYTHON]" \
      "[--fuser-tests N]" >&2
      exit 2 ;;
    *) build=$(cd "$1" && pwd); shift ;;
  esac
done
python=${python:-$build/python-venv/bin/python}
fuser_n=${fuser_n:-$n}
[ -x "$python" ] || { echo "no $python: run tests/python/run.sh $build first" >&2; exit 2; }
command -v fuser >/dev/null || { echo "fuser missing (psmisc)" >&2; exit 2; }
if ((crowd > 0)); then
  command -v cc >/dev/null || { echo "cc missing (it builds bench/crowd.c)" >&2; exit 2; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/dev" "$work/plain" "$work/fuser" "$work/plain-f"
: >"$work/dev/nvidia0"
suite() { # DIR TESTS
  {
    echo "import pytest"
    echo "@pytest.mark.parametrize('i', range($2))"
    echo "def test_empty(i):"
    echo "    pass"
  } >"$work/$1/test_suite.py"
}
suite plain "$n"
# fuser costs ~0.5 s a test on a crowded host: its suite (and that suite's own baseline) can be
# shorter, its figure is per test.
suite fuser "$fuser_n"
suite plain-f "$fuser_n"
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
per() { awk -v a="$1" -v b="$2" -v n="$3" 'BEGIN { printf "%.2f", (a - b) / n }'; }

# One host's rows: the same suites, the plugin's cost per test against the fuser fixture's.
measure() {
  local procs none fuser_ms fuser_base session full plugin fixture
  local entries=(/proc/[0-9]*) # (find fails on a PID that vanishes meanwhile)
  procs=${#entries[@]}
  none=$(best plain -p no:gpuclean)
  fuser_base=$(best plain-f -p no:gpuclean)
  fuser_ms=$(best fuser -p no:gpuclean)
  session=$(best plain "${glob[@]}" --gpuclean-leftovers=off)
  full=$(best plain "${glob[@]}")
  plugin=$(per "$full" "$none" "$n")
  fixture=$(per "$fuser_ms" "$fuser_base" "$fuser_n")
  echo "$1: $procs processes"
  printf '  %-52s %8s %12s\n' "suite" "wall ms" "ms per test"
  printf '  %-52s %8s %12s\n' "without the plugin (-p no:gpuclean), $n tests" "$none" "-"
  printf '  %-52s %8s %12s\n' "autouse fixture running fuser after each, $fuser_n tests" \
    "$fuser_ms" "$fixture"
  printf '  %-52s %8s %12s\n' "plugin, session check only (leftovers=off)" "$session" \
    "$(per "$session" "$none" "$n")"
  printf '  %-52s %8s %12s\n' "plugin, session check + leftovers after each" "$full" "$plugin"
  printf '  %-52s %8s %12s\n' "  of which the check after each test" "" \
    "$(per "$full" "$session" "$n")"
  echo "  plugin per test / fuser fixture per test: $(awk -v a="$plugin" -v b="$fixture" \
    'BEGIN { printf "%.3f", a / b }')"
}

echo "pytest_bench: $n empty tests, best of $runs runs, $(nproc) cores, plugin from" \
  "$("$python" -c 'import gpuclean, os; print(os.path.dirname(gpuclean.__file__))'), $(date -u +%FT%TZ)"
measure "this host"
((crowd > 0)) || exit 0

# The crowd (its parent SIGKILLs exactly its children on SIGTERM; each also ends itself after
# 900 s) and the fork loop: only these are signalled, by the PIDs $! gave.
started=()
stop_load() {
  local pid
  for pid in "${started[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${started[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop_load EXIT
cc -O2 -pthread -o "$work/crowd" "$repo/bench/crowd.c"
: >"$work/not-the-device"
"$work/crowd" "$work/not-the-device" "$work/crowd.pids" -n "$crowd" -f 50 -h 0 -z 0 -l 900 &
started+=($!)
deadline=$((SECONDS + 120))
until [ -e "$work/crowd.pids" ]; do
  ((SECONDS < deadline)) || { echo "the crowd did not start" >&2; exit 1; }
  sleep 0.2
done
bash -c 'while :; do sleep 0.02; done' &
started+=($!)
measure "with $crowd more processes (50 fds each) and ~50 new processes a second"
