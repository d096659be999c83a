#!/usr/bin/env bash
# Multi-GPU scenario (issue 9): a tensor-parallel-style server with one worker per GPU, its
# parent SIGKILLed so every GPU holds an orphan. Checks minor→index mapping, per-GPU
# attribution, `kill --leftovers --gpus 1` touching only GPU 1's worker, and a full
# `kill --leftovers` leaving every GPU clean. Then a stray CUDA context (work on cuda:1, a
# context on GPU 0): a warning, not a failure of `check` unless --strict. Then the same server
# under `gpuclean run --record`, parent SIGKILLed again: every GPU back at its pre-run level
# when run returns.
#   tests/gpu/multi_gpu.sh [BIN_DIR]      (on a machine with 2+ GPUs; BIN_DIR default .device-bin)
# Signals only the processes it started (by PID); every worker ends itself after 90 s.
set -uo pipefail
bin=${1:-.device-bin}
G=$bin/gpuclean
work=$(mktemp -d)
passed=0
failed=0
check() {  # MESSAGE COMMAND...
  local m=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "PASS: $m"; else failed=$((failed + 1)); echo "FAIL: $m"; fi
}
n=$(nvidia-smi --query-gpu=index --format=csv,noheader | wc -l)
echo "=== multi-GPU test $(date -u +%FT%TZ), $n GPUs"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,memory.used --format=csv,noheader
# shellcheck disable=SC2012 # for the log only: major, minor, name of device files
ls -l /dev/nvidia[0-9]* | awk '{print $5, $6, $10}'
if ((n < 2)); then echo "needs 2+ GPUs"; exit 2; fi

# multiprocessing's spawn re-imports the main module from its file: write it to one.
cat >"$work/server.py" <<'PY'
import multiprocessing as mp, os, signal, sys, time
def worker(i, ready):
    signal.alarm(90)
    import torch
    torch.cuda.set_device(i)
    x = torch.empty((2 + i) << 30, dtype=torch.uint8, device="cuda")  # GPU i: 2+i GiB
    torch.cuda.synchronize()
    ready.put((i, os.getpid()))
    time.sleep(120)
if __name__ == "__main__":
    signal.alarm(90)
    work, n = sys.argv[1], int(sys.argv[2])
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(i, q)) for i in range(n)]
    for p in ps: p.start()
    got = dict(q.get(timeout=60) for _ in range(n))
    with open(work + "/pids.tmp", "w") as f:
        f.write(" ".join([str(os.getpid())] + [str(got[i]) for i in range(n)]))
    os.rename(work + "/pids.tmp", work + "/pids")
    time.sleep(120)
PY
python3 "$work/server.py" "$work" "$n" &
for _ in $(seq 600); do [[ -s $work/pids ]] && break; sleep 0.1; done
[[ -s $work/pids ]] || { echo "FAIL: the server did not start"; exit 1; }
read -ra pids <"$work/pids"
parent=${pids[0]}
workers=("${pids[@]:1}")
echo "server parent $parent, workers ${workers[*]} (worker i on GPU i)"
kill -KILL "$parent"
for _ in $(seq 100); do [[ -d /proc/$parent ]] || break; sleep 0.05; done

"$G" who | sed 's/^/  /'
"$G" status --json >"$work/s.json"
"$G" status | sed 's/^/  /'
python3 - "$work/s.json" "${workers[@]}" <<'PY' >"$work/asserts" 
import json, sys
d = json.load(open(sys.argv[1])); workers = [int(p) for p in sys.argv[2:]]
by_pid = {h["pid"]: h for h in d["holders"]}
for i, pid in enumerate(workers):
    h = by_pid.get(pid, {})
    mem = h.get("gpu_memory", {})
    print(("ok" if h.get("class") == "orphan" else "bad") + f" worker {pid} class {h.get('class')}")
    print(("ok" if list(mem) == [str(i)] and mem[str(i)] >= (2 + i) << 30 else "bad") + f" worker {pid} memory only on GPU {i}: {mem}")
for g in d["gpus"]:
    print(("ok" if g["minor"] == g["index"] else "bad") + f" GPU {g['index']} minor {g['minor']} bus {g['pci_bus_id']}")
    m = g["memory"]
    print(("ok" if m["attributed"] >= 0.99 * m["used"] else "bad") + f" GPU {g['index']} attributed {m['attributed']} of used {m['used']}")
PY
while read -r verdict rest; do check "$rest" test "$verdict" = ok; done <"$work/asserts"

"$G" check --gpus 1 >/dev/null; check "check --gpus 1 is dirty before the kill" test $? -eq 1
"$G" kill --leftovers --gpus 1 --yes --grace 2s --json >"$work/k1.json"; rc=$?
check "kill --leftovers --gpus 1 exits 0" test $rc -eq 0
alive() { [[ -d /proc/$1 ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
check "worker on GPU 0 (${workers[0]}) untouched by --gpus 1" alive "${workers[0]}"
check "kill --gpus 1 planned exactly worker ${workers[1]}" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if [t['pid'] for t in d['targets']] == [int(sys.argv[2])] else 1)" "$work/k1.json" "${workers[1]}"
check "worker on GPU 1 (${workers[1]}) gone" test ! -d "/proc/${workers[1]}" -o "$(awk '{print $3}' "/proc/${workers[1]}/stat" 2>/dev/null)" = Z
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('  kill --gpus 1:', [(t['pid'], t['outcome'], round(t['seconds'],3)) for t in d['targets']], 'memory back', d['memory_back_seconds'])" "$work/k1.json"
"$G" check --gpus 1 >/dev/null; check "check --gpus 1 clean after the kill" test $? -eq 0
"$G" check --gpus 0 >/dev/null; check "check --gpus 0 still dirty (negative control)" test $? -eq 1
t0=$EPOCHREALTIME
"$G" kill --leftovers --yes --grace 2s --json >"$work/k2.json"; rc=$?
echo "  kill --leftovers (rest): $(python3 -c "print(round(($EPOCHREALTIME-$t0)*1000))") ms"
check "kill --leftovers exits 0" test $rc -eq 0
"$G" check; check "check clean on every GPU" test $? -eq 0

# Issue 17: a stray CUDA context (docs/facts.md: PyTorch working on cuda:1 without
# CUDA_VISIBLE_DEVICES also made a ~518 MiB context on GPU 0). The classic slip: the work is on
# cuda:1, but torch.cuda.synchronize() without a device runs on the current one, GPU 0.
echo "=== stray CUDA context: work on cuda:1, no CUDA_VISIBLE_DEVICES"
cat >"$work/stray.py" <<'PY'
import os, signal, sys, time
signal.alarm(90)
import torch
x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda:1")  # the work: 4 GiB on GPU 1
torch.cuda.synchronize()  # the current device, cuda:0: a context there
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
PY
env -u CUDA_VISIBLE_DEVICES python3 "$work/stray.py" "$work/stray.pid" &
stray_pid=$!
for _ in $(seq 600); do [[ -s $work/stray.pid ]] && break; sleep 0.1; done
if [[ -s $work/stray.pid ]]; then
  "$G" status --gpus 0 | sed 's/^/  /'
  "$G" status --json >"$work/stray.json"
  python3 - "$work/stray.json" "$stray_pid" <<'PY' >"$work/stray.asserts"
import json, sys
d = json.load(open(sys.argv[1])); pid = int(sys.argv[2])
h = next((h for h in d["holders"] if h["pid"] == pid), {})
mem = h.get("gpu_memory", {})
print(f"  NVML per GPU for pid {pid}: {mem}", file=sys.stderr)
print(("ok" if mem.get("1", 0) >= 4 << 30 else "bad") + f" pid {pid} works on GPU 1: {mem.get('1')}")
stray = [p for p in d["problems"] if p["kind"] == "stray-context"]
print(("ok" if [(p["gpu"], p["pid"]) for p in stray] == [(0, pid)] else "bad") + f" one stray-context problem, GPU 0, pid {pid}: {[(p['gpu'], p['pid']) for p in stray]}")
for p in stray:
    print(("ok" if p["severity"] == "warning" else "bad") + f" severity {p['severity']}")
    print(("ok" if 256 << 20 <= p["bytes"] <= 1 << 30 else "bad") + f" a context's size: {p['bytes'] >> 20} MiB")
    print(("ok" if "CUDA_VISIBLE_DEVICES=1" in p["fix"] else "bad") + f" fix: {p['fix']}")
    print("ok message: " + p["message"])
PY
  while read -r verdict rest; do check "stray: $rest" test "$verdict" = ok; done <"$work/stray.asserts"
  "$G" check --gpus 0 >"$work/stray.out" 2>"$work/stray.err"; rc=$?
  check "check --gpus 0 passes with a stray context (a warning)" test $rc -eq 0
  check "check --gpus 0: nothing on stdout" test ! -s "$work/stray.out"
  check "check --gpus 0: the warning on stderr" grep -q "warning: GPU 0: .* stray CUDA context of pid $stray_pid" "$work/stray.err"
  "$G" check --gpus 0 --strict >/dev/null 2>&1
  check "check --gpus 0 --strict fails" test $? -eq 1
  "$G" check --gpus 1 >/dev/null 2>&1
  check "check --gpus 1 fails: the work is in use (negative control)" test $? -eq 1
else
  check "the stray-context process started" false
fi
# Our own child, not yet reaped: its PID cannot have been reused.
kill -TERM "$stray_pid" 2>/dev/null
wait "$stray_pid" 2>/dev/null
"$G" wait --strict --timeout 30s >/dev/null; check "clean (--strict) once it exits" test $? -eq 0

echo "=== the same server under gpuclean run"
rm -f "$work/pids"
"$G" run --record "$work/run.json" --sample-interval 100ms --grace 2s -- \
  python3 "$work/server.py" "$work" "$n" 2>"$work/run.err" &
run_pid=$!
for _ in $(seq 600); do [[ -s $work/pids ]] && break; sleep 0.1; done
[[ -s $work/pids ]] || { echo "FAIL: the server did not start under run"; cat "$work/run.err"; exit 1; }
read -ra pids <"$work/pids"
parent=${pids[0]}
workers=("${pids[@]:1}")
echo "server parent $parent, workers ${workers[*]}; gpuclean run is $run_pid"
"$G" check --gpus all | sed 's/^/  before: /'
t0=$EPOCHREALTIME
kill -KILL "$parent"
wait "$run_pid"; rc=$?
echo "  run returned $(python3 -c "print(round(($EPOCHREALTIME-$t0)*1000))") ms after the SIGKILL"
sed 's/^/  run: /' "$work/run.err"
check "gpuclean run exits 137 (the workload's status)" test $rc -eq 137
for w in "${workers[@]}"; do
  check "worker $w gone when run returns" test ! -d "/proc/$w" -o "$(awk '{print $3}' /proc/"$w"/stat 2>/dev/null)" = Z
done
python3 - "$work/run.json" "${workers[@]}" <<'PY' >"$work/run.asserts"
import json, sys
d = json.load(open(sys.argv[1])); workers = {int(w) for w in sys.argv[2:]}
left = {l["pid"]: l for l in d["leftovers"]}
# multiprocessing's resource tracker may be a leftover too: the workers must all be there.
print(("ok" if workers <= set(left) and all(l["outcome"] == "gone" for l in left.values()) else "bad")
      + f" record: every worker a leftover, all ended: {[(l['pid'], l['comm'], l['outcome']) for l in left.values()]}")
for g in d["gpus"]:
    i = g["index"]
    rise = (g.get("peak") or 0) - (g.get("baseline") or 0)
    print(("ok" if rise >= (2 + i) << 30 else "bad") + f" record: GPU {i} rose {rise >> 20} MiB above its pre-run level")
    print(("ok" if g.get("back") is True else "bad") + f" record: GPU {i} back to its pre-run level ({g.get('after')} B, note {g.get('note')!r})")
PY
while read -r verdict rest; do check "$rest" test "$verdict" = ok; done <"$work/run.asserts"
"$G" check; check "check clean on every GPU after run" test $? -eq 0
"$G" plot "$work/run.json" -o "${GPU_TEST_ARTIFACTS:-$work}/multi-gpu-run.svg"
check "plot of the 2-GPU record" test -s "${GPU_TEST_ARTIFACTS:-$work}/multi-gpu-run.svg"
[[ -n ${GPU_TEST_ARTIFACTS:-} ]] && cp "$work/run.json" "$GPU_TEST_ARTIFACTS/multi-gpu-run.json"

# No blind safety-net kill by PID here (a PID may be recycled by now): every worker ends
# itself after 90 s (signal.alarm).
rm -rf "$work"
echo "$passed passed, $failed failed"
((failed == 0))
