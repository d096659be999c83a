#!/usr/bin/env bash
# Benchmark guard on a real GPU (issue 6): `gpuclean snapshot` against `nvidia-smi -q`, a
# snapshot diffed with itself and with now (no result-changing differences on a quiet machine),
# and `check --against` failing once a process holds memory.
#   tests/gpu/snapshot.sh [BIN_DIR]      (BIN_DIR default .device-bin)
# Needs python3 (JSON) and, for the holder step, torch; changes no GPU setting. Signals only the
# process it starts (by PID); that process ends itself after 60 s.
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
json() {  # FILE PYTHON-EXPRESSION-ON-d
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}
smi() {  # FIELD: nvidia-smi --query-gpu for GPU 0, no units
  nvidia-smi -i 0 --query-gpu="$1" --format=csv,noheader,nounits | tr -d ' '
}
echo "=== snapshot test $(date -u +%FT%TZ)"
nvidia-smi -q -i 0 | grep -iE "Driver Version|CUDA Version|Applications Clocks|Max Clocks|Power Limit|Persistence|ECC Mode|Pending Page|Remapp" | head -40

time "$G" snapshot -o "$work/a.json"
check "snapshot exits 0 and writes schema 1" test "$(json "$work/a.json" "d['schema']")" = 1
check "driver version = nvidia-smi" test "$(json "$work/a.json" "d['nvml']['driver_version']")" = "$(smi driver_version)"
check "GPU 0 uuid = nvidia-smi" test "$(json "$work/a.json" "d['gpus'][0]['uuid']")" = "$(smi uuid)"
check "max SM clock = nvidia-smi clocks.max.sm" \
  test "$(json "$work/a.json" "d['gpus'][0]['clocks']['sm']['max']")" = "$(smi clocks.max.sm)"
check "application SM clock = nvidia-smi clocks.applications.graphics or null" \
  bash -c "a=\$(python3 -c \"import json; print(json.load(open('$work/a.json'))['gpus'][0]['clocks']['sm']['application'])\"); s=\$(nvidia-smi -i 0 --query-gpu=clocks.applications.graphics --format=csv,noheader,nounits | tr -d ' '); echo \"gpuclean \$a, nvidia-smi \$s\"; [ \"\$a\" = \"\$s\" ] || [ \"\$a\" = None ]"
check "power limit (W) = nvidia-smi enforced.power.limit" \
  bash -c "a=\$(python3 -c \"import json; print(json.load(open('$work/a.json'))['gpus'][0]['power_limit_mw'] / 1000)\"); s=\$(nvidia-smi -i 0 --query-gpu=enforced.power.limit --format=csv,noheader,nounits | tr -d ' '); echo \"gpuclean \$a, nvidia-smi \$s\"; python3 -c \"import sys; sys.exit(abs(\$a - \$s) > 1)\""
check "ECC mode = nvidia-smi ecc.mode.current" \
  bash -c "a=\$(python3 -c \"import json; e=json.load(open('$work/a.json'))['gpus'][0]['ecc']['enabled']; print({True:'Enabled',False:'Disabled',None:'[N/A]'}[e])\"); s=\$(nvidia-smi -i 0 --query-gpu=ecc.mode.current --format=csv,noheader); echo \"gpuclean \$a, nvidia-smi \$s\"; [ \"\$a\" = \"\$s\" ]"
echo "--- GPU 0 details as recorded"
json "$work/a.json" "json.dumps({k: d['gpus'][0].get(k) for k in ('clocks','throttle_reasons','temperature_c','power_limit_mw','ecc','retired_pages','remapped_rows')}, indent=1)"
json "$work/a.json" "json.dumps({'kernel_log': {k: d['kernel_log'][k] for k in ('readable','error')}, 'xids': len(d['kernel_log']['xid']), 'system': d['system']}, indent=1)"

"$G" diff "$work/a.json" "$work/a.json"
check "a snapshot diffed with itself: no differences, exit 0" "$G" diff "$work/a.json" "$work/a.json"
"$G" diff "$work/a.json"; rc=$?
check "diff against now on a quiet machine: nothing result-changing (exit 0)" test $rc = 0
check "check --against on a quiet machine: exit 0" "$G" check --against "$work/a.json"

python3 - "$work/pid" <<'PY' &
import os, signal, sys, time, torch
signal.alarm(60)
x = torch.empty(4 << 30, dtype=torch.uint8, device="cuda")
torch.cuda.synchronize()
open(sys.argv[1], "w").write(str(os.getpid()))
time.sleep(60)
PY
for _ in $(seq 300); do [ -s "$work/pid" ] && break; sleep 0.1; done
holder=$(cat "$work/pid" 2>/dev/null)
if [ -n "$holder" ]; then
  "$G" check --against "$work/a.json" >"$work/check.out"; rc=$?
  cat "$work/check.out"
  check "check --against with a 4 GiB holder: exit 1" test $rc = 1
  check "... naming the new holder" grep -q "new holder pid $holder" "$work/check.out"
  kill "$holder"; wait
else
  echo "SKIP: no torch holder (python3 with torch needed)"
fi
echo "=== $passed passed, $failed failed"
rm -rf "$work"
((failed == 0))
