#!/bin/bash
# A real one-node Slurm cluster on this machine (munged, slurmctld, slurmd from Debian's
# slurm-wlm and munge, all on temp paths and free ports), and contrib/slurm/epilog.sh as its
# Epilog: a job leaves a setsid holder of a test device file behind; the Epilog must remove it.
# Negative control first: with the Epilog disabled the holder survives (then this script kills
# it by PID). Everything started here is stopped by PID at the end.
#   tests/slurm/run.sh BUILD_DIR      (needs root; installs the packages when missing)
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:-$repo/build}" && pwd)
gpuclean=$build/gpuclean
started=$SECONDS

if command -v shellcheck >/dev/null; then
  shellcheck -x "$repo"/contrib/slurm/*.sh "$0" || { echo "slurm test: FAIL: shellcheck"; exit 1; }
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "slurm test: SKIPPED (needs root to run slurmd and install packages)"
  exit 0
fi
missing=()
for p in slurm-wlm munge jq; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "slurm test: installing ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

tmp=$(mktemp -d /tmp/gpuclean-slurm.XXXXXX)
chmod 755 "$tmp"
pids=()        # daemons, stopped at exit
holders=()     # holder PIDs the jobs reported, killed at exit if still there
cleanup() {
  local pid
  if [ -n "${freezer:-}" ] && [ -d "$freezer" ]; then
    echo THAWED >"$freezer/freezer.state" 2>/dev/null || true
  fi
  for pid in "${holders[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  if [ -n "${freezer:-}" ] && [ -d "$freezer" ]; then
    for _ in $(seq 50); do [ -s "$freezer/tasks" ] || break; sleep 0.1; done
    rmdir "$freezer" 2>/dev/null || true
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  if [ "${keep:-0}" = 0 ]; then rm -rf "$tmp"; else echo "slurm test: kept $tmp"; fi
}
trap cleanup EXIT
fail() {
  echo "slurm test: FAIL: $*"
  for f in slurmctld.log slurmd.log epilog.log; do
    [ -f "$tmp/$f" ] && { echo "--- $f"; tail -n 30 "$tmp/$f"; }
  done
  keep=1
  exit 1
}
free_port() {  # a port nothing uses now (local addresses in /proc/net/tcp*, hex)
  local port
  while :; do
    port=$((20000 + RANDOM % 30000))
    grep -qi ":$(printf '%04X' "$port") " /proc/net/tcp /proc/net/tcp6 2>/dev/null || break
  done
  echo "$port"
}
wait_for() {  # wait_for SECONDS COMMAND…: polls until COMMAND succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.2
  done
}

# munge, on its own key and socket.
install -d -m 711 -o munge -g munge "$tmp/munge"
mungekey --create --keyfile="$tmp/munge/munge.key" >/dev/null 2>&1 ||
  dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1 count=1024 status=none
chown munge:munge "$tmp/munge/munge.key"
chmod 600 "$tmp/munge/munge.key"
runuser -u munge -- munged --foreground --key-file="$tmp/munge/munge.key" \
  --socket="$tmp/munge/munge.sock" --pid-file="$tmp/munge/munged.pid" \
  --log-file="$tmp/munge/munged.log" --seed-file="$tmp/munge/munged.seed" &
pids+=($!)
wait_for 10 test -S "$tmp/munge/munge.sock" || fail "munged did not start"

node=$(hostname -s)
device=$tmp/gpu-device
touch "$device"
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<CONF
ClusterName=gpuclean-test
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
AuthInfo=socket=$tmp/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
Epilog=$tmp/epilog.sh
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=100 State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$tmp/slurm.conf
# The Epilog as a site would install it, with the test's device file; $tmp/epilog-off turns
# it into a no-op (the negative control).
cat >"$tmp/epilog.sh" <<WRAP
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=$tmp/slurm.conf
export GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device GPUCLEAN_GRACE=1s
export GPUCLEAN_WAIT=\$(cat $tmp/epilog-wait 2>/dev/null || echo 10s)
[ -e $tmp/epilog-off ] && exit 0
exec $repo/contrib/slurm/epilog.sh >>$tmp/epilog.log 2>&1
WRAP
chmod 755 "$tmp/epilog.sh"

slurmctld -D -i -f "$tmp/slurm.conf" >>"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$tmp/slurm.conf" >>"$tmp/slurmd.out" 2>&1 &
pids+=($!)
node_idle() { sinfo -h -n "$node" -o %t 2>/dev/null | grep -qx idle; }
wait_for 60 node_idle || fail "the node did not become idle: $(sinfo -h -o '%t %E' 2>&1)"
echo "slurm test: cluster up after $((SECONDS - started)) s"

# A job that leaves a setsid holder of the device behind (double fork: re-parented at once).
# run_leaky_job NAME [FREEZER]: with FREEZER, the holder is frozen there before the job ends.
run_leaky_job() {
  local pidfile=$tmp/holder-$1.pid id freeze=""
  if [ -n "${2:-}" ]; then
    freeze="echo \$(cat $pidfile) > $2/tasks; echo FROZEN > $2/freezer.state;"
  fi
  id=$(sbatch --parsable -o /dev/null -J "leaky-$1" --wrap \
    "( setsid sh -c 'echo \$\$ > $pidfile; exec 3<$device; exec sleep 300' </dev/null >/dev/null 2>&1 & ); sleep 0.5; $freeze")
  job_done() { [ -z "$(squeue -h -j "$id" 2>/dev/null)" ]; }
  wait_for 60 job_done || fail "job $id did not finish: $(squeue -h -j "$id" 2>&1)"
  [ -s "$pidfile" ] || fail "job $id did not start its holder"
  holder=$(cat "$pidfile")
  holders+=("$holder")
}
holds() { grep -q "$device" <(ls -l "/proc/$1/fd" 2>/dev/null); }

# Negative control: no Epilog, the holder outlives the job.
touch "$tmp/epilog-off"
run_leaky_job control
sleep 1
holds "$holder" || fail "negative control: the holder $holder did not outlive its job (Slurm removed it itself, so this test cannot see the Epilog work)"
"$gpuclean" check --device-glob "$device" >/dev/null && fail "negative control: gpuclean check calls the machine clean"
kill -KILL "$holder"
wait_for 10 bash -c "! grep -q '$device' <(ls -l /proc/$holder/fd 2>/dev/null)" || fail "could not kill $holder"
echo "slurm test: without the Epilog the holder survived its job (negative control)"

# The Epilog removes it.
rm "$tmp/epilog-off"
run_leaky_job epilog
wait_for 20 bash -c "! grep -q '$device' <(ls -l /proc/$holder/fd 2>/dev/null)" ||
  fail "the Epilog left the holder $holder alive"
grep -q "left 1 GPU holder(s): $holder" "$tmp/epilog.log" || fail "epilog log: $(cat "$tmp/epilog.log")"
state=$(sinfo -h -n "$node" -o %t)
[ "$state" = idle ] || fail "the node is $state after a successful Epilog"
"$gpuclean" check --device-glob "$device" || fail "gpuclean check: not clean after the Epilog"
echo "slurm test: the Epilog removed the job's leftover holder; node idle"
# An unkillable holder (frozen in a cgroup v1 freezer: SIGKILL stays pending, FACTS.md): the
# Epilog's kill fails and the node is drained with gpuclean's reason.
if grep -q " /sys/fs/cgroup/freezer " /proc/self/mountinfo; then
  freezer=/sys/fs/cgroup/freezer/gpuclean-slurm-test-$$
  mkdir "$freezer"
  echo 2s >"$tmp/epilog-wait"  # the frozen holder will not go: no need to wait long
  run_leaky_job frozen "$freezer"
  wait_for 10 bash -c "sinfo -h -n $node -o %t | grep -q drain" || fail "the node was not drained for the frozen holder $holder"
  reason=$(sinfo -h -n "$node" -o %E)
  [[ $reason == gpuclean:* ]] || fail "drain reason is not gpuclean's: $reason"
  [[ $reason == *"$holder"* ]] || fail "drain reason does not name the holder $holder: $reason"
  echo "slurm test: frozen holder -> node drained: $reason"
  # The health check keeps a dirty node drained, and resumes it (its reason is gpuclean's)
  # once the holder is gone.
  health() { GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device "$repo/contrib/slurm/healthcheck.sh"; }
  health 2>/dev/null || fail "healthcheck.sh failed on a dirty node"
  sinfo -h -n "$node" -o %t | grep -q drain || fail "healthcheck.sh resumed a dirty node"
  echo THAWED >"$freezer/freezer.state"
  kill -KILL "$holder"
  wait_for 10 bash -c "! grep -q '$device' <(ls -l /proc/$holder/fd 2>/dev/null)" || fail "could not kill $holder after thawing"
  health || fail "healthcheck.sh failed on a clean node"
  wait_for 10 node_idle || fail "healthcheck.sh did not resume the clean node: $(sinfo -h -o '%t %E')"
  echo "slurm test: healthcheck.sh kept the node drained while dirty, resumed it once clean"
else
  echo "slurm test: drain case SKIPPED: no cgroup v1 freezer at /sys/fs/cgroup/freezer"
fi
echo "slurm test: PASS in $((SECONDS - started)) s"
