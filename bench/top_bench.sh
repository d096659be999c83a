#!/usr/bin/env bash
# top_bench.sh: what `gpuclean top` costs while it runs (the contract's targets: under 2% of one
# core and under 15 MiB RSS at 1 Hz with 2,000 processes), next to what a user would otherwise
# leave running: `watch -n1 fuser FILE`, `watch -n1 nvidia-smi` and nvitop (each only where it
# applies). Every tool runs alone in a private tmux server (200x50), on the same crowd of
# processes (bench/crowd.c), for S seconds after a warm-up; CPU and memory come from /proc: the
# tool's own utime+stime and its descendants' (top's NVML helper; watch's children) apart, its
# VmRSS/VmHWM and its live children's. Options: --help.
#
#   bench/top_bench.sh [--gpuclean PATH] [-n PROCS] [-f FDS] [-h HOLDERS] [-z ZOMBIE_LED]
#                      [--seconds S] [--warmup S] [-d DELAY] [--tools LIST] [--tmux PATH]
#                      [--keep DIR] [--lifetime S]
# Functions called through traps, wait_for and eval are beyond what shellcheck follows.
# shellcheck disable=SC2317
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)

gpuclean=$repo/build/gpuclean
n=2000 f=50 h=40 z=10
seconds=60
warmup=5
delay=1
tools=""
top_args=()
tmux_bin=""
keep=""
lifetime=""

usage() {
  cat <<EOF
usage: $0 [options]
  --gpuclean PATH   gpuclean binary (default build/gpuclean under the repository root)
  -n PROCS          crowd processes (default $n; 0: no crowd, and no tool that needs its file)
  -f FDS            open descriptors per crowd process (default $f, at least 7)
  -h HOLDERS        crowd processes that also hold the fake device file (default $h)
  -z ZOMBIE_LED     holders whose main thread has exited (default $z)
  --seconds S       measured seconds per tool (default $seconds)
  --warmup S        seconds each tool runs before the measurement starts (default $warmup)
  -d DELAY          refresh interval of every tool, seconds (default $delay)
  --top-args ARGS   more options for every gpuclean top run, split at spaces
                    (e.g. "--full-scan 120s --threads 1")
  --tools LIST      comma-separated subset of the tools below (default: all that apply)
                      top          gpuclean top -d DELAY --device-glob FILE --no-nvml   (crowd)
                      top-full0    the same with --full-scan 0: a full scan every refresh (crowd)
                      top-nvml     gpuclean top -d DELAY, real devices and NVML  (nvidia-smi)
                      watch-fuser  watch -n DELAY fuser FILE                         (crowd)
                      watch-smi    watch -n DELAY nvidia-smi                    (nvidia-smi)
                      nvitop       python3 -m nvitop --interval DELAY   (nvidia-smi, nvitop)
                      recorder     gpuclean recorder --interval DELAY --device-glob FILE --no-nvml
                                   (crowd; its database in a temp directory)
                      recorder-nvml  gpuclean recorder --interval DELAY, real devices and NVML
                                   (nvidia-smi)
  --tmux PATH       tmux to use (default: tmux on PATH, else \$TMUX_BIN, e.g. the wrapper
                    tests/gpu/carry_tmux.sh writes)
  --keep DIR        save each tool's last screen (tmux capture-pane) as DIR/TOOL.screen.txt
                    and its samples (per-second CPU, RSS) as DIR/TOOL.samples.json
  --lifetime S      the crowd ends itself after S seconds in any case (default: enough)
  --help            this text

Prints one header, one table (CPU as % of one core over the measured seconds; RSS in MiB) and
ratios. Timing never makes it fail: exit 0 when every tool ran, 3 when one did not run or did
not quit as asked, 1 on a set-up error. Needs python3 (\$PYTHON), tmux, cc (the crowd, the pane wrapper);
watch and fuser for their rows. Run it as root (or as the crowd's user) on an idle machine.
EOF
}

die() {
  echo "top_bench: $*" >&2
  exit 1
}
need_value() { [[ $# -ge 2 ]] || die "$1 needs a value"; }
need_uint() { [[ $2 =~ ^[0-9]+$ ]] || die "$1 needs a number, got '$2'"; }
need_num() { [[ $2 =~ ^[0-9]+([.][0-9]+)?$ ]] || die "$1 needs a number, got '$2'"; }

while (($#)); do
  case $1 in
    --gpuclean) need_value "$@"; gpuclean=$2; shift 2 ;;
    -n) need_value "$@"; need_uint "$1" "$2"; n=$2; shift 2 ;;
    -f) need_value "$@"; need_uint "$1" "$2"; f=$2; shift 2 ;;
    -h) need_value "$@"; need_uint "$1" "$2"; h=$2; shift 2 ;;
    -z) need_value "$@"; need_uint "$1" "$2"; z=$2; shift 2 ;;
    --seconds) need_value "$@"; need_uint "$1" "$2"; seconds=$2; shift 2 ;;
    --warmup) need_value "$@"; need_uint "$1" "$2"; warmup=$2; shift 2 ;;
    -d) need_value "$@"; need_num "$1" "$2"; delay=$2; shift 2 ;;
    --top-args) need_value "$@"; read -ra top_args <<<"$2"; shift 2 ;;
    --tools) need_value "$@"; tools=$2; shift 2 ;;
    --tmux) need_value "$@"; tmux_bin=$2; shift 2 ;;
    --keep) need_value "$@"; keep=$2; shift 2 ;;
    --lifetime) need_value "$@"; need_uint "$1" "$2"; lifetime=$2; shift 2 ;;
    --help) usage; exit 0 ;;
    *) usage >&2; die "unknown option: $1" ;;
  esac
done
((seconds >= 1)) || die "--seconds must be at least 1"
[[ $gpuclean == /* ]] || gpuclean=$PWD/$gpuclean
[[ -x $gpuclean ]] || die "no gpuclean at $gpuclean (build it, or pass --gpuclean)"
"$gpuclean" top --help >/dev/null 2>&1 || die "$gpuclean has no working 'top' subcommand"

py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || py=/opt/torch/.venv/bin/python3
command -v "$py" >/dev/null 2>&1 || die "python3 not found (set PYTHON)"
# The interpreter itself, not a launcher script (pyenv's shims are bash scripts that exec it).
py=$("$py" -c 'import sys; print(sys.executable)') || die "$py does not run"
if [[ -z $tmux_bin ]]; then
  tmux_bin=$(command -v tmux || true)
  [[ -n $tmux_bin ]] || tmux_bin=${TMUX_BIN:-}
fi
[[ -n $tmux_bin ]] || die "tmux not found (install it, or pass --tmux / set TMUX_BIN)"
[[ $tmux_bin == */* && $tmux_bin != /* ]] && tmux_bin=$PWD/$tmux_bin
"$tmux_bin" -V >/dev/null 2>&1 || die "$tmux_bin does not run"
if [[ -n $keep ]]; then
  mkdir -p "$keep" || die "cannot create $keep"
  keep=$(cd "$keep" && pwd)
fi
have_smi=0
command -v nvidia-smi >/dev/null 2>&1 && have_smi=1
have_nvitop=0
((have_smi)) && "$py" -c 'import nvitop' >/dev/null 2>&1 && have_nvitop=1
watch_bin=$(command -v watch || true)
fuser_bin=$(command -v fuser || true)

# The tools to run, in this order, and why any is left out.
all_tools=(top top-full0 watch-fuser top-nvml watch-smi nvitop recorder recorder-nvml)
wanted=()
if [[ -n $tools ]]; then
  IFS=, read -ra wanted <<<"$tools"
  for t in "${wanted[@]}"; do
    [[ " ${all_tools[*]} " == *" $t "* ]] || die "--tools: unknown tool '$t'"
  done
else
  wanted=("${all_tools[@]}")
fi
ids=()
skipped=()
for t in "${wanted[@]}"; do
  why=""
  case $t in
    top | top-full0 | recorder) ((n > 0)) || why="no crowd (-n 0)" ;;
    recorder-nvml) ((have_smi)) || why="no nvidia-smi (no NVIDIA driver here)" ;;
    watch-fuser)
      if ((n == 0)); then why="no crowd (-n 0)"
      elif [[ -z $watch_bin ]]; then why="watch not installed"
      elif [[ -z $fuser_bin ]]; then why="fuser not installed"
      fi ;;
    top-nvml) ((have_smi)) || why="no nvidia-smi (no NVIDIA driver here)" ;;
    watch-smi)
      if ((!have_smi)); then why="no nvidia-smi (no NVIDIA driver here)"
      elif [[ -z $watch_bin ]]; then why="watch not installed"
      fi ;;
    nvitop)
      if ((!have_smi)); then why="no nvidia-smi (no NVIDIA driver here)"
      elif ((!have_nvitop)); then why="'$py -c \"import nvitop\"' fails"
      fi ;;
  esac
  if [[ -n $why ]]; then skipped+=("$t: $why"); else ids+=("$t"); fi
done
((${#ids[@]} > 0)) || die "nothing to run (${skipped[*]})"
cc_bin=${CC:-cc}
command -v "$cc_bin" >/dev/null 2>&1 || cc_bin=gcc
command -v "$cc_bin" >/dev/null 2>&1 || die "cc not found (it builds bench/crowd.c and the pane wrapper)"
if ((n > 0)); then
  ((h <= n && z <= h && f >= 7)) || die "need -h <= -n, -z <= -h, -f >= 7"
fi
[[ -n $lifetime ]] || lifetime=$((${#ids[@]} * (seconds + warmup + 30) + 300))

# ---------------------------------------------------------------------------------------------
# Clean-up: only what this script started. The crowd (its parent, checked by its cmdline; it
# SIGKILLs and reaps exactly its own children), the tmux server on this script's own socket
# (kill-server ends the panes, each a wrapper this script started and the tool under it), and
# any tool that did not quit, by PID with its start time checked.

tmp=""
crowd_pid=""
crowd_bin=""
pidfile=""
tmux_up=0
declare -A started_at=()
# A private tmux server: its socket is in this script's temporary folder.
tx() { "$tmux_bin" -S "$tmp/tmux.socket" -f /dev/null "$@"; }
start_time() { local s; s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1; s=${s##*) }; read -ra s <<<"$s"; echo "${s[19]}"; }
track() { local t; t=$(start_time "$1") && started_at[$1]=$t; }
ours() { [[ -n ${started_at[$1]:-} && $(start_time "$1" 2>/dev/null) == "${started_at[$1]}" ]]; }
kill_ours() { # SIGNAL PID
  if ours "$2"; then kill "-$1" "$2" 2>/dev/null || true; fi
}
crowd_alive() {
  [[ -n $crowd_pid ]] && ours "$crowd_pid" || return 1
  local arg0
  { IFS= read -r -d '' arg0 <"/proc/$crowd_pid/cmdline"; } 2>/dev/null || return 1
  [[ $arg0 == "$crowd_bin" ]]
}
stop_crowd() {
  [[ -n $crowd_pid ]] || return 0
  local deadline=$((SECONDS + 30))
  if crowd_alive; then
    kill -TERM "$crowd_pid" 2>/dev/null || true
    while crowd_alive && ((SECONDS < deadline)); do sleep 0.1; done
    if crowd_alive; then
      echo "top_bench: crowd parent $crowd_pid ignored SIGTERM; sending SIGKILL" >&2
      kill -KILL "$crowd_pid" 2>/dev/null || true
    fi
  fi
  wait "$crowd_pid" 2>/dev/null || true
  crowd_pid=""
  # Its children die with it (SIGKILLed and reaped by it; PR_SET_PDEATHSIG besides): check.
  local pid stat left=0
  if [[ -s $pidfile.all ]]; then
    while read -r pid; do
      { read -r stat <"/proc/$pid/stat"; } 2>/dev/null || continue
      [[ $stat == *"(crowd) "[!ZX]* ]] && left=$((left + 1))
    done <"$pidfile.all"
  fi
  ((left == 0)) || echo "top_bench: WARNING: $left crowd processes still alive (they end by alarm)" >&2
}
cleanup() {
  local rc=$? pid
  trap - EXIT INT TERM HUP
  set +e
  ((tmux_up)) && tx kill-server 2>/dev/null
  for pid in "${!started_at[@]}"; do
    [[ $pid == "$crowd_pid" ]] || kill_ours KILL "$pid"
  done
  stop_crowd
  [[ -n $tmp ]] && rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

tmp=$(mktemp -d "${TMPDIR:-/tmp}/top_bench.XXXXXX")
unset TMUX  # a tmux around this script is not the one it drives

# The pane wrapper (C: a python wrapper's fork would count python's RSS as the tool's peak):
# prints a marker line on the main screen, runs the tool, writes "STATUS MAXRSS_KIB CPU_S" (the
# tool's exit status, and its whole tree's peak RSS and CPU time from wait4's rusage) to a
# file, and stays (so the pane stays, for the capture) until tmux ends it with SIGHUP. Only the
# tool's pid is measured, never the wrapper's.
cat >"$tmp/wrap.c" <<'C'
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  printf("top_bench: main screen before the tool\n");
  fflush(stdout);
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    execvp(argv[2], argv + 2);
    perror(argv[2]);
    _exit(127);
  }
  int st = 0;
  struct rusage ru;
  while (wait4(pid, &st, 0, &ru) < 0 && errno == EINTR) {
  }
  const int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
  FILE* f = fopen(tmp, "w");
  if (f != NULL) {
    fprintf(f, "%d %ld %.3f\n", rc, ru.ru_maxrss,
            (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6);
    fclose(f);
    rename(tmp, argv[1]);
  }
  printf("top_bench: the tool exited with status %d\n", rc);
  fflush(stdout);
  for (;;) pause();
}
C
"$cc_bin" -O2 -o "$tmp/wrap" "$tmp/wrap.c" || die "cannot build the pane wrapper"

# The sampler: every INTERVAL seconds for SECONDS, the tool's /proc/PID/stat and status and
# those of all its descendants (through /proc/PID/task/TID/children), and the CPU ticks of
# the EXTRA pids (the tmux server). Writes one JSON document.
cat >"$tmp/sample.py" <<'PY'
import json, os, sys, time
out, seconds, interval, root = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
extra = [int(x) for x in sys.argv[5:]]
HZ = os.sysconf("SC_CLK_TCK")

def stat(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            s = f.read()
    except OSError:
        return None
    fields = s[s.rindex(")") + 2:].split()
    return {"comm": s[s.index("(") + 1:s.rindex(")")], "state": fields[0],
            "ticks": int(fields[11]) + int(fields[12]), "cticks": int(fields[13]) + int(fields[14]),
            "start": int(fields[19])}

def mem(pid):
    r = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key = line.split(":")[0]
                if key in r:
                    r[key] = int(line.split()[1])
    except OSError:
        pass
    return r

def children(pid):
    kids = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids += [int(x) for x in f.read().split()]
        except OSError:
            pass
    return kids

def descendants(pid):
    found, todo = [], children(pid)
    while todo:
        p = todo.pop()
        found.append(p)
        todo += children(p)
    return found

desc = {}  # (pid, start) -> record
cpu_series = []  # the tree's CPU ticks at each sample
def sample(first):
    s = stat(root)
    m = mem(root)
    seen = set()
    for pid in descendants(root):
        st = stat(pid)
        if st is None:
            continue
        key = (pid, st["start"])
        seen.add(key)
        mm = mem(pid)
        r = desc.get(key)
        if r is None:
            r = desc[key] = {"pid": pid, "comm": st["comm"], "at_start": first,
                             "first": st["ticks"] if first else 0,
                             "cfirst": st["cticks"] if first else 0, "max_hwm": 0}
        r.update(last=st["ticks"], clast=st["cticks"], rss=mm["VmRSS"], hwm=mm["VmHWM"])
        r["max_hwm"] = max(r["max_hwm"], mm["VmHWM"])
    for key, r in desc.items():
        r["alive"] = key in seen
    if s is not None:
        cpu_series.append(s["ticks"] + s["cticks"] + sum(r["last"] + r["clast"] for r in desc.values() if r["alive"]))
    return s, m

t0 = time.monotonic()
s0, m0 = sample(True)
x0 = {p: stat(p) for p in extra}
rss_series = [m0["VmRSS"]]
live_children_rss_max = 0
k = 1
while True:
    target = t0 + min(k * interval, seconds)
    time.sleep(max(0.0, target - time.monotonic()))
    s1, m1 = sample(False)
    if s1 is None:
        break
    rss_series.append(m1["VmRSS"])
    live_children_rss_max = max(live_children_rss_max,
                                sum(r["rss"] for r in desc.values() if r["alive"]))
    if target >= t0 + seconds:
        break
    k += 1
t1 = time.monotonic()
x1 = {p: stat(p) for p in extra}
res = {"hz": HZ, "wall": t1 - t0, "alive": s1 is not None and s1["state"] not in "ZX",
       "comm": s0["comm"] if s0 else "?"}
if s0 and s1:
    res["self_s"] = (s1["ticks"] - s0["ticks"]) / HZ
    res["reaped_children_s"] = (s1["cticks"] - s0["cticks"]) / HZ
    res["rss_kib"] = m1["VmRSS"]
    res["hwm_kib"] = m1["VmHWM"]
live = [r for r in desc.values() if r["alive"]]
res["live_children_s"] = sum((r["last"] - r["first"]) + (r["clast"] - r["cfirst"]) for r in live) / HZ
res["children_rss_kib"] = sum(r["rss"] for r in live)
res["children_rss_max_kib"] = live_children_rss_max
res["children_hwm_kib"] = max([r["max_hwm"] for r in desc.values()] or [0])
res["children"] = [{k2: r[k2] for k2 in ("pid", "comm", "at_start", "alive", "rss", "max_hwm")}
                   for r in desc.values()]
res["rss_series_kib"] = rss_series
res["cpu_per_interval_s"] = [(b - a) / HZ for a, b in zip(cpu_series, cpu_series[1:])]
res["extra_s"] = sum((x1[p]["ticks"] - x0[p]["ticks"]) / HZ
                     for p in extra if x0.get(p) and x1.get(p))
json.dump(res, open(out, "w"))
PY

# ---------------------------------------------------------------------------------------------
# The crowd (as bench/who_bench.sh starts it).

target=""
if ((n > 0)); then
  crowd_bin=$tmp/crowd
  "$cc_bin" -O2 -pthread -o "$crowd_bin" "$here/crowd.c"
  : >"$tmp/device"
  target=$(realpath "$tmp/device")
  pidfile=$tmp/holders
  # Started from this shell, so its PR_SET_PDEATHSIG(SIGTERM) fires if this script dies.
  "$crowd_bin" "$target" "$pidfile" -n "$n" -f "$f" -h "$h" -z "$z" -l "$lifetime" \
    </dev/null >"$tmp/crowd.log" 2>&1 &
  crowd_pid=$!
  track "$crowd_pid"
  deadline=$((SECONDS + 180))
  until [[ -e $pidfile ]]; do
    if ! kill -0 "$crowd_pid" 2>/dev/null; then
      cat "$tmp/crowd.log" >&2
      die "the crowd exited before it was ready"
    fi
    ((SECONDS < deadline)) || { cat "$tmp/crowd.log" >&2; die "the crowd was not ready after 180 s"; }
    sleep 0.1
  done
  # Started before the PID file exists, so the start time taken above may be the forked shell's:
  # take it again now that the crowd binary runs.
  track "$crowd_pid"
  [[ $(wc -l <"$pidfile") -eq $h ]] || die "the crowd reports $(wc -l <"$pidfile") holders, expected $h"
fi

# ---------------------------------------------------------------------------------------------
# One tool: started in its own tmux session, measured, stopped.

# The panes get this script's own environment: the tmux wrapper of carry_tmux.sh sets
# LD_LIBRARY_PATH for tmux alone, and the tools must not inherit it.
pane_env=(env)
if [[ -n ${LD_LIBRARY_PATH+set} ]]; then
  pane_env+=("LD_LIBRARY_PATH=$LD_LIBRARY_PATH")
else
  pane_env+=(-u LD_LIBRARY_PATH)
fi
# gpuclean's ncurses is linked in and reads terminfo at run time: the system's folders, and the
# one carried next to a carried tmux.
terminfo_dirs=${TERMINFO_DIRS:-}
[[ -d $(dirname "$tmux_bin")/terminfo ]] && terminfo_dirs+=${terminfo_dirs:+:}$(dirname "$tmux_bin")/terminfo
terminfo_dirs+=${terminfo_dirs:+:}/etc/terminfo:/lib/terminfo:/usr/lib/terminfo:/usr/share/terminfo
pane_env+=("TERMINFO_DIRS=$terminfo_dirs")

label_of() {
  case $1 in
    top) echo "gpuclean top (fake dev, no NVML)" ;;
    top-full0) echo "gpuclean top --full-scan 0" ;;
    top-nvml) echo "gpuclean top (real devs, NVML)" ;;
    watch-fuser) echo "watch -n$delay fuser FILE" ;;
    watch-smi) echo "watch -n$delay nvidia-smi" ;;
    nvitop) echo "nvitop --interval $delay" ;;
    recorder) echo "gpuclean recorder (fake dev)" ;;
    recorder-nvml) echo "gpuclean recorder (NVML)" ;;
  esac
}
set_cmd() {
  case $1 in
    top) CMD=("$gpuclean" top -d "$delay" --device-glob "$target" --no-nvml "${top_args[@]}") ;;
    top-full0) CMD=("$gpuclean" top -d "$delay" --device-glob "$target" --no-nvml "${top_args[@]}" --full-scan 0) ;;
    top-nvml) CMD=("$gpuclean" top -d "$delay" "${top_args[@]}") ;;
    watch-fuser) CMD=("$watch_bin" -n "$delay" "$fuser_bin $target") ;;
    watch-smi) CMD=("$watch_bin" -n "$delay" nvidia-smi) ;;
    nvitop) CMD=("$py" -m nvitop --interval "$delay") ;;
    recorder) CMD=("$gpuclean" recorder --interval "$delay" --device-glob "$target" --no-nvml
      --db "$tmp/recorder/history.db" --socket off --journal off) ;;
    recorder-nvml) CMD=("$gpuclean" recorder --interval "$delay" --db "$tmp/recorder-nvml/history.db"
      --socket off --journal off) ;;
  esac
}

# tmux runs a pane's command through the shell: ARGS quoted for any POSIX sh, as one line.
shell_line() {
  local a line=""
  for a in "$@"; do line+=${line:+ }\'${a//\'/\'\\\'\'}\'; done
  printf '%s' "$line"
}
# PANE's child: the tool (the wrapper's only child).
# Only once it has exec'd: a child whose command line is still the wrapper's is not yet the tool.
tool_of() {
  local kids
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null) || return 1
  read -ra kids <<<"$kids"
  ((${#kids[@]} == 1)) || return 1
  [[ $(tr '\0' ' ' <"/proc/${kids[0]}/cmdline") != "$(tr '\0' ' ' <"/proc/$1/cmdline")" ]] 2>/dev/null || return 1
  echo "${kids[0]}"
}
pane_fmt() { tx display-message -p -t "$1" "$2" 2>/dev/null; }
# Waits up to $1 seconds (polling every 0.1 s) for COMMAND to succeed.
wait_for() {
  local deadline=$((${EPOCHREALTIME/./} + $1 * 1000000))
  shift
  until "$@"; do
    ((${EPOCHREALTIME/./} < deadline)) || return 1
    sleep 0.1
  done
}
alt_off() { [[ $(pane_fmt "$1" '#{alternate_on}') == 0 ]]; }
not_ours() { ! ours "$1"; }

problems=()
run_tool() { # ID
  local id=$1 status=$tmp/$1.status pane tool server screen rows
  set_cmd "$id"
  tx new-session -d -s "$id" -x 200 -y 50 "$(shell_line exec "${pane_env[@]}" "$tmp/wrap" "$status" "${CMD[@]}")"
  tmux_up=1
  pane=$(pane_fmt "$id" '#{pane_pid}')
  server=$(pane_fmt "$id" '#{pid}')
  track "$pane"
  tool=""
  wait_for 10 tool_of "$pane" >/dev/null && tool=$(tool_of "$pane")
  if [[ -z $tool ]]; then
    problems+=("$id: the tool did not start; its pane: $(tx capture-pane -p -t "$id" | grep . | tail -3 | tr '\n' ' ')")
    tx kill-session -t "$id"
    return
  fi
  track "$tool"
  echo "  $(label_of "$id"): pid $tool, pane $(pane_fmt "$id" '#{pane_width}x#{pane_height}'), TERM in pane: $(tr '\0' '\n' <"/proc/$tool/environ" 2>/dev/null | sed -n 's/^TERM=//p')" >&2
  sleep "$warmup"
  if [[ -e $status ]]; then
    problems+=("$id: the tool exited during the warm-up (status $(cut -d' ' -f1 "$status")); its screen: $(tx capture-pane -p -t "$id" | grep . | tail -5 | tr '\n' ' ')")
    tx kill-session -t "$id"
    return
  fi
  "$py" "$tmp/sample.py" "$tmp/$id.json" "$seconds" 1 "$tool" "$server"
  [[ -n $keep ]] && cp "$tmp/$id.json" "$keep/$id.samples.json"
  screen=$tmp/$id.screen.txt
  tx capture-pane -p -t "$id" >"$screen"
  [[ -n $keep ]] && cp "$screen" "$keep/"
  rows="-"
  if [[ -n $pidfile && $id == top* ]]; then
    rows=$(awk 'NR == FNR { holder[$1]; next } ($1 in holder)' "$pidfile" "$screen" | wc -l)
  fi
  echo "$rows" >"$tmp/$id.rows"
  # Stop it: gpuclean top and nvitop with q, watch with SIGTERM (by PID: it is ours).
  case $id in
    top* | nvitop) tx send-keys -t "$id" q ;;
    *) kill_ours TERM "$tool" ;;
  esac
  if ! wait_for 10 test -e "$status"; then
    problems+=("$id: did not quit within 10 s of $([[ $id == top* || $id == nvitop ]] && echo "'q'" || echo SIGTERM); killed")
    kill_ours KILL "$tool"
    wait_for 5 test -e "$status" || true
  fi
  if [[ $id == top* ]]; then
    if wait_for 3 alt_off "$id"; then
      echo "restored" >"$tmp/$id.term"
    else
      echo "NOT restored (alternate screen still on)" >"$tmp/$id.term"
      problems+=("$id: the terminal was not restored after 'q' (tmux: alternate_on=1)")
    fi
    [[ $(pane_fmt "$id" '#{cursor_flag}') == 1 ]] || problems+=("$id: the cursor stays hidden after 'q'")
  fi
  tx kill-session -t "$id" 2>/dev/null || true
  wait_for 5 not_ours "$pane" || kill_ours KILL "$pane"
}

# ---------------------------------------------------------------------------------------------
# The run and the report.

gc_rev=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo "no git")
crowd_text="crowd n=$n f=$f h=$h z=$z"
((n > 0)) || crowd_text="no crowd (-n 0)"
echo "top_bench $(date '+%Y-%m-%d %H:%M:%S %z')  kernel $(uname -r)  nproc $(nproc)  $crowd_text  ${seconds} s per tool (+${warmup} s warm-up)  delay ${delay} s"
echo "  processes in /proc: $(find /proc -maxdepth 1 -name '[0-9]*' | wc -l)  gpuclean: $gpuclean (tree $gc_rev, built $(date -r "$gpuclean" '+%Y-%m-%d %H:%M:%S'))  $("$tmux_bin" -V) ($tmux_bin)  CLK_TCK $(getconf CLK_TCK)"
if ((have_smi)); then
  echo "  gpu: $(timeout 20 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | head -1) ($(timeout 20 nvidia-smi -L 2>/dev/null | wc -l) GPUs)"
fi
[[ -s $tmp/crowd.log ]] && echo "  $(sed -n 1p "$tmp/crowd.log")"
((${#top_args[@]} == 0)) || echo "  every gpuclean top run also gets: ${top_args[*]}"
for s in "${skipped[@]}"; do echo "  skipped $s"; done

for id in "${ids[@]}"; do
  run_tool "$id"
done

if "$py" - "$tmp" "$delay" "$h" "$warmup" "${ids[@]}" <<'PY'
import json, os, sys
tmp, delay, H, warmup = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ids = sys.argv[5:]
# "Steady": the samples from 20 s after the tool started, past its start (the first refresh
# reads every process) and RollingScan's 15 s of re-reading each new process (kYoung).
STEADY_AFTER = 20.0
MiB = 1024.0
label = {"top": "gpuclean top (fake dev, no NVML)", "top-full0": "gpuclean top --full-scan 0",
         "top-nvml": "gpuclean top (real devs, NVML)", "watch-fuser": f"watch -n{delay:g} fuser FILE",
         "watch-smi": f"watch -n{delay:g} nvidia-smi", "nvitop": f"nvitop --interval {delay:g}",
         "recorder": "gpuclean recorder (fake dev)", "recorder-nvml": "gpuclean recorder (NVML)"}
rows, notes = {}, []
for i in ids:
    try:
        d = json.load(open(os.path.join(tmp, f"{i}.json")))
    except (OSError, ValueError):
        continue
    if "self_s" not in d:
        notes.append(f"{label[i]}: the tool was gone when the measurement started")
        continue
    wall = d["wall"]
    child_s = d["reaped_children_s"] + d["live_children_s"]
    st = open(os.path.join(tmp, f"{i}.status")).read().split() if os.path.exists(os.path.join(tmp, f"{i}.status")) else []
    tree_peak = int(st[1]) if len(st) > 1 else 0
    # A transient child's peak (nvidia-smi under watch) is seldom caught by 1 s samples: the
    # wrapper's getrusage(RUSAGE_CHILDREN) maximum covers the tool's whole tree.
    # Only for a tool whose children come and go (none alive at the end, some reaped): for one
    # with a lasting child (top's helper) the samples see it, and the maximum is its own.
    child_peak = d["children_hwm_kib"]
    transient = d["reaped_children_s"] > 0 and not any(c["alive"] for c in d["children"])
    if transient and tree_peak > d["hwm_kib"]:
        child_peak = max(child_peak, tree_peak)
    r = dict(cpu=100 * (d["self_s"] + child_s) / wall, main=100 * d["self_s"] / wall,
             child=100 * child_s / wall, rss=d["rss_kib"] / MiB, hwm=d["hwm_kib"] / MiB,
             crss=d["children_rss_kib"] / MiB, cpeak=child_peak / MiB,
             tmux=100 * d["extra_s"] / wall, wall=wall, alive=d["alive"],
             per_refresh=1000 * (d["self_s"] + child_s) / (wall / delay),
             series=d["rss_series_kib"], children=d["children"], status=st,
             steps=sorted(1000 * x for x in d.get("cpu_per_interval_s", [])))
    r["footprint"] = r["hwm"] + r["cpeak"]
    per_s = d.get("cpu_per_interval_s", [])
    skip = max(0, int(STEADY_AFTER - warmup + 0.999))
    tail = per_s[skip:]
    r["steady"] = 100 * sum(tail) / len(tail) if tail else None
    r["early"] = 100 * sum(per_s[:skip]) / skip if skip and len(per_s) >= skip else None
    r["steady_cpu"] = r["steady"] if r["steady"] is not None else r["cpu"]
    r["steady_ref"] = r["steady_cpu"] * 10 * delay  # % of a core -> ms per refresh
    rows[i] = r
    if not d["alive"]:
        notes.append(f"{label[i]}: the tool ended during the measurement")
    if st and st[0] not in ("0",) and not i.startswith("watch"):
        notes.append(f"{label[i]}: exit status {st[0]}")
    if i.startswith("top"):
        s = d["rss_series_kib"]
        grow = (s[-1] - s[0]) / MiB if s else 0
        notes.append(f"{label[i]}: RSS over the window {s[0] / MiB:.1f} -> {s[-1] / MiB:.1f} MiB "
                     f"(min {min(s) / MiB:.1f}, max {max(s) / MiB:.1f}; {grow:+.2f} MiB)"
                     + ("  <- grows" if grow > 1.0 else ""))
        kids = ", ".join(f"{c['pid']} {c['comm']}{'' if c['alive'] else ' (ended)'}{'' if c['at_start'] else ' (new)'}"
                         for c in d["children"]) or "none"
        rows_seen = open(os.path.join(tmp, f"{i}.rows")).read().strip() if os.path.exists(os.path.join(tmp, f"{i}.rows")) else "-"
        term = open(os.path.join(tmp, f"{i}.term")).read().strip() if os.path.exists(os.path.join(tmp, f"{i}.term")) else "?"
        seen = f"holder rows on its last screen (200x50): {rows_seen} of {H}; " if rows_seen != "-" else ""
        notes.append(f"{label[i]}: children during the window: {kids}; {seen}terminal after q: {term}")

print()
head = (f"{'tool':<34} {'CPU %':>6} {'main':>6} {'child':>6} {'steady':>6} {'RSS':>6} {'HWM':>6} "
        f"{'ch.RSS':>6} {'ch.HWM':>6} {'total':>6} {'tmux':>5} {'ms/ref':>7}")
print(head)
print(f"{'':<34} {'(% of one core)':^27} {'(MiB: main, and its children)':^27} {'peak':>6} {'CPU%':>5} {'steady':>7}")
print("-" * len(head))
for i in ids:
    if i not in rows:
        print(f"{label[i]:<34} {'did not run (see notes)':>40}")
        continue
    r = rows[i]
    print(f"{label[i]:<34} {r['cpu']:6.2f} {r['main']:6.2f} {r['child']:6.2f} {r['steady_cpu']:6.2f} {r['rss']:6.1f} {r['hwm']:6.1f} "
          f"{r['crss']:6.1f} {r['cpeak']:6.1f} {r['footprint']:6.1f} {r['tmux']:5.2f} {r['steady_ref']:7.1f}")
print()
print("CPU %: utime+stime over the measured wall time, % of one core; main: the tool's process;")
print("child: its descendants (gpuclean's NVML helper; watch's sh + command), reaped ones included;")
print(f"steady: the whole tree's, from {STEADY_AFTER:.0f} s after the tool started (what it costs left open,")
print("without its start; 'until 20 s' below shows the start).")
print("RSS/HWM: the tool's VmRSS at the end and VmHWM; ch.RSS: its live children's VmRSS at the end;")
print("ch.HWM: their peak (for watch, whose children come and go: the tree's wait4 maximum when above")
print("watch's own); total peak = HWM + ch.HWM.")
print("tmux CPU%: the tmux server drawing the tool's output; ms/ref: steady CPU ms per refresh.")

print()
print("contract targets at 1 Hz with 2,000 processes: CPU < 2% of one core, RSS < 15 MiB")
for i in ("top", "top-nvml"):
    if i in rows:
        r = rows[i]
        mem = r["rss"] + r["crss"]
        steady = r["steady"] if r["steady"] is not None else r["cpu"]
        print(f"  {label[i]:<34} CPU {r['cpu']:5.2f}% over the window; {steady:5.2f}% from {STEADY_AFTER:.0f} s after"
              f" its start ({'within' if steady < 2 else 'ABOVE'} 2%)")
        print(f"  {'':<34} RSS {r['rss']:.1f} MiB; with its helper {mem:.1f} MiB"
              f" ({'within' if mem < 15 else 'ABOVE'} 15 MiB); peaks {r['footprint']:.1f} MiB")

for i, top in (("recorder", "top"), ("recorder-nvml", "top-nvml")):
    if i in rows:
        r = rows[i]
        mem = r["rss"] + r["crss"]
        steady = r["steady"] if r["steady"] is not None else r["cpu"]
        print(f"  {label[i]:<34} CPU {steady:5.2f}% steady"
              + (f" (gpuclean top on the same load: {rows[top]['steady_cpu']:5.2f}%)" if top in rows else "")
              + ("; target on the H200: 0.5%" if i == "recorder-nvml" else ""))
        print(f"  {'':<34} RSS {r['rss']:.1f} MiB; with its helper {mem:.1f} MiB"
              f" ({'within' if r['footprint'] <= 40 else 'ABOVE'} 40 MiB); peaks {r['footprint']:.1f} MiB")

if "top" in rows and "top-full0" in rows:
    a, b = rows["top"], rows["top-full0"]
    print()
    print("per refresh: the default (--full-scan 60s: each refresh reads the new PIDs, the holders, NVML's PIDs")
    print("and a slice of the rest, all of them once per 60 s) against --full-scan 0 (every process, every refresh)")
    print(f"  default        {a['steady_ref']:7.1f} ms CPU per refresh   {a['steady_cpu']:6.2f}% of one core (steady)")
    print(f"  --full-scan 0  {b['steady_ref']:7.1f} ms CPU per refresh   {b['steady_cpu']:6.2f}% of one core (steady)")
    if a["steady_ref"] > 0:
        print(f"  --full-scan 0 / default: {b['steady_ref'] / a['steady_ref']:.1f}x")

steps = [(i, rows[i]["steps"]) for i in ids if i in rows and i.startswith("top") and rows[i]["steps"]]
if steps:
    print()
    print("CPU ms of the tool and its children in each 1 s sample (10 ms ticks; a sample is about one refresh)")
    for i, v in steps:
        pick = lambda q: v[min(len(v) - 1, int(q * len(v)))]
        print(f"  {label[i]:<34} median {pick(0.5):6.0f}  p90 {pick(0.9):6.0f}  max {v[-1]:6.0f}  ({len(v)} samples)")
    for i, _ in steps:
        r = rows[i]
        if r["early"] is not None and r["steady"] is not None:
            print(f"  {label[i]:<34} until {STEADY_AFTER:.0f} s after its start: {r['early']:6.2f}% of one core;"
                  f" after: {r['steady']:6.2f}%")

print()
print("ratios gpuclean / other (below 1: gpuclean costs less)   steady CPU   peak memory")
pairs = [("top", "watch-fuser"), ("top-nvml", "watch-smi"), ("top-nvml", "nvitop"),
         ("top", "watch-smi"), ("top-full0", "watch-fuser"), ("top-full0", "top"),
         ("recorder", "top"), ("recorder-nvml", "top-nvml"), ("recorder-nvml", "watch-smi")]
for a, b in pairs:
    name = f"{label[a]} / {label[b]}"
    if a in rows and b in rows:
        ra, rb = rows[a], rows[b]
        cpu = f"{ra['steady_cpu'] / rb['steady_cpu']:6.2f}" if rb["steady_cpu"] > 0 else "   inf"
        memr = f"{ra['footprint'] / rb['footprint']:6.2f}" if rb["footprint"] > 0 else "     -"
        print(f"  {name:<62} {cpu}  {memr}")

if notes:
    print()
    print("notes")
    for line in notes:
        print("  " + line)
sys.exit(0 if len(rows) == len(ids) else 3)
PY
then
  rc=0
else
  rc=$?
fi
if ((${#problems[@]} > 0)); then
  echo
  echo "problems"
  printf '  %s\n' "${problems[@]}"
  rc=3
fi
exit "$rc"
