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
ms() { # wall milliseconds of one run of "$@" (output discarded)
  local start end
  start=$EPOCHREALTIME
  "$@" >/dev/null 2>&1 || true
  end=$EPOCHREALTIME
  python3 -c "print(($end - $start) * 1000)"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
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
for c in "${commands[@]}"; do $c >/dev/null 2>&1 || true; done
declare -A times
for _ in $(seq "$runs"); do
  for i in "${!commands[@]}"; do
    # shellcheck disable=SC2086  # each entry is a command line
    times[$i]+="$(ms ${commands[$i]}) "
  done
done
echo "status_parts $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs"
nvidia-smi --query-gpu=name,driver_version,persistence_mode,memory.used --format=csv,noheader
base=
for i in "${!commands[@]}"; do
  # shellcheck disable=SC2086
  m=$(printf '%s\n' ${times[$i]} | median)
  [ -z "$base" ] && base=$m
  label=${commands[$i]#"$gpuclean" }
  [ -n "$baseline" ] && label=${label/#"$baseline"/baseline}
  printf '%-60s %8.1f ms  %5.2fx\n' "$label" "$m" \
    "$(python3 -c "print($m / $base)")"
done
