#!/usr/bin/env bash
# What scripts/package.sh wrote, used as a user would (./test.sh runs this in CI, as root):
#   - the .deb: lintian reports no error; it holds every installed part; Depends names the
#     libraries it links; `dpkg -i` installs it, and the installed gpuclean runs (--version,
#     status --no-nvml), `man gpuclean` shows its manual, bash, zsh and fish find its
#     completions where they look; `dpkg -r` removes it and leaves none of its files behind;
#   - the tarball: unpacked under a path with a space, its gpuclean finds the bundled
#     prometheus-cpp core library in lib/ with the system's copies hidden and no
#     LD_LIBRARY_PATH, and `metrics --listen` answers a scrape. Negative control: the same binary
#     without its run path cannot start there, so the hiding is real.
#   - the wheel: installed offline into a fresh virtual environment, its pytest plugin loads
#     from the entry point and its API answers through the tarball's gpuclean;
#   - the platform wheel: installed offline into a fresh virtual environment, it puts gpuclean
#     on the environment's PATH; that binary runs with the system's prometheus-cpp hidden, its
#     tag is its glibc floor, and the API and the plugin find it with no GPUCLEAN and nothing on
#     PATH. Negative control: the pure wheel there finds none;
#   - SHA256SUMS matches every file.
#
#   tests/packaging/run.sh [DIST_DIR]     (default dist)
#
# It installs into this machine's /usr and removes again, so it refuses to run where a
# gpuclean is already installed (by a package or by hand). It signals only the metrics server
# it started, by PID.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
dist=${1:-dist}
dist=$(cd "$dist" && pwd) || exit 2

# check NAME COMMAND..., pass NAME, fail NAME, finish: the suites' shared bookkeeping.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh

deb=$(find "$dist" -maxdepth 1 -name 'gpuclean_*.deb' | head -n 1)
tarball=$(find "$dist" -maxdepth 1 -name 'gpuclean-*-linux-*.tar.gz' | head -n 1)
wheel=$(find "$dist" -maxdepth 1 -name 'gpuclean-*-py3-none-any.whl' | head -n 1)
platform_wheel=$(find "$dist" -maxdepth 1 -name 'gpuclean-*-py3-none-manylinux_*.whl' | head -n 1)
if [ -z "$deb" ] || [ -z "$tarball" ] || [ -z "$wheel" ] || [ -z "$platform_wheel" ]; then
  echo "FAIL: no gpuclean_*.deb, gpuclean-*-linux-*.tar.gz, gpuclean-*-any.whl or" \
    "gpuclean-*-manylinux_*.whl in $dist (scripts/package.sh)"
  exit 1
fi
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  if dpkg-query -W -f='${Status}' gpuclean 2>/dev/null | grep -q "install ok installed"; then
    [ -f "$work/installed-by-test" ] && dpkg -r gpuclean >/dev/null
  fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== SHA256SUMS"
check "SHA256SUMS matches the .deb, the tarball and the wheels" \
  bash -c "cd '$dist' && sha256sum --quiet -c SHA256SUMS"

echo "== the .deb: $(basename "$deb")"
lintian --tag-display-limit 0 "$deb" 2>&1 | grep -v '^running with root privileges' >"$work/lintian"
if grep -q '^E: ' "$work/lintian"; then
  fail "lintian: no errors"
  grep '^E: ' "$work/lintian"
else
  pass "lintian: no errors ($(grep -c '^[WIP]: ' "$work/lintian") warnings/notes)"
  sed 's/^/  lintian: /' "$work/lintian"
fi

dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' >"$work/contents"
for path in /usr/bin/gpuclean /usr/share/man/man1/gpuclean.1.gz \
  /usr/share/bash-completion/completions/gpuclean /usr/share/zsh/vendor-completions/_gpuclean \
  /usr/share/fish/vendor_completions.d/gpuclean.fish /usr/share/gpuclean/slurm/epilog.sh \
  /usr/share/gpuclean/slurm/common.sh /usr/share/gpuclean/k8s/daemonset.yaml \
  /usr/share/gpuclean/prometheus/alerts.yml /usr/share/gpuclean/prometheus/recording.yml \
  /usr/lib/systemd/system/gpuclean-metrics.service /usr/lib/systemd/system/gpuclean-textfile.timer \
  /usr/lib/systemd/system/gpuclean-recorder.service \
  /usr/share/doc/gpuclean/copyright /usr/share/doc/gpuclean/changelog.gz; do
  check "the .deb holds $path" grep -qx "$path" "$work/contents"
done
depends=$(dpkg-deb -f "$deb" Depends)
check "Depends names libc6 and prometheus-cpp's core library ($depends)" \
  bash -c "grep -q 'libc6' <<<'$depends' && grep -q 'libprometheus-cpp-core' <<<'$depends'"
recommends=$(dpkg-deb -f "$deb" Recommends)
check "Recommends names jq, which the Slurm epilog needs ($recommends)" grep -qw jq <<<"$recommends"

if command -v gpuclean >/dev/null || dpkg-query -W gpuclean >/dev/null 2>&1; then
  fail "a gpuclean is installed on this machine already ($(command -v gpuclean)); not touching it"
  finish "packaging test"
  exit 1
fi
if dpkg -i "$deb" >"$work/dpkg-i" 2>&1; then
  touch "$work/installed-by-test"
  pass "dpkg -i"
else
  fail "dpkg -i"
  cat "$work/dpkg-i"
fi
check "installed gpuclean --version says metrics is built in" \
  bash -c "/usr/bin/gpuclean --version | grep -q '^metrics: built in'"
# No GPU here: a device file of the test's own that nothing holds, so the answer is about
# nothing real (and is "clean").
fake_device=$work/fake-nvidia0
: >"$fake_device"
/usr/bin/gpuclean status --no-nvml --device-glob "$fake_device" >"$work/status" 2>&1
status_rc=$?
check "installed gpuclean status --no-nvml says clean (exit $status_rc)" \
  bash -c "[ $status_rc -eq 0 ] && grep -q CLEAN '$work/status'"
[ "$status_rc" -eq 0 ] || cat "$work/status"
check "man gpuclean shows the manual" \
  bash -c "MANPAGER=cat MANWIDTH=80 man gpuclean 2>/dev/null | grep -q 'gpuclean completion'"
# bash-completion's own loader finds the file by the command's name, as on a user's TAB.
bash_candidates=$(bash --norc -c '
  source /usr/share/bash-completion/bash_completion
  __load_completion gpuclean || exit 1
  function=$(complete -p gpuclean | sed -n "s/.*-F \([^ ]*\) .*/\1/p")
  COMP_WORDS=(gpuclean ki); COMP_CWORD=1; COMP_LINE="gpuclean ki"; COMP_POINT=${#COMP_LINE}
  "$function" gpuclean ki gpuclean
  printf "%s\n" "${COMPREPLY[@]}"' 2>&1)
check "bash completes 'gpuclean ki' to kill from the installed file ($bash_candidates)" \
  grep -qx kill <<<"$bash_candidates"
# A fresh HOME, not --no-config: fish sets its completion path up in its configuration step.
fish_candidates=$(HOME="$work/fish-home" fish -c 'complete -C "gpuclean ki"' 2>&1 | cut -f1)
check "fish completes 'gpuclean ki' to kill from the installed file ($fish_candidates)" \
  grep -qx kill <<<"$fish_candidates"
# shellcheck disable=SC2016 # $fpath is zsh's, expanded there
check "zsh finds _gpuclean on its default function path" \
  zsh -fc 'for d in $fpath; do [[ -f $d/_gpuclean ]] && exit 0; done; exit 1'

if dpkg -r gpuclean >"$work/dpkg-r" 2>&1; then
  rm -f "$work/installed-by-test"
  pass "dpkg -r"
else
  fail "dpkg -r"
  cat "$work/dpkg-r"
fi
left=()
while read -r path; do
  [ -z "$path" ] || [ "${path: -1}" = / ] && continue # directories may be shared
  [ -e "$path" ] && left+=("$path")
done <"$work/contents"
check "nothing of the package is left after dpkg -r (${left[*]:-none})" test ${#left[@]} -eq 0
check "dpkg no longer knows gpuclean" \
  bash -c "! dpkg-query -W -f='\${Status}' gpuclean 2>/dev/null | grep -q installed"

echo "== the tarball: $(basename "$tarball")"
unpacked="$work/with space"
mkdir -p "$unpacked"
tar -C "$unpacked" -xzf "$tarball"
top=$(find "$unpacked" -mindepth 1 -maxdepth 1 -type d | head -n 1)
binary=$top/bin/gpuclean
for path in bin/gpuclean share/man/man1/gpuclean.1.gz share/doc/gpuclean/LICENSE \
  share/bash-completion/completions/gpuclean share/gpuclean/slurm/epilog.sh \
  lib/systemd/system/gpuclean-recorder.service; do
  check "the tarball holds $path" test -e "$top/$path"
done
check "the tarball has no Debian lintian overrides" test ! -e "$top/share/lintian"
check "the tarball's README says how to put it on PATH" grep -q 'export PATH=.*/bin:' "$top/README"
# Since issue 33 the listener is gpuclean's own (src/serve/): prometheus-cpp's pull library
# and civetweb are no longer linked, so they must not be bundled either.
check "the tarball's lib/ holds SQLite (the flight recorder's database)" \
  bash -c "ls '$top'/lib/libsqlite3.so.* >/dev/null"
check "the tarball's lib/ holds prometheus-cpp's core library, and no civetweb" \
  bash -c "ls '$top'/lib/libprometheus-cpp-core.so.* >/dev/null && ! ls '$top'/lib/libcivetweb* '$top'/lib/libprometheus-cpp-pull* >/dev/null 2>&1"

# The system's prometheus-cpp and civetweb, hidden in a mount namespace of their own: what the
# tarball's binary loads there can only come from its lib/.
hidden_libraries=()
multiarch=/usr/lib/$(gcc -print-multiarch)
for library in "$multiarch"/libprometheus-cpp-*.so.* "$multiarch"/libcivetweb*.so.* \
  "$multiarch"/libsqlite3.so.*; do
  [ -f "$library" ] && [ ! -L "$library" ] && hidden_libraries+=("$library")
done
without_system_libraries() {
  # The inner shell writes its PID (the program's, after its exec) to $pid_file when one is
  # set: a program started in the background is a child of the subshell `&` makes, and killing
  # `$!` left the metrics server running after CI (issue 50).
  # shellcheck disable=SC2016 # "$l", "$$" and "$@" are the inner shell's
  local script='for l in '"${hidden_libraries[*]}"'; do mount --bind /dev/null "$l" || exit 125; done; [ -z "$PID_FILE" ] || echo $$ >"$PID_FILE"; exec "$@"'
  env -u LD_LIBRARY_PATH PID_FILE="${pid_file:-}" unshare -m sh -c "$script" sh "$@"
}
cp "$binary" "$work/gpuclean-no-run-path"
patchelf --remove-rpath "$work/gpuclean-no-run-path"
without_system_libraries "$work/gpuclean-no-run-path" --version >/dev/null 2>&1
control_rc=$?
check "negative control: without its run path the binary cannot start there (exit $control_rc)" \
  test "$control_rc" -eq 127
without_system_libraries "$binary" --version >"$work/tarball-version" 2>&1
check "the tarball's gpuclean --version runs there, metrics built in" \
  grep -q '^metrics: built in' "$work/tarball-version"

port=$((20000 + RANDOM % 20000))
pid_file=$work/metrics.pid
without_system_libraries "$binary" metrics --no-nvml --device-glob "$fake_device" \
  --listen "127.0.0.1:$port" >"$work/metrics.out" 2>&1 &
pid_file=
for _ in $(seq 1 100); do [ -s "$work/metrics.pid" ] && break; sleep 0.05; done
server_pid=$(cat "$work/metrics.pid" 2>/dev/null)
scraped=0
for _ in $(seq 1 100); do # up to 10 s for the listener to come up
  if curl -fsS "http://127.0.0.1:$port/metrics" >"$work/scrape" 2>/dev/null; then
    scraped=1
    break
  fi
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
check "metrics --listen from the tarball answers a scrape with gpuclean_build_info" \
  bash -c "[ $scraped -eq 1 ] && grep -q '^gpuclean_build_info' '$work/scrape'"
[ $scraped -eq 1 ] || cat "$work/metrics.out"
kill "$server_pid" 2>/dev/null
for _ in $(seq 1 100); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.05; done
check "the metrics server is gone once told to stop (pid $server_pid)" \
  bash -c "! kill -0 $server_pid 2>/dev/null"
wait 2>/dev/null
server_pid=

echo "== the wheel: $(basename "$wheel")"
/usr/bin/python3 -m venv --system-site-packages "$work/venv"
check "the wheel installs offline into a fresh virtual environment" \
  "$work/venv/bin/pip" install --quiet --no-index "$wheel"
check "pytest loads the plugin from the wheel's entry point (pytest --help lists --gpuclean)" \
  bash -c "cd '$work' && GPUCLEAN='$binary' '$work/venv/bin/python' -m pytest --help |
    grep -q -- '--gpuclean='"
check "gpuclean.status() answers through the tarball's gpuclean" \
  env GPUCLEAN="$binary" "$work/venv/bin/python" -c "import gpuclean, sys
s = gpuclean.status(device_globs=[sys.argv[1]], no_nvml=True)
assert s.clean and s.nvml.state == 'disabled', s" "$fake_device"

echo "== the platform wheel: $(basename "$platform_wheel")"
# Nothing else to find: no GPUCLEAN, a PATH without the venv's bin/ (the API must find the
# wheel's binary itself), and the system's prometheus-cpp hidden as for the tarball.
plain_path=/usr/bin:/bin
/usr/bin/python3 -m venv --system-site-packages "$work/platform-venv"
check "the platform wheel installs offline into a fresh virtual environment" \
  "$work/platform-venv/bin/pip" install --quiet --no-index "$platform_wheel"
check "pip put gpuclean on the environment's PATH" \
  env -u GPUCLEAN PATH="$work/platform-venv/bin:$plain_path" bash -c \
  "[ \"\$(command -v gpuclean)\" = '$work/platform-venv/bin/gpuclean' ]"
without_system_libraries "$work/platform-venv/bin/gpuclean" --version >"$work/wheel-version" 2>&1
check "its gpuclean runs with the system's prometheus-cpp hidden (the run path finds lib/gpuclean)" \
  grep -q '^metrics: built in' "$work/wheel-version"
wheel_floor=$(objdump -T "$work/platform-venv/bin/gpuclean" "$work/platform-venv/lib/gpuclean/"*.so* |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
wheel_tag=$(basename "$platform_wheel" | sed -n 's/.*-manylinux_\([0-9]*\)_\([0-9]*\)_.*/GLIBC_\1.\2/p')
check "the wheel's tag is its binary's glibc floor ($wheel_tag, $wheel_floor)" \
  test "$wheel_tag" = "$wheel_floor"
check "the API finds the wheel's gpuclean with no GPUCLEAN and nothing on PATH" \
  env -u GPUCLEAN PATH="$plain_path" "$work/platform-venv/bin/python" -c "import gpuclean, sys
from gpuclean._binary import find_binary
assert find_binary() == sys.argv[1], find_binary()
s = gpuclean.status(device_globs=[sys.argv[2]], no_nvml=True)
assert s.clean, s" "$work/platform-venv/bin/gpuclean" "$fake_device"
check "pytest's plugin from the platform wheel runs a session on it" \
  bash -c "cd '$work' && printf 'def test_x():\n    pass\n' >test_wheel_session.py &&
    env -u GPUCLEAN PATH='$plain_path' '$work/platform-venv/bin/python' -m pytest -q \
    -p no:cacheprovider --gpuclean-no-nvml --gpuclean-device-glob '$fake_device' \
    test_wheel_session.py | grep -q 'GPUs clean at the start'"
# A checkout's package on PYTHONPATH in that environment is not the wheel's release: it must
# not take the wheel's binary (found through the wheel's RECORD) as its own.
# (A copy of the package alone: python/src may hold pip's egg-info, which would be found first.)
mkdir -p "$work/checkout"
cp -r python/src/gpuclean "$work/checkout/"
check "a checkout's package on PYTHONPATH there does not run the wheel's binary" \
  env -u GPUCLEAN PYTHONPATH="$work/checkout" PATH="$plain_path" \
  "$work/platform-venv/bin/python" -c "
import sys, gpuclean
from gpuclean._binary import find_binary, GpucleanError
assert gpuclean.__file__.startswith(sys.argv[1]), gpuclean.__file__
try:
    found = find_binary()
except GpucleanError:
    raise SystemExit(0)
raise SystemExit('took ' + found)" "$work/checkout"
# Negative control: the pure wheel in the same conditions has no gpuclean to run.
/usr/bin/python3 -m venv --system-site-packages "$work/pure-venv"
"$work/pure-venv/bin/pip" install --quiet --no-index "$wheel"
check "negative control: the pure wheel alone finds no gpuclean there" \
  env -u GPUCLEAN PATH="$plain_path" "$work/pure-venv/bin/python" -c "
from gpuclean._binary import find_binary, GpucleanError
try:
    find_binary()
except GpucleanError:
    raise SystemExit(0)
raise SystemExit('found ' + find_binary())"

finish "packaging test"
