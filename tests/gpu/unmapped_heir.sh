#!/usr/bin/env bash
# GPU fact for docs/security.md (issue 21 item 3): does a CUDA context's memory survive in a
# process that holds the device files but maps none of them, and what does gpuclean call that
# process? scenarios.cu's `unmapped-heir`: the parent leads its own process group, allocates
# 4 GiB, forks and exits; the child unmaps every /dev/nvidia* mapping and keeps the descriptors.
# Prints what NVML lists over time and gpuclean's view; checks that the child is never a
# `monitor` and, while NVML still counts the dead parent's memory, that it is its `heir`.
#
#   tests/gpu/unmapped_heir.sh [BIN_DIR]
#
# Safety: signals only the child it started, by PID with its start time checked.
set -uo pipefail
bin_dir=${1:-.device-bin}
[[ $bin_dir == /* ]] || bin_dir=$PWD/$bin_dir
cd "$(dirname "$0")/../.." || exit 2
GPUCLEAN=$bin_dir/gpuclean
PY=python3
command -v "$PY" >/dev/null 2>&1 || PY=/opt/torch/.venv/bin/python3
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
work=$(mktemp -d /tmp/gpuclean-unmapped.XXXXXX) || exit 2
failed=0
check() {  # MESSAGE COMMAND...
  if "${@:2}"; then echo "PASS: $1"; else echo "FAIL: $1"; failed=$((failed + 1)); fi
}
start_time() { awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null; }
child=
child_start=
kill_child() {  # only the child this script started, never a recycled PID
  if [[ -n $child && $(start_time "$child") == "$child_start" ]]; then kill -KILL "$child"; fi
}
# shellcheck disable=SC2317 # called by the trap
cleanup() {
  kill_child
  rm -rf "$work"
}
trap cleanup EXIT

echo "unmapped heir · $(date -u +%FT%TZ) · driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1) · kernel $(uname -r)"
"$NVCC" -O2 -o "$work/scenarios" tests/gpu/scenarios.cu -lpthread || exit 1
GPUCLEAN_SCENARIO_LIFETIME=60 "$work/scenarios" unmapped-heir 4096 "$work/ready" &
for _ in $(seq 600); do [[ -s $work/ready ]] && break; sleep 0.05; done
read -r child parent unmapped <"$work/ready" || { echo "FAIL: no ready file"; exit 1; }
[[ $child == error:* ]] && { echo "FAIL: $child $parent $unmapped"; exit 1; }
child_start=$(start_time "$child")
echo "child $child (unmapped $unmapped device mappings), dead parent $parent"
echo "child's maps on /dev/nvidia*: $(grep -c ' /dev/nvidia' "/proc/$child/maps")"
echo "child's fds on /dev/nvidia*: $(find "/proc/$child/fd" -lname '/dev/nvidia*' 2>/dev/null | wc -l)"
for t in 0 2 5; do
  sleep "$t"
  echo "NVML after ~${t}s more: $(nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader | tr '\n' ';')"
done
"$GPUCLEAN" status --json >"$work/status.json"
"$GPUCLEAN" status | sed 's/^/    /'
verdict=$("$PY" - "$work/status.json" "$child" "$parent" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); child = int(sys.argv[2]); parent = int(sys.argv[3])
h = next((x for x in d["holders"] if x["pid"] == child), None)
listed = any(p["pid"] == parent for g in d["gpus"] for p in g["processes"])
print("listed" if listed else "released", h["class"] if h else "not-a-holder",
      h.get("inherited_from") if h else None)
PY
)
read -r state klass inherited <<<"$verdict"
echo "NVML ${state} the dead parent's memory; the child is class ${klass} (inherited_from ${inherited})"
check "the child is never a monitor" test "$klass" != monitor
if [[ $state == listed ]]; then
  check "memory survives: the child is the dead parent's heir (its process group)" \
    test "$klass" = heir -a "$inherited" = "$parent"
  "$GPUCLEAN" kill --leftovers --dry-run >"$work/plan.txt" 2>&1
  check "kill --leftovers plans the child" grep -qw "$child" "$work/plan.txt"
fi
kill_child
parent_listed() { nvidia-smi --query-compute-apps=pid --format=csv,noheader | grep -qw "$parent"; }
# shellcheck disable=SC2317 # called through check
parent_gone() { ! parent_listed; }
for _ in $(seq 200); do parent_listed || break; sleep 0.05; done
check "after SIGKILL of the child, NVML lists the dead parent no more" parent_gone
echo "$failed failed"
exit $((failed > 0))
