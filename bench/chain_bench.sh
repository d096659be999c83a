#!/usr/bin/env bash
# How long `gpuclean kill --dry-run ROOT` takes on a chain of processes, each the parent of the
# next (issue 33: 2.0 s for 800 links, 5.8 s and a 3.2 MB plan for 1,716, quadratic in the
# chain; the target is <= 0.3 s for 2,000). It starts one chain as long as the longest size
# asked for (bench/chain.c); a size N names the link with N links below and including it (the
# tree of that link is a chain of N). For each size it times every gpuclean given, round-robin,
# --runs times each, and prints the median, min and max wall time with the plan's size and
# widest line. Give two binaries to compare before and after:
#   bench/chain_bench.sh [--gpuclean PATH]... [-n "1 800 1716 2000"] [--runs N]
# Size 1 (the chain's last link alone) is the floor: what reading the process table costs
# whatever is planned.
# Only the chain's own parent is ever signalled (SIGTERM, by the PID this script started,
# checked against its cmdline first); it SIGKILLs the chain's root, its own child, and the rest
# of the chain follows by PR_SET_PDEATHSIG.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binaries=()
sizes="1 800 1716 2000"
runs=5
while [ $# -gt 0 ]; do
  case $1 in
    --gpuclean) binaries+=("$(realpath "$2")"); shift 2 ;;
    -n) sizes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: $0 [--gpuclean PATH]... [-n \"SIZES\"] [--runs N]" >&2; exit 2 ;;
  esac
done
[ ${#binaries[@]} -gt 0 ] || binaries=("$(realpath "$here/../build/gpuclean")")
for b in "${binaries[@]}"; do [ -x "$b" ] || { echo "chain_bench: $b is not executable" >&2; exit 2; }; done
command -v cc >/dev/null || { echo "chain_bench: cc not found" >&2; exit 2; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/chain_bench.XXXXXX")
chain_bin=$tmp/chain
chain_pid=""
cc -O2 -o "$chain_bin" "$here/chain.c"

# True while the chain parent this script started runs (and still is our binary).
chain_alive() {
  [[ -n $chain_pid ]] || return 1
  local stat arg0
  { read -r stat <"/proc/$chain_pid/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != [ZX] ]] || return 1
  { IFS= read -r -d '' arg0 <"/proc/$chain_pid/cmdline"; } 2>/dev/null || return 1
  [[ $arg0 == "$chain_bin" ]]
}

# True while the chain parent's PID exists and is not a zombie: right after `&` it may still be
# the forked shell, not yet our chain binary. Never signal on this alone.
chain_running() {
  [[ -n $chain_pid ]] || return 1
  local stat
  { read -r stat <"/proc/$chain_pid/stat"; } 2>/dev/null || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != [ZX] ]]
}

stop_chain() {
  local deadline=$((SECONDS + 3))
  while chain_running && ! chain_alive && ((SECONDS < deadline)); do
    sleep 0.05  # started but not yet exec'd: let it become the chain, then stop it
  done
  if chain_alive; then
    kill -TERM "$chain_pid" 2>/dev/null || true
  fi
  [[ -n $chain_pid ]] && { wait "$chain_pid" 2>/dev/null || true; }
  chain_pid=""
}

# shellcheck disable=SC2317  # reached through the EXIT trap
cleanup() {
  local rc=$?
  trap - EXIT INT TERM HUP
  stop_chain
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Starts a chain of $1 links (forking one link at a time: on some kernels each fork costs more
# the deeper it is, minutes for 2,000 on a loaded VM); sets chain_pid.
start_chain() {
  rm -f "$tmp/pids"
  "$chain_bin" "$1" "$tmp/pids" -l 1800 -t 900 &
  chain_pid=$!
  while [ ! -s "$tmp/pids" ]; do
    chain_running || { echo "chain_bench: the chain of $1 did not start" >&2; exit 1; }
    sleep 0.1
  done
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# One timed run: "MS BYTES WIDEST PLANNED" of `gpuclean kill --dry-run ROOT` (stdout is the
# plan; PLANNED is the count its first line gives, which must be the size asked for).
one_run() {
  local start end
  start=$EPOCHREALTIME
  "$1" kill "$root" --dry-run --no-nvml >"$tmp/plan" 2>"$tmp/err" || {
    echo "chain_bench: $1 kill --dry-run $root failed: $(head -c 300 "$tmp/err")" >&2
    exit 3
  }
  end=$EPOCHREALTIME
  python3 - "$start" "$end" "$tmp/plan" <<'EOF'
import sys
start, end, path = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
text = open(path, encoding="utf-8", errors="replace").read()
lines = text.splitlines()
widest = max((len(line) for line in lines), default=0)
planned = lines[0].split()[1] if lines and lines[0].startswith("Plan: ") else "?"
print(f"{(end - start) * 1000:.1f} {len(text.encode())} {widest} {planned}")
EOF
}

echo "chain_bench $(date -u +%FT%TZ) kernel $(uname -r) nproc $(nproc) runs $runs (+1 warm-up)"
printf '%6s  %-40s %10s %9s %9s %11s %8s\n' links gpuclean "median ms" "min ms" "max ms" \
  "plan bytes" widest
longest=$(tr ' ' '\n' <<<"$sizes" | sort -n | tail -n 1)
start_chain "$longest"
for n in $sizes; do
  root=$(sed -n "$((longest - n + 1))p" "$tmp/pids")  # the first of the last n links
  declare -A times=() bytes=() widest=() medians=()
  for b in "${binaries[@]}"; do one_run "$b" >/dev/null; done  # warm-up: page cache
  for _ in $(seq "$runs"); do
    for i in "${!binaries[@]}"; do
      read -r ms size wide planned < <(one_run "${binaries[$i]}")
      [ "$planned" = "$n" ] || { echo "chain_bench: planned $planned processes, not $n" >&2; exit 3; }
      times[$i]+="$ms "
      bytes[$i]=$size
      widest[$i]=$wide
    done
  done
  for i in "${!binaries[@]}"; do
    # shellcheck disable=SC2086  # a list of numbers
    sorted=$(printf '%s\n' ${times[$i]} | sort -n)
    name=${binaries[$i]}
    ((${#name} <= 40)) || name="…${name: -39}"
    medians[$i]=$(median <<<"$sorted")
    printf '%6s  %-40s %10.1f %9.1f %9.1f %11s %8s\n' "$n" "$name" "${medians[$i]}" \
      "$(head -n 1 <<<"$sorted")" "$(tail -n 1 <<<"$sorted")" "${bytes[$i]}" "${widest[$i]}"
  done
  if [ ${#binaries[@]} -gt 1 ]; then
    last=$((${#binaries[@]} - 1))
    python3 -c "print('%6s  median of the first / the last: %.1fx' % ($n, ${medians[0]} / ${medians[$last]}))"
  fi
done
