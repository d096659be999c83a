# shellcheck shell=bash
# The PASS/FAIL bookkeeping of the shell test suites (tests/*/run.sh, tests/packaging/*.sh,
# tests/gpu/release.sh): sourced, not run. One format for all of them, so that a log reads the
# same whichever suite wrote it:
#   check MESSAGE COMMAND...  runs COMMAND: "PASS: MESSAGE" when it succeeds, else "FAIL: MESSAGE"
#   pass MESSAGE / fail MESSAGE  the same verdicts, for a check that is not one command
#   not COMMAND...            succeeds when COMMAND fails, for the negative controls
#   skip MESSAGE              "SKIP: MESSAGE": a part that cannot run here is said, never passed
#   finish NAME               "NAME: N passed, M failed" (", K skipped" when any was); returns 1
#                             when anything failed, so a suite can end with it
# The counters are plain globals (passed, failed, skipped): a suite may read them, e.g. to print
# its logs only when something failed.
passed=0
failed=0
skipped=0

pass() {
  passed=$((passed + 1))
  echo "PASS: $1"
}

fail() {
  failed=$((failed + 1))
  echo "FAIL: $1"
}

check() { # MESSAGE COMMAND...
  local message=$1
  shift
  if "$@"; then pass "$message"; else fail "$message"; fi
}

# not COMMAND...: succeeds when COMMAND fails (a negative control: `check "..." not COMMAND`).
not() { ! "$@"; }

skip() { # MESSAGE
  skipped=$((skipped + 1))
  echo "SKIP: $*"
}

finish() { # NAME
  local line="$1: $passed passed, $failed failed"
  ((skipped == 0)) || line+=", $skipped skipped"
  echo "$line"
  ((failed == 0))
}

# until_ok SECONDS COMMAND...: runs COMMAND every 0.2 s until it succeeds (0) or SECONDS have
# passed (1). A deadline poll, never a fixed sleep: a slow machine waits longer, a fast one not.
until_ok() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}

# work_dir: makes $work, a new temporary directory, and an EXIT trap that
# stops every process whose PID the suite adds to the array $pids (`pids+=($!)`: the processes
# it started itself, and only those, each by its PID and then reaped) and removes $work.
# Called at the top level, not in $(...): it sets the suite's variables.
work_dir() {
  work=$(mktemp -d) || exit 2
  pids=()
  trap stop_started EXIT
}

stop_started() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
