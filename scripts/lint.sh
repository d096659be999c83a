#!/usr/bin/env bash
# clang-format (no diff allowed), the layer rules (scripts/check_layers.py) and clang-tidy
# (.clang-tidy, warnings are errors) over src/.
# Needs a configured build dir for compile_commands.json (default build/).
#   scripts/lint.sh            both
#   scripts/lint.sh --format   clang-format and the layers only (seconds)
#   scripts/lint.sh --tidy     clang-tidy only (most of an hour of CPU: ./test.sh runs it in the
#                              background while the stages that wait on processes run)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
format=1
tidy=1
case "${1:-}" in
  --format) tidy=0 ;;
  --tidy) format=0 ;;
  "") ;;
  *) echo "usage: scripts/lint.sh [--format | --tidy]" >&2; exit 2 ;;
esac

if [ $format -eq 1 ]; then
  mapfile -t sources < <(git ls-files 'src/*.cpp' 'src/*.h' 'tests/*.cpp' 'tests/*.h')
  echo "lint: clang-format on ${#sources[@]} files"
  clang-format --dry-run --Werror "${sources[@]}"
  # The layer table of docs/design.md, on every #include of src/ (a second).
  python3 scripts/check_layers.py
fi

if [ $tidy -eq 1 ]; then
  mapfile -t tidy_sources < <(git ls-files 'src/*.cpp')
  echo "lint: clang-tidy on ${#tidy_sources[@]} files"
  [ -f "$build_dir/compile_commands.json" ] ||
    { echo "lint: no $build_dir/compile_commands.json (configure first: scripts/build.sh)"; exit 1; }
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # clang-tidy runs once per compile command of a file. src/cli/main.cpp has two that differ
  # only in their object (gpuclean and gpuclean-test are built from it with the same flags): one
  # of them is enough. Commands that differ otherwise are all kept (test_hooks.cpp is built with
  # and without GPUCLEAN_TEST_HOOKS, and both are checked).
  python3 - "$build_dir/compile_commands.json" "$work/compile_commands.json" <<'EOF'
import json, re, sys
seen, kept = set(), []
for entry in json.load(open(sys.argv[1])):
    command = entry.get("command") or " ".join(entry["arguments"])
    key = (entry["directory"], entry["file"], re.sub(r" -o \S+", "", command))
    if key not in seen:
        seen.add(key)
        kept.append(entry)
json.dump(kept, open(sys.argv[2], "w"), indent=1)
EOF
  if ! printf '%s\n' "${tidy_sources[@]}" |
      xargs -P "$(nproc)" -n 4 clang-tidy -p "$work" --quiet >"$work/log" 2>&1; then
    grep -vE '^[0-9]+ warnings? generated|^Suppressed|^Use -header-filter' "$work/log"
    echo "lint: clang-tidy found problems"
    exit 1
  fi
fi
echo "lint: ok"
