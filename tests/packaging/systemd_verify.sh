#!/usr/bin/env bash
# contrib/systemd's units pass `systemd-analyze verify` with nothing on stderr (an unknown or
# misspelt directive is only a warning there, exit 0: the test fails on any output), and their
# `systemd-analyze security --offline=yes` exposure stays at or under the level docs/fleet.md
# states. verify needs ExecStart='s binary to exist, and /usr/bin/gpuclean does not on a build
# machine: the units are checked as copies whose /usr/bin/gpuclean is BUILD_DIR's binary
# (nothing else is changed). Negative controls: a copy with `ProtectSytem=strict` and a copy
# whose binary does not exist must fail, and a unit without the hardening must score worse
# than the threshold. Needs no running systemd (verify and --offline read the files only).
#   tests/packaging/systemd_verify.sh [BUILD_DIR]      (needs systemd-analyze, systemd >= 252)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
units=$repo/contrib/systemd
# The exposure levels measured with systemd 252 (docs/fleet.md, "systemd"); a change to a
# unit that loosens it fails here.
declare -A max_exposure=([gpuclean-metrics.service]=2.2 [gpuclean-textfile.service]=1.8
  [gpuclean-recorder.service]=2.5)

if command -v shellcheck >/dev/null; then
  shellcheck -x "$0" || { echo "systemd verify test: FAIL: shellcheck"; exit 1; }
fi
if ! command -v systemd-analyze >/dev/null; then
  echo "systemd verify test: SKIPPED (systemd-analyze is not installed)"
  exit 0
fi

# check, not, finish: the suites' shared bookkeeping.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$repo/tests/lib/checks.sh"

tmp=$(mktemp -d /tmp/gpuclean-systemd-verify.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/units" "$tmp/broken" "$tmp/nobinary" "$tmp/bare"
for f in "$units"/*.service "$units"/*.timer; do
  sed "s|/usr/bin/gpuclean|$build/gpuclean|g" "$f" >"$tmp/units/$(basename "$f")"
done

# Exit 0 when verify exits 0 and says nothing; its output is shown either way.
verify_clean() {  # UNIT_FILE...
  local err rc=0
  err=$(cd "$(dirname "$1")" && systemd-analyze verify --man=no --generators=no "$@" 2>&1) || rc=$?
  [ -n "$err" ] && printf '    %s\n' "$err"
  [ "$rc" -eq 0 ] && [ -z "$err" ]
}

check "the units' ExecStart names this build's binary in the copies" \
  grep -q "^ExecStart=$build/gpuclean " "$tmp/units/gpuclean-metrics.service"
check "verify: gpuclean-metrics.service, gpuclean-textfile.service and .timer, gpuclean-recorder.service are clean" \
  verify_clean "$tmp/units/gpuclean-metrics.service" "$tmp/units/gpuclean-textfile.service" \
  "$tmp/units/gpuclean-textfile.timer" "$tmp/units/gpuclean-recorder.service"

sed 's/^ProtectSystem=/ProtectSytem=/' "$tmp/units/gpuclean-metrics.service" \
  >"$tmp/broken/gpuclean-metrics.service"
check "negative control: verify flags a misspelt directive (ProtectSytem=)" \
  not verify_clean "$tmp/broken/gpuclean-metrics.service"
sed "s|^ExecStart=$build/gpuclean|ExecStart=$tmp/no-such-gpuclean|" \
  "$tmp/units/gpuclean-metrics.service" >"$tmp/nobinary/gpuclean-metrics.service"
check "negative control: verify flags an ExecStart binary that does not exist" \
  not verify_clean "$tmp/nobinary/gpuclean-metrics.service"

# The overall exposure (0.0 best .. 10.0 worst) that `security --offline=yes` prints last.
exposure() {  # UNIT_FILE
  (cd "$(dirname "$1")" && systemd-analyze security --offline=yes --no-pager "./$(basename "$1")") |
    sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p'
}
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 <= b + 0) }'; }
if systemd-analyze security --help 2>&1 | grep -q -- --offline; then
  for unit in "${!max_exposure[@]}"; do
    level=$(exposure "$tmp/units/$unit")
    echo "    $unit: exposure $level (at most ${max_exposure[$unit]})"
    check "security: $unit's exposure is at most ${max_exposure[$unit]}" \
      at_most "${level:-99}" "${max_exposure[$unit]}"
  done
  # The same ExecStart with none of the hardening: systemd's own verdict for a plain unit.
  printf '[Service]\nExecStart=%s metrics --listen 127.0.0.1:9835\n' "$build/gpuclean" \
    >"$tmp/bare/bare.service"
  level=$(exposure "$tmp/bare/bare.service")
  echo "    bare.service (no hardening): exposure $level"
  check "negative control: an unhardened unit scores above the threshold" \
    not at_most "${level:-0}" "${max_exposure[gpuclean-metrics.service]}"
else
  echo "    systemd-analyze security has no --offline (systemd < 252): exposure not checked"
fi

finish "systemd verify test"
