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

ms() { # wall milliseconds of one run of "$@" (output discarded)
  local start end
  start=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || true
  end=$EPOCHREALTIME
  echo "($end - $start) * 1000" | bc -l 2>/dev/null || python3 -c "print(($end - $start) * 1000)"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

commands=(
  "$gpuclean status"
  "$gpuclean status --json"
  "$gpuclean status --no-nvml"
  "nvidia-smi --query-gpu=memory.used --format=csv"
  "nvidia-smi --query-compute-apps=pid,used_memory --format=csv"
)
for c in "${commands[@]}"; do $c >/dev/null 2>&1 || true; done   # warm-up: page cache, driver
declare -A times
for _ in $(seq "$runs"); do
  for i in "${!commands[@]}"; do
    # shellcheck disable=SC2086  # each entry is a command line
    times[$i]+="$(ms ${commands[$i]}) "
  done
done
echo "status_bench $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs"
nvidia-smi --query-gpu=name,driver_version,persistence_mode --format=csv,noheader | head -1
printf '%-62s %10s\n' "command" "median ms"
declare -A medians
for i in "${!commands[@]}"; do
  # shellcheck disable=SC2086
  medians[$i]=$(printf '%s\n' ${times[$i]} | median)
  printf '%-62s %10.1f\n' "${commands[$i]#"$gpuclean" }" "${medians[$i]}"
done
python3 -c "print('ratio gpuclean status / nvidia-smi --query-gpu=memory.used: %.2f (target <= 0.90)' % (${medians[0]} / ${medians[3]}))"
python3 -c "print('ratio gpuclean status --json / nvidia-smi --query-compute-apps: %.2f' % (${medians[1]} / ${medians[4]}))"
