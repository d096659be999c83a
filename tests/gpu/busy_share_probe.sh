#!/usr/bin/env bash
# Two processes spinning kernels on GPU 0 — a zombie leader and an orphan (its launcher gone) —
# and what gpuclean makes of them, four times a second apart: `kill --leftovers --dry-run`'s plan
# (the orphan must be skipped as still computing, the zombie leader planned) and each one's
# figure in `status --json` (issue 47: a shared GPU swings each process's figure from sample to
# sample). Read-only: nothing is killed but the two processes it started, by PID, at the end.
#   tests/gpu/busy_share_probe.sh [GPUCLEAN]     (default: .device-bin/gpuclean)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
g=${1:-.device-bin/gpuclean}
PY=python3
command -v "$PY" >/dev/null 2>&1 || PY=/opt/torch/.venv/bin/python3
work=$(mktemp -d)
nvcc -O2 -o "$work/scenarios" tests/gpu/scenarios.cu -lpthread || exit 1
export GPUCLEAN_SCENARIO_LIFETIME=60
"$work/scenarios" busy-zombie-leader 2048 "$work/zl.ready" </dev/null >/dev/null 2>&1 &
zl=$!
("$work/scenarios" busy 2048 "$work/or.ready" </dev/null >/dev/null 2>&1 &)
for _ in $(seq 300); do [[ -s $work/zl.ready && -s $work/or.ready ]] && break; sleep 0.1; done
orphan=$(cat "$work/or.ready")
echo "zombie leader $(cat "$work/zl.ready"), orphan $orphan"
sleep 3
for _ in 1 2 3 4; do
  "$g" kill --leftovers --dry-run --json >"$work/plan.json" 2>/dev/null
  "$g" status --json >"$work/status.json" 2>/dev/null
  "$PY" - "$work/plan.json" "$work/status.json" <<'PY'
import json, sys
plan, status = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
print("plan:", [(t["pid"], t["class"]) for t in plan["targets"]], "skipped:",
      [s["pid"] for s in plan["skipped"]], "| figures:",
      [(h["pid"], h["class"], (h["activity"] or {}).get("sm")) for h in status["holders"]])
PY
  sleep 1
done
kill -9 "$zl" "$orphan" 2>/dev/null
wait 2>/dev/null
rm -rf "$work"
