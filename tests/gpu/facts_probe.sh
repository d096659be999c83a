#!/usr/bin/env bash
# One-off fact finding on the GPU machine (first session): NVML layout, memory queries, what
# a CUDA process and an NVML-only monitor hold. Output goes to stdout; results are recorded in
# docs/gpu-tests.md. Usage: tests/gpu/facts_probe.sh BIN_DIR
set -uo pipefail
bin=${1:-.device-bin}
echo "== date: $(date -u +%FT%TZ)  kernel: $(uname -r)"
nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,memory.reserved,persistence_mode --format=csv
hdr=$(find / -xdev -name nvml.h -path '*include*' 2>/dev/null | head -1)
echo "== nvml.h: $hdr"
gcc -I"$(dirname "$hdr")" tests/gpu/nvml_layout_check.c -o /tmp/layout && /tmp/layout
grep -n "nvmlDeviceGetComputeRunningProcesses" "$hdr" | head
echo "== nvml_probe idle"; "$bin/nvml_probe"
python3 - <<'PY' &
import os, time, torch
x = torch.empty(8 << 30, dtype=torch.uint8, device="cuda")
open("/tmp/torch.pid", "w").write(str(os.getpid()))
time.sleep(120)
PY
nvidia-smi -lms 500 >/dev/null 2>&1 & smi=$!
for i in $(seq 200); do [ -s /tmp/torch.pid ] && break; sleep 0.1; done
tp=$(cat /tmp/torch.pid); sleep 1
echo "== torch pid $tp, nvidia-smi -l pid $smi"
echo "== nvml_probe busy"; "$bin/nvml_probe"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
for p in $tp $smi; do
  echo "== fds of $p ($(cat /proc/$p/comm))"; ls -l /proc/$p/fd | grep -E 'nvidia' | awk '{print $9, $10, $11}'
  echo "== maps of $p"; grep nvidia /proc/$p/maps | awk '{print $6}' | sort | uniq -c
done
echo "== gpuclean who"; time "$bin/gpuclean" who
"$bin/gpuclean" who --json | head -c 3000
echo "== timing: nvidia-smi query-compute-apps x5"
time (for i in 1 2 3 4 5; do nvidia-smi --query-compute-apps=pid,used_memory --format=csv >/dev/null; done)
time (for i in 1 2 3 4 5; do "$bin/nvml_probe" >/dev/null; done)
kill $tp $smi; wait
echo "== after kill"; "$bin/nvml_probe" | head -30
