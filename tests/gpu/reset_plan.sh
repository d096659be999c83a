#!/usr/bin/env bash
# Issue 53 on a GPU machine: `gpuclean reset --plan` and `--plan --json`, read-only. The reset
# itself is never run on a lent GPU (it is for the hosts users own): this records what stands
# in the way there, first with nobody holding the GPU, then with an orphaned CUDA context this
# script starts (PyTorch, 1 GiB: its parent exits at once), which the plan must name a leftover
# and leave alive. Only that process is ever signalled, by its PID, at the end.
#   tests/gpu/reset_plan.sh BIN_DIR    (BIN_DIR: the release tarball's bin/)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
bin=${1:?usage: tests/gpu/reset_plan.sh BIN_DIR}
gpuclean=$bin/gpuclean
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh
work=$(mktemp -d)
holder=
cleanup() {
  [[ -n $holder ]] && kill -KILL "$holder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

echo "== the node"
nvidia-smi --query-gpu=index,name,pci.bus_id,persistence_mode,mig.mode.current --format=csv,noheader
echo "nvidia_drm: $(test -d /sys/module/nvidia_drm && echo "loaded, modeset $(cat /sys/module/nvidia_drm/parameters/modeset 2>/dev/null)" || echo "not loaded")"
echo "NVSwitches: $(find /sys/bus/pci/drivers/nvidia-nvswitch -maxdepth 1 -name '*:*' 2>/dev/null | wc -l)"
echo "GPU 0's driver: $(basename "$(readlink /sys/bus/pci/devices/"$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 | sed 's/^0000//' | tr 'A-F' 'a-f')"/driver)")"

echo "== reset --plan, nobody holding the GPUs"
"$gpuclean" reset --plan
rc=$?
check "reset --plan answers with a plan (exit 0 or 1, got $rc)" test "$rc" -le 1
"$gpuclean" reset --plan --json >"$work/idle.json"
check "reset --plan --json is a plan for every GPU NVML lists" python3 -c "
import json, subprocess, sys
doc = json.load(open('$work/idle.json'))
n = len(subprocess.run(['nvidia-smi', '-L'], capture_output=True, text=True).stdout.splitlines())
print('  blockers per GPU:', [[b['kind'] for b in g['blockers']] for g in doc['gpus']])
sys.exit(0 if doc['schema'] == 1 and len(doc['gpus']) == n and all(g['command'].startswith('nvidia-smi --gpu-reset') for g in doc['gpus']) else 1)"

echo "== with an orphaned CUDA context of this script's"
if ! python3 -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  skip "no PyTorch with CUDA here: the leftover part is not run"
else
  sh -c 'python3 -c "import torch, time; x = torch.empty(1 << 30, dtype=torch.uint8, device=\"cuda:0\"); open(\"'"$work"'/ready\", \"w\").close(); time.sleep(120)" >/dev/null 2>&1 & echo $! >"'"$work"'/pid"'
  holder=$(cat "$work/pid")
  for _ in $(seq 1 300); do [[ -e $work/ready ]] && break; sleep 0.1; done
  check "the orphan made its CUDA context within 30 s" test -e "$work/ready"
  "$gpuclean" reset --gpus 0 --plan
  "$gpuclean" reset --gpus 0 --plan --json >"$work/held.json"
  check "the plan names the orphan ($holder) a leftover, killed first" python3 -c "
import json, sys
g = json.load(open('$work/held.json'))['gpus'][0]
first = g['blockers'][0] if g['blockers'] else {}
print('  blockers:', [(b['kind'], b['pids']) for b in g['blockers']])
sys.exit(0 if first.get('kind') == 'leftover' and $holder in first.get('pids', []) else 1)"
  check "a plan changes nothing: the orphan lives on" kill -0 "$holder"
fi
finish "reset plan"
