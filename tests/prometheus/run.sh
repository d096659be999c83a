#!/usr/bin/env bash
# A real Prometheus server scrapes `gpuclean metrics --listen` on loopback (issue 7): the
# exposition is accepted (the target is up) and gpuclean's series can be queried. Negative
# control: a second target on a port nobody serves is reported down by the same server, so the
# test can see a failed scrape. Everything it starts is stopped by PID at the end.
#   tests/prometheus/run.sh [BUILD_DIR]     (default build; needs prometheus, curl, python3)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
build=${1:-build}
[[ $build == /* ]] || build=$PWD/$build
G=$build/gpuclean
[[ -x $G ]] || { echo "prometheus test: FAIL: no gpuclean at $G"; exit 1; }
for tool in prometheus curl python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "prometheus test: skipped, $tool is not installed"
    exit 0
  fi
done
if "$G" --version | grep -q '^metrics: not built in'; then
  echo "prometheus test: skipped, this gpuclean was built without metrics"
  exit 0
fi
# check, finish, until_ok, and work_dir: $work, removed at exit with the processes in $pids
# stopped.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh
work_dir
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

gport=$(free_port)
dead=$(free_port)
pport=$(free_port)
touch "$work/device"
"$G" metrics --listen "127.0.0.1:$gport" --no-nvml --device-glob "$work/device" \
  >"$work/gpuclean.log" 2>&1 &
pids+=($!)
check "gpuclean metrics serves /metrics on 127.0.0.1:$gport" \
  until_ok 10 curl -sf -o /dev/null "http://127.0.0.1:$gport/metrics"

cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: gpuclean
    static_configs: [{targets: ["127.0.0.1:$gport"]}]
  - job_name: nobody
    static_configs: [{targets: ["127.0.0.1:$dead"]}]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$pport" >"$work/prometheus.log" 2>&1 &
pids+=($!)

# The value of one instant query, or nothing yet.
query() {  # PROMQL
  curl -sf --get --data-urlencode "query=$1" "http://127.0.0.1:$pport/api/v1/query" |
    python3 -c 'import json, sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")' 2>/dev/null
}
is() {  # PROMQL WANT
  [[ $(query "$1") == "$2" ]]
}
check "Prometheus scraped gpuclean: up{job=\"gpuclean\"} = 1" until_ok 40 is 'up{job="gpuclean"}' 1
check "negative control: up{job=\"nobody\"} = 0 (the same server sees a failed scrape)" \
  until_ok 20 is 'up{job="nobody"}' 0
check "gpuclean's series are stored: gpuclean_build_info" until_ok 10 is 'count(gpuclean_build_info{job="gpuclean"})' 1
check "the machine is clean in Prometheus' eyes: gpuclean_clean = 1" until_ok 10 is 'gpuclean_clean{job="gpuclean"}' 1
samples=$(query 'scrape_samples_scraped{job="gpuclean"}')
echo "  scrape_samples_scraped{job=\"gpuclean\"} = ${samples:-?}"
if ((failed > 0)); then
  echo "--- prometheus log (tail)"
  tail -20 "$work/prometheus.log"
  echo "--- gpuclean log"
  cat "$work/gpuclean.log"
fi
finish "prometheus test"
