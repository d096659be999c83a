#!/usr/bin/env bash
# clang-format (no diff allowed) and clang-tidy (.clang-tidy, warnings are errors) over src/.
# Needs a configured build dir for compile_commands.json (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}

mapfile -t sources < <(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h')
echo "lint: clang-format on ${#sources[@]} files"
clang-format --dry-run --Werror "${sources[@]}"

mapfile -t tidy_sources < <(git ls-files 'src/*.cpp')
echo "lint: clang-tidy on ${#tidy_sources[@]} files"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! printf '%s\n' "${tidy_sources[@]}" |
    xargs -P "$(nproc)" -n 4 clang-tidy -p "$build_dir" --quiet >"$log" 2>&1; then
  grep -vE '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter' "$log"
  echo "lint: clang-tidy found problems"
  exit 1
fi
echo "lint: ok"
