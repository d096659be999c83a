#!/usr/bin/env bash
# Pictures of `gpuclean top` for reviewers: the test binary runs in a private tmux server with
# the fake libnvidia-ml.so.1 (two H100s, their vitals) and device files of its own, held by a few
# stand-in processes (a server with two workers, a job on both GPUs, an orphan, a monitor that
# holds no memory); each screen is captured with its colours (`tmux capture-pane -e -p`) and
# rendered to SVG (tests/top/screen_svg.py) and PNG (rsvg-convert, Debian's librsvg2-bin).
#
#   tests/top/screens.sh BUILD_DIR OUT_DIR
#
# Writes OUT_DIR/top-80x24.{svg,png}, OUT_DIR/top-120x40.{svg,png} and, with the problems
# opened (`p`), OUT_DIR/top-120x40-problems.{svg,png}. docs/ holds the reviewed ones;
# tests/top/run.sh renders into a temporary directory, so that CI fails when rendering does.
# SCREENS_SECONDS (default 3): how long top runs before each capture; the sparklines cover a
# minute, so docs/'s were taken after 30. Exit 0 when every picture is written, 1 when a
# screen could not be captured or rendered, 2 for usage errors or a missing tool.
# It signals only the processes it started, each by its PID; never by name.
# shellcheck disable=SC2016 # the bash -c programs expand in the child
set -uo pipefail
build=$(realpath -m "${1:?usage: tests/top/screens.sh BUILD_DIR OUT_DIR}")
out=$(realpath -m "${2:?usage: tests/top/screens.sh BUILD_DIR OUT_DIR}")
cd "$(dirname "$0")/../.." || exit 2
root=$PWD
G=$build/gpuclean-test
fake=$build/tests/fake_nvml/r580
[ -x "$G" ] || {
  echo "screens: $G is not an executable (cmake --build $build --target gpuclean-test)" >&2
  exit 2
}
[ -e "$fake/libnvidia-ml.so.1" ] || {
  echo "screens: no fake NVML at $fake (cmake --build $build --target fake_nvml_r580)" >&2
  exit 2
}
for tool in tmux rsvg-convert python3; do
  command -v "$tool" >/dev/null || {
    echo "screens: $tool is not installed (scripts/setup.sh installs it)" >&2
    exit 2
  }
done
mkdir -p "$out" || exit 2
seconds=${SCREENS_SECONDS:-3}
# until_ok; work_dir: $work, and the processes in $pids stopped at exit.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$root/tests/lib/checks.sh"
work_dir

sock=gpuclean-top-screens-$$
export TMUX_TMPDIR=$work # the server's socket, removed with $work
unset TMUX
tm() { tmux -L "$sock" -f /dev/null "$@"; }
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  tm kill-server 2>/dev/null
  stop_started
}
trap cleanup EXIT

# --- the stand-in holders ----------------------------------------------------------------------

mkdir "$work/dev" "$work/pid"
touch "$work/dev/nvidia0" "$work/dev/nvidia1"
# One script under several names (the name is what the COMMAND column shows): it opens the
# device files in $HOLD (blank-separated), writes its PID to $work/pid/$PIDNAME, starts the
# children $CHILDREN names ("script args;script args", each with PIDNAME.N) and sleeps.
cat >"$work/stand_in.py" <<'EOF'
import os, subprocess, sys, time
fds = [os.open(path, os.O_RDWR) for path in os.environ["HOLD"].split()]
name = os.environ["PIDNAME"]
with open(os.path.join(os.environ["PIDDIR"], name), "w") as f:
    f.write(str(os.getpid()))
for n, child in enumerate(c for c in os.environ.get("CHILDREN", "").split(";") if c):
    env = dict(os.environ, PIDNAME="%s.%d" % (name, n), CHILDREN="")
    subprocess.Popen([sys.executable] + child.split(), env=env)
time.sleep(600)
EOF
for script in serve.py worker.py train.py eval.py monitor.py; do
  cp "$work/stand_in.py" "$work/$script"
done
d0=$work/dev/nvidia0
d1=$work/dev/nvidia1
# stand_in PIDNAME HOLD CHILDREN COMMAND...: started in $work (so that its command line reads
# `python3 serve.py …`); its PID (and its children's) in $work/pid/.
stand_in() {
  (cd "$work" && PIDDIR=$work/pid PIDNAME=$1 HOLD=$2 CHILDREN=$3 exec python3 "${@:4}") &
  pids+=("$!")
}
stand_in serve "$d0 $d1" "worker.py --rank 0 --world 2;worker.py --rank 1 --world 2" \
  serve.py --model llama-3-70b --port 8000 --tensor-parallel 2
stand_in train "$d0 $d1" "" train.py --config configs/finetune-8b.yaml --epochs 3
stand_in monitor "$d0 $d1" "" monitor.py --interval 5
# The orphan: its parent (a subshell) exits at once, so it is re-parented.
bash -c '(cd "$1" && PIDDIR=$1/pid PIDNAME=eval HOLD=$2 exec python3 eval.py --ckpt step-4000 --split test) &' \
  _ "$work" "$d1"
for name in serve serve.0 serve.1 train monitor eval; do
  until_ok 10 test -s "$work/pid/$name" || {
    echo "screens: the stand-in $name did not start" >&2
    exit 1
  }
done
pids+=("$(cat "$work/pid/serve.0")" "$(cat "$work/pid/serve.1")" "$(cat "$work/pid/eval")")
serve=$(cat "$work/pid/serve")
w0=$(cat "$work/pid/serve.0")
w1=$(cat "$work/pid/serve.1")
train=$(cat "$work/pid/train")
orphan=$(cat "$work/pid/eval")

GiB=1073741824
MiB=1048576
# nvml_config STEP: the fake's scenario at the STEP-th second: the job's memory on GPU 0 climbs
# and falls back (an epoch), the unattributed memory on GPU 1 grows (a leak), so that the
# sparklines have a shape. Written beside and renamed over: the fake re-reads it (reload 1).
nvml_config() {
  local job=$((6 * GiB + ($1 % 15) * 2 * GiB)) leak=$((1 * GiB + $1 * 300 * MiB))
  cat >"$work/nvml.next" <<EOF
reload 1
gpus 2
cuda 13000
name 0 NVIDIA H100 80GB HBM3
name 1 NVIDIA H100 80GB HBM3
total 0 85520809984
total 1 85520809984
used 0 $((40 * GiB + 512 * MiB + job))
used 1 $((54 * GiB + leak))
utilization 0 87
utilization 1 41
temperature 0 67
temperature 1 52
power 0 612000
power 1 298000
process 0 compute $serve $((2 * GiB + 512 * MiB))
process 0 compute $w0 $((38 * GiB))
process 1 compute $w1 $((38 * GiB))
process 0 compute $train $job
process 1 compute $train $((8 * GiB))
process 1 compute $orphan $((8 * GiB))
activity 0 $w0 91 40
activity 1 $w1 88 37
activity 0 $train 64 22
activity 1 $train 58 20
EOF
  mv "$work/nvml.next" "$work/nvml.cfg"
}
step=0
nvml_config "$step"

# --- the screens ---------------------------------------------------------------------------------

term="screen-256color"
infocmp tmux-256color >/dev/null 2>&1 && term=tmux-256color
tm new-session -d -x 80 -y 24 -s top \
  "env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=$work TERM=$term LANG=C.UTF-8 \
   LD_LIBRARY_PATH=$fake FAKE_NVML_CONFIG=$work/nvml.cfg \
   $G top -d 0.5 --device-glob '$work/dev/nvidia*'" || {
  echo "screens: tmux new-session failed" >&2
  exit 1
}
shot() { tm capture-pane -p -t top; }
# All the holders' rows are there, the orphan's last (it is read in the same scan as the rest).
# shellcheck disable=SC2317 # run by until_ok
shows_all() {
  local pid screen
  screen=$(shot)
  for pid in "$serve" "$w0" "$w1" "$train" "$orphan"; do
    grep -qE "^[^0-9A-Za-z]*$pid " <<<"$screen" || return 1
  done
}
failed=0
# capture NAME COLUMNS ROWS [SECONDS]: resize, let refreshes draw the sparklines for SECONDS
# (default $seconds), render.
capture() {
  local name=$1 columns=$2 rows=$3 wait=${4:-$seconds}
  tm resize-window -t top -x "$columns" -y "$rows"
  if ! until_ok 10 shows_all; then
    echo "screens: $name: the holders' rows did not all show:" >&2
    shot | sed 's/^/  |/' >&2
    failed=1
    return
  fi
  local i
  for ((i = 0; i < wait; i++)); do # refreshes at -d 0.5: the sparklines' last cells
    step=$((step + 1))
    nvml_config "$step"
    sleep 1
  done
  # -N: the selected row's reverse video runs to the last column, blanks and all.
  tm capture-pane -e -p -N -t top >"$work/$name.ansi"
  if ! python3 "$root/tests/top/screen_svg.py" "$work/$name.ansi" "$columns" "$rows" \
    "$out/$name.svg" || ! rsvg-convert -o "$out/$name.png" "$out/$name.svg"; then
    echo "screens: $name: rendering failed" >&2
    failed=1
    return
  fi
  echo "screens: wrote $out/$name.svg and $out/$name.png"
}
capture top-80x24 80 24
capture top-120x40 120 40
# The same with the problems opened (`p`): each with its fix.
tm send-keys -t top p
if until_ok 5 eval 'shot | grep -q "p: fold"'; then
  capture top-120x40-problems 120 40 1
else
  echo "screens: p did not open the problems" >&2
  failed=1
fi
exit "$failed"
