#!/usr/bin/env bash
# GPU test of the node's services under CUDA MPS (docs/reference.md "Roles"), on the real GPU:
# starts an MPS control daemon of its own (a user-space daemon; no GPU setting changes), runs
# two MPS clients, kills one, and checks what status, check, explain, kill --leftovers/--holders
# and run say at each step. Runs on the GPU machine only.
#
#   tests/gpu/mps.sh [BIN_DIR]     BIN_DIR (default .device-bin) holds a prebuilt gpuclean
#
# Prints PASS/FAIL per assertion and "N passed, M failed"; exit 1 if anything failed.
#
# Safety: the daemon gets its own pipe and log directories (CUDA_MPS_PIPE_DIRECTORY), so it is
# this script's alone, and every exit path quits it the MPS way (`echo quit |
# nvidia-cuda-mps-control`). Only the script's own client processes are signalled, by PID,
# and only while they keep the start time they had when the script learned them.
set -uo pipefail

bin_dir=${1:-.device-bin}
[[ $bin_dir == /* ]] || bin_dir=$PWD/$bin_dir
cd "$(dirname "$0")/../.." || exit 2
GPUCLEAN=$bin_dir/gpuclean
PY=python3
command -v "$PY" >/dev/null 2>&1 || PY=/opt/torch/.venv/bin/python3
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
MPS_CONTROL=$(command -v nvidia-cuda-mps-control || echo /usr/bin/nvidia-cuda-mps-control)
MPS_CONTROL=$(readlink -f "$MPS_CONTROL")

passed=0
failed=0
failures=()
record() {  # PASS|FAIL MESSAGE
  if [[ $1 == PASS ]]; then passed=$((passed + 1)); else
    failed=$((failed + 1))
    failures+=("$2")
  fi
  echo "$1: $2"
}
expect() {  # MESSAGE COMMAND...
  local message=$1
  shift
  if "$@"; then record PASS "$message"; else record FAIL "$message"; fi
}
now_ms() { date +%s%3N; }
wait_until() {  # LIMIT_S COMMAND...: polls every 50 ms; every wait here is bounded
  local deadline=$(($(now_ms) + $1 * 1000))
  shift
  until "$@"; do
    (($(now_ms) >= deadline)) && return 1
    sleep 0.05
  done
}
gc() { timeout 30 "$GPUCLEAN" "$@"; }

work=$(mktemp -d /tmp/gpuclean-mps.XXXXXX) || exit 2
export CUDA_MPS_PIPE_DIRECTORY=$work/pipe CUDA_MPS_LOG_DIRECTORY=$work/log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"

# ---- our processes, by PID and start time ------------------------------------------------------
declare -A started_at=()
start_time() { awk '{ sub(/.*\) /, ""); print $20 }' "/proc/$1/stat" 2>/dev/null; }
track() { started_at[$1]=$(start_time "$1"); }
ours() { [[ -n ${started_at[$1]:-} && $(start_time "$1") == "${started_at[$1]}" ]]; }
gone() { [[ ! -e /proc/$1 ]] || [[ $(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) == Z ]]; }
kill_ours() { local pid; for pid in "$@"; do ours "$pid" && kill -KILL "$pid" 2>/dev/null; done; }

# The MPS processes of *this* daemon: executable EXE, environment naming our pipe directory.
mps_pid() {  # EXE: prints the PID, or nothing
  local dir pid
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ $(readlink "$dir/exe" 2>/dev/null) == "$1" ]] || continue
    tr '\0' '\n' <"$dir/environ" 2>/dev/null | grep -qxF "CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY" &&
      echo "$pid" && return 0
  done
  return 1
}
SERVER_EXE=$(dirname "$MPS_CONTROL")/nvidia-cuda-mps-server
quit_mps() {
  echo quit | timeout 10 "$MPS_CONTROL" >/dev/null 2>&1
  wait_until 15 no_mps
}
no_mps() { ! mps_pid "$MPS_CONTROL" >/dev/null && ! mps_pid "$SERVER_EXE" >/dev/null; }

clients=()
on_exit() {
  kill_ours "${clients[@]}"
  quit_mps || echo "WARNING: the MPS daemon of $CUDA_MPS_PIPE_DIRECTORY did not quit"
  rm -rf "$work"
}
trap on_exit EXIT
trap 'echo "interrupted"; exit 1' INT TERM

# ---- JSON checks (python: no jq on the GPU machine) --------------------------------------------
jq_py() {  # JSON_FILE EXPRESSION: prints the Python expression over doc (d), holders by pid (h)
  "$PY" - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
h = {x["pid"]: x for x in d.get("holders", [])}
try:
    v = eval(sys.argv[2], {"d": d, "h": h})
except Exception as e:
    v = f"<error: {e}>"
print(json.dumps(v) if not isinstance(v, str) else v)
PY
}
expect_eq() {  # MESSAGE JSON EXPRESSION WANT
  local got
  got=$(jq_py "$2" "$3")
  if [[ $got == "$4" ]]; then record PASS "$1 ($got)"; else record FAIL "$1: want $4, got $got"; fi
}
smi_mib() {  # PID: NVML's MiB for PID (nvidia-smi), empty when not listed
  nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null |
    awk -F', *' -v p="$1" '$1 == p { print $2; exit }'
}
listed() { [[ -n $(smi_mib "$1") ]]; }
not_listed() { [[ -z $(smi_mib "$1") ]]; }

# ---- setup -------------------------------------------------------------------------------------
echo "gpuclean MPS test · $(date -u +%FT%TZ) · $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1) · kernel $(uname -r)"
[[ -x $MPS_CONTROL ]] || { record FAIL "nvidia-cuda-mps-control exists ($MPS_CONTROL)"; exit 1; }
echo "MPS: $MPS_CONTROL, pipes in $CUDA_MPS_PIPE_DIRECTORY"
# Another MPS daemon or server on the machine (one an earlier run left when it was killed before
# its EXIT trap: the H100 run of 2026-12-06 had one) makes two servers of the clients' user, and
# gpuclean then names no server for a client (docs/reference.md "Roles"): refuse to run, naming
# them, rather than fail two checks later for a reason the log does not show.
others=$(ps -eo pid=,user=,args= | grep '[n]vidia-cuda-mps-' || true)
if [[ -n $others ]]; then
  echo "other MPS processes on this machine (not this script's; quit them first):"
  echo "$others" | sed 's/^/    /'
  record FAIL "no other MPS daemon or server runs"
  exit 1
fi
# What the trust in the executable rests on (docs/reference.md "Roles"): owners and modes.
d=$MPS_CONTROL
while [[ $d != / ]]; do
  stat -c '    %A %U:%G %n' "$d"
  d=$(dirname "$d")
done
stat -c '    %A %U:%G %n' /
if ! "$NVCC" -O2 -o "$work/scenarios" tests/gpu/scenarios.cu -lpthread 2>"$work/nvcc.log"; then
  cat "$work/nvcc.log"
  record FAIL "scenarios.cu builds"
  exit 1
fi
expect "the GPU is clean before the test (gpuclean check)" gc check
"$MPS_CONTROL" -d
wait_until 10 mps_pid "$MPS_CONTROL" >/dev/null
daemon=$(mps_pid "$MPS_CONTROL")
[[ -n $daemon ]] || { record FAIL "the MPS control daemon started"; exit 1; }
echo "MPS control daemon: pid $daemon"

# ---- 1: the daemon alone ----------------------------------------------------------------------
gc status --json >"$work/s0.json"
gc status | sed 's/^/    /'
expect_eq "daemon alone: the daemon's role" "$work/s0.json" "h.get($daemon, {}).get('role')" mps-control
expect_eq "daemon alone: its class (parent is init)" "$work/s0.json" "h.get($daemon, {}).get('class')" active
expect_eq "daemon alone: no problem" "$work/s0.json" "len(d['problems'])" 0
expect "daemon alone: gpuclean check exits 0 on an MPS node" gc check

# ---- 2: two clients ---------------------------------------------------------------------------
launch_client() {  # MIB NAME
  GPUCLEAN_SCENARIO_LIFETIME=120 "$work/scenarios" leftover "$1" "$work/$2.ready" \
    >>"$work/scenario.log" 2>&1 3>&- 4>&- &
  local pid=$!
  track "$pid"
  clients+=("$pid")
  wait_until 60 test -s "$work/$2.ready" || { record FAIL "client $2 became ready"; return 1; }
  wait_until 20 listed "$pid" || { record FAIL "NVML lists client $2 (pid $pid)"; return 1; }
  echo "client $2: pid $pid, $(smi_mib "$pid") MiB"
}
launch_client 2048 a && a=${clients[0]}
launch_client 1024 b && b=${clients[1]}
server=$(mps_pid "$SERVER_EXE")
echo "MPS server: pid ${server:-none}"
[[ -n $server && -n ${a:-} && -n ${b:-} ]] || { record FAIL "MPS server and both clients run"; exit 1; }
nvidia-smi | sed -n '/Processes/,$p' | sed 's/^/    /'
gc status --json >"$work/s1.json"
gc status | sed 's/^/    /'
expect_eq "two clients: the server's role" "$work/s1.json" "h.get($server, {}).get('role')" mps-server
expect_eq "two clients: client a's role" "$work/s1.json" "h.get($a, {}).get('role')" mps-client
expect_eq "two clients: client a runs under the server" "$work/s1.json" "h.get($a, {}).get('mps_server')" "$server"
expect_eq "two clients: client a's memory counted once (= nvidia-smi's $(smi_mib "$a") MiB)" \
  "$work/s1.json" "round(h[$a]['gpu_memory']['0'] / 2**20)" "$(smi_mib "$a")"
expect_eq "two clients: attributed memory at most used" "$work/s1.json" \
  "d['gpus'][0]['memory']['attributed'] <= d['gpus'][0]['memory']['used']" true
expect_eq "two clients: the problems are the two clients', in use" "$work/s1.json" \
  "sorted((p['pid'], p['kind']) for p in d['problems'])" "[[$a, \"in-use\"], [$b, \"in-use\"]]"
gc explain "$a" >"$work/explain-a.txt"
sed 's/^/    /' "$work/explain-a.txt"
expect "explain of client a names the MPS server" grep -q "a client of the MPS server pid $server" "$work/explain-a.txt"
gc kill --leftovers --dry-run >"$work/leftovers.txt" 2>&1
leftovers_rc=$?
sed 's/^/    /' "$work/leftovers.txt"
planned_services=$(grep -v 'not touching' "$work/leftovers.txt" | grep -Ew -- "$daemon|$server")
expect "kill --leftovers --dry-run exits 0 and plans neither daemon nor server" \
  test "$leftovers_rc" = 0 -a -z "$planned_services"
gc kill --holders --dry-run --json >"$work/holders.json" 2>"$work/holders.err"
sed 's/^/    /' "$work/holders.err"
expect_eq "kill --holders plans the two clients only" "$work/holders.json" \
  "sorted(t['pid'] for t in d['targets'])" "[$a, $b]"
expect "kill --holders says why the services are left" grep -q "not touching pid $daemon: the node's MPS control daemon" "$work/holders.err"

# ---- 3: one client killed ---------------------------------------------------------------------
t0=$(now_ms)
gc kill "$a" --json >"$work/kill-a.json" 2>"$work/kill-a.err"
rc=$?
expect "gpuclean kill a (pid $a) exits 0: gone, memory back ($(($(now_ms) - t0)) ms)" test "$rc" = 0
[[ $rc == 0 ]] || cat "$work/kill-a.err"
expect "NVML no longer lists client a" wait_until 10 not_listed "$a"
gc status --json >"$work/s2.json"
expect_eq "one client left: the server lives on" "$work/s2.json" "h.get($server, {}).get('role')" mps-server
expect_eq "one client left: only b is a problem, no mps-leftover" "$work/s2.json" \
  "sorted((p['pid'], p['kind']) for p in d['problems'])" "[[$b, \"in-use\"]]"

# ---- 4: no client left ------------------------------------------------------------------------
gc kill "$b" >/dev/null 2>&1
expect "NVML no longer lists client b" wait_until 10 not_listed "$b"
gc status --json >"$work/s3.json"
gc status | sed 's/^/    /'
echo "    the idle server holds $(jq_py "$work/s3.json" "round(h.get($server, {}).get('gpu_memory', {}).get('0', 0) / 2**20)") MiB (threshold for mps-leftover: 256 MiB)"
expect_eq "no client left: no problem" "$work/s3.json" "[p['message'] for p in d['problems']]" "[]"
expect "no client left: gpuclean check exits 0 with the idle server" gc check

# ---- 5: run under MPS: the server the workload's client starts is the node's -------------------
expect "MPS quits (echo quit)" quit_mps
"$MPS_CONTROL" -d
wait_until 10 mps_pid "$MPS_CONTROL" >/dev/null
expect "no MPS server before the run" test -z "$(mps_pid "$SERVER_EXE")"
GPUCLEAN_SCENARIO_LIFETIME=5 gc run --record "$work/run.json" -- "$work/scenarios" leftover 1024 "$work/run.ready" \
  >"$work/run.out" 2>&1
echo "    run exited $?"
sed 's/^/    /' "$work/run.out"
server=$(mps_pid "$SERVER_EXE")
expect "the run's client started an MPS server that outlives the run (pid ${server:-none})" test -n "$server"
expect_eq "run: GPU 0 counted back (the server's memory is the node's)" "$work/run.json" "d['gpus'][0]['back']" true
echo "    run record, GPU 0: $(jq_py "$work/run.json" "{k: d['gpus'][0][k] for k in ('baseline', 'peak', 'after', 'back', 'note')}")"

# ---- 6: MPS quits, the GPU is clean ------------------------------------------------------------
expect "MPS quits at the end (echo quit)" quit_mps
expect "clean after MPS quit (gpuclean check)" wait_until 10 gc check

echo
echo "$passed passed, $failed failed"
if ((failed > 0)); then
  printf 'FAILED: %s\n' "${failures[@]}"
  exit 1
fi
