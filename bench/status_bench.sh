#!/usr/bin/env bash
# On a GPU machine: how long a one-shot `gpuclean status` (the /proc scan + NVML through its
# helper process + diagnosis) takes next to the nvidia-smi calls users run to ask the same
# question: `--query-gpu=memory.used` (its cheapest: init + one memory query per GPU) and
# `--query-compute-apps`. Medians of --runs calls each, interleaved, same machine state. The
# target (issue 14): gpuclean status <= 0.9x nvidia-smi --query-gpu=memory.used.
#   bench/status_bench.sh [--gpuclean PATH] [--runs N]
set -euo pipefail
gpuclean=build/gpuclean
runs=30
while [ $# -gt 0 ]; do
  case $1 in
    --gpuclean) gpuclean=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--gpuclean PATH] [--runs N]" >&2; exit 2 ;;
  esac
done

# shellcheck source=bench/timing.sh
source "$(dirname "$0")/timing.sh"

commands=(
  "$gpuclean status"
  "$gpuclean status --json"
  "$gpuclean status --no-nvml"
  "nvidia-smi --query-gpu=memory.used --format=csv"
  "nvidia-smi --query-compute-apps=pid,used_memory --format=csv"
)
time_interleaved "$runs" "${commands[@]}"
echo "status_bench $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs"
nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | head -1
printf '%-62s %10s\n' "command" "median ms"
for i in "${!commands[@]}"; do
  printf '%-62s %10.1f\n' "${commands[$i]#"$gpuclean" }" "${MEDIANS[$i]}"
done
python3 -c "print('ratio gpuclean status / nvidia-smi --query-gpu=memory.used: %.2f (issue 47: <= 1.05 on an idle GPU)' % (${MEDIANS[0]} / ${MEDIANS[3]}))"
python3 -c "print('ratio gpuclean status --json / nvidia-smi --query-compute-apps: %.2f' % (${MEDIANS[1]} / ${MEDIANS[4]}))"
