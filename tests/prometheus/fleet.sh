#!/usr/bin/env bash
# A small fleet on real engines (issue 17): a real Prometheus with contrib/prometheus/alerts.yml
# loaded scrapes four gpuclean "nodes" on loopback, each seeing a different machine through the
# fake libnvidia-ml.so.1 (tests/fake_nvml, loaded through LD_LIBRARY_PATH; the scenario file
# named by FAKE_NVML_CONFIG is that machine's driver) and its own device file (--device-glob):
#   A  gpuclean metrics --listen   clean (an idle GPU, nobody holds the file)
#   B  gpuclean metrics --listen   an orphan holding 8 GiB (a process this test started, its
#                                  parent gone, in a cgroup with a hostile name) and a healthy
#                                  holder at work (2 GiB, its parent alive)
#   C  gpuclean metrics --listen   NVML failing (nvmlDeviceGetMemoryInfo: GPU is lost)
#   D  gpuclean metrics --textfile every second (as gpuclean-textfile.timer does every 30 s),
#      served by node_exporter's textfile collector (Debian prometheus-node-exporter): an heir
#      holding the 4 GiB NVML still counts for its dead session leader
# The test asks Prometheus' HTTP API which alerts fire: exactly B's leftover, C's NVML failure
# and D's leftover, never anything of A. Then it cleans D: kills the heir by PID and updates D's
# scenario to what the driver reports once the context is gone (the fake reads its file once
# per process: the exporters' NVML helpers live on, so the textfile node is the one cleaned);
# the kill and the new scenario fall between two textfile runs (d.lock). D's alert resolves
# while B's and C's go on firing.
#
# The rules are alerts.yml with every `for:` made 1s (sed, below; checked to change nothing
# else): the same expressions, labels and annotations, without minutes of waiting. Beside them
# recording.yml (issue 52) with its group's `interval:` made 1s likewise: the GiB-hours each node
# lost to leftovers over the last day, from gpuclean_leftover_memory_byte_seconds_total. B and D
# record a positive figure, the clean A records 0 (negative control); the figures are printed.
# Every machine's driver reports its reserve apart from used memory, as the H200's does through
# nvmlDeviceGetMemoryInfo_v2 (docs/facts.md): an idle GPU is used 0, so A has nothing to count.
# Negative controls: the healthy holder on B has no per-holder series while its in-use problem
# is counted; a fifth target serving a label value that is not UTF-8 is refused by the same
# Prometheus (the reason gpuclean cleans label values). Everything started is stopped by PID.
#   tests/prometheus/fleet.sh [BUILD_DIR]   (default build; needs prometheus, flock,
#                                            prometheus-node-exporter, curl, python3)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
started=$SECONDS
build=${1:-build}
[[ $build == /* ]] || build=$PWD/$build
G=$build/gpuclean
fake=$build/tests/fake_nvml/r580
[[ -x $G ]] || { echo "fleet test: FAIL: no gpuclean at $G"; exit 1; }
[[ -e $fake/libnvidia-ml.so.1 ]] || { echo "fleet test: FAIL: no fake NVML in $fake"; exit 1; }
for tool in prometheus prometheus-node-exporter curl python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "fleet test: skipped, $tool is not installed (scripts/setup.sh installs it)"
    exit 0
  fi
done
if "$G" --version | grep -q '^metrics: not built in'; then
  echo "fleet test: skipped, this gpuclean was built without metrics"
  exit 0
fi
# check, not, pass, fail, skip, finish, until_ok; work_dir: $work, removed at exit with the
# processes in $pids stopped.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh
work_dir
cgroup=""
cleanup() {
  stop_started
  [[ -n $cgroup ]] && rmdir "$cgroup" 2>/dev/null
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
GiB=$((1024 * 1024 * 1024))
reserve=641728512 # the driver's reserve on an H200: `reserved`, apart from used (docs/facts.md)

# ---- the rules, with short `for:`
sed -E 's/^( +)for: [0-9a-z]+$/\1for: 1s/' contrib/prometheus/alerts.yml >"$work/alerts.yml"
changed=$(diff contrib/prometheus/alerts.yml "$work/alerts.yml" | grep -c '^>')
check "the test's rules differ from alerts.yml only in their $(grep -c '^ *for:' contrib/prometheus/alerts.yml) for: lines" \
  test "$changed" = "$(grep -c '^ *for:' contrib/prometheus/alerts.yml)" -a \
  "$(diff contrib/prometheus/alerts.yml "$work/alerts.yml" | grep '^>' | grep -vc 'for: 1s$')" = 0
sed -E 's/^( +)interval: [0-9a-z]+$/\1interval: 1s/' contrib/prometheus/recording.yml >"$work/recording.yml"
check "the test's recording rules differ from recording.yml only in their group's interval: 1s" \
  test "$(diff contrib/prometheus/recording.yml "$work/recording.yml" | grep -c '^>')" = 1 -a \
  "$(diff contrib/prometheus/recording.yml "$work/recording.yml" | grep '^>' | grep -c 'interval: 1s$')" = 1

# ---- the nodes
# exporter NAME PORT: gpuclean metrics --listen on 127.0.0.1:PORT with $work/NAME.conf as its
# driver and $work/NAME.dev as its device file.
exporter() {
  LD_LIBRARY_PATH=$fake FAKE_NVML_CONFIG=$work/$1.conf \
    "$G" metrics --listen "127.0.0.1:$2" --device-glob "$work/$1.dev" >"$work/$1.log" 2>&1 &
  pids+=($!)
}
serves() { curl -sf -o /dev/null "http://127.0.0.1:$1/metrics"; }
holds() { # PID FILE: PID has FILE open
  local fd
  for fd in /proc/"$1"/fd/*; do [[ $(readlink "$fd" 2>/dev/null) == "$2" ]] && return 0; done
  return 1
}
ppid_of() { awk '{print $4}' "/proc/$1/stat" 2>/dev/null; }

port_a=$(free_port) port_b=$(free_port) port_c=$(free_port) port_d=$(free_port)
port_raw=$(free_port) port_prom=$(free_port)
for node in a b c d; do touch "$work/$node.dev"; done

# A: clean.
printf 'uuid 0 GPU-node-a\nused 0 0\nreserved 0 %s\n' "$reserve" >"$work/a.conf"
exporter a "$port_a"

# B: an orphan (its parent, the bash below, exits at once) and a healthy holder (this script's
# child). Both hold b.dev open (fd 3).
# shellcheck disable=SC2016 # $1 and $! are the inner bash's
orphan=$(bash -c 'sleep 600 3<"$1" >/dev/null 2>&1 & echo $!' _ "$work/b.dev")
pids+=("$orphan")
sleep 600 3<"$work/b.dev" >/dev/null 2>&1 &
active=$!
pids+=("$active")
orphan_ready() { holds "$orphan" "$work/b.dev" && [[ $(ppid_of "$orphan") == 1 ]]; }
check "B's orphan (pid $orphan) holds b.dev, adopted by PID 1" until_ok 10 orphan_ready
# Its owner: a cgroup v2 group named as a user with a delegated subtree may name one: a byte
# that is not UTF-8 and 100 characters. Root only (and where cgroup v2 is mounted).
v2=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
owner_want=""
if [[ $(id -u) == 0 && -n $v2 ]]; then
  cgroup=$v2/gpuclean-fleet-$$-$'\xff'-$(printf 'x%.0s' {1..100})
  if mkdir "$cgroup" && echo "$orphan" >"$cgroup/cgroup.procs"; then
    # The label gpuclean must give it: U+FFFD for the byte, cut to 64 characters with "…".
    owner_want=$(PYTHONIOENCODING=utf-8 python3 -c 'import sys
path = "/" + sys.argv[1].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
print(path if len(path) <= 64 else path[:63] + "\u2026")' "${cgroup#"$v2"/}")
  else
    skip "cannot make a cgroup v2 group at $v2 for B's owner label"
    rmdir "$cgroup" 2>/dev/null
    cgroup=""
  fi
else
  skip "B's owner label (needs root and a cgroup v2 mount)"
fi
cat >"$work/b.conf" <<CONF
uuid 0 GPU-node-b
used 0 $((10 * GiB))
reserved 0 $reserve
process 0 compute $orphan $((8 * GiB))
process 0 compute $active $((2 * GiB))
CONF
exporter b "$port_b"

# C: the GPU is lost: NVML loads but cannot read its memory.
printf 'uuid 0 GPU-node-c\nfail nvmlDeviceGetMemoryInfo_v2 15\nfail nvmlDeviceGetMemoryInfo 15\n' \
  >"$work/c.conf"
exporter c "$port_c"

# D: a session leader that started the heir and exited; NVML still counts 4 GiB for it.
# shellcheck disable=SC2016 # $1, $$ and $! are the inner bash's
read -r leader heir < <(setsid bash -c 'sleep 600 3<"$1" >/dev/null 2>&1 & echo $$ $!' _ "$work/d.dev")
pids+=("$heir")
heir_ready() { holds "$heir" "$work/d.dev" && [[ ! -e /proc/$leader ]]; }
check "D's heir (pid $heir) holds d.dev; its session leader (pid $leader) is gone" \
  until_ok 10 heir_ready
d_conf() { # the scenario, written whole and renamed in (the next textfile run reads it)
  cat >"$work/d.conf.new"
  mv "$work/d.conf.new" "$work/d.conf"
}
d_conf <<CONF
uuid 0 GPU-node-d
used 0 $((4 * GiB))
reserved 0 $reserve
process 0 compute $leader $((4 * GiB))
CONF
mkdir "$work/textfile"
mkfifo "$work/tick"
# The timer: one gpuclean run a second. `read -t 1` on a FIFO nobody writes is the wait (no
# sleep process to leave behind); TERM ends the loop after the current run. Each run holds
# d.lock, so that the test can change D's machine between two runs (below).
(
  trap 'exit 0' TERM
  while :; do
    LD_LIBRARY_PATH=$fake FAKE_NVML_CONFIG=$work/d.conf flock "$work/d.lock" \
      "$G" metrics --textfile "$work/textfile/gpuclean.prom" --device-glob "$work/d.dev" \
      >>"$work/d.log" 2>&1
    read -r -t 1 <>"$work/tick"
  done
) &
pids+=($!)
prometheus-node-exporter --web.listen-address="127.0.0.1:$port_d" --collector.disable-defaults \
  --collector.textfile --collector.textfile.directory="$work/textfile" \
  --web.disable-exporter-metrics >"$work/node_exporter.log" 2>&1 &
pids+=($!)

# A fifth target serves a label value that is not UTF-8, as gpuclean would without cleaning.
mkdir "$work/raw"
printf 'gpuclean_holder_memory_bytes{gpu="0",pid="1",owner="/a\xffb"} 1\n' >"$work/raw/metrics"
python3 -m http.server "$port_raw" --bind 127.0.0.1 --directory "$work/raw" \
  >"$work/raw.log" 2>&1 &
pids+=($!)

for port in "$port_a" "$port_b" "$port_c" "$port_d" "$port_raw"; do
  until_ok 20 serves "$port" || fail "nothing serves /metrics on 127.0.0.1:$port"
done
textfile_served() { curl -sf "http://127.0.0.1:$port_d/metrics" | grep -q '^gpuclean_scan_success 1'; }
check "node_exporter serves D's textfile" until_ok 20 textfile_served

# ---- Prometheus
cat >"$work/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files: [$work/alerts.yml, $work/recording.yml]
scrape_configs:
  - job_name: gpuclean
    static_configs: [{targets: ["127.0.0.1:$port_a", "127.0.0.1:$port_b", "127.0.0.1:$port_c"]}]
  - job_name: node
    static_configs: [{targets: ["127.0.0.1:$port_d"]}]
  - job_name: raw
    static_configs: [{targets: ["127.0.0.1:$port_raw"]}]
YAML
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/data" \
  --web.listen-address="127.0.0.1:$port_prom" >"$work/prometheus.log" 2>&1 &
pids+=($!)
prometheus_started=$SECONDS
api="http://127.0.0.1:$port_prom/api/v1"

# An instant query's series, one "LABEL=VALUE,... VALUE" line each (labels sorted; only the
# LABELs named, when any are), or nothing.
query() { # PROMQL [LABEL...]
  curl -sf --get --data-urlencode "query=$1" "$api/query" | python3 -c 'import json, sys
keep = sys.argv[1:]
for r in json.load(sys.stdin)["data"]["result"]:
    m = {k: v for k, v in r["metric"].items() if not keep or k in keep}
    print(",".join(f"{k}={m[k]}" for k in sorted(m)), r["value"][1])' "${@:2}" 2>/dev/null
}
value_is() { # PROMQL WANT: the query has one series, and its value is WANT
  local got
  got=$(query "$1")
  [[ $got != *$'\n'* && ${got##* } == "$2" ]]
}
# The firing alerts as "ALERTNAME INSTANCE [PID]" lines, sorted.
firing() {
  curl -sf "$api/alerts" | python3 -c 'import json, sys
lines = [" ".join(filter(None, [a["labels"]["alertname"], a["labels"].get("instance", ""),
                                a["labels"].get("pid", "")]))
         for a in json.load(sys.stdin)["data"]["alerts"] if a["state"] == "firing"]
print("\n".join(sorted(lines)))' 2>/dev/null # code point order, as LC_ALL=C sort
}
firing_is() { [[ $(firing) == "$(LC_ALL=C sort <<<"$1")" ]]; } # WANT: lines in any order

A=127.0.0.1:$port_a B=127.0.0.1:$port_b C=127.0.0.1:$port_c D=127.0.0.1:$port_d
for target in "$A" "$B" "$C" "$D"; do
  check "Prometheus scrapes $target: up = 1" until_ok 40 value_is "up{instance=\"$target\"}" 1
done
raw_refused() { curl -sf "$api/targets" | grep -q 'invalid UTF-8 label value'; }
check "negative control: the target with a label value that is not UTF-8 is refused" \
  until_ok 20 raw_refused

series_b=$(query "gpuclean_holder_memory_bytes{instance=\"$B\"}" pid class user owner gpu)
check "B: one per-holder series, the orphan's 8 GiB on GPU 0 (got: ${series_b:-none})" \
  test "$(wc -l <<<"$series_b")" = 1 -a "${series_b%% *}" != "" -a "${series_b##* }" = $((8 * GiB))
b_labels() { [[ $series_b == "class=orphan,"* && $series_b == *",pid=$orphan,user=$(id -un) "* ]]; }
check "B: the series names class orphan, pid $orphan, user $(id -un)" b_labels
b_owner() { [[ $series_b == *",owner=$owner_want,"* ]]; }
if [[ -n $owner_want ]]; then
  check "B: its owner label is the cgroup path, made UTF-8 and cut to 64 characters" b_owner
fi
check "negative control: B's healthy holder (pid $active) is counted as a problem in use" \
  value_is "gpuclean_problems{instance=\"$B\",kind=\"in-use\"}" 1
check "B's healthy holder has no per-holder series" \
  test -z "$(query "gpuclean_holder_memory_bytes{pid=\"$active\"}")"
check "D (textfile): the heir's series, class heir" \
  until_ok 10 value_is "gpuclean_holder_memory_bytes{instance=\"$D\",pid=\"$heir\",class=\"heir\"}" $((4 * GiB))

want="GpucleanLeftoverHoldsMemory $B $orphan
GpucleanLeftoverHoldsMemory $D $heir
GpucleanNvmlFailing $C"
check "exactly B's and D's leftovers and C's NVML failure fire" until_ok 30 firing_is "$want"
echo "  (firing $((SECONDS - prometheus_started)) s after Prometheus started)"
[[ $(firing) == "$want" ]] || { echo "  firing now:"; firing | sed 's/^/    /'; }

# ---- what leftovers cost: GiB-hours per node over the last day (recording.yml)
per_node=instance:gpuclean_leftover_memory_gib_hours:increase1d
per_class=instance_class:gpuclean_leftover_memory_gib_hours:increase1d
positive() { [[ $(query "$1 > 0") == *" "* ]]; } # PROMQL: one series at least, above 0
check "B's orphan: a positive GiB-hours figure for B" until_ok 20 positive "$per_node{instance=\"$B\"}"
check "D's heir: a positive GiB-hours figure for D" until_ok 20 positive "$per_node{instance=\"$D\"}"
check "by class: only B's orphans and D's heirs have lost anything" \
  until_ok 10 value_is "count($per_class > 0)" 2
check "  ... B's as class orphan, D's as class heir" value_is \
  "count($per_class{instance=\"$B\",class=\"orphan\"} > 0 or $per_class{instance=\"$D\",class=\"heir\"} > 0)" 2
figures=$(query "$per_node" instance)
gauges=$(query 'sum by (instance) (gpuclean_leftover_memory_bytes)' instance)
of() { grep -F "instance=$2 " <<<"$1" | sed 's/^.* //'; } # LINES INSTANCE: its value
check "B's gauge: the orphan's 8 GiB, not the healthy holder's 2 GiB; D's: the heir's 4 GiB" \
  test "$(of "$gauges" "$B")" = $((8 * GiB)) -a "$(of "$gauges" "$D")" = $((4 * GiB))
check "negative control: the clean A records 0 GiB-hours (a series, at 0)" test "$(of "$figures" "$A")" = 0
# The counter's growth over the scrapes Prometheus stored, per second of its node's scan times
# (from the same scrapes): the gauge, 8 GiB for B and 4 GiB for D (the left Riemann sum; to the
# timestamps' microseconds).
grew_per_second() { # INSTANCE: bytes held, as Prometheus saw the counter grow
  local counter="gpuclean_leftover_memory_byte_seconds_total{instance=\"$1\"}"
  local scans="gpuclean_last_scan_timestamp_seconds{instance=\"$1\"}"
  query "sum(max_over_time(${counter}[1d]) - min_over_time(${counter}[1d])) /
         sum(max_over_time(${scans}[1d]) - min_over_time(${scans}[1d]))" | sed 's/^.* //'
}
near() { awk -v got="$1" -v want="$2" 'BEGIN { exit !(got != "" && (got / want - 1)^2 < 1e-10) }'; }
grew_b=$(grew_per_second "$B") grew_d=$(grew_per_second "$D")
check "B's counter grew by 8 GiB per second of its scans (got ${grew_b:-nothing} B)" near "$grew_b" $((8 * GiB))
check "D's counter, read back from its textfile at each run, by 4 GiB per second (got ${grew_d:-nothing} B)" \
  near "$grew_d" $((4 * GiB))
echo "  GiB-hours lost to leftovers over the last day, per node, $((SECONDS - prometheus_started)) s after Prometheus started:"
for node in A B C D; do
  echo "    $node ${!node}: $(of "$figures" "${!node}") (gauge: $(of "$gauges" "${!node}") bytes)"
done

# ---- clean D
# The real driver frees a killed holder's memory within ~0.15 s; here the test plays the driver,
# so the kill and the new scenario happen between two textfile runs (under d.lock): no run sees
# the heir gone but its memory still counted (which would be foreign memory, another alert).
exec 9>"$work/d.lock"
flock 9
kill -KILL "$heir"
check "D's heir is gone" until_ok 10 not holds "$heir" "$work/d.dev"
d_conf <<CONF
uuid 0 GPU-node-d
used 0 0
reserved 0 $reserve
CONF
flock -u 9
exec 9>&-
want_after="GpucleanLeftoverHoldsMemory $B $orphan
GpucleanNvmlFailing $C"
t0=$SECONDS
check "D is clean in Prometheus' eyes: gpuclean_clean = 1" \
  until_ok 30 value_is "gpuclean_clean{instance=\"$D\"}" 1
check "D's alert resolves; B's and C's go on firing" until_ok 30 firing_is "$want_after"
echo "  (resolved $((SECONDS - t0)) s after the kill and release)"
check "D's leftover alert fired before (ALERTS over the test)" \
  value_is "count(count_over_time(ALERTS{alertname=\"GpucleanLeftoverHoldsMemory\",alertstate=\"firing\",instance=\"$D\"}[10m]))" 1
check "D never had another alert, pending or firing (ALERTS over the test)" \
  value_is "count(count by (alertname) (count_over_time(ALERTS{instance=\"$D\"}[10m])))" 1
check "A had no alert at any time, pending or firing (ALERTS over the test)" \
  test -z "$(query "count_over_time(ALERTS{instance=\"$A\"}[10m])")"

echo "  series per scrape (scrape_samples_scraped): $(query 'scrape_samples_scraped' instance | tr '\n' ' ')"
if ((failed > 0)); then
  for log in prometheus a b c d node_exporter; do
    echo "--- $log.log (tail)"
    tail -15 "$work/$log.log"
  done
fi
echo "fleet test: $((SECONDS - started)) s"
finish "fleet test"
