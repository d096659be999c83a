#!/usr/bin/env bash
# Sets everything up on a fresh Debian machine and runs the whole test suite:
# packages, a -Werror build, clang-format + clang-tidy, the tests, and the tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer. GPU tests are separate: tests/gpu/run.sh.
#   ./test.sh              everything
#   ./test.sh --quick      skip lint and the sanitizer pass
set -euo pipefail
cd "$(dirname "$0")"
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# Each stage's heading carries the seconds since the start: CI's budget (45 min on 2 cores)
# is spent where these numbers say.
# After the seconds, the CPU-seconds used so far by the stages this script has waited for
# (user + system of its children, /proc/$$/stat): a stage that used far less CPU than twice its
# seconds left a core idle.
stage() {
  local cpu
  cpu=$(sed 's/.*) //' "/proc/$$/stat" |
    awk -v hz="$(getconf CLK_TCK)" '{ printf "%d", ($12 + $13 + $14 + $15) / hz }')
  echo "== [${SECONDS}s] $* [cpu ${cpu}s]"
}

# clang-tidy is CI's largest piece of CPU work (16 of 48 minutes as a stage of its own on
# 2026-12-02, both cores busy), and most stages after the build leave the cores idle while they
# wait on processes, servers and timeouts (2026-12-03: docs to packaging, 387 s, used 116
# CPU-seconds). So it runs in the background from the end of the build, at SCHED_IDLE (chrt
# --idle: it gets only CPU that no stage wants), and its result is collected at the end: the
# stage "lint: clang-tidy" waits for it, shows its output and fails CI as it always did. Kept in
# this script's session: a session of its own would be an autogroup of its own, which the kernel
# gives a fair share of the CPU whatever its tasks' policy.
background=()
tree_pids() { echo "$1"; local child; for child in $(pgrep -P "$1"); do tree_pids "$child"; done; }
# SIGSTOP/SIGCONT to a background job and everything it started, parents first (a stopped xargs
# starts nothing new while its children are listed).
# Only while the job is still this script's child: a finished job's PID may be another's now.
ours() { [ "$(ps -o ppid= -p "$1" 2>/dev/null | tr -d ' ')" = "$$" ]; }
signal_job() {
  local pid
  ours "$2" || return 0
  for pid in $(tree_pids "$2"); do kill "-$1" "$pid" 2>/dev/null || true; done
}
stop_background() {
  local job pids
  for job in "${background[@]}"; do
    ours "$job" || continue
    signal_job STOP "$job"
    pids=$(tree_pids "$job")
    # shellcheck disable=SC2086 # a list of PIDs
    kill -TERM $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    kill -CONT $pids 2>/dev/null || true
  done
}
trap stop_background EXIT
trap 'exit 130' INT # (without these a signal ends the script without its EXIT trap)
trap 'exit 143' TERM
idle() {
  if chrt --idle 0 true 2>/dev/null; then chrt --idle 0 "$@"; else nice -n 19 "$@"; fi
}
# Every process this run starts carries this token in its environment (daemons that setsid away
# and re-parent to init too): the last stage fails when one is still running. A metrics server
# of tests/packaging/run.sh outlived CI this way (issue 50).
GPUCLEAN_CI_TOKEN="test.sh-$$-$(date +%s%N)"
export GPUCLEAN_CI_TOKEN
# Live processes with this run's token, but this script and its own children: "PID COMMAND".
left_running() {
  local environ pid mine
  mine=" $(tree_pids $$ | tr '\n' ' ') "
  for environ in /proc/[0-9]*/environ; do
    pid=${environ#/proc/}
    pid=${pid%/environ}
    [[ $mine == *" $pid "* ]] && continue
    # Bounded: reading another process's environ waits on its memory-map lock, which a
    # process stuck on a hung FUSE or NFS file can hold for ever.
    timeout 2 grep -qzx "GPUCLEAN_CI_TOKEN=$GPUCLEAN_CI_TOKEN" "$environ" 2>/dev/null || continue
    [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = Z ] && continue
    echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)"
  done
}
stage "setup: Debian packages"
scripts/setup.sh
# Each test runs once (tests/CMakeLists.txt): the functional suites under ASan+UBSan, the timed
# ones (bound to the wall clock) on this optimized build. Without the sanitizer pass (--quick)
# this build has both.
functional=OFF
[ $quick -eq 1 ] && functional=ON
stage "build (-Werror, man page; tests: the timed suites$([ $quick -eq 1 ] && echo ', the functional ones'))"
BUILD_DIR=build scripts/build.sh -DGPUCLEAN_WERROR=ON -DGPUCLEAN_TESTS=ON -DGPUCLEAN_MAN=ON \
  -DGPUCLEAN_TIMED_TESTS=ON -DGPUCLEAN_FUNCTIONAL_TESTS=$functional
if [ $quick -eq 0 ]; then
  stage "lint: clang-format, the layers; clang-tidy started in the background (its result: the last stage)"
  BUILD_DIR=build scripts/lint.sh --format
  tests/lint/check_layers_test.sh
  idle env BUILD_DIR=build scripts/lint.sh --tidy >build/lint-tidy.log 2>&1 &
  tidy=$!
  background+=("$tidy")
fi
stage "docs: docs/reference.md against the parser, links inside the repository"
scripts/check_docs.sh build
stage "man page: gpuclean(1) against the parser, rendered by man without warnings"
scripts/check_man.sh build
stage "tests: the timed suites$([ $quick -eq 1 ] && echo ', the functional ones')"
# The storm tests need the machine's whole process-creation rate (300/s at least): alone,
# after the rest (beside another test on 2 cores it made 223/s on 2026-12-02 and failed as
# "too slow to test anything").
# The FUSE stuck-process tests are timing-bound too (a kill of a stuck process within 2 s):
# beside a SCHED_IDLE clang-tidy on a loaded machine one run of StuckProcessTest's kill in five
# took 2.7 s, none of five with it stopped (2026-12-03). So these and the storm run after the
# rest with clang-tidy stopped (SIGSTOP), each as alone as before; the rest (the NVML fault
# matrix and the fuzz replay; with --quick the functional suites), mostly waiting on processes
# and hung fakes, runs beside it.
# A test whose process no scan can read within the default deadline (a 71 MiB maps file) runs
# alone too: beside it, a kill test's look after the kill (host-wide, no NVML) rightly said
# "unknown" (CI of d219431, 2026-12-03: KillTest.TreeIgnoringTermIsKilledWithEscalation).
alone='^(StuckProcessTest|MmLockVictimTest)\.|^IdentityTest\.MappingBehindAHugeMapsFileIsFound$'
timed="^StormTest\\.|$alone"
(cd build && ctest --output-on-failure -j "$(nproc)" -E "$timed")
for job in "${background[@]}"; do signal_job STOP "$job"; done
(cd build && ctest --output-on-failure -R "$alone" &&
  ctest --output-on-failure -R '^StormTest\.')
for job in "${background[@]}"; do signal_job CONT "$job"; done
if [ $quick -eq 0 ]; then
  stage "tests under ASan+UBSan: the functional suites"
  # Built by clang: a second compiler's warnings (-Werror) on every file, and a third less CPU
  # than GCC for the same sanitized build (a unity batch of output/: 43 s against 69 s).
  # -O1 and line tables only: ASan needs no more to report with file and line (the test code is
  # -O0, tests/CMakeLists.txt). A unity build (batches of 8 files: the big headers parsed once per
  # batch; CMakeLists.txt lists the files that compile alone). Neither the timed suites (they ran
  # above, on the same code) nor the fuzz replay (fuzz/ci.sh replays the inputs under ASan).
  CC=clang CXX=clang++ BUILD_DIR=build-asan scripts/build.sh -DGPUCLEAN_WERROR=ON -DGPUCLEAN_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DGPUCLEAN_FUNCTIONAL_TESTS=ON \
    -DGPUCLEAN_TIMED_TESTS=OFF -DGPUCLEAN_FUZZ_REPLAY=OFF \
    -DCMAKE_UNITY_BUILD=ON -DCMAKE_UNITY_BUILD_BATCH_SIZE=8
  (cd build-asan && ctest --output-on-failure -j "$(nproc)" -E "$alone" &&
    ctest --output-on-failure -R "$alone")
fi
stage "Slurm: contrib/slurm/epilog.sh on a real one-node cluster"
tests/slurm/run.sh build
stage "Prometheus: a real server scrapes gpuclean metrics --listen"
tests/prometheus/run.sh build
stage "Prometheus: contrib/prometheus/alerts.yml, promtool check and unit tests"
tests/prometheus/rules.sh
stage "Prometheus: a fleet of four fake nodes, alerts fire and resolve on a real server"
tests/prometheus/fleet.sh build
stage "completion: the generated scripts driven in bash, zsh and fish"
tests/completion/run.sh build
stage "top: the live view driven in tmux (keys, kill, resize, a hung NVML, the terminal restored)"
tests/top/run.sh build
stage "README: its example outputs are what the binary prints (a dead job staged with stand-ins)"
python3 tests/readme/examples.py --gpuclean build/gpuclean --fake-nvml build/tests/fake_nvml/r580 \
  --check README.md
stage "plots: the run plot (8 GPUs, the 2-GPU record) and the history example rendered to PNG"
plots=$(mktemp -d)
tests/plots/render.sh build "$plots"
rm -rf "$plots"
stage "Python: the gpuclean package and its pytest plugin, example suites run through pytester"
tests/python/run.sh build
stage "systemd units: verify and exposure, the capabilities they grant, under a real systemd"
tests/packaging/systemd_verify.sh build
tests/packaging/systemd_caps.sh build
tests/packaging/systemd_run.sh build
stage "packaging: the .deb and the release tarball built from this build, installed, run, removed"
scripts/package.sh --build-dir build --out build/dist
tests/packaging/run.sh build/dist
stage "first use: CMake's default generator (Make) builds and installs the binary, completions, manual"
tests/default_generator/run.sh
if [ $quick -eq 0 ]; then
  stage "fuzz, a few seconds per parser (bench/fuzz_bench.sh is the long run)"
  fuzz/ci.sh
fi
if [ $quick -eq 0 ]; then
  stage "lint: clang-tidy (running in the background since the build)"
  tidy_status=0
  wait "$tidy" || tidy_status=$?
  background=()
  cat build/lint-tidy.log
  [ "$tidy_status" -eq 0 ]
fi
stage "nothing this run started is still running"
# Negative control: a daemon of ours that escaped (its own session, re-parented to init) is seen.
control_pid=$(mktemp)
# shellcheck disable=SC2016 # $$ is the inner shell's
(setsid sh -c 'echo $$ >"$1"; exec sleep 300' sh "$control_pid" </dev/null >/dev/null 2>&1 &)
for _ in $(seq 1 100); do [ -s "$control_pid" ] && break; sleep 0.05; done
control=$(cat "$control_pid")
rm -f "$control_pid"
for _ in $(seq 1 100); do left_running | grep -q "^$control " && break; sleep 0.05; done
left_running | grep -q "^$control " || { echo "FAIL: the leftover check does not see its control $control"; exit 1; }
kill "$control"
for _ in $(seq 1 100); do kill -0 "$control" 2>/dev/null || break; sleep 0.05; done
left=$(left_running)
if [ -n "$left" ]; then
  echo "FAIL: still running after the tests (started by this run):"
  echo "$left"
  exit 1
fi
echo "none (the control, a setsid sleep, was seen and ended)"
stage "done"
