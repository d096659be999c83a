#!/bin/bash
# A real one-node Slurm cluster on this machine (munged, slurmctld, slurmd from Debian's
# slurm-wlm and munge, all on temp paths and free ports), and contrib/slurm/epilog.sh as its
# Epilog: a job leaves a setsid holder of a test device file behind; the Epilog must remove it.
# Negative control first: with the Epilog disabled the holder survives (then this script kills
# it by PID). Then a local user against the root-run scripts (two unprivileged users' running
# jobs hold the device): forged SLURM_JOB_ID, running jobs draining the node through the Prolog
# or health check, leftovers already gone before the kill, squeue failing, no Slurm on PATH.
# Everything started here is stopped by PID (jobs by ID) at the end.
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
# Copies: a rebuild of BUILD_DIR during the run must not swap the binaries under the scripts.
cp "$build/gpuclean" "$build/gpuclean-test" "$tmp/"
gpuclean=$tmp/gpuclean
pids=()        # daemons, stopped at exit
jobs_started=()  # Slurm jobs, cancelled at exit
holders=()     # holder PIDs the jobs reported, killed at exit if still there
cleanup() {
  local pid
  if [ -n "${freezer:-}" ] && [ -d "$freezer" ]; then
    echo THAWED >"$freezer/freezer.state" 2>/dev/null || true
  fi
  for pid in "${jobs_started[@]}"; do scancel "$pid" 2>/dev/null || true; done
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
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF=$tmp/slurm.conf
# The Epilog as a site would install it, with the test's device file; $tmp/epilog-off turns
# it into a no-op (the negative control).
cat >"$tmp/epilog.sh" <<WRAP
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=$tmp/slurm.conf
export GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device GPUCLEAN_GRACE=1s
export GPUCLEAN_WAIT=\$(cat $tmp/epilog-wait 2>/dev/null || echo 10s)
[ -e $tmp/epilog-env ] && . $tmp/epilog-env
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
health() { GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device "$repo/contrib/slurm/healthcheck.sh"; }

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
# An unkillable holder (frozen in a cgroup v1 freezer: SIGKILL stays pending, docs/facts.md): the
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
# --- A local user against the root-run scripts (docs/security.md). Two unprivileged users'
# running jobs hold the device legitimately (children of their batch scripts: slurmstepd
# tracks them). Each case runs even when an earlier one failed; failures are summed at the end.
user_a=nobody user_b=daemon
mkdir -m 1777 "$tmp/run"
sec_failed=()
expect() {  # expect NAME COMMAND…: records NAME as failed unless COMMAND succeeds
  local name=$1; shift
  "$@" || { echo "slurm test: FAIL [$name]"; sec_failed+=("$name"); }
}
drained() { scontrol show node "$node" | grep -q 'State=[A-Z_+]*DRAIN'; }
not_drained() { ! drained; }
undrain() { ! drained || scontrol update nodename="$node" state=resume; }
gone() { wait_for 15 bash -c "! grep -q '$device' <(ls -l /proc/$1/fd 2>/dev/null)"; }
start_job() {  # start_job USER NAME: a running job of USER whose child holds the device
  local pidfile=$tmp/run/$2.pid
  job=$(runuser -u "$1" -- sbatch --parsable -o /dev/null --chdir="$tmp" -J "$2" --wrap \
    "sh -c 'echo \$\$ > $pidfile; exec 3<$device; exec sleep 300'")
  jobs_started+=("$job")
  wait_for 30 test -s "$pidfile" || fail "job $job ($2) did not start its holder"
  job_holder=$(cat "$pidfile")
  holders+=("$job_holder")
  wait_for 10 holds "$job_holder" || fail "job $job ($2): $job_holder does not hold the device"
}
# user_leaky USER NAME [ID…]: a job of USER that leaves setsid holders behind, one per ID, each
# started with SLURM_JOB_ID=ID in its environment (one without when no ID), and ends; the
# Epilog has run when squeue no longer lists it. Sets leaks.
user_leaky() {
  local user=$1 name=$2 id cmd="" i=0 forged
  shift 2
  [ $# -gt 0 ] || set -- ""
  for forged in "$@"; do
    i=$((i + 1))
    cmd+="( ${forged:+SLURM_JOB_ID=$forged }setsid sh -c 'echo \$\$ > $tmp/run/$name-$i.pid; exec 3<$device; exec sleep 300' </dev/null >/dev/null 2>&1 & ); "
  done
  id=$(runuser -u "$user" -- sbatch --parsable -o /dev/null --chdir="$tmp" -J "$name" --wrap "$cmd sleep 0.5")
  wait_for 60 bash -c "[ -z \"\$(squeue -h -j $id 2>/dev/null)\" ]" || fail "job $id did not finish"
  leaks=()
  for ((i = 1; i <= $#; i++)); do
    [ -s "$tmp/run/$name-$i.pid" ] || fail "job $id did not start holder $i"
    leaks+=("$(cat "$tmp/run/$name-$i.pid")")
  done
  holders+=("${leaks[@]}")
}
start_job "$user_a" sec-a; job_a=$job holder_a=$job_holder
start_job "$user_b" sec-b; job_b=$job holder_b=$job_holder
echo "slurm test: running: job $job_a ($user_a, holder $holder_a), job $job_b ($user_b, holder $holder_b)"

# Finding 2: running jobs' processes are no problem for the health check; a stray one is.
expect health-spares-running-jobs health 2>/dev/null
expect health-spares-running-jobs not_drained
undrain
runuser -u "$user_a" -- setsid sh -c "echo \$\$ > $tmp/run/stray.pid; exec 3<$device; exec sleep 300" </dev/null >/dev/null 2>&1 &
wait_for 10 test -s "$tmp/run/stray.pid" || fail "the stray holder did not start"
stray=$(cat "$tmp/run/stray.pid")
holders+=("$stray")
wait_for 10 holds "$stray" || fail "the stray $stray does not hold the device"
health 2>/dev/null || fail "healthcheck.sh failed"
drained_for() { drained && [[ $(sinfo -h -n "$node" -o %E) == *"$1"* ]]; }
drained || fail "negative control: healthcheck.sh did not drain for the stray holder $stray"
expect health-spares-running-jobs drained_for "$stray"
undrain
echo "slurm test: health check: running jobs' holders spared, a stray holder drains (control)"

# Finding 2: the Prolog checks only the job's GPUs and not running jobs' processes. NVML is
# faked (gpuclean-test's --test-gpu-source): GPU 0 has the stray and job B's holder.
prolog() {  # prolog GPU_OF_HOLDER_B GPU_OF_STRAY: runs prolog.sh for a job given GPU 1
  local gpu
  printf '{"driver_version":"test","gpus":[' >"$tmp/gpus.json"
  for gpu in 0 1; do
    [ "$gpu" = 0 ] || printf ',' >>"$tmp/gpus.json"
    printf '{"index":%s,"minor":%s,"memory":{"total":1073741824,"used":209715200,"free":864026624},"processes":[' "$gpu" "$gpu"
    local sep=
    [ "$1" = "$gpu" ] && printf '{"pid":%s,"used_memory":104857600}' "$holder_b" && sep=,
    [ "$2" = "$gpu" ] && printf '%s{"pid":%s,"used_memory":104857600}' "$sep" "$stray"
    printf ']}'
  done >>"$tmp/gpus.json"
  printf ']}' >>"$tmp/gpus.json"
  SLURM_JOB_ID=999999 SLURM_JOB_GPUS=1 GPUCLEAN=$tmp/gpuclean-test GPUCLEAN_DEVICE_GLOB=$device \
    GPUCLEAN_CHECK_ARGS="--test-gpu-source $tmp/gpus.json" "$repo/contrib/slurm/prolog.sh" 2>>"$tmp/prolog.log"
}
expect prolog-only-job-gpus prolog 0 0
expect prolog-only-job-gpus not_drained
undrain
expect prolog-spares-running-jobs prolog 1 0
expect prolog-spares-running-jobs not_drained
undrain
prolog 0 1 && fail "negative control: the Prolog passed with the stray $stray on the job's GPU"
drained || fail "negative control: the Prolog did not drain for the stray $stray"
expect prolog-spares-running-jobs drained_for "$stray"
undrain
kill -KILL "$stray"
gone "$stray" || fail "could not kill the stray $stray"
echo "slurm test: Prolog: another user's job on its own GPU and running jobs' holders spared, a stray on the job's GPU drains (control)"

# Finding 1: a leftover's environment is no evidence. Forged SLURM_JOB_ID of B's and of A's
# running job: both leftovers go; the running jobs' holders stay (the control).
user_leaky "$user_a" sec-forged "$job_b" "$job_a"
for pid in "${leaks[@]}"; do expect epilog-ignores-environment gone "$pid"; done
expect epilog-spares-running-jobs holds "$holder_a"
expect epilog-spares-running-jobs holds "$holder_b"
expect epilog-ignores-environment not_drained
undrain
echo "slurm test: Epilog: leftovers with forged SLURM_JOB_ID killed, running jobs' holders kept"

# Finding 2: leftovers that exit by themselves before `gpuclean kill` runs (it then says
# "nothing to kill", exit 2) are a success, not a reason to drain. A wrapper around gpuclean
# kills the targets (this test's leftovers) first.
cat >"$tmp/gpuclean-racy" <<SHIM
#!/bin/bash
if [ "\$1" = kill ]; then
  for a in "\$@"; do [[ \$a =~ ^[0-9]+\$ ]] && kill -KILL "\$a"; done
  for a in "\$@"; do [[ \$a =~ ^[0-9]+\$ ]] && while [ -e /proc/\$a ]; do sleep 0.05; done; done
fi
exec $gpuclean "\$@"
SHIM
chmod 755 "$tmp/gpuclean-racy"
echo "export GPUCLEAN=$tmp/gpuclean-racy" >"$tmp/epilog-env"
user_leaky "$user_a" sec-gone
expect epilog-already-gone gone "${leaks[0]}"
expect epilog-already-gone not_drained
undrain

# Finding 3: when the Epilog cannot tell which jobs run (squeue failing) it kills nothing and
# drains with a reason saying so.
echo "export GPUCLEAN_SQUEUE=/bin/false" >"$tmp/epilog-env"
user_leaky "$user_a" sec-blind
expect epilog-fails-closed holds "${leaks[0]}"
expect epilog-fails-closed holds "$holder_a"
expect epilog-fails-closed drained_for "cannot tell which jobs run"
kill -KILL "${leaks[0]}"
gone "${leaks[0]}" || fail "could not kill ${leaks[0]}"
undrain

# Finding 3: Slurm's commands not on the PATH the Epilog gets (Slurm gives it none; here: a
# PATH with the basic tools only). The Epilog must still find squeue and spare A's running job.
mkdir "$tmp/bin"
for t in cat dirname grep head hostname jq sed timeout tr awk; do ln -s "$(type -P "$t")" "$tmp/bin/$t"; done
echo "export PATH=$tmp/bin" >"$tmp/epilog-env"
user_leaky "$user_a" sec-path
expect epilog-own-path gone "${leaks[0]}"
expect epilog-own-path holds "$holder_a"
expect epilog-own-path not_drained
undrain
rm -f "$tmp/epilog-env"
echo "slurm test: Epilog: already-gone leftovers, squeue failing, no Slurm on PATH checked"
expect running-jobs-survive holds "$holder_a"
expect running-jobs-survive holds "$holder_b"
((${#sec_failed[@]} == 0)) || fail "security cases failed: ${sec_failed[*]}"
echo "slurm test: PASS in $((SECONDS - started)) s"
