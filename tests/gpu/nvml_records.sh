#!/usr/bin/env bash
# How gpuclean reads NVML's process records on this driver (src/nvml/process_records.h): starts
# two CUDA processes of different sizes, prints `nvml_probe --records` (hinting symbols, raw
# bytes, the stride chosen and the decoded list) next to nvidia-smi's list, and checks that
# both agree (same PIDs, same MiB). Runs on the GPU machine only, as root, on an idle GPU.
#
#   tests/gpu/nvml_records.sh [BIN_DIR]    BIN_DIR (default .device-bin) holds nvml_probe
#
# Signals only the two processes it started, by PID. Each also ends itself after 60 s.
set -uo pipefail
bin=${1:-.device-bin}
PY=python3
"$PY" -c 'import torch' 2>/dev/null || PY=/opt/torch/.venv/bin/python3
work=$(mktemp -d /tmp/gpuclean-records.XXXXXX) || exit 2
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

start() {  # MIB READY_FILE: a process that holds MIB of GPU 0 for at most 60 s
  "$PY" - "$1" "$2" <<'PY' &
import sys, time, torch
x = torch.empty(int(sys.argv[1]) << 20, dtype=torch.uint8, device="cuda:0")
torch.cuda.synchronize()
open(sys.argv[2], "w").write("ready")
time.sleep(60)
PY
  pids+=($!)
}
start 1024 "$work/a"
start 3072 "$work/b"
for _ in $(seq 300); do [[ -s $work/a && -s $work/b ]] && break; sleep 0.1; done
[[ -s $work/a && -s $work/b ]] || { echo "FAIL: the CUDA processes did not start"; exit 1; }

echo "== nvidia-smi"
nvidia-smi --query-gpu=driver_version --format=csv,noheader
nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits | tee "$work/smi"
echo "== nvml_probe --records"
"$bin/nvml_probe" --records | tee "$work/probe"
probe_rc=${PIPESTATUS[0]}

# GPU 0's compute list as gpuclean decoded it: "PID MiB" lines, sorted.
awk '/^GPU 0 compute:/ {on=1; next} /^GPU / {on=0} on && $1=="pid" {printf "%s %d\n", $2, $4/1048576}' \
  "$work/probe" | sort >"$work/ours"
tr -d ' ' <"$work/smi" | tr ',' ' ' | sort >"$work/theirs"
echo "== gpuclean (pid MiB)"; cat "$work/ours"
if [[ $probe_rc -eq 0 ]] && grep -q '^  chosen stride' "$work/probe" &&
  [[ $(wc -l <"$work/ours") -ge 2 ]] && diff -q "$work/ours" "$work/theirs" >/dev/null; then
  echo "PASS: stride $(grep -m1 '^  chosen stride' "$work/probe" | awk '{print $3}') bytes;" \
    "gpuclean's list equals nvidia-smi's"
else
  echo "FAIL: gpuclean's list differs from nvidia-smi's (or was refused)"
  diff "$work/ours" "$work/theirs"
  exit 1
fi
