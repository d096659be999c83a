#!/usr/bin/env bash
# `gpuclean top` on a real terminal: the test binary runs in a private tmux server (80x24,
# TERM=tmux-256color or screen-256color, LANG=C.UTF-8), with fake device files of its own and
# the fake libnvidia-ml.so.1; the screen is read with `tmux capture-pane` and driven with
# `tmux send-keys`, the way a user would.
#
#   tests/top/run.sh BUILD_DIR     (BUILD_DIR/gpuclean-test and BUILD_DIR/tests/fake_nvml/r580)
#
# Checked, each with a way to fail:
#   - the first screen: `gpuclean top`, the host, the time and CLEAN on line 1, the GPU line, the
#     table header, `q quit` on the last line; no `NVML not answering`; alternate screen on,
#     cursor hidden
#   - a holder that starts while top runs appears within one refresh (-d 0.5; deadline 3 s), with
#     its PID, class and command, selected; a process started with it that holds nothing does
#     not; `e` shows explain's account of it, Esc closes the pane
#   - holders NVML lists: their memory (512 MiB, 256 MiB) and GPU (the GPU column), the GPU line's
#     name, used figure and vitals (util, °C, W), DIRTY; a holder whose parent exited is
#     `orphan`; colour is used (the control for NO_COLOR)
#   - the problems are one line (`! … — p: show`) and no `fix:`; `p` opens them with their fixes,
#     `p` folds them; the key help names `p`
#   - Home, j/k, Down/Up move the selection (the reverse-video row); K on it shows the plan naming
#     that PID and no other holder, `[y/N]`; `n` is `not confirmed` and the holder lives; K `y`
#     ends it and only it (the bystander and the orphan live), the pane says `all 1 target gone`,
#     and once the pane is closed its row is gone and the GPU line drops by its 512 MiB
#   - resize to 200x50 and back: header on line 1, key help on the last line, a long command
#     line whole only at 200 columns, the attributed figure on the GPU line only at 200
#   - `q`, SIGTERM and SIGINT quit: exit 0, alternate screen left, cursor shown, the shell's lines
#     from before top are back with the prompt after them, no child of top left running
#   - NO_COLOR=1: no colour escapes, the selection still in reverse video
#   - --full-scan 1: a process older than top that opens the device file later (not a new PID,
#     not in NVML) appears within 3 s; before it opens it, it is not shown
#   - a hung NVML (--nvml-timeout 1s): `NVML not answering`, UNKNOWN, the clock goes on, `q`
#     quits within 2 s, exit 0, and the hung NVML helper is gone
#   - no terminal (stdin /dev/null, stdout a file): exit 2, stderr names `gpuclean status`
#   - tests/top/screens.sh renders its pictures (80x24, 120x40) into a temporary directory: a PNG
#     and an SVG each (docs/top-*.png are written by hand, never by this test)
# The test signals only the processes it started, each by its PID; never by name.
# The bash -c programs are in single quotes on purpose: they expand in the child.
# shellcheck disable=SC2016
set -uo pipefail
build=$(realpath -m "${1:?usage: tests/top/run.sh BUILD_DIR}")
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
G=$build/gpuclean-test
fake=$build/tests/fake_nvml/r580
[ -x "$G" ] || {
  echo "top test: $G is not an executable (cmake --build $build --target gpuclean-test)" >&2
  exit 2
}
[ -e "$fake/libnvidia-ml.so.1" ] || {
  echo "top test: no fake NVML at $fake (cmake --build $build --target fake_nvml_r580)" >&2
  exit 2
}
command -v tmux >/dev/null || {
  echo "top test: tmux is not installed (scripts/setup.sh installs it)" >&2
  exit 2
}
# check, pass, fail, not, until_ok, finish; work_dir: $work, and the processes in $pids
# stopped at exit.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$root/tests/lib/checks.sh"
work_dir
started=$EPOCHREALTIME

# --- the terminal ------------------------------------------------------------------------------

sock=gpuclean-top-test-$$
export TMUX_TMPDIR=$work # the server's socket, removed with $work
unset TMUX
tm() { tmux -L "$sock" -f /dev/null "$@"; }
top_pid="" # the gpuclean-test top now running in the pane, while it runs
top_start=""
cleanup() {
  tm kill-server 2>/dev/null
  # The server's SIGHUP ends the pane's top; one that ignored it is ended here, by its PID and
  # only while it is still the process that was started.
  if [ -n "$top_pid" ] && [ "$(start_time "$top_pid")" = "$top_start" ]; then
    kill -KILL "$top_pid" 2>/dev/null
  fi
  stop_started
}
trap cleanup EXIT

# start_time PID: field 22 of /proc/PID/stat (empty when gone): with the PID, names a process.
start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  awk '{ print $20 }' <<<"$stat"
}

state_of() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  awk '{ print $1 }' <<<"$stat"
}
parent_of() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 0
  stat=${stat##*) }
  awk '{ print $2 }' <<<"$stat"
}

term=screen-256color
infocmp tmux-256color >/dev/null 2>&1 && term=tmux-256color
# The pane's shell: no user rc files; `t SCRIPT` runs a top launcher and says how it ended.
cat >"$work/rc" <<EOF
PS1='top-test\$ '
HISTFILE=
t() { "\$1"; local s=\$?; echo "\$s" >"\$1.exit"; echo "top exited \$s"; }
EOF
tm new-session -d -x 80 -y 24 -s top \
  "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=$work TERM=$term LANG=C.UTF-8 bash --rcfile $work/rc -i" || {
  echo "top test: tmux new-session failed" >&2
  exit 2
}

shot() { tm capture-pane -p -t top; }
shot_e() { tm capture-pane -e -p -t top; }
on_screen() { shot | grep -qE -- "$1"; }
off_screen() { ! shot | grep -qE -- "$1"; }
line_n() { shot | sed -n "${1}p"; }
flag() { tm display -p -t top "#{$1}"; }
keys() { tm send-keys -t top "$@"; }
# dump: the screen, indented, after a failed check.
dump() {
  echo "  --- screen ($(flag window_width)x$(flag window_height), alternate_on=$(flag alternate_on), cursor_flag=$(flag cursor_flag)):"
  shot | sed 's/^/  |/'
  echo "  ---"
}
# expect MESSAGE SECONDS COMMAND...: polls COMMAND up to SECONDS; PASS, or FAIL with the screen.
expect() {
  local message=$1 seconds=$2
  shift 2
  if until_ok "$seconds" "$@"; then pass "$message"; else
    fail "$message"
    dump
  fi
}
# now_check MESSAGE COMMAND...: once, at once; FAIL with the screen.
now_check() {
  local message=$1
  shift
  if "$@"; then pass "$message"; else
    fail "$message"
    dump
  fi
}
# The table row of a PID: lines whose first word is the PID (tree glyphs and blanks before it),
# so that a figure equal to it elsewhere (612 MiB) is no match.
first_word() { grep -E "^[^0-9A-Za-z]*$1( |$)"; }
row() { shot | first_word "$1"; }
row_has() { row "$1" | grep -qE -- "$2"; }
no_row() { [ -z "$(row "$1")" ]; }
# The kill pane, from its plan on (the problems above it stay in view).
plan() { shot | sed -n '/Plan: /,$p'; }
# The text in reverse video (the selected row).
selected() { shot_e | awk -v mode=selected -f "$root/tests/top/sgr.awk"; }
selected_is() { selected | first_word "$1" | grep -q .; }
colours() { shot_e | awk -v mode=colours -f "$root/tests/top/sgr.awk" | sort -u | tr '\n' ' '; }
# The time of the report on the screen (HH:MM:SS on the first line).
report_clock() { line_n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | head -1; }
clock_is_not() { [ "$(report_clock)" != "$1" ]; }
# new_reports N: until the report's time has changed N times (each within 10 s): at least N - 1
# whole collections began after the call. A barrier where a fixed sleep would guess.
new_reports() {
  local n=$1 seen i
  seen=$(report_clock)
  for ((i = 0; i < n; i++)); do
    until_ok 10 clock_is_not "$seen" || return 1
    seen=$(report_clock)
  done
}
elapsed_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }'; }
alive() { kill -0 "$1" 2>/dev/null; }
dead() { ! kill -0 "$1" 2>/dev/null; }
# forget PID: a started process that is gone leaves $pids, so that the exit trap never signals
# whoever gets its number next.
forget() {
  local i
  for i in "${!pids[@]}"; do [ "${pids[i]}" = "$1" ] && unset 'pids[i]'; done
}

# --- device files, fake NVML, holders ------------------------------------------------------------

mkdir "$work/dev"
dev=$work/dev/nvidia0
touch "$dev"
# holder NAME [FIFO]: a process of ours that opens the fake device file and sleeps as `NAME`
# (its command line); with FIFO it first waits for a line there, holding nothing meanwhile.
holder() {
  bash -c '[ -z "$3" ] || read -r _ <"$3"; exec 3<>"$1"; exec -a "$2" sleep 600' \
    _ "$dev" "$1" "${2:-}" &
  last=$!
  pids+=("$last")
}
# born_holder NAME: a new process that holds the device file from its first instant, as `NAME`:
# it inherits the descriptor at fork from a parent (ours, waiting for it) that then closes its
# own copy. So no refresh can see its PID before it holds.
born_holder() {
  rm -f "$work/$1.pid"
  bash -c 'exec 3<>"$1"; (exec -a "$2" sleep 600) & echo $! >"$3"; exec 3<&-; wait' \
    _ "$dev" "$1" "$work/$1.pid" &
  last_parent=$!
  pids+=("$last_parent")
  until_ok 5 test -s "$work/$1.pid"
  last=$(cat "$work/$1.pid")
  pids+=("$last")
}
holds() { [ "$(readlink "/proc/$1/fd/3" 2>/dev/null)" = "$dev" ]; }
nvml_config() { # NAME LINE...: $work/NAME.cfg
  printf '%s\n' "${@:2}" >"$work/$1.cfg"
}
reserve=641728512 # the fake's default "used": the driver's own
MiB=1048576

# launch NAME CONFIG [ENV=VALUE...] -- TOP OPTIONS...: starts `gpuclean-test top` in the pane
# through a launcher that prints "before top: NAME", records its PID and execs top; sets
# top_pid once that PID is gpuclean-test.
launch() {
  local name=$1 cfg=$2 envs=() arg
  shift 2
  while [ "$1" != "--" ]; do
    envs+=("$1")
    shift
  done
  shift
  {
    echo '#!/bin/bash'
    echo "echo \$\$ >$work/top.pid"
    echo "echo 'before top: $name'"
    printf 'exec env LD_LIBRARY_PATH=%q FAKE_NVML_CONFIG=%q' "$fake" "$cfg"
    for arg in "${envs[@]}"; do printf ' %q' "$arg"; done
    printf ' %q top --device-glob %q' "$G" "$dev"
    for arg in "$@"; do printf ' %q' "$arg"; done
    echo
  } >"$work/$name.sh"
  chmod +x "$work/$name.sh"
  rm -f "$work/top.pid" "$work/$name.sh.exit"
  keys -l "clear; t $work/$name.sh"
  keys Enter
  top_pid=""
  is_top() {
    local pid
    pid=$(cat "$work/top.pid" 2>/dev/null) && [ -n "$pid" ] &&
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(realpath "$G")" ] && top_pid=$pid
  }
  if until_ok 10 is_top; then
    top_start=$(start_time "$top_pid")
    return 0
  fi
  echo "top test: $name: gpuclean-test top did not start"
  dump
  return 1
}
# top_children: "PID:START" of each child of the running top (e.g. its NVML helper).
top_children() {
  local child kids=()
  read -r -a kids <<<"$(cat "/proc/$top_pid/task/"*/children 2>/dev/null)"
  for child in "${kids[@]}"; do
    echo "$child:$(start_time "$child")"
  done
}
# ended NAME: the pane's shell said how top ended.
ended() { [ -e "$work/$1.sh.exit" ] && on_screen '^top exited [0-9]+'; }
exit_status() { cat "$work/$1.sh.exit" 2>/dev/null; }
# restored NAME HOW: the checks after top has ended, whichever way.
restored() {
  local name=$1 how=$2 child left=""
  now_check "$how: the alternate screen is left (alternate_on=$(flag alternate_on))" \
    [ "$(flag alternate_on)" = 0 ]
  now_check "$how: the cursor is shown (cursor_flag=$(flag cursor_flag))" [ "$(flag cursor_flag)" = 1 ]
  now_check "$how: the shell's lines from before top are back, the prompt after them" \
    eval "shot | grep -qxF 'before top: $name' && shot | grep -A1 '^top exited' | grep -q '^top-test\\$'"
  now_check "$how: nothing of top's screen is left" off_screen 'gpuclean top|q quit'
  children_gone() {
    left=""
    for child in "${children[@]}"; do
      [ "$(start_time "${child%%:*}")" = "${child#*:}" ] && [ "$(state_of "${child%%:*}")" != Z ] &&
        left+=" ${child%%:*}"
    done
    [ -z "$left" ]
  }
  until_ok 1 children_gone
  check "$how: no child of top is left running (had: ${children[*]:-none}; left:${left:- none})" \
    [ -z "$left" ]
  top_pid=""
}

# --- 1. a clean start; a holder that starts while top runs -----------------------------------------

nvml_config clean "release_exited 1"
host=$(uname -n | cut -d. -f1)
if launch clean "$work/clean.cfg" -- -d 0.5; then
  expect "the header: 'gpuclean top' on line 1" 5 eval 'line_n 1 | grep -q "gpuclean top"'
  expect "the verdict on line 1: CLEAN while nothing holds" 3 eval 'line_n 1 | grep -qw CLEAN'
  now_check "the holders table header names PID USER CLASS MEMORY AGE COMMAND" \
    eval 'shot | grep -E "PID" | grep -E "USER" | grep -E "CLASS" | grep -E "MEMORY" | grep -E "AGE" | grep -qE "COMMAND"'
  now_check "the key help on the last line (24) has 'q quit'" eval 'line_n 24 | grep -q "q quit"'
  now_check "NVML answers: no 'NVML not answering' (control for the hang)" off_screen 'NVML not answering'
  now_check "the alternate screen is on while top runs (alternate_on=$(flag alternate_on))" \
    [ "$(flag alternate_on)" = 1 ]
  now_check "the cursor is hidden while top runs (cursor_flag=$(flag cursor_flag))" \
    [ "$(flag cursor_flag)" = 0 ]
  now_check "no holder yet: the table says so, no row of holder-N" \
    eval "on_screen '(^|[^0-9])0 holders|no process holds' && off_screen holder-N"
  now_check "line 1 names the host ($host) and the time (HH:MM:SS)" \
    eval 'line_n 1 | grep -qF "$host" && line_n 1 | grep -qE "[0-2][0-9]:[0-5][0-9]:[0-5][0-9]"'
  now_check "the GPU line: 'GPU 0', used 612 MiB / 140.4 GiB (the fake's default)" \
    on_screen '^ *GPU 0 .*612 MiB / 140\.4 GiB'
  # Two new processes: one opens the device file, one holds nothing (the control).
  born_holder holder-N
  late=$last
  late_parent=$last_parent
  bash -c 'exec -a holder-none sleep 600' &
  none=$!
  pids+=("$none")
  t0=$EPOCHREALTIME
  if until_ok 3 row_has "$late" 'holder-N'; then
    pass "a holder started while top runs appears in $(elapsed_since "$t0") s (-d 0.5, deadline 3 s)"
  else
    fail "a holder started while top runs appears within 3 s (-d 0.5)"
    dump
  fi
  now_check "its row: pid $late, class active, command holder-N" row_has "$late" 'active.*holder-N'
  now_check "a process started with it that holds nothing (pid $none) is not shown" \
    eval "no_row $none && off_screen holder-none"
  expect "the selection (reverse video) is that row, the only one" 2 selected_is "$late"
  # e: the explain pane, as `gpuclean explain PID` prints it; Esc closes it.
  keys e
  expect "e: the explain pane for pid $late ('pid $late — sleep (active)', its command)" 5 \
    eval "on_screen 'pid $late — sleep \\(active\\)' && on_screen 'command +holder-N 600'"
  keys Escape
  expect "Esc closes the explain pane" 3 eval "off_screen 'pid $late — ' && row_has $late holder-N"
  # A new process that opens the device file a while after it starts, as a CUDA program does
  # after its imports (here NVML does not list it, as with --no-nvml): still a new holder. It
  # opens when told, once top has collected twice since it started (a barrier, not a sleep).
  bash -c 'until [ -e "$2" ]; do sleep 0.05; done; exec 3<>"$1"; exec -a holder-L sleep 600' \
    _ "$dev" "$work/go-L" &
  slow=$!
  pids+=("$slow")
  new_reports 3 || echo "top test: the report's time did not change"
  now_check "a new process that does not hold yet (pid $slow) is not shown" \
    eval "no_row $slow && off_screen holder-L"
  : >"$work/go-L"
  until_ok 5 holds "$slow" || echo "top test: holder-L did not open $dev"
  t0=$EPOCHREALTIME
  if until_ok 3 row_has "$slow" 'active.*holder-L'; then
    pass "a new process that opens the device file after it started appears in $(elapsed_since "$t0") s (deadline 3 s)"
  else
    fail "a new process that opens the device file 1 s after it started appears within 3 s"
    dump
  fi
  mapfile -t children < <(top_children)
  t0=$EPOCHREALTIME
  keys q
  expect "q quits" 3 ended clean
  took=$(elapsed_since "$t0")
  check "q: exit status 0 (got $(exit_status clean)), in ${took} s (< 2 s)" \
    eval '[ "$(exit_status clean)" = 0 ] && awk -v t="$took" "BEGIN { exit !(t < 2) }"'
  restored clean "q"
  for p in "$late" "$late_parent" "$none" "$slow"; do
    kill "$p" 2>/dev/null
    wait "$p" 2>/dev/null
    forget "$p"
  done
fi

# --- 2. holders with memory, an orphan, the kill pane, resize, SIGTERM ---------------------------

long=holder-B-with-a-long-command-line-that-an-80-column-terminal-cuts-short
holder holder-T
target=$last
holder "$long"
bystander=$last
# The orphan: its parent exits at once, so it is re-parented (to PID 1, or a subreaper).
bash -c '( exec 3<>"$1"; exec -a holder-O sleep 600 ) & echo $! >"$2"' _ "$dev" "$work/orphan.pid"
orphan=$(cat "$work/orphan.pid")
pids+=("$orphan")
for p in "$target" "$bystander" "$orphan"; do
  until_ok 5 holds "$p" || echo "top test: holder $p did not open $dev"
done
nvml_config dirty "release_exited 1" \
  "used 0 $((reserve + 896 * MiB))" \
  "process 0 compute $target $((512 * MiB))" \
  "process 0 compute $bystander $((256 * MiB))" \
  "process 0 compute $orphan $((128 * MiB))"
if launch dirty "$work/dirty.cfg" -- -d 0.5; then
  expect "holders with memory: the verdict on line 1 is DIRTY" 5 eval 'line_n 1 | grep -qw DIRTY'
  expect "the target's row: pid $target, active, 512 MiB, holder-T" 3 \
    row_has "$target" 'active.*512 MiB.*holder-T'
  now_check "the bystander's row: pid $bystander, active, 256 MiB" row_has "$bystander" 'active.*256 MiB.*holder-B'
  now_check "the GPU line: the name, used 1.5 GiB / 140.4 GiB, the vitals (util 0%, 31 °C, 75 W)" \
    on_screen '^GPU 0 H200 +\[.*\] 1\.5 GiB / 140\.4 GiB .*util 0% +31 °C +75 W'
  now_check "the GPU column: the target's memory is on GPU 0" row_has "$target" '512 MiB 0 '
  now_check "the problems are one line ('! … — p: show'), no 'fix:' line" \
    eval '[ "$(shot | grep -c "^! ")" = 1 ] && on_screen "— p: show" && off_screen "fix: "'
  now_check "the key help names p" eval 'line_n 24 | grep -q "p problems"'
  keys p
  expect "p opens the problems, each with its fix" 2 eval 'on_screen "^ +fix: " && on_screen "— p: fold"'
  keys p
  expect "p folds them again" 2 eval 'off_screen "fix: " && on_screen "— p: show"'
  orphan_parent=$(parent_of "$orphan")
  if [ "$orphan_parent" = 1 ] && ! grep -qE '^0::.*/system\.slice/[^/]+\.service' /proc/self/cgroup; then
    now_check "a holder whose parent exited: pid $orphan, orphan, 128 MiB" \
      row_has "$orphan" 'orphan.*128 MiB.*holder-O'
  else
    skip "the orphan class: holder-O was re-parented to $orphan_parent, not PID 1 (a subreaper), or this runs in a system service's cgroup"
  fi
  now_check "colour is used when NO_COLOR is unset (SGR: $(colours)) — the control for NO_COLOR" \
    [ -n "$(colours)" ]
  # The selection: Home, then the largest holder is first (sort by memory).
  keys Home
  expect "Home selects the first row, the largest holder ($target)" 2 selected_is "$target"
  keys j
  expect "j moves the selection down (to $bystander)" 2 selected_is "$bystander"
  keys k
  expect "k moves it back up (to $target)" 2 selected_is "$target"
  keys Down
  expect "Down moves it down" 2 selected_is "$bystander"
  keys Up
  expect "Up moves it up" 2 selected_is "$target"

  # K, then n: nothing is signalled.
  keys K
  expect "K: the plan asks 'Kill 1 process? [y/N]'" 5 on_screen 'Kill 1 process(es)?\? \[y/N\]'
  now_check "the plan names the selected pid $target" eval "plan | first_word $target | grep -q ."
  now_check "the plan does not name the bystander $bystander nor the orphan $orphan" \
    eval "! plan | first_word '($bystander|$orphan)' | grep -q ."
  keys n
  expect "n: the pane says 'not confirmed'" 3 on_screen 'not confirmed'
  now_check "n: the target $target is alive" alive "$target"
  keys Escape
  expect "Esc closes the pane; the target's row is back" 3 \
    eval "off_screen 'not confirmed' && row_has $target holder-T"

  # K, then y: the target and only the target ends.
  keys K
  expect "K again: the plan asks [y/N]" 5 on_screen '\[y/N\]'
  keys y
  expect "y: the target $target ends" 10 dead "$target"
  dead "$target" && forget "$target"
  expect "y: the pane shows kill's report: 'all 1 target gone'" 10 on_screen 'all 1 target gone'
  now_check "the report names pid $target: 'gone  $target (…) after …'" on_screen "gone +$target \\(.*after"
  now_check "the bystander $bystander is alive" alive "$bystander"
  now_check "the orphan $orphan is alive" alive "$orphan"
  keys Escape
  expect "after the pane is closed, the target's row is gone" 3 \
    eval "off_screen 'all 1 target gone' && no_row $target && off_screen holder-T"
  now_check "the bystander's row is still there" row_has "$bystander" 'holder-B'
  expect "the GPU line: the target's 512 MiB released (used 996 MiB)" 3 \
    on_screen '^ *GPU 0 .*996 MiB / 140\.4 GiB'

  # Resize: 200x50 and back to 80x24.
  now_check "at 80 columns the long command line is cut" off_screen "$long"
  tm resize-window -t top -x 200 -y 50
  expect "200x50: the key help moves to line 50" 3 eval 'line_n 50 | grep -q "q quit"'
  now_check "200x50: the header still on line 1" eval 'line_n 1 | grep -q "gpuclean top"'
  now_check "200x50: more columns: the long command line is whole" on_screen "$long"
  now_check "200x50: the GPU line has room for the attributed figure (attr 384 MiB)" \
    on_screen '^GPU 0 .*996 MiB / 140\.4 GiB +attr 384 MiB'
  now_check "200x50: a line is wider than 80 columns" \
    eval '[ "$(shot | awk "{ if (length > n) n = length } END { print n + 0 }")" -gt 80 ]'
  tm resize-window -t top -x 30 -y 6
  expect "30x6: still drawn (line 1 begins 'gpuclean top')" 3 \
    eval 'line_n 1 | grep -q "^gpuclean top" && [ "$(flag window_width)" = 30 ]'
  now_check "30x6: top still runs" alive "$top_pid"
  tm resize-window -t top -x 80 -y 24
  expect "back at 80x24: the key help on line 24" 3 eval 'line_n 24 | grep -q "q quit"'
  now_check "80x24: the header on line 1" eval 'line_n 1 | grep -q "gpuclean top"'
  now_check "80x24: the long command line is cut again" off_screen "$long"
  now_check "80x24: the bystander's row still fits" row_has "$bystander" 'active.*256 MiB'

  # y acts only on the process the plan was made for: a holder of ours ends while the question
  # is open, and y then signals nothing (the start-time check).
  holder holder-R
  refused=$last
  until_ok 5 holds "$refused"
  expect "a holder to plan for shows (pid $refused)" 5 row_has "$refused" 'holder-R'
  keys /
  keys -l "holder-R"
  keys Enter
  expect "/holder-R selects it" 3 selected_is "$refused"
  keys K
  expect "K on it: the plan asks [y/N]" 5 on_screen '\[y/N\]'
  kill -TERM "$refused"
  until_ok 5 dead "$refused"
  forget "$refused"
  keys y
  expect "y after the planned process ended: refused, nothing signalled" 5 \
    on_screen 'no longer the process planned for; nothing was signalled'
  now_check "the bystander $bystander and the orphan $orphan are alive" \
    eval "alive $bystander && alive $orphan"
  keys Escape
  # The filter prompt starts from the filter in force: erased (8 characters) to show all.
  keys /
  for _ in 1 2 3 4 5 6 7 8; do keys BSpace; done
  keys Enter

  # A tree that reaches another session: the plan shows what kill would ask about, since y
  # runs kill with --yes (the review found the question generic before).
  bash -c 'exec 3<>"$1"; setsid sleep 600 3<&- & echo $! >"$2"; exec -a holder-S sleep 600' \
    _ "$dev" "$work/setsid.pid" &
  sess_holder=$!
  pids+=("$sess_holder")
  until_ok 5 test -s "$work/setsid.pid"
  sess_child=$(cat "$work/setsid.pid")
  pids+=("$sess_child")
  keys /
  keys -l "holder-S"
  keys Enter
  expect "a holder whose child is in another session shows (pid $sess_holder)" 5 \
    row_has "$sess_holder" 'holder-S'
  expect "/holder-S selects it" 3 selected_is "$sess_holder"
  keys K
  expect "K: the plan says kill would ask: 'reaches another session'" 5 \
    on_screen 'would ask: the tree of pid [0-9]+ reaches another session'
  keys n
  expect "n: not confirmed" 3 on_screen 'not confirmed'
  now_check "n: the holder and its child live" eval "alive $sess_holder && alive $sess_child"
  keys Escape
  keys /
  for _ in 1 2 3 4 5 6 7 8; do keys BSpace; done
  keys Enter
  kill -TERM "$sess_child" "$sess_holder"
  until_ok 5 eval "dead $sess_child && dead $sess_holder"
  forget "$sess_child"
  forget "$sess_holder"
  expect "the filter cleared, both holders gone: the bystander's row" 5 \
    eval "row_has $bystander holder-B && no_row $sess_holder"

  # SIGTERM to this top, by its PID.
  mapfile -t children < <(top_children)
  kill -TERM "$top_pid"
  expect "SIGTERM quits" 3 ended dirty
  s=$(exit_status dirty)
  check "SIGTERM: exit status 0, as top --help says (got $s)" [ "$s" = 0 ]
  restored dirty "SIGTERM"
fi

# --- 3. NO_COLOR=1; --full-scan; SIGINT ------------------------------------------------------------

# A process older than top that opens the device file only later: not a new PID, not in NVML,
# so only a full scan (--full-scan 1) finds it. It holds nothing until it reads a line.
mkfifo "$work/go"
holder holder-F "$work/go"
older=$last

nvml_config nocolour "release_exited 1" \
  "used 0 $((reserve + 384 * MiB))" \
  "process 0 compute $bystander $((256 * MiB))" \
  "process 0 compute $orphan $((128 * MiB))"
if launch nocolour "$work/nocolour.cfg" NO_COLOR=1 -- -d 0.5 --full-scan 1; then
  expect "NO_COLOR=1: the screen is drawn (the bystander's row)" 5 row_has "$bystander" '256 MiB'
  now_check "NO_COLOR=1: no colour escapes (got: $(colours))" [ -z "$(colours)" ]
  now_check "NO_COLOR=1: the selection is still in reverse video" eval '[ -n "$(selected)" ]'
  # The control: past a full scan (1 s: three reports later, the last collection began a whole
  # second after this line), the older process that holds nothing yet is not shown.
  new_reports 3 || echo "top test: the report's time did not change"
  now_check "--full-scan 1: pid $older, alive but holding nothing, is not shown" \
    eval "no_row $older && off_screen holder-F"
  echo >"$work/go"
  until_ok 5 holds "$older" || echo "top test: holder-F did not open $dev"
  t0=$EPOCHREALTIME
  if until_ok 3 row_has "$older" 'active.*holder-F'; then
    pass "--full-scan 1: an older process that opens the device file appears in $(elapsed_since "$t0") s (deadline 3 s)"
  else
    fail "--full-scan 1: an older process that opens the device file appears within 3 s"
    dump
  fi
  # ?: the help pane; q there closes the pane, top goes on.
  keys '?'
  expect "?: the help pane (its 'filter holders by PID' line)" 3 on_screen 'filter holders by PID'
  keys q
  expect "q in the help pane closes it and top goes on" 3 \
    eval "off_screen 'filter holders by PID' && row_has $bystander holder-B && alive $top_pid"
  # /: the filter prompt; Enter applies it; an empty filter shows all again.
  keys /
  keys -l holder-O
  keys Enter
  expect "/holder-O: only the orphan's row is left" 3 \
    eval "row_has $orphan holder-O && no_row $bystander && no_row $older"
  keys /
  for _ in $(seq 12); do keys BSpace; done
  keys Enter
  expect "/ with an empty filter: all rows again" 3 eval "row_has $bystander holder-B && row_has $orphan holder-O"
  # s: the sort cycles memory -> gpu% -> cpu% -> rss -> age -> pid -> memory (issue 37); at
  # 80 columns the key stays readable in the header ("[by memory", COMMAND's 30 columns).
  now_check "the table is sorted by memory" on_screen '\[by memory'
  keys s
  expect "s: sorted by GPU%" 2 on_screen '\[by gpu%'
  keys s
  expect "s: sorted by CPU%" 2 on_screen '\[by cpu%'
  keys s
  expect "s: sorted by RSS" 2 on_screen '\[by rss'
  keys s
  expect "s: sorted by age" 2 on_screen '\[by age'
  keys s
  expect "s: sorted by PID" 2 on_screen '\[by pid'
  keys s
  expect "s: sorted by memory again" 2 on_screen '\[by memory'
  now_check "GPU%: the header names the column at 80 columns" on_screen 'GPU%'
  mapfile -t children < <(top_children)
  kill -INT "$top_pid"
  expect "SIGINT quits" 3 ended nocolour
  s=$(exit_status nocolour)
  check "SIGINT: exit status 0, as top --help says (got $s)" [ "$s" = 0 ]
  restored nocolour "SIGINT"
fi

# --- 4. a hung NVML ------------------------------------------------------------------------------------

nvml_config hang "hang nvmlDeviceGetMemoryInfo_v2" "hang nvmlDeviceGetMemoryInfo"
if launch hang "$work/hang.cfg" -- -d 0.5 --nvml-timeout 1s; then
  expect "hung NVML (--nvml-timeout 1s): 'NVML not answering' within 5 s" 5 on_screen 'NVML not answering'
  now_check "hung NVML: the verdict on line 1 is UNKNOWN" eval 'line_n 1 | grep -qw UNKNOWN'
  now_check "hung NVML: the key help is still on line 24" eval 'line_n 24 | grep -q "q quit"'
  clock=$(line_n 1 | grep -oE '[0-9]{2}:[0-9]{2}:[0-9]{2}' | head -1)
  expect "hung NVML: the clock on line 1 goes on (was $clock)" 4 \
    eval '[ -n "$clock" ] && line_n 1 | grep -qE "[0-9]{2}:[0-9]{2}:[0-9]{2}" && ! line_n 1 | grep -qF "$clock"'
  mapfile -t children < <(top_children)
  t0=$EPOCHREALTIME
  keys q
  if until_ok 2 ended hang; then
    pass "hung NVML: q quits in $(elapsed_since "$t0") s (deadline 2 s)"
  else
    fail "hung NVML: q quits within 2 s"
    dump
    until_ok 5 ended hang
  fi
  check "hung NVML: exit status after q is 0 (got $(exit_status hang))" [ "$(exit_status hang)" = 0 ]
  sleep 0.3 # a SIGKILLed helper is reaped by top before it exits; this is only slack for /proc
  restored hang "hung NVML, q"
fi

# --- 5. no terminal ------------------------------------------------------------------------------------

timeout 10 env LD_LIBRARY_PATH="$fake" FAKE_NVML_CONFIG="$work/clean.cfg" \
  "$G" top --device-glob "$dev" </dev/null >"$work/noterm.out" 2>"$work/noterm.err"
s=$?
check "no terminal: exit 2 (got $s)" [ "$s" = 2 ]
check "no terminal: stderr names 'gpuclean status': $(head -c 300 "$work/noterm.err")" \
  grep -q 'gpuclean status' "$work/noterm.err"
check "no terminal: nothing on stdout" [ ! -s "$work/noterm.out" ]

# --- 6. the pictures (tests/top/screens.sh), rendered into a temporary directory -----------------

if "$root/tests/top/screens.sh" "$build" "$work/screens" >"$work/screens.log" 2>&1; then
  pass "screens.sh renders top at 80x24 and 120x40, and with the problems opened"
else
  fail "screens.sh renders top at 80x24 and 120x40, and with the problems opened (exit $?)"
  sed 's/^/  |/' "$work/screens.log"
fi
for name in top-80x24 top-120x40 top-120x40-problems; do
  check "screens.sh: $name.png is a PNG and $name.svg an SVG" \
    eval "head -c 8 '$work/screens/$name.png' | grep -q PNG && grep -q '<svg' '$work/screens/$name.svg'"
done

echo "top: took $(elapsed_since "$started") s"
finish top
