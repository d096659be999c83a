#!/usr/bin/env bash
# GPU test of `gpuclean top` (the live ncurses view) on the real GPU, driven through tmux: makes
# an heir (scenarios.cu `heir`: the parent creates a CUDA context, forks and exits; NVML goes on
# listing the dead parent's PID and the child holds its memory) and two orphans (`server 2`, its
# parent SIGKILLed), runs `gpuclean top -d 1` in a 120x40 tmux window and waits (deadline poll
# on capture-pane) for their rows, then resizes to 80x24, opens the explain pane on the heir,
# kills one orphan with K + y (and cancels K on the other with n), quits with q and checks that
# the terminal was restored (and again after SIGTERM); then measures top's cost at 1 Hz for
# TOP_MEASURE_S seconds next to `watch -n1 nvidia-smi` (bench/top_bench.sh), ends what it
# started and checks the GPU memory is back. Runs on the GPU machine only.
#
#   tests/gpu/top_screen.sh BIN_DIR [OUT_DIR]
#
# BIN_DIR holds gpuclean; OUT_DIR (default $GPU_TEST_ARTIFACTS, else ./top-screen.out) gets the
# screens: top-screen-120x40.txt, top-screen-80x24.txt (and .ansi, with attributes),
# top-explain-heir.txt, top-kill-plan.txt, top-kill-outcome.txt, top-kill-cancel.txt,
# top-after-quit.txt, top-after-sigterm.txt, and top-cost.txt (the measurement).
# tmux: the one on PATH, else $TMUX_BIN (tests/gpu/carry_tmux.sh DEST makes DEST/tmux.sh).
# Environment: TOP_MEASURE_S (default 30; 0 skips the measurement), GPUCLEAN_SCENARIO_LIFETIME
# (default 300: the scenario processes end themselves after it in any case).
# Prints PASS/FAIL per assertion and "N passed, M failed"; exit 1 if anything failed.
#
# Safety: signals only processes it started (the scenario programs, the processes they report,
# the tops under its own tmux server), by PID, while the PID keeps the start time it had when the
# script learned it; the tmux server is its own (a socket in its temporary folder).

# Most functions are called through wait_until and expect, which shellcheck cannot follow.
# shellcheck disable=SC2317
set -uo pipefail

usage="usage: tests/gpu/top_screen.sh BIN_DIR [OUT_DIR]"
[[ ${1:-} == --help || ${1:-} == -h ]] && { echo "$usage"; exit 0; }
bin_dir=${1:?$usage}
[[ $bin_dir == /* ]] || bin_dir=$PWD/$bin_dir
out_dir=${2:-${GPU_TEST_ARTIFACTS:-$PWD/top-screen.out}}
mkdir -p "$out_dir" || exit 2
out_dir=$(cd "$out_dir" && pwd)
cd "$(dirname "$0")/../.." || exit 2
repo=$PWD
GPUCLEAN=$bin_dir/gpuclean
PY=python3
command -v "$PY" >/dev/null 2>&1 || PY=/opt/torch/.venv/bin/python3
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
tmux_bin=$(command -v tmux || echo "${TMUX_BIN:-}")
[[ -n $tmux_bin && $tmux_bin == */* && $tmux_bin != /* ]] && tmux_bin=$PWD/$tmux_bin
MEASURE_S=${TOP_MEASURE_S:-30}
export GPUCLEAN_SCENARIO_LIFETIME=${GPUCLEAN_SCENARIO_LIFETIME:-300}
HEIR_MIB=1024
WORKER_MIB=512
unset TMUX  # a tmux around this script is not the one it drives

work=$(mktemp -d /tmp/gpuclean-top-screen.XXXXXX) || exit 2

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
now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
WAITED_MS=0
wait_until() {  # LIMIT_S INTERVAL_S COMMAND...: every wait of this script is bounded
  local limit_us=$(($1 * 1000000)) interval=$2 t0
  shift 2
  t0=$(now_us)
  until "$@"; do
    if (($(now_us) - t0 >= limit_us)); then
      WAITED_MS=$((($(now_us) - t0) / 1000))
      return 1
    fi
    sleep "$interval"
  done
  WAITED_MS=$((($(now_us) - t0) / 1000))
}
gc() { timeout 30 "$GPUCLEAN" "$@"; }
indent() { sed "s/^/${1:-    }/"; }

# ---- our processes, by PID and start time --------------------------------------------------------
STAT=()
read_stat() {  # PID: STAT[0] = state, STAT[1] = ppid, STAT[19] = start time
  local s IFS=$' \t\n'
  STAT=()
  { s=$(<"/proc/$1/stat"); } 2>/dev/null || return 1
  [[ $s == *") "* ]] || return 1
  s=${s##*) }
  read -ra STAT <<<"$s"
  ((${#STAT[@]} >= 20))
}
start_time() { read_stat "$1" && echo "${STAT[19]}"; }
declare -A start_of=()
ours_list=()
track() {  # PID...
  local pid t
  for pid in "$@"; do
    t=$(start_time "$pid") || continue
    start_of[$pid]=$t
    ours_list+=("$pid")
  done
}
track_noted() {  # READY.pids files: "PID STARTTIME" of every scenario process as it started
  local file pid t
  for file in "$work"/*.ready.pids; do
    [[ -s $file ]] || continue
    while read -r pid t; do
      [[ $pid =~ ^[0-9]+$ && $t =~ ^[0-9]+$ && -z ${start_of[$pid]:-} ]] || continue
      start_of[$pid]=$t
      ours_list+=("$pid")
    done <"$file"
  done
}
ours() { [[ -n ${start_of[$1]:-} && $(start_time "$1") == "${start_of[$1]}" ]]; }
is_gone() {  # PID: no process, a recycled PID, or only exited threads (a zombie counts as gone)
  local task
  ours "$1" || return 0
  for task in /proc/"$1"/task/*; do
    read_stat "${task##*/}" || continue
    [[ ${STAT[0]} == Z || ${STAT[0]} == X ]] || return 1
  done
  return 0
}
is_alive() { local pid; for pid in "$@"; do ! is_gone "$pid" || return 1; done; }
all_gone() { local pid; for pid in "$@"; do is_gone "$pid" || return 1; done; }
kill_ours() {  # SIGNAL PID...
  local sig=$1 pid
  shift
  for pid in "$@"; do
    if ours "$pid"; then kill "-$sig" "$pid" 2>/dev/null; fi
  done
  return 0
}

# ---- NVML through nvidia-smi (independent of gpuclean) -------------------------------------------
smi_apps() { timeout 10 nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader,nounits 2>/dev/null; }
nvml_has() {  # PID MIB
  local line used
  while IFS= read -r line; do
    [[ ${line%%,*} == "$1" ]] || continue
    used=${line##*,}
    used=${used// /}
    [[ $used =~ ^[0-9]+$ ]] && ((used >= $2)) && return 0
  done < <(smi_apps)
  return 1
}
nvml_lacks_all() {  # PID...
  local apps pid
  apps=$(smi_apps | cut -d, -f1)
  for pid in "$@"; do grep -qx -- "$pid" <<<"$apps" && return 1; done
  return 0
}
gpu0_used_mib() { timeout 10 nvidia-smi -i 0 --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null | tr -d ' '; }
used_back() { local u; u=$(gpu0_used_mib); [[ $u =~ ^[0-9]+$ ]] && ((u <= IDLE_USED + 64)); }
show_smi() { echo "  nvidia-smi --query-compute-apps=pid,used_memory:"; smi_apps | indent; }

# ---- scenarios -----------------------------------------------------------------------------------
SCENARIOS=$work/scenarios
LAUNCHED=
launch() {  # MODE ARGS... READY
  "$SCENARIOS" "$@" </dev/null >>"$work/scenario.log" 2>&1 &
  LAUNCHED=$!
  disown "$LAUNCHED"
  track "$LAUNCHED"
}
READY=()
ready_or_dead() { [[ -s $1 ]] || { [[ -n $2 ]] && is_gone "$2"; }; }
wait_ready() {  # FILE [PID that must stay alive meanwhile]
  local line pid
  READY=()
  if ! wait_until 30 0.05 ready_or_dead "$1" "${2:-}" || [[ ! -s $1 ]]; then
    record FAIL "scenario ready within 30 s ($1; scenario log below)"
    indent <"$work/scenario.log"
    return 1
  fi
  line=$(<"$1")
  [[ $line == error:* ]] && { record FAIL "scenario could not be built: $line"; return 1; }
  read -ra READY <<<"$line"
  for pid in "${READY[@]}"; do
    [[ $pid =~ ^[0-9]+$ ]] || { record FAIL "scenario ready line is PIDs: '$line'"; return 1; }
  done
  track "${READY[@]}"
  echo "  ready after ${WAITED_MS} ms: $line"
}

# ---- tmux ----------------------------------------------------------------------------------------
tmux_up=0
tx() { "$tmux_bin" -S "$work/tmux.socket" -f /dev/null "$@"; }
# The panes get this script's LD_LIBRARY_PATH (a carried tmux's wrapper sets one for tmux alone)
# and TERMINFO_DIRS with the system's folders and a carried tmux's terminfo.
pane_env=(env)
if [[ -n ${LD_LIBRARY_PATH+set} ]]; then pane_env+=("LD_LIBRARY_PATH=$LD_LIBRARY_PATH"); else pane_env+=(-u LD_LIBRARY_PATH); fi
terminfo_dirs=${TERMINFO_DIRS:-}
[[ -n $tmux_bin && -d $(dirname "$tmux_bin")/terminfo ]] && terminfo_dirs+=${terminfo_dirs:+:}$(dirname "$tmux_bin")/terminfo
terminfo_dirs+=${terminfo_dirs:+:}/etc/terminfo:/lib/terminfo:/usr/lib/terminfo:/usr/share/terminfo
pane_env+=("TERMINFO_DIRS=$terminfo_dirs")
# tmux runs a pane's command through the shell: ARGS quoted for any POSIX sh, as one line.
shell_line() {
  local a line=""
  for a in "$@"; do line+=${line:+ }\'${a//\'/\'\\\'\'}\'; done
  printf '%s' "$line"
}
# The pane's program: a marker line on the main screen, the command, its exit status to a file,
# and then it stays (so the pane, and what top left on the screen, stays) until tmux ends it.
cat >"$work/pane.sh" <<'SH'
#!/bin/sh
status=$1
shift
echo "top_screen: the main screen, before top"
"$@"
echo "$?" >"$status.tmp" && mv "$status.tmp" "$status"
echo "top_screen: top exited"
exec sleep 3600
SH
chmod +x "$work/pane.sh"

TOP=  # the top process of the last start_top
PANE=
start_top() {  # SESSION WIDTH HEIGHT ARGS...: gpuclean ARGS in a new session
  local s=$1 w=$2 h=$3 line
  shift 3
  rm -f "$work/$s.status"
  line=$(shell_line exec "${pane_env[@]}" "$work/pane.sh" "$work/$s.status" "$GPUCLEAN" "$@")
  tx new-session -d -s "$s" -x "$w" -y "$h" "$line" || return 1
  tmux_up=1
  PANE=$(tx display-message -p -t "$s" '#{pane_pid}')
  track "$PANE"
  TOP=
  wait_until 10 0.05 top_started "$PANE" || return 1
  track "$TOP"
}
top_started() {  # PANE: sets TOP once the pane's child runs gpuclean
  local kids
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null) || return 1
  read -ra kids <<<"$kids"
  ((${#kids[@]} == 1)) || return 1
  # Exec'd: gpuclean's binary, or at least no longer the pane script's fork.
  [[ $(readlink "/proc/${kids[0]}/exe" 2>/dev/null) == "$(readlink -f "$GPUCLEAN")" ||
    $(cat "/proc/${kids[0]}/comm" 2>/dev/null) == gpuclean ]] || return 1
  TOP=${kids[0]}
}
screen() { tx capture-pane -p -t "$1" 2>/dev/null; }
save() {  # SESSION NAME: the screen as NAME.txt in OUT_DIR (and NAME.ansi with attributes)
  screen "$1" >"$out_dir/$2.txt"
  tx capture-pane -e -p -t "$1" >"$out_dir/$2.ansi" 2>/dev/null
  return 0
}
show() { echo "  screen of $1:"; screen "$1" | indent "    | "; }
pid_re() { echo "(^|[^0-9])$1([^0-9]|\$)"; }
has_row() {  # SESSION PID CLASS: a line with the PID and the class word
  screen "$1" | grep -E "$(pid_re "$2")" | grep -qw -- "$3"
}
screen_has() { screen "$1" | grep -qE -- "$2"; }  # SESSION ERE
screen_lacks() { ! screen_has "$@"; }
first_line_has() { screen "$1" | head -n 1 | grep -qE -- "$2"; }
last_line_has() { screen "$1" | grep . | tail -n 1 | grep -qE -- "$2"; }
# capture-pane -e keeps the SGR state across lines: this tells which lines show reverse video.
cat >"$work/sgr.py" <<'PY'
import re, sys
rev = False
for line in sys.stdin.read().split("\n"):
    text, any_rev = [], False
    for m in re.finditer(r"\x1b\[([0-9;:]*)m|\x1b[^\x1b]*?[@-~]|([^\x1b]+)", line):
        if m.group(2) is not None:
            text.append(m.group(2))
            any_rev = any_rev or (rev and bool(m.group(2).strip()))
            continue
        if m.group(1) is None:
            continue
        params, i = re.split("[;:]", m.group(1)), 0
        while i < len(params):
            p = params[i]
            if p in ("", "0", "27"):
                rev = False
            elif p == "7":
                rev = True
            elif p in ("38", "48", "58") and i + 1 < len(params):
                i += 2 if params[i + 1] == "5" else 4
            i += 1
    print(("R" if any_rev else "-") + "\t" + "".join(text))
PY
reverse_lines() { tx capture-pane -e -p -t "$1" 2>/dev/null | "$PY" "$work/sgr.py" | sed -n 's/^R\t//p'; }
selected_is() { reverse_lines "$1" | grep -qE "$(pid_re "$2")"; }  # SESSION PID
select_pid() {  # SESSION PID: Home, then j until the row of PID is the reverse-video one
  local i
  tx send-keys -t "$1" Home
  for ((i = 0; i < 12; i++)); do
    wait_until 2 0.1 selected_is "$1" "$2" && return 0
    tx send-keys -t "$1" j
  done
  return 1
}
key() { tx send-keys -t "$1" "$2"; }
alt_off() { [[ $(tx display-message -p -t "$1" '#{alternate_on}') == 0 ]]; }
cursor_on() { [[ $(tx display-message -p -t "$1" '#{cursor_flag}') == 1 ]]; }
status_is() { [[ -e $work/$1.status && $(<"$work/$1.status") == "$2" ]]; }  # SESSION CODE
exited() { [[ -e $work/$1.status ]]; }
# ---- the end -------------------------------------------------------------------------------------
finish() {
  echo
  if ((failed > 0)); then
    echo "Failed:"
    printf '  FAIL: %s\n' "${failures[@]}"
  fi
  echo "screens in $out_dir"
  echo "$passed passed, $failed failed"
  if ((failed > 0)); then exit 1; fi
  exit 0
}
on_exit() {
  set +u
  ((tmux_up)) && tx kill-server 2>/dev/null
  track_noted
  ((${#ours_list[@]} > 0)) && kill_ours KILL "${ours_list[@]}"
  rm -rf "$work"
}
trap on_exit EXIT
trap 'record FAIL "interrupted"; finish' INT TERM

# ---- run -----------------------------------------------------------------------------------------
echo "=== gpuclean top on the GPU  $(date -u +%FT%TZ)"
echo "host $(uname -n)  kernel $(uname -r)"
timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | indent "gpu  "
if [[ ! -x $GPUCLEAN ]] || ! gc top --help >/dev/null 2>&1; then
  record FAIL "gpuclean with a top command at $GPUCLEAN"
  finish
fi
echo "gpuclean $(gc --version 2>&1 | head -n 1)  ($GPUCLEAN)"
if [[ -z $tmux_bin ]] || ! "$tmux_bin" -V >/dev/null 2>&1; then
  record FAIL "tmux on PATH or at \$TMUX_BIN (tests/gpu/carry_tmux.sh DEST; TMUX_BIN=DEST/tmux.sh)"
  finish
fi
echo "$("$tmux_bin" -V) ($tmux_bin), python $("$PY" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null || echo '?')"

echo
echo "=== without a terminal"
gc top </dev/null >"$work/noterm.out" 2>"$work/noterm.err"
rc=$?
indent <"$work/noterm.err"
expect "gpuclean top without a terminal exits 2 (got $rc)" test "$rc" -eq 2
expect "its message names gpuclean status" grep -q 'gpuclean status' "$work/noterm.err"

echo
echo "=== idle GPU, build"
IDLE_USED=$(gpu0_used_mib)
[[ $IDLE_USED =~ ^[0-9]+$ ]] || IDLE_USED=0
echo "  GPU 0 memory.used: $IDLE_USED MiB"
if ! gc check 2>&1 | indent; then
  echo "  WARNING: gpuclean check says the machine is not clean before the test"
fi
if ! timeout 180 "$NVCC" -O2 -o "$SCENARIOS" tests/gpu/scenarios.cu -lpthread 2>&1; then
  record FAIL "nvcc builds tests/gpu/scenarios.cu"
  finish
fi

echo
echo "=== scenario: an heir ($HEIR_MIB MiB) and two orphans ($WORKER_MIB MiB each)"
launch heir "$HEIR_MIB" "$work/heir.ready"
wait_ready "$work/heir.ready" || finish
heir=${READY[0]}
dead=${READY[1]}
wait_until 15 0.1 nvml_has "$dead" "$HEIR_MIB" ||
  record FAIL "NVML lists the dead parent $dead with >= $HEIR_MIB MiB within 15 s"
launch server 2 "$WORKER_MIB" "$work/server.ready"
wait_ready "$work/server.ready" "$LAUNCHED" || finish
server=${READY[0]}
w1=${READY[1]}
w2=${READY[2]}
workers_listed() { nvml_has "$w1" "$WORKER_MIB" && nvml_has "$w2" "$WORKER_MIB"; }
wait_until 15 0.1 workers_listed || record FAIL "NVML lists both workers with >= $WORKER_MIB MiB within 15 s"
kill_ours KILL "$server"
expect "server parent $server gone within 10 s (its workers $w1 $w2 are orphans)" wait_until 10 0.02 is_gone "$server"
echo "  heir $heir (dead parent $dead), orphans $w1 $w2"
show_smi

echo
echo "=== gpuclean top -d 1 at 120x40"
if ! start_top main 120 40 top -d 1; then
  record FAIL "gpuclean top starts in tmux"
  show main
  finish
fi
echo "  top is pid $TOP; TERM=$(tr '\0' '\n' <"/proc/$TOP/environ" 2>/dev/null | sed -n 's/^TERM=//p')"
rows_show() { has_row "$1" "$heir" heir && has_row "$1" "$w1" orphan && has_row "$1" "$w2" orphan; }
if wait_until 20 0.25 rows_show main; then
  record PASS "the heir and both orphan rows show within ${WAITED_MS} ms"
else
  record FAIL "the heir ($heir) and orphan ($w1, $w2) rows show within 20 s"
fi
save main top-screen-120x40
indent "    | " <"$out_dir/top-screen-120x40.txt"
expect "line 1: 'gpuclean top' and the verdict DIRTY" first_line_has main 'gpuclean top.*DIRTY'
expect "a 'GPU 0' line with its memory 'X / TOTAL'" screen_has main '^ *GPU 0 .*[0-9.]+ ?[KMGT]i?B / [0-9.]+ ?[KMGT]i?B'
header_shows() {  # SESSION: one line with every column name, in any order
  local line word
  line=$(screen "$1" | grep -m1 -E '^ *PID ') || return 1
  for word in PID USER CLASS MEMORY AGE COMMAND; do grep -qw "$word" <<<"$line" || return 1; done
}
expect "the holders header: PID USER CLASS MEMORY AGE COMMAND" header_shows main
# Issue 50: the problems fold to one line ("! 3 problems (…): 1 heir, 2 orphans — p: show"); p
# opens them with their fixes and folds them again.
expect "one folded problem line ('! N problems … p: show'), no fix line" \
  eval "screen_has main '^ *! [0-9]+ problems .*p: show' && ! screen_has main '^ +fix: '"
key main p
expect "p opens the problems with their fixes" wait_until 5 0.1 screen_has main '^ +fix: '
save main top-screen-120x40-problems
key main p
expect "p folds them again" wait_until 5 0.1 eval "! screen_has main '^ +fix: '"
expect "the last line is the key help with 'q quit'" last_line_has main 'q quit'
has_selection() { reverse_lines "$1" | grep -q '[0-9]'; }
expect "one row is in reverse video (the selection)" has_selection main

echo
echo "=== resized to 80x24"
tx resize-window -t main -x 80 -y 24
small_ok() { [[ $(tx display-message -p -t main '#{pane_width}x#{pane_height}') == 80x24 ]] && rows_show main && first_line_has main 'gpuclean top'; }
expect "after the resize to 80x24 the rows show again" wait_until 10 0.25 small_ok
save main top-screen-80x24
indent "    | " <"$out_dir/top-screen-80x24.txt"
expect "80x24: the last line is the key help with 'q quit'" last_line_has main 'q quit'
tx resize-window -t main -x 120 -y 40
wait_until 10 0.25 rows_show main || record FAIL "after the resize back to 120x40 the rows show again"

echo
echo "=== e: explain the heir $heir"
if select_pid main "$heir"; then
  key main e
  # Rows only explain prints ("  session   sid S, pgid G", "  NVML      GPU 0: ... (NVML names
  # dead pid P)"): the pane is open.
  explain_open() { screen_has main '^ *session +sid [0-9]+' && screen_has main 'NVML +GPU [0-9]+:'; }
  expect "e opens the explain pane (its session and NVML rows show)" wait_until 10 0.2 explain_open
  save main top-explain-heir
  indent "    | " <"$out_dir/top-explain-heir.txt"
  expect "the explain pane names the heir $heir" screen_has main "$(pid_re "$heir")"
  expect "the explain pane names the dead parent $dead (NVML names dead pid)" screen_has main "dead pid $dead"
  key main Escape
  closed() { rows_show main && ! explain_open; }
  expect "Esc closes the explain pane (the table is back)" wait_until 5 0.2 closed
else
  record FAIL "the heir's row can be selected (Home, then j: reverse video on its row)"
  reverse_lines main | indent "    R "
fi

echo
echo "=== K + y: kill the orphan $w1"
if select_pid main "$w1"; then
  key main K
  expect "K shows the plan ending 'Kill 1 process? [y/N]'" wait_until 10 0.2 screen_has main 'Kill 1 process.*\[y/N\]'
  save main top-kill-plan
  indent "    | " <"$out_dir/top-kill-plan.txt"
  expect "the plan names $w1" screen_has main "$(pid_re "$w1")"
  key main y
  outcome() { screen_has main 'gone|remain' && screen_lacks main 'Killing'; }
  # kill itself waits up to 30 s for the memory to go back (on the GPU: ~0.15 s).
  expect "y runs the kill and shows its report" wait_until 45 0.2 outcome
  save main top-kill-outcome
  indent "    | " <"$out_dir/top-kill-outcome.txt"
  expect "the report says the target is gone" screen_has main 'all 1 target gone'
  expect "orphan $w1 is gone" wait_until 10 0.05 is_gone "$w1"
  expect "NVML lists $w1 no more" wait_until 15 0.1 nvml_lacks_all "$w1"
  expect "the heir $heir and the other orphan $w2 live on" is_alive "$heir" "$w2"
  key main Escape
  w1_row_gone() { screen_lacks main "$(pid_re "$w1")" && has_row main "$w2" orphan && has_row main "$heir" heir; }
  expect "Esc closes the pane; $w1's row is gone, $w2's and $heir's stay" wait_until 5 0.2 w1_row_gone
else
  record FAIL "the row of orphan $w1 can be selected"
  reverse_lines main | indent "    R "
fi

echo
echo "=== K + n: not confirmed, on the orphan $w2"
if select_pid main "$w2"; then
  key main K
  if wait_until 10 0.2 screen_has main '\[y/N\]'; then
    key main n
    expect "any other key cancels: 'not confirmed'" wait_until 5 0.2 screen_has main 'not confirmed'
    save main top-kill-cancel
    indent "    | " <"$out_dir/top-kill-cancel.txt"
    expect "orphan $w2 still lives" is_alive "$w2"
    key main Escape
    expect "the pane closes; $w2's row is there" wait_until 5 0.2 has_row main "$w2" orphan
  else
    record FAIL "K on $w2 asks '[y/N]'"
    show main
  fi
else
  record FAIL "the row of orphan $w2 can be selected"
fi

echo
echo "=== q: quit"
key main q
expect "top exits within 5 s of q" wait_until 5 0.05 exited main
expect "its exit status is 0 (got $(cat "$work/main.status" 2>/dev/null || echo none))" status_is main 0
expect "the alternate screen is left" wait_until 3 0.05 alt_off main
expect "the cursor is visible" cursor_on main
save main top-after-quit
expect "the main screen is back (the line before top shows; the key help does not)" \
  eval "screen_has main 'the main screen, before top' && screen_lacks main 'q quit'"
tx kill-session -t main

echo
echo "=== SIGTERM"
if start_top term 80 24 top -d 1 && wait_until 10 0.2 first_line_has term 'gpuclean top'; then
  kill_ours TERM "$TOP"
  expect "top exits within 5 s of SIGTERM" wait_until 5 0.05 exited term
  echo "  exit status after SIGTERM: $(cat "$work/term.status" 2>/dev/null || echo none)"
  expect "after SIGTERM the alternate screen is left" wait_until 3 0.05 alt_off term
  expect "after SIGTERM the cursor is visible" cursor_on term
  save term top-after-sigterm
else
  record FAIL "a second top starts at 80x24"
  show term
fi
tx kill-session -t term 2>/dev/null

if ((MEASURE_S > 0)); then
  echo
  echo "=== cost at 1 Hz: gpuclean top vs watch -n1 nvidia-smi, ${MEASURE_S} s each (heir and one orphan still there)"
  PYTHON=$PY timeout $((4 * MEASURE_S + 120)) "$repo/bench/top_bench.sh" --gpuclean "$GPUCLEAN" -n 0 \
    --seconds "$MEASURE_S" --tools top-nvml,watch-smi --tmux "$tmux_bin" --keep "$out_dir/cost" \
    >"$out_dir/top-cost.txt" 2>&1
  rc=$?
  indent "  " <"$out_dir/top-cost.txt"
  expect "bench/top_bench.sh measured both (exit $rc)" test "$rc" -eq 0
fi

echo
echo "=== clean-up"
track_noted
kill_ours KILL "${ours_list[@]}"
expect "every process the test started is gone within 10 s" wait_until 10 0.05 all_gone "${ours_list[@]}"
expect "NVML lists none of the scenario's PIDs within 15 s" wait_until 15 0.1 nvml_lacks_all "$dead" "$heir" "$w1" "$w2"
wait_until 15 0.1 used_back
expect "GPU 0 memory.used back to idle within 15 s (idle $IDLE_USED MiB, now $(gpu0_used_mib) MiB; 64 MiB allowed)" used_back
expect "gpuclean check exits 0" wait_until 15 0.2 gc check
finish
