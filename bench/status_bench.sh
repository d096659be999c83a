#!/usr/bin/env bash
# On a GPU machine: how long `gpuclean --json` (the whole status: /proc scan + NVML + diagnosis)
# takes next to one `nvidia-smi --query-compute-apps` call, which is what users run to ask the
# same question. Medians of --runs calls each, interleaved, same machine state.
#   bench/status_bench.sh [--gpuclean PATH] [--runs N]
set -euo pipefail
gpuclean=build/gpuclean
runs=21
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

smi=(nvidia-smi --query-compute-apps=pid,used_memory --format=csv)
g=("$gpuclean" --json)
"${g[@]}" >/dev/null 2>&1 || true   # warm-up: page cache, driver
"${smi[@]}" >/dev/null 2>&1 || true
g_times=(); s_times=()
for _ in $(seq "$runs"); do
  g_times+=("$(ms "${g[@]}")")
  s_times+=("$(ms "${smi[@]}")")
done
gm=$(printf '%s\n' "${g_times[@]}" | median)
sm=$(printf '%s\n' "${s_times[@]}" | median)
echo "status_bench $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
printf '%-58s %10s\n' "command" "median ms"
printf '%-58s %10.1f\n' "gpuclean --json" "$gm"
printf '%-58s %10.1f\n' "nvidia-smi --query-compute-apps=pid,used_memory --format=csv" "$sm"
python3 -c "print('ratio gpuclean/nvidia-smi: %.2f' % ($gm / $sm))"
