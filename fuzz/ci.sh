#!/usr/bin/env bash
# The short fuzz run of ./test.sh: builds the libFuzzer targets with clang, replays every
# regression input (fuzz/regressions/NAME: inputs that once crashed, kept after the fix), then
# fuzzes each target for FUZZ_SECONDS (default 2) from its seeds. bench/fuzz_bench.sh is the
# long run. Without clang's libFuzzer runtime it says so and exits 0 (CI stays green; the
# parsers are still covered by the unit tests).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-2}
build_dir=${BUILD_DIR:-build-fuzz}
targets="stat status nspid cmdline cgroup mountinfo maps fdinfo fd_link run_record snapshot duration signal gpu_list escape http_request"

probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }\n' \
  >"$probe/probe.cpp"
if ! command -v clang++ >/dev/null ||
  ! clang++ -fsanitize=fuzzer,address,undefined "$probe/probe.cpp" -o "$probe/probe" 2>/dev/null; then
  echo "fuzz: SKIPPED — clang++ with libFuzzer (-fsanitize=fuzzer) is not available;" \
    "install Debian's clang (scripts/setup.sh does)"
  exit 0
fi

CC=clang CXX=clang++ cmake -S . -B "$build_dir" -G Ninja -DGPUCLEAN_FUZZ=ON -DGPUCLEAN_TESTS=OFF -DGPUCLEAN_METRICS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8 >/dev/null
names=()
for t in $targets; do names+=("${t}_fuzzer"); done
cmake --build "$build_dir" -j "$(nproc)" --target "${names[@]}" >/dev/null

failed=0
for t in $targets; do
  binary="$build_dir/fuzz/${t}_fuzzer"
  if [ -d "fuzz/regressions/$t" ]; then
    # Given files (not folders), libFuzzer runs each input once and stops at the first crash.
    if ! "$binary" fuzz/regressions/"$t"/* >"$build_dir/fuzz-$t-regressions.log" 2>&1; then
      echo "fuzz: $t: a regression input crashes again (see $build_dir/fuzz-$t-regressions.log)"
      failed=1
    fi
  fi
  work=$(mktemp -d)
  if "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$work/" "$work" "fuzz/corpus/$t" >"$build_dir/fuzz-$t.log" 2>&1; then
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build_dir/fuzz-$t.log" | tail -1)
    echo "fuzz: $t: ${runs:-?} executions, no crash"
  else
    echo "fuzz: $t: CRASH (log: $build_dir/fuzz-$t.log; input kept below)"
    find "$work" -maxdepth 1 -type f \( -name 'crash-*' -o -name 'leak-*' -o -name 'timeout-*' \
      -o -name 'oom-*' \) -exec cp {} "$build_dir/" \; -print
    failed=1
  fi
  rm -rf "$work"
done
exit $failed
