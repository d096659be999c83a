#!/usr/bin/env bash
# metrics_bench.sh: what one node costs Prometheus and what Prometheus costs for a fleet
# (docs/fleet.md "A fleet of 500 nodes"). See bench/README.md.
#
# Part 1, one node: `gpuclean metrics --listen` on a crowd of processes (bench/crowd.c; HOLDERS
# of them hold the node's device file, parent alive: healthy holders) with 8 fake GPUs (the
# fake libnvidia-ml.so.1 of tests/fake_nvml, through LD_LIBRARY_PATH), twice: a clean node, and
# a dirty one where NVML counts memory for FOREIGN PIDs that /proc does not have (foreign
# holders, as a node whose containers' processes gpuclean cannot see: each a problem with
# memory on its GPU, so the per-holder series reach their cap).
# For each: the exposition's bytes and samples, the time of a scrape that makes a fresh scan
# (paced > 2 s apart, past the exporter's reuse window) and of one answered from the last scan,
# and the exporter's CPU time per scan (its utime + stime and its NVML helper's, from
# /proc/PID/stat, over the fresh scrapes). And the wall time of `gpuclean check`, what the Slurm
# health check runs, on the clean node.
#
# Part 2, the fleet (--fleet NODES, 0 to skip): a real Prometheus scrapes NODES targets, each
# serving the dirty node's exposition (a saved copy, served by python3's http.server: the
# Prometheus side is what is measured) with its own `node` label, every INTERVAL, with
# contrib/prometheus/alerts.yml loaded; after WARMUP seconds it reports its head series,
# samples appended per second, its CPU seconds per second and resident memory.
#
#   bench/metrics_bench.sh [--gpuclean PATH] [--fake-nvml DIR] [-n PROCS] [-h HOLDERS]
#                          [--foreign N] [--scrapes N] [--fleet NODES] [--interval S]
#                          [--warmup S]
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
gpuclean=$repo/build/gpuclean
fake=$repo/build/tests/fake_nvml/r580
n=1000 h=16 foreign=200 scrapes=5 fleet=500 interval=15 warmup=90

usage() {
  cat <<EOF
usage: $0 [options]
  --gpuclean PATH   gpuclean binary (default build/gpuclean)
  --fake-nvml DIR   directory of the fake libnvidia-ml.so.1 (default build/tests/fake_nvml/r580)
  -n PROCS          crowd processes (default $n)
  -h HOLDERS        crowd processes holding the device file (default $h)
  --foreign N       PIDs the dirty node's NVML counts memory for (default $foreign)
  --scrapes N       fresh scrapes per node (default $scrapes)
  --fleet NODES     targets for part 2 (default $fleet; 0 skips it)
  --interval S      part 2's scrape and rule evaluation interval (default $interval)
  --warmup S        part 2's seconds before measuring (default $warmup)
EOF
}
die() {
  echo "metrics_bench: $*" >&2
  exit 1
}
while (($#)); do
  [[ $1 == --help ]] && { usage; exit 0; }
  (($# >= 2)) || { usage >&2; die "$1 needs a value"; }
  case $1 in
    --gpuclean) gpuclean=$2 ;;
    --fake-nvml) fake=$2 ;;
    -n) n=$2 ;;
    -h) h=$2 ;;
    --foreign) foreign=$2 ;;
    --scrapes) scrapes=$2 ;;
    --fleet) fleet=$2 ;;
    --interval) interval=$2 ;;
    --warmup) warmup=$2 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
  shift 2
done
[[ -x $gpuclean ]] || die "no gpuclean at $gpuclean"
[[ -e $fake/libnvidia-ml.so.1 ]] || die "no fake NVML in $fake (ninja -C build fake_nvml_r580)"
for tool in cc curl python3 prometheus; do command -v "$tool" >/dev/null || die "$tool not found"; done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/metrics_bench.XXXXXX")
started=() # PIDs this script started, stopped at exit
cleanup() {
  local pid
  for pid in "${started[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${started[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
until_ok() { # SECONDS COMMAND...
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.2
  done
}
cpu_ticks() { # PID...: utime + stime, in clock ticks
  local pid total=0 stat fields
  for pid in "$@"; do
    stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
    read -ra fields <<<"${stat##*) }"
    total=$((total + fields[11] + fields[12]))
  done
  echo "$total"
}
children_of() { # PID: its children's PIDs, on one line
  local stat fields pids=()
  for stat in /proc/[0-9]*/stat; do
    stat=$(cat "$stat" 2>/dev/null) || continue
    read -ra fields <<<"${stat##*) }"
    [[ ${fields[1]} == "$1" ]] && pids+=("${stat%% *}")
  done
  echo "${pids[@]}"
}
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# ---- part 1: one node
cc -O2 -pthread -o "$tmp/crowd" "$here/crowd.c"
: >"$tmp/device"
"$tmp/crowd" "$tmp/device" "$tmp/crowd.pids" -n "$n" -h "$h" -z 0 -l 900 &
started+=($!)
until_ok 120 test -e "$tmp/crowd.pids" || die "the crowd did not start"
reserve=641728512
{
  echo "gpus 8"
  for gpu in {0..7}; do echo "used $gpu $reserve"; done
} >"$tmp/clean.conf"
{
  echo "gpus 8"
  # 4 GiB per foreign PID, on GPU i % 8, each GPU's used memory to match.
  for gpu in {0..7}; do
    count=$(((foreign + 7 - gpu) / 8))
    echo "used $gpu $((reserve + count * 4 * 1024 * 1024 * 1024))"
  done
  # PIDs no process has, from the top of the PID range down (NVML's records are checked for
  # plausible PIDs: below pid_max).
  pid=$(($(cat /proc/sys/kernel/pid_max) - 1))
  for ((i = 0; i < foreign; pid--)); do
    [[ -e /proc/$pid ]] && continue
    echo "process $((i % 8)) compute $pid $((4 * 1024 * 1024 * 1024))"
    i=$((i + 1))
  done
} >"$tmp/dirty.conf"
hz=$(getconf CLK_TCK)
ticks_per_core=$hz
echo "one node: $n processes ($h holding the device file), 8 GPUs; $scrapes fresh scrapes each"
printf '%-6s %8s %8s %8s %14s %14s %14s\n' node bytes gzip samples "fresh scrape" "cached scrape" "CPU per scan"
for node in clean dirty; do
  port=$(free_port)
  LD_LIBRARY_PATH=$fake FAKE_NVML_CONFIG=$tmp/$node.conf \
    "$gpuclean" metrics --listen "127.0.0.1:$port" --device-glob "$tmp/device" \
    2>"$tmp/$node.log" &
  exporter=$!
  started+=("$exporter")
  until_ok 30 curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" || die "exporter did not serve"
  # Its NVML helper: its child (the scans' NVML time is spent there).
  read -ra helper < <(children_of "$exporter")
  curl -sf -o "$tmp/$node.prom" "http://127.0.0.1:$port/metrics"
  # What a scraper that asks for gzip (Prometheus does) receives.
  gzip_bytes=$(curl -sf -H 'Accept-Encoding: gzip' -o /dev/null -w '%{size_download}' \
    "http://127.0.0.1:$port/metrics")
  : >"$tmp/fresh" && : >"$tmp/cached"
  before=$(cpu_ticks "$exporter" "${helper[@]}")
  for ((i = 0; i < scrapes; i++)); do
    sleep 2.2 # past the 2 s reuse window: this scrape scans
    curl -sf -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$tmp/fresh"
    curl -sf -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/metrics" >>"$tmp/cached"
  done
  after=$(cpu_ticks "$exporter" "${helper[@]}")
  kill -TERM "$exporter"
  wait "$exporter" || true
  bytes=$(wc -c <"$tmp/$node.prom")
  samples=$(grep -vc '^#' "$tmp/$node.prom")
  printf '%-6s %8s %8s %8s %11.1f ms %11.1f ms %11.1f ms\n' "$node" "$bytes" "$gzip_bytes" "$samples" \
    "$(median <"$tmp/fresh" | awk '{print $1 * 1000}')" \
    "$(median <"$tmp/cached" | awk '{print $1 * 1000}')" \
    "$(awk -v t=$((after - before)) -v s="$scrapes" -v hz="$ticks_per_core" 'BEGIN {print t * 1000 / hz / s}')"
done
# What the Slurm health check runs (contrib/slurm/healthcheck.sh): one `gpuclean check`, a new
# process each time, on the clean node.
: >"$tmp/check"
for ((i = 0; i < scrapes; i++)); do
  t0=$(date +%s%N)
  LD_LIBRARY_PATH=$fake FAKE_NVML_CONFIG=$tmp/clean.conf \
    "$gpuclean" check --device-glob "$tmp/device" >/dev/null 2>&1 || true
  echo $((($(date +%s%N) - t0) / 1000)) >>"$tmp/check"
done
echo "gpuclean check (the health check's command) on the clean node: $(median <"$tmp/check" |
  awk '{printf "%.1f", $1 / 1000}') ms wall, median of $scrapes"
echo "per-holder series on the dirty node: $(grep -c '^gpuclean_holder_memory_bytes{' "$tmp/dirty.prom") (cap 50)"
echo "the dirty node's exposition by family (samples):"
grep -v '^#' "$tmp/dirty.prom" | sed 's/[{ ].*//' | sort | uniq -c | sort -rn | sed 's/^/  /'

((fleet > 0)) || exit 0
# ---- part 2: the fleet, on one real Prometheus
mkdir "$tmp/serve"
cp "$tmp/dirty.prom" "$tmp/serve/metrics"
port=$(free_port)
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$tmp/serve" >/dev/null 2>&1 &
started+=($!)
until_ok 20 curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" || die "http.server did not serve"
prom_port=$(free_port)
{
  echo "global: {scrape_interval: ${interval}s, evaluation_interval: ${interval}s}"
  echo "rule_files: [$repo/contrib/prometheus/alerts.yml]"
  echo "scrape_configs:"
  echo "  - job_name: gpuclean"
  echo "    static_configs:"
  for ((i = 0; i < fleet; i++)); do
    echo "      - {targets: ['127.0.0.1:$port'], labels: {node: 'node$i'}}"
  done
} >"$tmp/prometheus.yml"
prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$tmp/prometheus.log" 2>&1 &
prom=$!
started+=("$prom")
api="http://127.0.0.1:$prom_port/api/v1/query"
value() {
  curl -sf --get --data-urlencode "query=$1" "$api" |
    python3 -c 'import json, sys; r = json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "?")'
}
until_ok 60 curl -sf -o /dev/null "$api?query=up" || die "prometheus did not start"
echo "fleet: $fleet targets every ${interval}s; measuring after ${warmup}s"
sleep "$warmup"
own() { # NAME: the value of one of Prometheus' own metrics (summed over its series)
  curl -sf "http://127.0.0.1:$prom_port/metrics" | awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $2} END {print s}'
}
cpu0=$(cpu_ticks "$prom")
samples0=$(own prometheus_tsdb_head_samples_appended_total)
t0=$(date +%s.%N)
sleep $((2 * interval))
cpu1=$(cpu_ticks "$prom")
samples1=$(own prometheus_tsdb_head_samples_appended_total)
t1=$(date +%s.%N)
rate() { awk -v a="$1" -v b="$2" -v t0="$t0" -v t1="$t1" -v d="${3:-1}" 'BEGIN {printf "%.3f", (b - a) / d / (t1 - t0)}'; }
echo "  targets up:            $(value 'count(up == 1)')"
echo "  head series:           $(own prometheus_tsdb_head_series)"
echo "  samples appended/s:    $(rate "$samples0" "$samples1")"
echo "  scrape duration:       $(value 'quantile(0.5, scrape_duration_seconds)') s median, $(value 'max(scrape_duration_seconds)') s max"
echo "  rule evaluation:       $(own prometheus_rule_group_last_duration_seconds) s per round"
echo "  CPU:                   $(rate "$cpu0" "$cpu1" "$hz") s per s"
echo "  resident memory:       $(awk '/^VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$prom/status")"
echo "  alerts (pending or firing): $(value 'count(ALERTS) or vector(0)')"
