#!/usr/bin/env bash
# The platform wheel on the GPU machine, as `pip install` gives it (issue 38): installed offline
# into a fresh virtual environment, the gpuclean it puts on the environment's PATH sees the real
# GPUs through NVML; the Python API finds that binary with no GPUCLEAN and nothing else on PATH
# and names a real CUDA holder this script starts; `who --pid` of that holder (the pytest
# plugin's question) finds it by PID@START and not by another start.
#
#   tests/gpu/wheel.sh [WHEEL]   (default: dist/gpuclean-*-manylinux_*.whl)
#
# Prints PASS/FAIL per check and "N passed, M failed". It signals only the CUDA holder it
# started, by the PID it got when starting it.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
wheel=${1:-$(find dist -maxdepth 1 -name 'gpuclean-*-manylinux_*.whl' | head -n 1)}
[[ -f $wheel ]] || { echo "FAIL: no platform wheel (scripts/package.sh writes dist/)"; exit 2; }
wheel=$(realpath "$wheel")
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh

work=$(mktemp -d)
holder=
cleanup() {
  [[ -n $holder ]] && kill -KILL "$holder" 2>/dev/null && wait "$holder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
plain_path=/usr/bin:/bin
torch_py=python3
"$torch_py" -c 'import torch' 2>/dev/null || torch_py=/opt/torch/.venv/bin/python3

echo "== host"
grep -E '^PRETTY_NAME=' /etc/os-release
ldd --version | head -n 1
# A fresh environment: the system's python3 where it can make one with pip, else PyTorch's.
venv=$work/venv
python3 -m venv "$venv" 2>/dev/null || { rm -rf "$venv"; "$torch_py" -m venv "$venv"; }
check "the wheel installs offline into a fresh virtual environment ($(basename "$wheel"))" \
  "$venv/bin/pip" install --quiet --no-index "$wheel"
gpuclean=$venv/bin/gpuclean
check "pip put gpuclean on the environment's PATH" \
  env -u GPUCLEAN PATH="$venv/bin:$plain_path" bash -c "[ \"\$(command -v gpuclean)\" = '$gpuclean' ]"
env -u LD_LIBRARY_PATH "$gpuclean" --version
check "its gpuclean runs with no LD_LIBRARY_PATH, metrics built in" \
  bash -c "env -u LD_LIBRARY_PATH '$gpuclean' --version | grep -q '^metrics: built in'"
env -u LD_LIBRARY_PATH "$gpuclean" status --json >"$work/status.json"
check "status sees the GPUs through NVML" "$venv/bin/python" -c "import json, sys
d = json.load(open(sys.argv[1]))
assert d['nvml']['state'] == 'present' and d['gpus'], d['nvml']" "$work/status.json"

# A CUDA process of our own with 2 GiB.
"$torch_py" -c 'import sys, time, torch
x = torch.empty(2 << 30, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
print("ready", flush=True)
time.sleep(300)' >"$work/holder.out" 2>&1 &
holder=$!
for _ in $(seq 1 600); do # up to 60 s for CUDA to come up
  grep -q ready "$work/holder.out" 2>/dev/null && break
  kill -0 "$holder" 2>/dev/null || break
  sleep 0.1
done
check "the CUDA holder started (pid $holder)" grep -q ready "$work/holder.out"
check "the API finds the wheel's gpuclean with no GPUCLEAN and nothing on PATH, and names the holder with its GPU memory" \
  env -u GPUCLEAN -u LD_LIBRARY_PATH PATH="$plain_path" "$venv/bin/python" -c "import sys, gpuclean
from gpuclean._binary import find_binary
assert find_binary() == sys.argv[1], find_binary()
h = gpuclean.status().holder(int(sys.argv[2]))
assert h is not None and sum(h.gpu_memory.values()) >= 2 << 30, h
print('holder', h.pid, h.class_, dict(h.gpu_memory))" "$gpuclean" "$holder"
start=$(awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$holder/stat")
check "who --pid $holder@$start finds it" \
  bash -c "'$gpuclean' who --json --pid '$holder@$start' | grep -q '\"pid\": $holder'"
check "who --pid $holder@$((start + 1)) does not (another process by its start time)" \
  bash -c "'$gpuclean' who --json --pid '$holder@$((start + 1))' | grep -q '\"holders\": \\[\\]'"

finish "platform wheel on the GPU machine"
