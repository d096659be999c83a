#!/usr/bin/env bash
# `gpuclean run`'s costs (issue 5 targets): the time it adds before the workload starts
# (< 2 ms), its wake-ups while the workload runs (0 per second), its peak RSS (< 10 MiB) and
# the teardown of a workload that leaves many processes behind. Compared in the same run with
# starting the workload directly and with coreutils `timeout` (what people use to bound a job).
#   bench/run_bench.sh [--gpuclean PATH] [--runs N] [--leftovers N]
# Run as root for the cgroup mode (else run falls back to the subreaper, and says so).
set -euo pipefail
cd "$(dirname "$0")/.."
gpuclean=build/gpuclean
runs=41
leftovers=200
while [ $# -gt 0 ]; do
  case $1 in
    --gpuclean) gpuclean=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --leftovers) leftovers=$2; shift 2 ;;
    *) echo "usage: $0 [--gpuclean PATH] [--runs N] [--leftovers N]" >&2; exit 2 ;;
  esac
done
[[ $gpuclean == /* ]] || gpuclean=$PWD/$gpuclean
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cc -O2 -o "$work/start_probe" bench/start_probe.c
probe=$work/start_probe

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
p90() { sort -n | awk '{a[NR]=$1} END {i=int(NR*0.9); if (i<1) i=1; print a[i]}'; }
# Context switches (voluntary + involuntary) of every thread of PID: each is a wake-up.
switches() {
  local total=0 f n
  for f in /proc/"$1"/task/*/status; do
    n=$(awk '/ctxt_switches/ {s += $2} END {print s+0}' "$f" 2>/dev/null || echo 0)
    total=$((total + n))
  done
  echo "$total"
}
hwm_kib() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

echo "run_bench $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs uid $(id -u)"
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/gpu: /'
else
  echo "gpu: none (NVML absent: run skips the GPU baseline)"
fi
mode=$("$gpuclean" run -- true 2>&1 || true); echo "mode: ${mode%%$'\n'*}"

echo
echo "== start: microseconds from spawning the command to the workload's main() (interleaved)"
declare -A times
labels=(direct timeout run run-no-cgroup run-no-nvml)
for _ in $(seq "$runs"); do
  times[direct]+="$("$probe" measure 1 "$probe" child) "
  times[timeout]+="$("$probe" measure 1 timeout 60 "$probe" child) "
  times[run]+="$("$probe" measure 1 "$gpuclean" run -q -- "$probe" child) "
  times[run-no-cgroup]+="$("$probe" measure 1 "$gpuclean" run -q --no-cgroup -- "$probe" child) "
  times[run-no-nvml]+="$("$probe" measure 1 "$gpuclean" run -q --no-nvml -- "$probe" child) "
done
direct=$(tr ' ' '\n' <<<"${times[direct]}" | grep . | median)
printf '%-40s %10s %10s %12s\n' "how the workload is started" "median us" "p90 us" "added ms"
for label in "${labels[@]}"; do
  m=$(tr ' ' '\n' <<<"${times[$label]}" | grep . | median)
  p=$(tr ' ' '\n' <<<"${times[$label]}" | grep . | p90)
  added=$(awk -v m="$m" -v d="$direct" 'BEGIN {printf "%.2f", (m - d) / 1000}')
  printf '%-40s %10.0f %10.0f %12s\n' "$label" "$m" "$p" "$added"
done

echo
echo "== idle: wake-ups (context switches, all threads) while the workload sleeps 3 s"
echo "   (the sampler: gpuclean's NVML process, alive only with --record; '-' when there is none)"
printf '%-40s %9s %7s %10s %9s %10s\n' "supervisor" "switches" "per s" "VmHWM KiB" "sampler" "its KiB"
# The GPU sampler: the child of PID that is gpuclean itself (the other child is the workload).
sampler_of() {
  local c
  for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
    if [[ $(cat /proc/"$c"/comm 2>/dev/null) == gpuclean ]]; then
      echo "$c"
      return 0
    fi
  done
  return 0
}
idle() {  # LABEL COMMAND...
  local label=$1 pid a b hwm s sa sb shwm
  shift
  "$@" >/dev/null 2>&1 &
  pid=$!
  sleep 0.5
  s=$(sampler_of "$pid")
  a=$(switches "$pid")
  [[ -n $s ]] && sa=$(switches "$s")
  sleep 2
  b=$(switches "$pid")
  hwm=$(hwm_kib "$pid")
  if [[ -n $s ]]; then
    sb=$(switches "$s")
    shwm=$(hwm_kib "$s")
  fi
  wait "$pid" || true
  printf '%-40s %9d %7.2f %10s %9s %10s\n' "$label" "$((b - a))" \
    "$(awk -v n=$((b - a)) 'BEGIN {print n / 2}')" "$hwm" "${s:+$((sb - sa))}" "${shwm:--}"
}
idle "timeout 60 sleep 3" timeout 60 sleep 3
idle "gpuclean run -- sleep 3" "$gpuclean" run -- sleep 3
idle "gpuclean run --no-cgroup -- sleep 3" "$gpuclean" run --no-cgroup -- sleep 3
idle "gpuclean run --record (1 s samples)" "$gpuclean" run --record "$work/rec.json" -- sleep 3
idle "gpuclean run --timeout 1h -- sleep 3" "$gpuclean" run --timeout 1h -- sleep 3

echo
echo "== teardown: a workload that leaves $leftovers sleeping processes behind and exits"
script="for i in \$(seq $leftovers); do sleep 600 & done; exit 0"
for mode in "" "--no-cgroup"; do
  start=$EPOCHREALTIME
  # shellcheck disable=SC2086
  rc=0
  "$gpuclean" run -q --no-nvml $mode --record "$work/tear.json" -- sh -c "$script" || rc=$?
  end=$EPOCHREALTIME
  python3 - "$work/tear.json" "$start" "$end" "${mode:-cgroup}" "$rc" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ev = {e["kind"]: e["t"] for e in d["events"]}
gone = sum(1 for l in d["leftovers"] if l["outcome"] == "gone")
print(f"{sys.argv[4]:<12} exit {sys.argv[5]}: {len(d['leftovers'])} left behind, {gone} ended; "
      f"teardown {1000 * (ev['teardown-done'] - ev['teardown']):.0f} ms; whole run "
      f"{1000 * (float(sys.argv[3]) - float(sys.argv[2])):.0f} ms")
PY
done
