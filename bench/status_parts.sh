#!/usr/bin/env bash
# On a GPU machine: where a one-shot `gpuclean status` spends its time beyond nvidia-smi's. Each
# variant leaves out one part of the look (DRM's sysfs walk, NVML, the /proc scan's detail), all
# interleaved with nvidia-smi --query-gpu=memory.used, medians of --runs calls, same machine
# state; the difference between a variant and `status` is that part's cost. Issue 47: status
# on an idle GPU at <= 1.05x nvidia-smi.
# --baseline PATH adds another build's `status` (and `--version`) to the same interleaving: a
# change measured against the code before it, on the same machine in the same minutes.
#   bench/status_parts.sh [--gpuclean PATH] [--baseline PATH] [--runs N]
set -euo pipefail
gpuclean=build/gpuclean
baseline=
runs=40
while [ $# -gt 0 ]; do
  case $1 in
    --gpuclean) gpuclean=$2; shift 2 ;;
    --baseline) baseline=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--gpuclean PATH] [--baseline PATH] [--runs N]" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/timing.sh
source "$(dirname "$0")/timing.sh"
commands=(
  "nvidia-smi --query-gpu=memory.used --format=csv"
  "$gpuclean status"
  "$gpuclean status --no-drm"
  "$gpuclean check"
  "$gpuclean status --no-nvml"
  "$gpuclean who"
  "$gpuclean --version"
)
if [ -n "$baseline" ]; then
  commands+=("$baseline status" "$baseline --version")
fi
time_interleaved "$runs" "${commands[@]}"
echo "status_parts $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs"
nvidia-smi --query-gpu=name,driver_version,persistence_mode,memory.used --format=csv,noheader
base=
for i in "${!commands[@]}"; do
  m=${MEDIANS[$i]}
  [ -z "$base" ] && base=$m
  label=${commands[$i]#"$gpuclean" }
  [ -n "$baseline" ] && label=${label/#"$baseline"/baseline}
  printf '%-60s %8.1f ms  %5.2fx\n' "$label" "$m" \
    "$(python3 -c "print($m / $base)")"
done
