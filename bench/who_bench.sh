#!/usr/bin/env bash
# who_bench.sh: time `gpuclean who` against fuser, lsof -t and a minimal C /proc scan, all on
# the same crowd of processes (bench/crowd.c) in the same run. See bench/README.md.
#
#   bench/who_bench.sh [--gpuclean PATH] [-n PROCS] [-f FDS] [-h HOLDERS] [-z ZOMBIE_LED]
#                      [--runs N] [--threads-list "1 2 4"] [--skip-lsof] [--lifetime S]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

gpuclean="$repo/build/gpuclean"
n=2000 f=50 h=40 z=10
runs=7
threads_list="1 2 4"
skip_lsof=0
lifetime=600

usage() {
  cat <<EOF
usage: $0 [options]
  --gpuclean PATH       gpuclean binary (default: build/gpuclean under the repository root)
  -n PROCS              crowd processes (default $n)
  -f FDS                open descriptors per crowd process (default $f, at least 7)
  -h HOLDERS            crowd processes that also hold the target (default $h)
  -z ZOMBIE_LED         holders whose main thread has exited, state Zl (default $z)
  --runs N              timed runs per tool, after one untimed warm-up run (default $runs)
  --threads-list LIST   gpuclean --threads values for the scaling table (default "$threads_list")
  --skip-lsof           do not run lsof (it can be slow on a large crowd)
  --lifetime S          the crowd ends itself after S seconds in any case (default $lifetime)
  --help                this text
EOF
}

die() {
  echo "who_bench: $*" >&2
  exit 1
}
need_value() { [[ $# -ge 2 ]] || die "$1 needs a value"; }
need_uint() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 needs a number, got '$2'"; }

while (($#)); do
  case $1 in
    --gpuclean) need_value "$@"; gpuclean=$2; shift 2 ;;
    -n) need_value "$@"; need_uint "$1" "$2"; n=$2; shift 2 ;;
    -f) need_value "$@"; need_uint "$1" "$2"; f=$2; shift 2 ;;
    -h) need_value "$@"; need_uint "$1" "$2"; h=$2; shift 2 ;;
    -z) need_value "$@"; need_uint "$1" "$2"; z=$2; shift 2 ;;
    --runs) need_value "$@"; need_uint "$1" "$2"; runs=$2; shift 2 ;;
    --threads-list) need_value "$@"; threads_list=$2; shift 2 ;;
    --skip-lsof) skip_lsof=1; shift ;;
    --lifetime) need_value "$@"; need_uint "$1" "$2"; lifetime=$2; shift 2 ;;
    --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done
((runs >= 1)) || die "--runs must be at least 1"
((runs >= 5)) || echo "who_bench: note: --runs $runs (fewer than 5 runs: medians are rough)" >&2
for t in $threads_list; do
  [[ $t =~ ^[1-9][0-9]*$ ]] || die "--threads-list: bad thread count '$t'"
done
[[ $gpuclean == /* ]] || gpuclean="$PWD/$gpuclean"
[[ -x $gpuclean ]] || die "no gpuclean at $gpuclean (build it, or pass --gpuclean)"
command -v cc >/dev/null || die "cc not found"
command -v python3 >/dev/null || die "python3 not found (it parses gpuclean's JSON)"

# Peak RSS: GNU time if installed; as root on Debian, install it (only if missing).
time_bin=""
if [[ -x /usr/bin/time ]]; then
  time_bin=/usr/bin/time
elif [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
  echo "who_bench: installing GNU time for peak RSS" >&2
  if DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null 2>&1 ||
    { apt-get update -qq >/dev/null 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time >/dev/null 2>&1; }; then
    time_bin=/usr/bin/time
  fi
fi
fuser_bin=$(command -v fuser || true)
lsof_bin=""
((skip_lsof)) || lsof_bin=$(command -v lsof || true)

# ---------------------------------------------------------------------------------------------
# The crowd, and making sure it never outlives this script.

tmp=""
crowd_pid=""
crowd_bin=""

# True while the crowd parent this script started runs. Checks that the PID still is our
# crowd binary (arg0) and not a zombie, so nothing else is ever signalled.
crowd_alive() {
  [[ -n $crowd_pid ]] || return 1
  local stat arg0
  { read -r stat <"/proc/$crowd_pid/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != [ZX] ]] || return 1
  { IFS= read -r -d '' arg0 <"/proc/$crowd_pid/cmdline"; } 2>/dev/null || return 1
  [[ $arg0 == "$crowd_bin" ]]
}

# True while the crowd parent's PID exists and is not a zombie: right after `&` it may still be
# the forked shell, not yet our crowd binary. Never signal on this alone.
crowd_running() {
  [[ -n $crowd_pid ]] || return 1
  local stat
  { read -r stat <"/proc/$crowd_pid/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != [ZX] ]]
}

# True while PID is a crowd process with at least one live thread (a zombie-led one has a
# zombie leader, an empty cmdline and a live second thread).
live_crowd_process() {
  local pid=$1 stat comm task tstat
  { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || return 1
  comm=${stat#*(}
  comm=${comm%)*}
  [[ $comm == crowd ]] || return 1
  for task in /proc/"$pid"/task/*/stat; do
    { read -r tstat <"$task"; } 2>/dev/null || continue
    tstat=${tstat##*) }
    [[ ${tstat%% *} == [ZX] ]] || return 0
  done
  return 1
}

# Crowd processes (from the crowd's own PID list) still alive.
count_leftovers() {
  local count=0 pid
  if [[ -n $tmp && -s $tmp/holders.all ]]; then
    while read -r pid; do
      live_crowd_process "$pid" && count=$((count + 1))
    done <"$tmp/holders.all"
  fi
  echo "$count"
}

# Waits up to $1 seconds for the crowd parent to be gone.
wait_crowd_gone() {
  local deadline=$((SECONDS + $1))
  while crowd_alive; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

stop_crowd() {
  [[ -n $crowd_pid ]] || return 0
  local deadline=$((SECONDS + 3))
  while crowd_running && ! crowd_alive && ((SECONDS < deadline)); do
    sleep 0.05  # started but not yet exec'd: let it become the crowd, then stop it
  done
  if crowd_alive; then
    kill -TERM "$crowd_pid" 2>/dev/null || true
    if ! wait_crowd_gone 30 && crowd_alive; then
      # Its children have PR_SET_PDEATHSIG(SIGKILL): they go with it.
      echo "who_bench: crowd parent $crowd_pid ignored SIGTERM; sending SIGKILL" >&2
      kill -KILL "$crowd_pid" 2>/dev/null || true
      wait_crowd_gone 30 || echo "who_bench: crowd parent $crowd_pid still there" >&2
    fi
  fi
  crowd_alive || wait "$crowd_pid" 2>/dev/null || true
  crowd_pid=""
  local left
  deadline=$((SECONDS + 30))
  left=$(count_leftovers)
  while ((left > 0 && SECONDS < deadline)); do
    sleep 0.2
    left=$(count_leftovers)
  done
  crowd_leftovers=$left
}

crowd_leftovers=0
# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  stop_crowd
  if ((crowd_leftovers > 0)); then
    echo "who_bench: WARNING: $crowd_leftovers crowd processes still alive (they end by alarm)" >&2
  fi
  [[ -n $tmp ]] && rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

tmp=$(mktemp -d "${TMPDIR:-/tmp}/who_bench.XXXXXX")
mkdir "$tmp/out"
crowd_bin="$tmp/crowd"
minimal_bin="$tmp/minimal_scan"
cc -O2 -pthread -o "$crowd_bin" "$here/crowd.c"
cc -O2 -o "$minimal_bin" "$here/minimal_scan.c"
: >"$tmp/target"
target=$(realpath "$tmp/target")
pidfile="$tmp/holders"

tasks_now=$(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)
pid_max=$(cat /proc/sys/kernel/pid_max)
ulimit_u=$(ulimit -u)
if ((tasks_now + n + z + 256 > pid_max)); then
  die "pid_max $pid_max too small for $tasks_now tasks + a crowd of $n"
fi
if [[ $ulimit_u != unlimited && $(id -u) -ne 0 ]] && ((tasks_now + n + z + 256 > ulimit_u)); then
  die "ulimit -u $ulimit_u too small for a crowd of $n"
fi

# Started from this shell itself, so its PR_SET_PDEATHSIG(SIGTERM) fires if this script dies.
"$crowd_bin" "$target" "$pidfile" -n "$n" -f "$f" -h "$h" -z "$z" -l "$lifetime" \
  </dev/null >"$tmp/crowd.log" 2>&1 &
crowd_pid=$!

deadline=$((SECONDS + 180))
until [[ -e $pidfile ]]; do
  if ! crowd_running; then
    cat "$tmp/crowd.log" >&2
    die "the crowd exited before it was ready"
  fi
  if ((SECONDS >= deadline)); then
    cat "$tmp/crowd.log" >&2
    die "the crowd was not ready after 180 s"
  fi
  sleep 0.1
done
holders_found=$(wc -l <"$pidfile")
((holders_found == h)) || die "the crowd reports $holders_found holders, expected $h"
zl_states=0
while read -r pid; do
  { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || continue
  stat=${stat##*) }
  [[ ${stat%% *} == Z ]] && zl_states=$((zl_states + 1))
done <"$pidfile.zl"
((zl_states == z)) || die "only $zl_states of $z zombie-led holders show state Z"

# ---------------------------------------------------------------------------------------------
# The measurements: one untimed warm-up round, then --runs rounds, each round running every
# tool once in turn (interleaved, so drift on the machine hits all tools alike).

default_threads=$(nproc)
((default_threads <= 16)) || default_threads=16
ids=(gc-1 gc-default)
for t in $threads_list; do
  [[ $t == 1 ]] || ids+=("gc-$t")
done
ids+=(minimal)
[[ -n $fuser_bin ]] && ids+=(fuser)
[[ -n $lsof_bin ]] && ids+=(lsof)

# Sets CMD to the command line of tool $1.
set_cmd() {
  case $1 in
    gc-default) CMD=("$gpuclean" who --device-glob "$target" --json) ;;
    gc-*) CMD=("$gpuclean" who --device-glob "$target" --json --threads "${1#gc-}") ;;
    minimal) CMD=("$minimal_bin" "$target") ;;
    fuser) CMD=("$fuser_bin" "$target") ;;
    lsof) CMD=("$lsof_bin" -t "$target") ;;
    *) die "unknown tool $1" ;;
  esac
}

# Runs tool $1 once as run $2: stdout to out/ID.RUN, wall time (µs) and exit status to times.tsv.
time_one() {
  local id=$1 run=$2 err rc=0 t0 t1
  set_cmd "$id"
  err="$tmp/out/$id.$run.err"
  # fuser writes its PIDs to stdout and everything else (names, access letters, complaints
  # about unreadable /proc entries) to stderr; lsof complains on stderr. Discard both.
  [[ $id == fuser || $id == lsof ]] && err=/dev/null
  t0=${EPOCHREALTIME//[!0-9]/}
  "${CMD[@]}" >"$tmp/out/$id.$run" 2>"$err" || rc=$?
  t1=${EPOCHREALTIME//[!0-9]/}
  printf '%s\t%s\t%s\t%s\n' "$id" "$run" "$((t1 - t0))" "$rc" >>"$tmp/times.tsv"
}

# Peak RSS (KiB) of one more run of tool $1.
peak_rss() {
  local id=$1
  set_cmd "$id"
  if [[ -n $time_bin ]]; then
    "$time_bin" -f %M -o "$tmp/out/$id.rss" "${CMD[@]}" >/dev/null 2>&1 || true
  else
    python3 -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "${CMD[@]}" >"$tmp/out/$id.rss" || true
  fi
}

procs_now=$(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)
gc_rev=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo "no git")
gc_rev="tree $gc_rev, binary built $(date -r "$gpuclean" '+%Y-%m-%d %H:%M:%S')"
echo "who_bench $(date '+%Y-%m-%d %H:%M:%S %z')  kernel $(uname -r)  nproc $(nproc)  crowd n=$n f=$f h=$h z=$z  runs $runs (+1 warm-up)"
echo "  processes in /proc: $procs_now  tasks: $(awk '{ split($4, a, "/"); print a[2] }' /proc/loadavg)  pid_max: $pid_max  ulimit -u: $ulimit_u  gpuclean: $gpuclean ($gc_rev)"
echo "  gpuclean default threads: min(nproc, 16, processes/64) = $default_threads (auto_threads in src/procfs/holder_scan.cpp)  fuser: ${fuser_bin:-missing}  lsof: ${lsof_bin:-skipped/missing}  peak RSS via: ${time_bin:-python3 getrusage}"
echo "  $(sed -n 1p "$tmp/crowd.log")"

: >"$tmp/times.tsv"
for ((run = 0; run <= runs; run++)); do
  for id in "${ids[@]}"; do
    time_one "$id" "$run"
  done
done
for id in "${ids[@]}"; do
  peak_rss "$id"
done

# The crowd must still be whole, or the numbers mean nothing.
alive=0
while read -r pid; do
  live_crowd_process "$pid" && alive=$((alive + 1))
done <"$pidfile"
((alive == h)) || echo "who_bench: WARNING: only $alive of $h holders alive after the runs" >&2

# ---------------------------------------------------------------------------------------------
# The report.

if python3 - "$tmp" "$pidfile" "$h" "$z" "$runs" "$default_threads" "$threads_list" "${ids[@]}" <<'PY'
import json, os, re, statistics, sys

tmp, pidfile, H, Z, runs, default_threads, threads_list = sys.argv[1:8]
ids = sys.argv[8:]
H, Z, runs = int(H), int(Z), int(runs)
out = os.path.join(tmp, "out")

def pids_of(path):
    with open(path) as f:
        return {int(x) for x in f.read().split()}

holders = pids_of(pidfile)
zombie_led = pids_of(pidfile + ".zl")

label = {"gc-1": "gpuclean --threads 1",
         "gc-default": "gpuclean (default threads)",
         "minimal": "minimal_scan", "fuser": "fuser", "lsof": "lsof -t"}
for i in ids:
    if i.startswith("gc-") and i not in label:
        label[i] = f"gpuclean --threads {i[3:]}"

times = {i: {} for i in ids}
rcs = {i: {} for i in ids}
with open(os.path.join(tmp, "times.tsv")) as f:
    for line in f:
        i, run, us, rc = line.split("\t")
        times[i][int(run)] = int(us)
        rcs[i][int(run)] = int(rc)

def parse(i, run):
    """PIDs the tool reported in run `run`, and gpuclean's own scan seconds (or None)."""
    path = os.path.join(out, f"{i}.{run}")
    text = open(path).read()
    if i.startswith("gc-"):
        doc = json.loads(text)
        return {int(x["pid"]) for x in doc.get("holders", [])}, doc.get("scan", {}).get("seconds")
    return {int(x) for x in re.findall(r"\d+", text)}, None

def state(pid):
    try:
        stat = open(f"/proc/{pid}/stat").read()
        tasks = sorted(os.listdir(f"/proc/{pid}/task"), key=int)
        fds = len(os.listdir(f"/proc/{pid}/fd"))
    except OSError as e:
        return f"gone ({e.strerror})"
    st = stat[stat.rindex(")") + 2:].split()[0]
    return f"state {st}, tasks {','.join(tasks)}, {fds} entries in /proc/{pid}/fd"

rows, notes = {}, []
for i in ids:
    timed = [r for r in range(1, runs + 1) if r in times[i]]
    found, false_pos, scans, errors = [], [], [], []
    missed_all, fp_all = set(), set()
    for r in [0] + timed:
        rc = rcs[i].get(r)
        ok_rc = {0, 1}
        if rc not in ok_rc:
            err = os.path.join(out, f"{i}.{r}.err")
            msg = open(err).read().strip().splitlines()[-1:] if os.path.exists(err) else []
            errors.append(f"run {r}: exit {rc} {' '.join(msg)}")
        try:
            got, scan = parse(i, r)
        except (ValueError, KeyError, TypeError) as e:
            errors.append(f"run {r}: unreadable output ({e})")
            continue
        if r == 0:
            continue
        found.append(len(got & holders))
        false_pos.append(len(got - holders))
        missed_all |= holders - got
        fp_all |= got - holders
        if scan is not None:
            scans.append(scan * 1000)
    us = [times[i][r] for r in timed]
    rss = None
    try:
        rss = int(open(os.path.join(out, f"{i}.rss")).read().split()[-1])
    except (OSError, ValueError, IndexError):
        pass
    rows[i] = dict(found=found, fp=false_pos, ms=[u / 1000 for u in us], scan=scans, rss=rss,
                   errors=errors)
    if errors:
        notes.append(f"{label[i]}: errors: " + "; ".join(errors[:3]))
    if missed_all:
        zl = len(missed_all & zombie_led)
        notes.append(f"{label[i]}: missed {len(missed_all)} holder(s) in some run: {zl} zombie-led, "
                     f"{len(missed_all) - zl} ordinary")
        if i.startswith("gc-") or len(missed_all) - zl > 0:
            for pid in sorted(missed_all):
                kind = "zombie-led" if pid in zombie_led else "ordinary"
                notes.append(f"    missed {pid} ({kind}): {state(pid)}")
    if fp_all:
        notes.append(f"{label[i]}: {len(fp_all)} false positive(s): "
                     + ", ".join(f"{p} ({state(p)})" for p in sorted(fp_all)[:10]))

def span(values):
    if not values:
        return "-"
    lo, hi = min(values), max(values)
    return f"{lo}" if lo == hi else f"{lo}-{hi}"

def med(i):
    return statistics.median(rows[i]["ms"]) if i in rows and rows[i]["ms"] else None

print()
head = f"{'tool':<28} {'found':>9} {'false+':>6} {'median ms':>10} {'min ms':>9} {'max ms':>9} {'scan ms':>8} {'peak RSS':>9}"
print(head)
print("-" * len(head))
for i in ids:
    r = rows[i]
    found = "ERR " + span(r["found"]) if r["errors"] else span(r["found"])
    ms = r["ms"]
    scan = f"{statistics.median(r['scan']):8.1f}" if r["scan"] else f"{'-':>8}"
    rss = f"{r['rss'] / 1024:6.1f} MiB" if r["rss"] else f"{'-':>9}"
    print(f"{label[i]:<28} {found + '/' + str(H):>9} {span(r['fp']):>6} {statistics.median(ms):10.1f} "
          f"{min(ms):9.1f} {max(ms):9.1f} {scan} {rss}")

print()
print("gpuclean scaling (--threads T)")
shead = f"{'threads':>7} {'median ms':>10} {'speed-up':>9} {'scan ms':>8} {'scan speed-up':>14}"
print(shead)
print("-" * len(shead))
base = med("gc-1")
base_scan = statistics.median(rows["gc-1"]["scan"]) if rows["gc-1"]["scan"] else None
for t in threads_list.split():
    i = "gc-1" if t == "1" else f"gc-{t}"
    m = med(i)
    s = statistics.median(rows[i]["scan"]) if rows[i]["scan"] else None
    sp = f"{base / m:8.2f}x" if m else f"{'-':>9}"
    ssp = f"{base_scan / s:13.2f}x" if s and base_scan else f"{'-':>14}"
    sc = f"{s:8.1f}" if s is not None else f"{'-':>8}"
    print(f"{t:>7} {m:10.1f} {sp} {sc} {ssp}")

print()
print("ratios of median wall times (below 1: the first is faster)")
pairs = [("gc-default", "fuser"), ("gc-1", "minimal"), ("gc-default", "minimal"),
         ("fuser", "minimal"), ("lsof", "minimal")]
for a, b in pairs:
    ma, mb = med(a), med(b)
    name = f"{label.get(a, a)} / {label.get(b, b)}"
    print(f"  {name:<50} {ma / mb:7.2f}" if ma and mb else f"  {name:<50} {'n/a':>7}")

if notes:
    print()
    print("notes")
    for line in notes:
        print("  " + line)
sys.exit(3 if any(rows[i]["errors"] for i in ids) else 0)
PY
then
  report_rc=0
else
  report_rc=$?
  echo "who_bench: some tool failed (see notes)" >&2
fi

stop_crowd
left_pgrep=$(pgrep -c -f -- "$crowd_bin" || true)
echo
echo "crowd stopped: $crowd_leftovers crowd processes left (by the crowd's PID list; pgrep -f: ${left_pgrep:-0})"
exit "$report_rc"
