#!/usr/bin/env bash
# recorder_bench.sh: what the flight recorder's database costs (issue 36), in one run:
#   1. growth: the recorder (--interval 200ms, --no-nvml, a temp device file) watches a holder
#      that appears and leaves every cycle, for CYCLES cycles; the database's growth per cycle,
#      and per day at one cycle a second (the target: at most 30 MB a day, so that the 256 MiB
#      default holds the 7-day retention);
#   2. reading: a week-full database at that rate (7 x 86,400 holders, each appearing and
#      leaving, one in 100 orphaned before it leaves: written by python3's sqlite3 into the
#      schema the recorder created, the rows as the recorder writes them), then `gpuclean
#      history --since 24h` (text and --json), `--at`, `--pid` and `--report` (issue 52), each
#      timed as the median of RUNS runs (the targets: --since 24h 200 ms, --report 500 ms);
#   3. pruning: what a prune of a tenth of the week-full database costs the recorder.
# Where the CPU and memory of a running recorder are measured: bench/top_bench.sh --tools
# recorder,top (the same crowd as top's own figures, in one run).
#
#   bench/recorder_bench.sh [--gpuclean PATH] [--cycles N] [--runs N] [--days N] [--keep DIR]
# Prints the figures; never fails on timing: exit 0 when everything ran, 1 on a set-up error.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
gpuclean=$repo/build/gpuclean
cycles=100
runs=5
days=7
keep=""
while (($#)); do
  case $1 in
    --gpuclean) gpuclean=$2; shift 2 ;;
    --cycles) cycles=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "recorder_bench: unknown option $1" >&2; exit 1 ;;
  esac
done
[[ -x $gpuclean ]] || { echo "recorder_bench: no gpuclean at $gpuclean (build it, or --gpuclean)" >&2; exit 1; }
py=${PYTHON:-python3}

tmp=$(mktemp -d "${TMPDIR:-/tmp}/recorder_bench.XXXXXX")
recorder=""
cleanup() {
  # Only what this script started: the recorder, by the PID $! gave.
  if [[ -n $recorder ]]; then kill -TERM "$recorder" 2>/dev/null || true; wait "$recorder" 2>/dev/null || true; fi
  if [[ -z $keep ]]; then rm -rf "$tmp"; else mkdir -p "$keep" && cp -r "$tmp"/. "$keep"/; rm -rf "$tmp"; fi
}
trap cleanup EXIT

echo "recorder_bench: $("$gpuclean" --version | head -n 1); $(nproc) cores; $(uname -r)"
device=$tmp/device
: >"$device"
db=$tmp/growth/history.db

# --- 1. growth -------------------------------------------------------------------------------
"$gpuclean" recorder --db "$db" --socket off --journal off --interval 200ms --no-nvml \
  --device-glob "$device" 2>"$tmp/recorder.log" &
recorder=$!
for _ in $(seq 1 50); do [[ -s $db ]] && break; sleep 0.1; done
data_bytes() { "$py" - "$1" <<'PY'
import sqlite3, sys
c = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
page, pages, free = (c.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count", "freelist_count"))
print((pages - free) * page)
PY
}
events() { "$py" -c 'import sqlite3,sys; print(sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True).execute("SELECT COUNT(*) FROM events").fetchone()[0])' "$1"; }
sleep 1
start_bytes=$(data_bytes "$db")
start_events=$(events "$db")
for _ in $(seq 1 "$cycles"); do
  # A holder for 0.5 s (two or three looks), then 0.3 s without one.
  sleep 0.5 3<"$device" &
  wait $!
  sleep 0.3
done
sleep 0.5
end_bytes=$(data_bytes "$db")
end_events=$(events "$db")
kill -TERM "$recorder"
wait "$recorder" || true
recorder=""

"$py" - "$cycles" "$start_bytes" "$end_bytes" "$start_events" "$end_events" <<'PY'
import sys
cycles, b0, b1, e0, e1 = (int(x) for x in sys.argv[1:])
per_cycle = (b1 - b0) / cycles
per_event = (b1 - b0) / max(1, e1 - e0)
print()
print(f"1. growth: {cycles} holders appeared and left ({e1 - e0} events, {(e1 - e0) / cycles:.1f} per holder)")
print(f"   database data: {b0} -> {b1} bytes: {per_cycle:.0f} bytes per holder, {per_event:.0f} per event")
day = per_cycle * 86400 / 1e6
print(f"   one holder appearing and leaving every second: {day:.1f} MB a day "
      f"({'within' if day <= 30 else 'ABOVE'} 30 MB); 7 days: {day * 7:.0f} MB (the default --max-size: 268 MB)")
print(f"   with NVML each such holder also has a memory_changed and a memory_returned event:"
      f" about {per_cycle * 86400 / 1e6 * 2:.1f} MB a day at twice the events (an estimate from the bytes per event)")
PY

# --- 2. reading a week-full database ---------------------------------------------------------
week=$tmp/week/history.db
# The recorder makes the schema (one look), then rows are added as it would write them.
timeout 5 "$gpuclean" recorder --db "$week" --socket off --journal off --no-nvml --device-glob "$device" \
  --interval 100ms 2>/dev/null || true
now=$(date +%s)
"$py" - "$week" "$days" "$now" <<'PY'
import sqlite3, sys, time
path, days, now = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
c = sqlite3.connect(path)
c.execute("PRAGMA journal_mode = WAL")
boot = "bench-boot"
start = now - days * 86400
n = days * 86400
began = time.monotonic()
with c:
    for table in ("events", "processes", "commands", "boots"):
        c.execute(f"DELETE FROM {table}")
    c.execute("INSERT INTO boots (id, boot_id) VALUES (1, ?)", (boot,))
    # One server command line, restarted every second, and its launcher's.
    c.execute("INSERT INTO commands (id, argv) VALUES (1, ?), (2, ?)",
              (b"python3\0-m\0sglang.launch_server\0--model-path\0/models/llama-3-70b\0--tp\08",
               b"bash\0run_server.sh\0--tp\08"))
    c.executemany(
        "INSERT INTO processes (id, boot, pid, start_ticks, user, argv, owner, parent_pid,"
        " parent_start_ticks, parent_argv, appeared, left) VALUES (?, 1, ?, ?, 'alice', 1,"
        " 'slurm-job:4242', ?, ?, 2, ?, ?)",
        ((i + 1, 1000 + i % 30000, 100000 + i, 900 + i % 30000, 99000 + i, start + i, start + i + 0.5)
         for i in range(n)))
    # One holder in 100 is orphaned before it leaves (8 GiB on GPU 0): what history --report
    # reads (issue 52), 6,048 leftovers in a week.
    def rows():
        for i in range(n):
            t = start + i
            yield (t, "appeared", i + 1, None, 8 << 30, "active", "")
            if i % 100 == 0:
                yield (t, "memory_changed", i + 1, 0, 8 << 30, "", "")
                yield (t + 0.25, "class_changed", i + 1, None, None, "orphan", "active")
            yield (t + 0.5, "left", i + 1, None, 8 << 30, "orphan", "")
    c.executemany("INSERT INTO events (time, kind, process, gpu, bytes, class, detail)"
                  " VALUES (?, ?, ?, ?, ?, ?, ?)", rows())
c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
page, pages = (c.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_size", "page_count"))
print()
events = c.execute("SELECT COUNT(*) FROM events").fetchone()[0]
print(f"2. a week-full database: {n} holders ({n // 100} of them orphaned), {events} events,"
      f" {page * pages / 1e6:.0f} MB;"
      f" written in {time.monotonic() - began:.0f} s")
PY

time_it() { # LABEL ARGS...: the median wall time of $runs runs, in ms
  local label=$1; shift
  "$py" - "$runs" "$label" "$gpuclean" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, label, cmd = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
times, out = [], b""
for _ in range(runs):
    t = time.monotonic()
    out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True).stdout
    times.append(1000 * (time.monotonic() - t))
print(f"   {label:<44} median {statistics.median(times):7.1f} ms  (min {min(times):.1f}, max {max(times):.1f};"
      f" {len(out.splitlines())} lines out)")
PY
}
echo "   (median of $runs runs each; wall time, output to a pipe)"
time_it "history --since 24h" history --db "$week" --since 24h
time_it "history --since 24h --json" history --db "$week" --since 24h --json
time_it "history --since 1h" history --db "$week" --since 1h
time_it "history --at 3d (who held it 3 days ago)" history --db "$week" --at 3d
time_it "history --pid 4242 --since 7d" history --db "$week" --pid 4242 --since 7d
time_it "history --since 24h --kind left" history --db "$week" --since 24h --kind left
echo "   target: history --since 24h within 200 ms"
time_it "history --report --since 7d (issue 52)" history --db "$week" --report --since 7d
time_it "history --report --since 7d --json" history --db "$week" --report --since 7d --json
time_it "history --report --since 7d --by command" history --db "$week" --report --since 7d --by command
time_it "history --report --since 24h" history --db "$week" --report --since 24h
echo "   target: history --report on the week within 500 ms"

# --- 3. pruning a full database --------------------------------------------------------------
# A recorder started on a copy of the week with --max-size below its data prunes at start (the
# biggest non-root user's holder events first: a GROUP BY over the events' users), before its
# first look; the same copy under a --max-size it fits is the baseline. The difference between
# the times to the socket (made after the first look) is what pruning cost.
week_bytes=$(data_bytes "$week")
to_socket() { # MAX_SIZE: ms from the recorder's start to its socket, on a fresh copy of the week
  rm -rf "$tmp/prune" && mkdir -p "$tmp/prune" && cp "$week" "$tmp/prune/history.db"
  "$py" - "$gpuclean" "$tmp/prune" "$device" "$1" <<'PY'
import os, subprocess, sys, time
gpuclean, d, device, max_size = sys.argv[1:]
sock = os.path.join(d, "rec.sock")
t = time.monotonic()
p = subprocess.Popen([gpuclean, "recorder", "--db", os.path.join(d, "history.db"), "--socket", sock,
                      "--journal", "off", "--no-nvml", "--device-glob", device, "--max-size", max_size],
                     stderr=subprocess.DEVNULL)
while not os.path.exists(sock) and time.monotonic() - t < 120:
    time.sleep(0.005)
print(f"{1000 * (time.monotonic() - t):.0f}")
p.terminate(); p.wait()
PY
}
fits=$(to_socket 1GiB)
pruned=$(to_socket "$((week_bytes * 9 / 10 / 1048576))MiB")
echo
echo "3. pruning: a recorder started on the week ($((week_bytes / 1000000)) MB of data) reached its first look in"
echo "   ${fits} ms under --max-size 1GiB (nothing to prune) and ${pruned} ms under $((week_bytes * 9 / 10 / 1048576))MiB"
echo "   (pruning a tenth of it): pruning cost about $((pruned - fits)) ms, on the recorder's own thread"
