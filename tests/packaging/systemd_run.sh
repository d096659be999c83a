#!/usr/bin/env bash
# contrib/systemd's units run under a real systemd: this machine has none as PID 1, so the test
# boots one as PID 1 of its own PID, mount, cgroup, UTS and IPC namespaces (its own /run, a
# read-only /proc/sys, a sub-cgroup of this process's own), with a unit path holding only
# copies of the units and empty stand-ins for the boot targets. The copies differ from the
# shipped units only in the binary's path (this build's, copied), the port (a free one), the
# textfile directory and `--no-nvml --device-glob TEST_FILE` appended to ExecStart; every
# hardening line is as shipped. A holder.service (User=nobody) holds the test file.
# Checked: gpuclean-metrics.service serves the holder on its port, as a dynamic UID with
# exactly the unit's capabilities, no_new_privs and a seccomp filter; the timer starts
# gpuclean-textfile.service, which writes the .prom (0644) counting the holder. Negative
# control: the metrics unit with a drop-in that empties its capabilities does not see the
# holder. gpuclean-recorder.service (root, its capabilities, its state and runtime directories)
# records the holder's appearance in its database (0600 in a 0700 directory), the action of
# a `gpuclean kill` of it run inside the namespace (through the unit's socket), its leaving,
# and a clean stop; its copy writes into this test's directory (StateDirectory= and --db
# rewritten) instead of /var/lib/gpuclean. Everything ends with the namespace's PID 1, killed
# by PID.
#   tests/packaging/systemd_run.sh [BUILD_DIR]  (root; systemd, util-linux, curl, python3)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)

if command -v shellcheck >/dev/null; then
  shellcheck -x "$0" || { echo "systemd run test: FAIL: shellcheck"; exit 1; }
fi
# check, finish, until_ok: the suites' shared bookkeeping and deadline poll.
# shellcheck source=SCRIPTDIR/../lib/checks.sh
source "$repo/tests/lib/checks.sh"
# Not checks.sh's skip (one part of a suite): here the whole test cannot run on this machine.
skip_suite() { echo "systemd run test: SKIPPED ($*)"; exit 0; }
[ "$(id -u)" -eq 0 ] || skip_suite "needs root"
for tool in unshare nsenter curl python3 /lib/systemd/systemd; do
  command -v "$tool" >/dev/null || skip_suite "$tool is not installed"
done
"$build/gpuclean" metrics --help >/dev/null 2>&1 || skip_suite "this gpuclean has no metrics"

# Not under /tmp or /home: PrivateTmp= and ProtectHome= hide those from the services.
work=$(mktemp -d /var/lib/gpuclean-systemd-run.XXXXXX)
chmod 755 "$work"
cgroups=()     # made below; removed (with what systemd made inside) at exit
init=          # the namespace's PID 1 (systemd), as this machine numbers it
launcher=
cleanup() {
  if [ -n "$init" ]; then kill -KILL "$init" 2>/dev/null || true; fi
  if [ -n "$launcher" ]; then
    kill -KILL "$launcher" 2>/dev/null || true  # --kill-child: takes the namespace along
    wait "$launcher" 2>/dev/null || true
  fi
  local cg
  for cg in "${cgroups[@]}"; do
    # Deadline poll: the kernel empties the cgroups once the namespace's processes are gone.
    until_ok 10 find "$cg" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
units=$work/units
mkdir "$units" "$work/textfile"
chmod 755 "$work/textfile"
cp "$build/gpuclean" "$work/gpuclean"
device=$work/nvidia0
: >"$device"
chmod 666 "$device"
for f in "$repo"/contrib/systemd/*.service "$repo"/contrib/systemd/*.timer; do
  sed -e "s|/var/lib/prometheus/node-exporter|$work/textfile|g" \
    -e "s|127.0.0.1:9835|127.0.0.1:$port|g" \
    -e "s|^ExecStart=/usr/bin/gpuclean \(.*\)$|ExecStart=$work/gpuclean \1 --no-nvml --device-glob $device|" \
    "$f" >"$units/$(basename "$f")"
done
# The recorder's state under this test's directory (a path below /var/lib, as StateDirectory=
# takes), its health file beside it, looks every 200 ms.
state=/var/lib/$(basename "$work")/recorder
sed -i -e "s|^StateDirectory=gpuclean$|StateDirectory=$(basename "$work")/recorder|" \
  -e "s|^\(ExecStart=.* recorder\) |\1 --db $state/history.db --textfile $state/health.prom --interval 200ms |" \
  "$units/gpuclean-recorder.service"
for t in sysinit basic shutdown timers multi-user network sockets paths slices local-fs; do
  printf '[Unit]\nDescription=%s (stand-in)\n' "$t" >"$units/$t.target"
done
printf '[Unit]\nDescription=System Slice\nDefaultDependencies=no\n' >"$units/system.slice"
printf '[Service]\nUser=nobody\nExecStart=/bin/sh -c "exec sleep 600 3<%s"\n' "$device" \
  >"$units/holder.service"
printf '[Unit]\nDescription=the test\nWants=holder.service\n' >"$units/test.target"

# In every cgroup hierarchy this process is in, its own cgroup one level down: the new cgroup
# namespace is rooted there. Inside, every cgroup mount is dropped and systemd mounts the
# hierarchies itself, rooted at those sub-cgroups, so everything it makes (init.scope,
# system.slice, ...) lands inside them (a cgroup namespace does not re-root the mounts made
# before it: systemd would build its tree at the machine's root).
sub=gpuclean-systemd-run.$$
mapfile -t cgroups < <(python3 - "$sub" <<'PY'
import sys
mounts = []
for line in open("/proc/self/mountinfo"):
    before, after = line.split(" - ")
    fstype, _, options = after.split()[:3]
    if fstype in ("cgroup", "cgroup2"):
        mounts.append((before.split()[4], fstype, set(options.split(","))))
for line in open("/proc/self/cgroup"):
    _, controllers, path = line.rstrip("\n").split(":", 2)
    for point, fstype, options in mounts:
        if (not controllers and fstype == "cgroup2") or (
                controllers and fstype == "cgroup" and set(controllers.split(",")) <= options):
            print((point + path).rstrip("/") + "/" + sys.argv[1])
            break
PY
)
((${#cgroups[@]})) || skip_suite "no cgroup hierarchy mounted"
for cg in "${cgroups[@]}"; do
  mkdir "$cg" || skip_suite "cannot create $cg"
  # A new v1 cpuset starts with no CPUs and memory nodes (no task may join): the parent's.
  for f in cpuset.cpus cpuset.mems; do
    if [ -f "$cg/$f" ]; then cat "$cg/../$f" >"$cg/$f"; fi
  done
done

# One fork: the function's process becomes unshare (exec), so $! is unshare's PID; and
# --kill-child: if unshare dies, the namespace's PID 1 (and so everything in it) dies too.
launch() {
  local cg
  for cg in "${cgroups[@]}"; do echo "$BASHPID" >"$cg/cgroup.procs"; done
  # shellcheck disable=SC2016  # "$0" is the inner shell's: the unit directory, passed below
  exec unshare --mount --pid --fork --kill-child --cgroup --uts --ipc --propagation private sh -c '
    mount -t proc proc /proc && mount -o bind,ro /proc/sys /proc/sys &&
    mount -t tmpfs -o mode=755 tmpfs /run && umount -R -l /sys/fs/cgroup &&
    exec env container=gpuclean-test SYSTEMD_UNIT_PATH="$0" /lib/systemd/systemd \
      --unit=test.target --log-target=console --log-level=warning' "$units"
}
# What systemd would make at a hierarchy's root if it escaped: listed before, compared later.
escaped() { find /sys/fs/cgroup -mindepth 1 -maxdepth 2 -type d \( -name init.scope -o -name system.slice \) | sort; }
roots_before=$(escaped)
launch >"$work/systemd.log" 2>&1 &
launcher=$!
child() { ps -o pid= --ppid "$launcher" | tr -d ' '; }
has_child() { [ -n "$(child)" ]; }
until_ok 10 has_child || skip_suite "unshare did not start systemd ($(cat "$work/systemd.log"))"
init=$(child)
ctl() { nsenter -t "$init" -m -p systemctl "$@"; }
booted() { [[ "$(ctl is-system-running 2>/dev/null)" =~ ^(running|degraded)$ ]]; }
until_ok 15 booted || skip_suite "systemd as PID 1 in namespaces did not come up here ($(ctl is-system-running 2>&1))"
echo "systemd $(ctl --version | awk 'NR == 1 {print $2}') is PID 1 of its namespaces (pid $init here)"

# UNIT's PROPERTY is VALUE (a function, so that until_ok asks again each time).
unit_is() { [ "$(ctl show -p "$2" --value "$1")" = "$3" ]; }
check "holder.service (nobody) holds the test file" until_ok 10 unit_is holder.service ActiveState active

# gpuclean_holders summed over classes in an exposition.
holders_in() { python3 -c '
import re, sys
print(int(sum(float(v) for v in re.findall(r"^gpuclean_holders\{[^}]*\} (\S+)$", sys.stdin.read(), re.M))))'; }
scrape() { curl -sf "http://127.0.0.1:$port/metrics"; }
scrape_counts() {  # N: the holders a scrape counts
  local text
  text=$(scrape) || return 1
  [ "$(printf '%s' "$text" | holders_in)" = "$1" ]
}

# The timer first: its first run comes 15 s after systemd's start (in a container systemd reads
# OnBootSec= as OnStartupSec=), so it is started now and checked after the metrics unit.
ctl start gpuclean-textfile.timer || true
ctl start gpuclean-metrics.service || true
check "gpuclean-metrics.service is active" \
  until_ok 10 unit_is gpuclean-metrics.service ActiveState active
check "its scrape counts the holder" until_ok 10 scrape_counts 1
check "systemd's cgroups are inside the test's own, none at a hierarchy's root" \
  test "$(escaped)" = "$roots_before"
main=$(ctl show -p MainPID --value gpuclean-metrics.service)
# The unit's capabilities as the kernel's mask (CAP_SYS_PTRACE = 19, CAP_DAC_READ_SEARCH = 2).
want_mask=$(python3 - "$repo/contrib/systemd/gpuclean-metrics.service" <<'PY'
import re, sys
numbers = {"CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_DAC_OVERRIDE": 1, "CAP_KILL": 5}
line = re.search(r"^AmbientCapabilities=(.*)$", open(sys.argv[1]).read(), re.M).group(1)
print("%016x" % sum(1 << numbers[c] for c in line.split()))
PY
)
status=$(nsenter -t "$init" -m -p cat "/proc/$main/status")
field() { printf '%s\n' "$status" | awk -v k="$1:" '$1 == k { print $2 }'; }
uid=$(field Uid)
echo "    gpuclean: uid $uid, CapEff $(field CapEff), CapAmb $(field CapAmb), CapBnd $(field CapBnd), NoNewPrivs $(field NoNewPrivs), Seccomp $(field Seccomp)"
check "it runs as a dynamic UID (61184-65519)" test "$uid" -ge 61184 -a "$uid" -le 65519
check "with exactly the unit's capabilities ($want_mask) effective, ambient and bounding" \
  test "$(field CapEff)" = "$want_mask" -a "$(field CapAmb)" = "$want_mask" -a "$(field CapBnd)" = "$want_mask"
check "with no_new_privs and a seccomp filter" test "$(field NoNewPrivs)" = 1 -a "$(field Seccomp)" = 2

mkdir "$units/gpuclean-metrics.service.d"
printf '[Service]\nAmbientCapabilities=\nCapabilityBoundingSet=\n' \
  >"$units/gpuclean-metrics.service.d/no-caps.conf"
ctl daemon-reload
ctl restart gpuclean-metrics.service || true
check "negative control: without the capabilities its scrape counts no holder" \
  until_ok 10 scrape_counts 0
rm -r "$units/gpuclean-metrics.service.d"
ctl daemon-reload
ctl stop gpuclean-metrics.service

prom=$work/textfile/gpuclean.prom
# 15 s after systemd's start, and the run: a deadline of 45 s from here (a poll of 15 s from
# here was too short on CI's loaded 2 cores when the timer was started here, 2026-12-03).
check "the timer runs gpuclean-textfile.service, which writes the .prom" until_ok 45 test -s "$prom"
check "the .prom counts the holder" test "$(holders_in <"$prom")" = 1
check "the .prom is 0644 (node_exporter reads it as prometheus)" test "$(stat -c %a "$prom")" = 644
# Result= alone says success before any run too: the main process must have exited, with 0.
ran_and_exited_0() {
  [ "$(ctl show -p ExecMainExitTimestampMonotonic --value gpuclean-textfile.service)" != 0 ] &&
    unit_is gpuclean-textfile.service ExecMainStatus 0 &&
    unit_is gpuclean-textfile.service Result success
}
check "gpuclean-textfile.service exited 0" until_ok 10 ran_and_exited_0
check "the timer is waiting for its next run" \
  unit_is gpuclean-textfile.timer ActiveState active

# The flight recorder.
ctl start gpuclean-recorder.service || true
check "gpuclean-recorder.service is active" \
  until_ok 10 unit_is gpuclean-recorder.service ActiveState active
holder=$(ctl show -p MainPID --value holder.service)  # as the namespace numbers it
recorded() { "$work/gpuclean" history --db "$state/history.db" --json --since 1h; }
has_event() {  # KIND PID|""
  recorded 2>/dev/null | python3 -c '
import json, sys
kind, pid = sys.argv[1], sys.argv[2]
events = json.load(sys.stdin)["events"]
sys.exit(0 if any(e["kind"] == kind and (not pid or (e["process"] or {}).get("pid") == int(pid))
                  for e in events) else 1)' "$1" "$2"
}
check "it records holder.service's process appearing (pid $holder in the namespace)" \
  until_ok 10 has_event appeared "$holder"
check "its database is 0600 in a 0700 directory" \
  test "$(stat -c %a "$state/history.db")" = 600 -a "$(stat -c %a "$state")" = 700
check "it writes its health for node_exporter" until_ok 10 grep -q '^gpuclean_recorder_looks_total' "$state/health.prom"
# The namespace is a PID namespace of its own: the kernel's process events there name the
# host's PIDs, so the recorder must find that out (its probe fork) and read none. Before the
# probe it said "process events: on" here and would have matched host PIDs to its processes.
check "in a PID namespace of its own it reads no process events (they name the host's PIDs)" \
  grep -qx 'gpuclean_recorder_proc_events 0' "$state/health.prom"
main=$(ctl show -p MainPID --value gpuclean-recorder.service)
status=$(nsenter -t "$init" -m -p cat "/proc/$main/status")
want_mask=$(python3 - "$repo/contrib/systemd/gpuclean-recorder.service" <<'PY'
import re, sys
numbers = {"CAP_DAC_READ_SEARCH": 2, "CAP_SYS_PTRACE": 19, "CAP_NET_ADMIN": 12}
line = re.search(r"^AmbientCapabilities=(.*)$", open(sys.argv[1]).read(), re.M).group(1)
print("%016x" % sum(1 << numbers[c] for c in line.split()))
PY
)
check "it runs as root with exactly the unit's capabilities ($want_mask), no_new_privs, seccomp" \
  test "$(field Uid | head -c 1)" = 0 -a "$(field CapEff)" = "$want_mask" \
  -a "$(field CapBnd)" = "$want_mask" -a "$(field NoNewPrivs)" = 1 -a "$(field Seccomp)" = 2
# A kill of the test's own holder, inside the namespace, reports to the unit's socket.
nsenter -t "$init" -m -p "$work/gpuclean" kill "$holder" --yes --no-nvml --device-glob "$device" \
  >"$work/kill.out" 2>&1 || true
both_recorded() { has_event action '' && has_event left "$holder"; }
check "the kill is recorded as an action, and the holder as left" until_ok 10 both_recorded
ctl stop gpuclean-recorder.service || true
check "it stops cleanly on SIGTERM (exit 0) and records that" has_event recorder_stopped ''
check "  ... with exit status 0" unit_is gpuclean-recorder.service ExecMainStatus 0

if ((failed)); then
  sed 's/^/    kill: /' "$work/kill.out"
  for u in gpuclean-metrics.service gpuclean-textfile.service gpuclean-recorder.service; do
    ctl status --no-pager -l "$u" 2>&1 | sed 's/^/    /' || true
  done
fi
finish "systemd run test"
