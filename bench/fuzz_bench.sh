#!/usr/bin/env bash
# Runs every libFuzzer target in fuzz/ for a fixed budget, one after another on one core, and
# prints the executions per target, the total, and every crash (docs/hardening.md).
#   bench/fuzz_bench.sh                    60 s per target
#   FUZZ_SECONDS=10 bench/fuzz_bench.sh    a shorter run
#   FUZZ_TARGETS="stat escape" bench/fuzz_bench.sh
# The checked-in seeds (fuzz/corpus/NAME) and regression inputs (fuzz/regressions/NAME) are read,
# never written: new inputs go to $FUZZ_WORK/corpus/NAME, crashes to $FUZZ_WORK/crashes/.
# Exit status: 0 when no target crashed, 1 otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
build_dir=${BUILD_DIR:-build-fuzz}
work=${FUZZ_WORK:-$build_dir/fuzz-work}
targets=${FUZZ_TARGETS:-"stat status nspid cmdline cgroup mountinfo maps fdinfo fd_link run_record snapshot duration signal gpu_list escape"}

CC=${CC:-clang} CXX=${CXX:-clang++} cmake -S . -B "$build_dir" -G Ninja -DGPUCLEAN_FUZZ=ON \
  -DGPUCLEAN_TESTS=OFF -DGPUCLEAN_METRICS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
names=()
for t in $targets; do names+=("${t}_fuzzer"); done
cmake --build "$build_dir" -j "$(nproc)" --target "${names[@]}"

mkdir -p "$work/crashes"
total=0
crashes=0
printf '%-12s %14s %10s %8s %s\n' target executions exec/s crashes note
for t in $targets; do
  mkdir -p "$work/corpus/$t"
  inputs=("$work/corpus/$t" "fuzz/corpus/$t")
  [ -d "fuzz/regressions/$t" ] && inputs+=("fuzz/regressions/$t")
  log="$work/$t.log"
  set +e
  "$build_dir/fuzz/${t}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$work/crashes/$t-" "${inputs[@]}" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  runs=${runs:-0}
  found=$(find "$work/crashes" -name "$t-*" | wc -l)
  note=""
  if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
    note="exit $rc; see $log"
    crashes=$((crashes + (found > 0 ? found : 1)))
  fi
  total=$((total + runs))
  printf '%-12s %14d %10d %8d %s\n' "$t" "$runs" $((runs / seconds)) "$found" "$note"
done
printf '%-12s %14d\n' total "$total"
if [ "$crashes" -gt 0 ]; then
  echo "fuzz_bench: $crashes crash(es); inputs in $work/crashes:"
  ls -1 "$work/crashes"
  exit 1
fi
echo "fuzz_bench: no crashes"
