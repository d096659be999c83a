#!/usr/bin/env bash
# How long the first build takes: `gpuclean.sh`'s configure and build of the binary (release
# feature set: metrics and top in), in a fresh build directory of a fresh worktree, ccache off.
# Each case is a commit and, optionally, extra cmake arguments, so each lever can be measured on
# its own (issue 35: the goal is <= 90 s from clone to answer on the 2-core machine).
#   bench/build_bench.sh [--jobs N] [--top N] CASE...
#   CASE: REF or "REF -DFOO=BAR ..." (default: HEAD as gpuclean.sh builds it); quote a value
#   with spaces inside the case: "HEAD -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1'"
# Prints, per case: wall seconds (configure and build apart), CPU seconds of the build, the
# compile steps, and the slowest steps from ninja's log. Run it on an otherwise idle machine:
# the cases run one after another, never beside each other.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
top=5
cases=()
while [ $# -gt 0 ]; do
  case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --top) top=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    -*) echo "usage: $0 [--jobs N] [--top N] CASE..." >&2; exit 2 ;;
    *) cases+=("$1"); shift ;;
  esac
done
[ ${#cases[@]} -gt 0 ] || cases=(HEAD)

work=$(mktemp -d /tmp/gpuclean-build-bench.XXXXXX)
cleanup() {
  for tree in "$work"/tree*; do
    if [ -d "$tree" ]; then git worktree remove --force "$tree" >/dev/null 2>&1 || true; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT

# What the gpuclean.sh of the measured commit passes, whatever it was then: the binary alone,
# no tests, no man page (their packages are not a first user's).
base_args=(-G Ninja -DGPUCLEAN_TESTS=OFF -DGPUCLEAN_MAN=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=
  -DCMAKE_C_COMPILER_LAUNCHER=)

echo "build_bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) cores, -j$jobs, $(c++ --version | head -1)"
printf '%-44s %9s %9s %9s %7s\n' case "config s" "build s" "cpu s" steps
n=0
reports=()
for spec in "${cases[@]}"; do
  n=$((n + 1))
  read -r ref extra <<<"$spec"
  tree="$work/tree$n"
  git worktree add --detach --quiet "$tree" "$ref"
  # The case's extra arguments, split as the shell would (quotes keep a value with spaces
  # whole: "HEAD -DCMAKE_CXX_FLAGS_RELWITHDEBINFO='-O2 -g1'"); the cases are the caller's own.
  eval "set -- ${extra:-}"
  # bash's `time`: wall, and the user+sys CPU seconds of the command and its children.
  TIMEFORMAT='%R %U %S'
  { time cmake -S "$tree" -B "$tree/build" "${base_args[@]}" "$@" >"$work/config$n.log" 2>&1; } \
    2>"$work/config$n.time" ||
    { echo "case '$spec': configure failed" >&2; cat "$work/config$n.log" >&2; exit 1; }
  { time cmake --build "$tree/build" -j "$jobs" --target gpuclean >"$work/build$n.log" 2>&1; } \
    2>"$work/build$n.time" ||
    { echo "case '$spec': build failed" >&2; tail -30 "$work/build$n.log" >&2; exit 1; }
  "$tree/build/gpuclean" --version >/dev/null ||
    { echo "case '$spec': the binary does not answer --version" >&2; exit 1; }
  read -r config_s _ _ <"$work/config$n.time"
  read -r build_s user_s sys_s <"$work/build$n.time"
  steps=$(awk 'NR > 1 && $4 ~ /\.o$/' "$tree/build/.ninja_log" | wc -l)
  printf '%-44s %9.1f %9.1f %9.1f %7s\n' "$(git rev-parse --short "$ref") ${extra:-}" \
    "$config_s" "$build_s" "$(awk -v u="$user_s" -v s="$sys_s" 'BEGIN {print u + s}')" "$steps"
  # The slowest compile steps: ninja's log has start and end milliseconds per output.
  reports+=("$(git rev-parse --short "$ref") ${extra:-}: slowest steps (s)"$'\n'"$(
    awk 'NR > 1 {printf "%8.1f  %s\n", ($2 - $1) / 1000, $4}' "$tree/build/.ninja_log" |
      sort -rn | head -n "$top")")
done
echo
for report in "${reports[@]}"; do printf '%s\n\n' "$report"; done
