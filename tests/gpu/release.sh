#!/usr/bin/env bash
# The release tarball on a GPU machine, as a user gets it (issue 16): unpacked under a path with
# a space, run with no LD_LIBRARY_PATH; its --version and library resolution, `status` on the
# real GPUs, `metrics --listen` scraped over HTTP, `completion --values gpus`; then the GPU
# scenario suite (tests/gpu/run.sh) with the tarball's binary.
#
#   tests/gpu/release.sh [TARBALL]     (default: dist/gpuclean-*-linux-x86_64.tar.gz)
#
# Prints PASS/FAIL per check and "N passed, M failed"; exit 1 if anything failed. It signals
# only the metrics server it started, by PID.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
tarball=${1:-$(find dist -maxdepth 1 -name 'gpuclean-*-linux-x86_64.tar.gz' | head -n 1)}
[[ -f $tarball ]] || { echo "FAIL: no release tarball (scripts/package.sh writes dist/)"; exit 2; }

# check MESSAGE COMMAND... and finish: the suites' shared bookkeeping.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source tests/lib/checks.sh

work=$(mktemp -d)
server=
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
unpacked="$work/gpu clean"
mkdir -p "$unpacked"
tar -C "$unpacked" -xzf "$tarball"
bin=$(find "$unpacked" -mindepth 2 -maxdepth 2 -type d -name bin | head -n 1)
gpuclean=$bin/gpuclean
unset LD_LIBRARY_PATH

echo "== host"
grep -E '^(PRETTY_NAME)=' /etc/os-release
ldd --version | head -n 1
echo "== $gpuclean --version"
"$gpuclean" --version
check "--version: metrics is built in" bash -c "'$gpuclean' --version | grep -q '^metrics: built in'"
echo "== the libraries it loads"
ldd "$gpuclean" | tee "$work/ldd"
check "prometheus-cpp comes from the tarball's lib/" \
  bash -c "grep 'libprometheus-cpp-core' '$work/ldd' | grep -qF '$unpacked/'"
check "nothing is missing" bash -c "! grep -q 'not found' '$work/ldd'"

echo "== status"
"$gpuclean" status
status_rc=$?
check "status answers about the real GPUs (exit $status_rc: 0 clean or 1 dirty)" \
  test "$status_rc" -le 1
check "status --json names an NVIDIA GPU through NVML" \
  bash -c "'$gpuclean' status --json | grep -q '\"name\": *\"NVIDIA'"

echo "== metrics --listen, scraped"
port=$((20000 + RANDOM % 20000))
"$gpuclean" metrics --listen "127.0.0.1:$port" >"$work/metrics.log" 2>&1 &
server=$!
scrape() {
  if command -v curl >/dev/null; then
    curl -fsS "http://127.0.0.1:$port/metrics"
  else
    python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$port/metrics', timeout=5).read().decode())"
  fi
}
if command -v curl >/dev/null; then echo "scraping with $(curl --version | head -n 1)"; else echo "scraping with python3's urllib (no curl here)"; fi
for _ in $(seq 1 100); do  # the listener is up within 10 s or the check fails
  scrape >"$work/scrape" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || break
  sleep 0.1
done
grep -E '^gpuclean_(build_info|nvml_state|gpu_memory_(total|used)_bytes|clean|verdict)' "$work/scrape"
check "the scrape says NVML is present" grep -q '^gpuclean_nvml_state{state="present"} 1' "$work/scrape"
check "the scrape has GPU 0's total memory" grep -q '^gpuclean_gpu_memory_total_bytes{gpu="0"' "$work/scrape"
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
server=

echo "== completion --values gpus"
"$gpuclean" completion --values gpus | tee "$work/gpus"
check "completion offers GPU 0 by name" grep -q $'^0\tNVIDIA' "$work/gpus"

finish "== release checks" # its verdict comes last, with run.sh's
echo "== tests/gpu/run.sh with the tarball's binary"
tests/gpu/run.sh "$bin"
suite_rc=$?
[[ $failed -eq 0 && $suite_rc -eq 0 ]]
