#!/usr/bin/env bash
# drm_bench.sh: what looking for AMD and Intel GPUs (issue 39: /sys/class/drm, their nodes in
# the scan, their clients' fdinfo) costs a one-shot `gpuclean status`, on this machine as it
# is: `status --json` against `status --json --no-drm`, interleaved, medians and their ratio.
# See bench/README.md.
#
#   bench/drm_bench.sh [--gpuclean PATH] [--runs N]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
gpuclean="$repo/build/gpuclean"
runs=40
while [ $# -gt 0 ]; do
  case $1 in
    --gpuclean) gpuclean=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--gpuclean PATH] [--runs N]" >&2; exit 2 ;;
  esac
done

python3 - "$gpuclean" "$runs" <<'PY'
import json, os, statistics, subprocess, sys, time
binary, runs = sys.argv[1], int(sys.argv[2])
commands = {"status --json": [binary, "status", "--json"],
            "status --json --no-drm": [binary, "status", "--json", "--no-drm"]}
for argv in commands.values():  # warm-up: page cache
    subprocess.run(argv, capture_output=True)
times = {name: [] for name in commands}
for _ in range(runs):
    for name, argv in commands.items():
        start = time.perf_counter()
        subprocess.run(argv, capture_output=True)
        times[name].append((time.perf_counter() - start) * 1000)
doc = json.loads(subprocess.run(commands["status --json"][:3], capture_output=True).stdout or "{}")
drm = [g for g in doc.get("gpus", []) if g.get("source") == "drm"]
processes = sum(1 for p in os.listdir("/proc") if p.isdigit())
print(f"drm_bench {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} kernel {os.uname().release} "
      f"nproc {os.cpu_count()} processes {processes} runs {runs}")
print(f"/sys/class/drm: {'present' if os.path.isdir('/sys/class/drm') else 'absent'}; "
      f"DRM GPUs listed: {len(drm)}")
for name, values in times.items():
    print(f"{name:28s} median {statistics.median(values):8.2f} ms")
ratio = statistics.median(times["status --json"]) / statistics.median(times["status --json --no-drm"])
print(f"ratio status / status --no-drm: {ratio:.2f}")
PY
