#!/usr/bin/env bash
# The capabilities in contrib/systemd/*.service are the ones gpuclean needs, measured: a holder
# of a test device file runs as `nobody`; gpuclean runs as a *different* unprivileged user (a
# UID in systemd's DynamicUser= range, as gpuclean-metrics.service runs) holding exactly the
# unit's AmbientCapabilities= (inheritable + ambient + bounding set, no_new_privs), and must
# see the holder, in `who --json` and in `metrics --textfile`. Negative controls: with no
# capabilities, and with each listed capability left out in turn, it must NOT see it (each
# one is needed; the test can see the difference). Then the textfile unit's shape: the root
# user with only those capabilities in its bounding set sees the holder and writes the .prom
# into a root-owned 0755 directory; root with an empty bounding set does not see it.
# The capability lists are read from the unit files, so the units and this test cannot drift.
# Only the holder this script starts is ever signalled (by PID), in the EXIT trap.
#   tests/packaging/systemd_caps.sh [BUILD_DIR]   (needs root, setpriv, python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
units=$repo/contrib/systemd

if command -v shellcheck >/dev/null; then
  shellcheck -x "$0" || { echo "systemd caps test: FAIL: shellcheck"; exit 1; }
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "systemd caps test: SKIPPED (needs root to run processes as other users)"
  exit 0
fi
for tool in setpriv python3; do
  if ! command -v "$tool" >/dev/null; then
    echo "systemd caps test: SKIPPED ($tool is not installed)"
    exit 0
  fi
done

# check, not, finish: the suites' shared bookkeeping.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$repo/tests/lib/checks.sh"

# "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH" from KEY= in UNIT (exactly one such line).
unit_caps() {  # UNIT KEY
  local lines
  lines=$(sed -n "s/^$2=//p" "$1")
  if [ "$(printf '%s\n' "$lines" | grep -c .)" -ne 1 ]; then
    echo "systemd caps test: FAIL: $1 must have exactly one $2= line" >&2
    exit 1
  fi
  printf '%s\n' "$lines"
}
# setpriv's spelling: "CAP_SYS_PTRACE CAP_DAC_READ_SEARCH" -> "-all,+sys_ptrace,+dac_read_search".
setpriv_caps() {  # CAP...
  local out=-all cap
  for cap in "$@"; do
    cap=${cap#CAP_}
    out+=",+${cap,,}"
  done
  printf '%s\n' "$out"
}

metrics_unit=$units/gpuclean-metrics.service
textfile_unit=$units/gpuclean-textfile.service
read -r -a caps <<<"$(unit_caps "$metrics_unit" AmbientCapabilities)"
echo "capabilities in $(basename "$metrics_unit"): ${caps[*]}"
check "the metrics unit lists capabilities" test "${#caps[@]}" -gt 0
check "its bounding set is its ambient set" \
  test "$(unit_caps "$metrics_unit" CapabilityBoundingSet)" = "${caps[*]}"
check "the textfile unit has the same bounding set" \
  test "$(unit_caps "$textfile_unit" CapabilityBoundingSet)" = "${caps[*]}"
check "the textfile unit has the same ambient set" \
  test "$(unit_caps "$textfile_unit" AmbientCapabilities)" = "${caps[*]}"

tmp=$(mktemp -d /tmp/gpuclean-systemd-caps.XXXXXX)
chmod 755 "$tmp"
holder=
cleanup() {
  if [ -n "$holder" ]; then
    kill "$holder" 2>/dev/null || true
    wait "$holder" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# A copy the unprivileged users can run (BUILD_DIR may sit under a private directory).
cp "$build/gpuclean" "$tmp/gpuclean"
chmod 755 "$tmp/gpuclean"
device=$tmp/nvidia0
: >"$device"
chmod 666 "$device"
observer=61999  # in systemd's DynamicUser= range (61184-65519); needs no passwd entry

setpriv --reuid=nobody --regid=nogroup --clear-groups -- sleep 300 3<"$device" &
holder=$!
# Deadline poll: the holder counts once it runs as nobody (before setpriv drops root it is a
# root process, which root would see without any capability).
holder_ready() {
  local uid
  uid=$(awk '/^Uid:/ {print $2}' "/proc/$holder/status" 2>/dev/null) || return 1
  [ "$uid" = 65534 ] && [ -e "/proc/$holder/fd/3" ]
}
deadline=$((SECONDS + 10))
until holder_ready; do
  if ((SECONDS >= deadline)); then
    echo "systemd caps test: FAIL: the holder did not start as nobody"
    exit 1
  fi
  sleep 0.1
done
echo "holder: pid $holder (uid 65534) holds $device"

# COMMAND as UID with exactly CAPS (setpriv spelling) in all sets, no_new_privs as in the units.
as_user() {  # UID CAPS COMMAND...
  local uid=$1 c=$2
  shift 2
  if [ "$uid" = 0 ]; then
    # The root user keeps its UID; the bounding set limits what exec gives it, as
    # CapabilityBoundingSet= does for a service with no User=.
    setpriv --inh-caps="$c" --ambient-caps="$c" --bounding-set="$c" --no-new-privs -- "$@"
  else
    setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps="$c" --ambient-caps="$c" \
      --bounding-set="$c" --no-new-privs -- "$@"
  fi
}

# Exit 0 when `who --json` run as UID with CAPS lists the holder's PID; prints the scan summary.
sees_holder() {  # UID CAPS
  local json
  json=$(as_user "$1" "$2" "$tmp/gpuclean" who --device-glob "$device" --no-nvml --json \
    2>/dev/null) || true
  printf '%s' "$json" | python3 -c '
import json, sys
pid = int(sys.argv[1])
try:
    doc = json.load(sys.stdin)
except ValueError:
    print("    (no JSON from gpuclean who)")
    sys.exit(2)
seen = any(h.get("pid") == pid for h in doc.get("holders", []))
print("    caps %s: holders %s, unreadable processes %s" % (sys.argv[2],
      [h.get("pid") for h in doc.get("holders", [])], doc.get("scan", {}).get("unreadable")))
sys.exit(0 if seen else 1)' "$holder" "$2"
}
# Exit 0 when the .prom written by `metrics --textfile` as UID with CAPS counts a holder.
textfile_counts_holder() {  # UID CAPS DIR
  local prom=$3/gpuclean.prom
  rm -f "$prom"
  as_user "$1" "$2" "$tmp/gpuclean" metrics --no-nvml --device-glob "$device" \
    --textfile "$prom" 2>/dev/null || { echo "    metrics --textfile failed"; return 2; }
  python3 - "$prom" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
holders = sum(float(v) for v in re.findall(r'^gpuclean_holders\{[^}]*\} (\S+)$', text, re.M))
print("    gpuclean_holders summed over classes: %g" % holders)
sys.exit(0 if holders >= 1 else 1)
PY
}

all=$(setpriv_caps "${caps[@]}")
echo "== an unprivileged user (uid $observer), as gpuclean-metrics.service runs"
check "with the unit's capabilities ($all) it sees the holder" sees_holder "$observer" "$all"
check "negative control: with no capabilities it does not" not sees_holder "$observer" -all
for ((i = 0; i < ${#caps[@]}; i++)); do
  without=("${caps[@]:0:i}" "${caps[@]:i+1}")
  check "negative control: without ${caps[i]} it does not (${caps[i]} is needed)" \
    not sees_holder "$observer" "$(setpriv_caps "${without[@]}")"
done
mkdir "$tmp/user-textfile"
chown "$observer:$observer" "$tmp/user-textfile"
check "its metrics --textfile counts the holder" \
  textfile_counts_holder "$observer" "$all" "$tmp/user-textfile"
check "negative control: without capabilities the textfile counts none" \
  not textfile_counts_holder "$observer" -all "$tmp/user-textfile"

echo "== the root user with only the unit's bounding set, as gpuclean-textfile.service runs"
check "it sees the holder" sees_holder 0 "$all"
check "negative control: root with an empty bounding set does not" not sees_holder 0 -all
# Like /var/lib/prometheus/node-exporter in Debian's package: root:root 0755.
mkdir -m 755 "$tmp/root-textfile"
check "it writes the .prom into a root-owned 0755 directory, counting the holder" \
  textfile_counts_holder 0 "$all" "$tmp/root-textfile"
check "the .prom is world-readable (node_exporter runs as prometheus)" \
  test "$(stat -c %a "$tmp/root-textfile/gpuclean.prom")" = 644

finish "systemd caps test"
