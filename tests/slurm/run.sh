#!/bin/bash
# A real one-node Slurm cluster on this machine (munged, slurmctld, slurmd from Debian's
# slurm-wlm and munge, all on temp paths and free ports) with contrib/slurm/prolog.sh as its
# Prolog and contrib/slurm/epilog.sh as its Epilog, on a test device file.
# Where cgroup v1's devices hierarchy is mounted, jobs get cgroups for real: TaskPlugin=
# task/cgroup with CgroupPlugin=cgroup/v1 and ConstrainDevices (Slurm's cgroup/v2 plugin refuses
# a hybrid machine), ProctrackType=proctrack/linuxproc (under proctrack/cgroup Slurm kills the
# job's whole cgroup itself, so nothing outlives a job for the Epilog to find). A job leaves a
# setsid holder of the device and a non-holding child behind: both outlive it, in its cgroup,
# with the Epilog disabled (negative control); with it, `gpuclean kill --job` ends both, while
# another running job of the same user keeps its processes. Where mknod works, two GRES GPUs
# (char device nodes, major 63 "local/experimental": no driver) make Slurm set SLURM_JOB_GPUS:
# a GPU job starts on a clean node, and with a leftover holder present the Prolog drains the
# node and the job is requeued and held (starts with the Prolog disabled: the control). Then a
# local user against the root-run scripts (two unprivileged users' running jobs hold the
# device): forged SLURM_JOB_ID, running jobs draining the node through the Prolog or health
# check, leftovers already gone before the kill, squeue failing, no Slurm on PATH.
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
# Job IDs from a random base: another copy of this test running at the same time, or a job
# cgroup an earlier run left, never shares a job ID (and so a job cgroup) with this run's.
first_job=$((100000 + (RANDOM * 32768 + RANDOM) % 60000000))
pids=()        # daemons, stopped at exit
jobs_started=()  # Slurm jobs, cancelled at exit
holders=()     # PIDs the jobs and the test started outside the daemons, killed at exit if still there
cleanup() {
  local pid dir job
  if [ -n "${freezer:-}" ] && [ -d "$freezer" ]; then
    echo THAWED >"$freezer/freezer.state" 2>/dev/null || true
  fi
  for pid in "${jobs_started[@]}"; do scancel "$pid" 2>/dev/null || true; done
  for pid in "${holders[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  # The jobs' slurmstepd must end before slurmd does (else it outlives the cluster).
  for _ in $(seq 100); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.1; done
  if [ -n "${freezer:-}" ] && [ -d "$freezer" ]; then
    for _ in $(seq 50); do [ -s "$freezer/tasks" ] || break; sleep 0.1; done
    rmdir "$freezer" 2>/dev/null || true
  fi
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  # Job cgroups Slurm could not remove (the leftovers were still in them at the job's end), then
  # its uid_U and slurm_NODE parents once empty (rmdir fails on a group still in use).
  for dir in /sys/fs/cgroup/*/slurm*/uid_*/job_*; do
    job=${dir##*/job_}
    [[ $job =~ ^[0-9]+$ ]] || continue
    ((job >= first_job && job < first_job + 1000)) || continue
    find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
    rmdir "${dir%/job_*}" "${dir%/uid_*}" 2>/dev/null || true
  done
  if [ "${keep:-0}" = 0 ]; then rm -rf "$tmp"; else echo "slurm test: kept $tmp"; fi
}
trap cleanup EXIT
fail() {
  echo "slurm test: FAIL: $*"
  for f in slurmctld.log slurmd.log epilog.log prolog-slurm.log; do
    [ -f "$tmp/$f" ] && { echo "--- $f"; tail -n 30 "$tmp/$f"; }
  done
  keep=1
  exit 1
}
checks=0
failed_checks=()
expect() {  # expect NAME COMMAND…: one check; records NAME as failed unless COMMAND succeeds
  local name=$1; shift
  checks=$((checks + 1))
  "$@" || { echo "slurm test: FAIL [$name]"; failed_checks+=("$name"); }
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
mkdir -m 1777 "$tmp/run"  # the unprivileged users' pidfiles and markers
# Job cgroups: Slurm's cgroup/v1 plugin wants the v1 hierarchies at /sys/fs/cgroup/*; its v2
# plugin refuses a machine that also has v1 ones ("Hybrid mode is not supported").
task_plugin=task/none
if grep -q ' /sys/fs/cgroup/devices .* - cgroup cgroup .*devices' /proc/self/mountinfo; then
  task_plugin=task/cgroup
  printf 'CgroupPlugin=cgroup/v1\nConstrainDevices=yes\n' >"$tmp/cgroup.conf"
else
  echo "slurm test: no cgroup v1 devices hierarchy: jobs run without cgroups (task/none)"
fi
# GRES GPUs so that Slurm sets SLURM_JOB_GPUS for the Prolog. slurmd takes only char or block
# devices there (a regular file: "is not a valid character or block device", and the job gets
# no GPU variables): nodes of major 63, "local/experimental", which no driver here serves
# (opening one fails), so ConstrainDevices denying them to other jobs touches nothing real.
gres_node='' gres_conf=''
if mknod "$tmp/nvidia0" c 63 0 2>/dev/null && mknod "$tmp/nvidia1" c 63 1 2>/dev/null; then
  gres_node="Gres=gpu:2"
  gres_conf="GresTypes=gpu"
  printf 'AutoDetect=off\nName=gpu File=%s/nvidia[0-1]\n' "$tmp" >"$tmp/gres.conf"
else
  echo "slurm test: mknod failed: no GRES GPUs, the Prolog's GPU job cases are skipped"
fi
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
TaskPlugin=$task_plugin
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
FirstJobId=$first_job
$gres_conf
Prolog=$tmp/prolog.sh
Epilog=$tmp/epilog.sh
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=100 $gres_node State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:8
CONF
export SLURM_CONF=$tmp/slurm.conf
# The Prolog and Epilog as a site would install them, with the test's device file; without
# NVML here the Prolog checks every device file (--no-nvml). $tmp/epilog-off and
# $tmp/prolog-off turn them into no-ops (the negative controls).
cat >"$tmp/epilog.sh" <<WRAP
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=$tmp/slurm.conf
export GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device GPUCLEAN_GRACE=1s
export GPUCLEAN_WAIT=\$(cat $tmp/epilog-wait 2>/dev/null || echo 10s)
[ -e $tmp/epilog-env ] && . $tmp/epilog-env
[ -e $tmp/epilog-off ] && exit 0
exec $repo/contrib/slurm/epilog.sh >>$tmp/epilog.log 2>&1
WRAP
cat >"$tmp/prolog.sh" <<WRAP
#!/bin/bash
export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF=$tmp/slurm.conf
export GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device GPUCLEAN_CHECK_ARGS=--no-nvml
[ -e $tmp/prolog-off ] && exit 0
exec $repo/contrib/slurm/prolog.sh >>$tmp/prolog-slurm.log 2>&1
WRAP
chmod 755 "$tmp/epilog.sh" "$tmp/prolog.sh"

slurmctld -D -i -f "$tmp/slurm.conf" >>"$tmp/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -N "$node" -f "$tmp/slurm.conf" >>"$tmp/slurmd.out" 2>&1 &
pids+=($!)
# Idle: allocated to no job, not drained. From scontrol: sinfo's allocated-CPU count (and so
# its "mix") can lag a finished job by ~20 s.
node_idle() { scontrol show node "$node" 2>/dev/null | grep -Eq 'State=IDLE( |$)'; }
wait_for 60 node_idle || fail "the node did not become idle: $(sinfo -h -o '%t %E' 2>&1)"
echo "slurm test: cluster up after $((SECONDS - started)) s ($task_plugin${gres_node:+, $gres_node})"

user_a=nobody user_b=daemon
holds() { grep -q "$device" <(ls -l "/proc/$1/fd" 2>/dev/null); }
dead() {  # dead PID: no such process, or a zombie
  local state
  state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
  [ -z "$state" ] || [ "$state" = Z ]
}
ended() { wait_for 15 dead "$1"; }
job_done() { [ -z "$(squeue -h -j "$1" 2>/dev/null)" ]; }
health() { GPUCLEAN=$gpuclean GPUCLEAN_DEVICE_GLOB=$device "$repo/contrib/slurm/healthcheck.sh"; }
drained() { scontrol show node "$node" | grep -q 'State=[A-Z_+]*DRAIN'; }
not_drained() { ! drained; }
undrain() { ! drained || scontrol update nodename="$node" state=resume; }
drained_for() { drained && [[ $(sinfo -h -n "$node" -o %E) == *"$1"* ]]; }
# in_job_cgroup PID JOB: /proc/PID/cgroup places PID in JOB's task cgroup (Slurm's v1 layout).
in_job_cgroup() { grep -Eq ":devices:/slurm[^/]*/uid_[0-9]+/job_$2/step_[a-z0-9]+/task_[0-9]+\$" "/proc/$1/cgroup"; }
# owner_is PID JOB STEP: gpuclean's JSON names PID's owner Slurm job JOB, step STEP.
owner_is() {
  local report
  report=$("$gpuclean" status --json --device-glob "$device" 2>/dev/null) || [ $? -eq 1 ] || return
  jq -e --argjson pid "$1" --arg job "$2" --arg step "$3" '.holders[] | select(.pid == $pid)
    | .owner | select(.kind == "slurm-job" and .id == $job and .step == $step)' <<<"$report" >/dev/null
}

# A job of USER that leaves a setsid holder of the device behind (double fork: re-parented at
# once) and, under it, a child that holds nothing. With FREEZER (a root job's), the holder is
# frozen there before the job ends. Sets id, holder, child.
run_leaky_job() {  # run_leaky_job NAME USER [FREEZER]
  local user=$2 pidfile=$tmp/run/holder-$1.pid childfile=$tmp/run/child-$1.pid freeze=""
  if [ -n "${3:-}" ]; then
    freeze="echo \$(cat $pidfile) > $3/tasks; echo FROZEN > $3/freezer.state;"
  fi
  # The job ends (or freezes its holder) only once the holder holds the device: a deadline poll
  # of at most 10 s in the job script, not a sleep.
  local held_by_then="i=0; until [ -s $pidfile ] && [ \"\$(readlink /proc/\$(cat $pidfile)/fd/3)\" = $device ]; do i=\$((i + 1)); [ \$i -lt 200 ] || break; sleep 0.05; done;"
  id=$(runuser -u "$user" -- sbatch --parsable -o /dev/null --chdir="$tmp" -J "leaky-$1" --wrap \
    "( setsid sh -c 'sleep 300 & echo \$! > $childfile; echo \$\$ > $pidfile; exec 3<$device; exec sleep 300' </dev/null >/dev/null 2>&1 & ); $held_by_then $freeze")
  wait_for 60 job_done "$id" || fail "job $id did not finish: $(squeue -h -j "$id" 2>&1)"
  [ -s "$pidfile" ] || fail "job $id did not start its holder"
  [ -s "$childfile" ] || fail "job $id did not start its holder's child"
  holder=$(cat "$pidfile") child=$(cat "$childfile")
  holders+=("$holder" "$child")
}
# gpu_job NAME: submits a job given one GRES GPU that writes $tmp/run/NAME.ran; sets gpu_job_id.
gpu_job() {
  gpu_job_id=$(runuser -u "$user_a" -- sbatch --parsable --gres=gpu:1 -o /dev/null --chdir="$tmp" \
    -J "$1" --wrap "echo \$SLURM_JOB_GPUS > $tmp/run/$1.ran")
  jobs_started+=("$gpu_job_id")
}
alive() { ! dead "$1"; }
not() { ! "$@"; }
held() { squeue -h -j "$1" -o '%t %r' | grep -qx 'PD launch failed requeued held'; }

# --- The Prolog on a clean node: the GPU job starts.
if [ -n "$gres_node" ]; then
  gpu_job clean
  expect prolog-clean-node-starts wait_for 30 test -s "$tmp/run/clean.ran"
  expect prolog-clean-node-starts wait_for 30 job_done "$gpu_job_id"
  expect prolog-run-by-slurm grep -q "job $gpu_job_id's GPUs 0: NVML off" "$tmp/prolog-slurm.log"
  expect prolog-clean-node-starts not_drained
  echo "slurm test: Prolog: a GPU job on the clean node (it saw SLURM_JOB_GPUS=$(cat "$tmp/run/clean.ran" 2>/dev/null))"
else
  echo "slurm test: SKIPPED: the Prolog's GPU job cases (no GRES GPUs)"
fi

# --- Negative control: no Epilog, the holder and its child outlive the job, in its cgroup.
touch "$tmp/epilog-off"
run_leaky_job control "$user_a"
holds "$holder" || fail "negative control: the holder $holder did not outlive its job (Slurm removed it itself, so this test cannot see the Epilog work)"
expect epilog-control alive "$child"
expect epilog-control not "$gpuclean" check --device-glob "$device" >/dev/null
if [ "$task_plugin" = task/cgroup ]; then
  echo "slurm test: the leftover $holder of job $id: $(tr '\n' ' ' <"/proc/$holder/cgroup")"
  expect job-cgroup in_job_cgroup "$holder" "$id"
  # Slurm's groups are root's: a job's user can neither make a job_N group there nor move a
  # process into one (what makes `kill --job` exact).
  job_group=$(sed -n 's/^[0-9]*:devices:\(.*\)\/step_[a-z0-9]*\/task_[0-9]*$/\1/p' "/proc/$holder/cgroup")
  expect job-cgroup-root-owned test "$(stat -c '%U %a' "/sys/fs/cgroup/devices$job_group" \
    "/sys/fs/cgroup/devices${job_group%/job_*}" "/sys/fs/cgroup/devices$job_group/cgroup.procs" |
    tr '\n' ' ')" = "root 755 root 755 root 644 "
  expect job-cgroup in_job_cgroup "$child" "$id"
  expect owner-slurm-job owner_is "$holder" "$id" batch
fi
echo "slurm test: without the Epilog the holder $holder and its child $child survived job $id (negative control)"

# --- The Prolog with that leftover present: without the Prolog a GPU job starts anyway (the
# control); with it the node is drained with gpuclean's reason and the job requeued and held.
if [ -n "$gres_node" ]; then
  touch "$tmp/prolog-off"
  gpu_job control
  expect prolog-control wait_for 30 test -s "$tmp/run/control.ran"
  expect prolog-control wait_for 30 job_done "$gpu_job_id"
  rm "$tmp/prolog-off"
  gpu_job refused
  expect prolog-drains wait_for 30 held "$gpu_job_id"
  expect prolog-drains drained_for "$holder"
  reason=$(sinfo -h -n "$node" -o %E)
  expect prolog-drains test "${reason#gpuclean:}" != "$reason"
  expect prolog-job-not-started test ! -e "$tmp/run/refused.ran"
  echo "slurm test: Prolog: job $gpu_job_id $(squeue -h -j "$gpu_job_id" -o %r), node drained: $reason"
  scancel "$gpu_job_id"
fi
kill -KILL "$holder" "$child"
ended "$holder" || fail "could not kill $holder"
ended "$child" || fail "could not kill $child"
undrain

# --- The Epilog on. A running job of the same user keeps a holding child and a setsid
# non-holder (both in that job's cgroup); the leaky job's holder and non-holding child go.
rm "$tmp/epilog-off"
runner=$(runuser -u "$user_a" -- sbatch --parsable -o /dev/null --chdir="$tmp" -J runner --wrap \
  "( setsid sleep 300 </dev/null >/dev/null 2>&1 & echo \$! > $tmp/run/runner-daemon.pid )
   sh -c 'echo \$\$ > $tmp/run/runner.pid; exec 3<$device; exec sleep 300' &
   until [ -e $tmp/run/runner.stop ]; do sleep 0.1; done")
jobs_started+=("$runner")
wait_for 30 test -s "$tmp/run/runner.pid" || fail "job $runner did not start its holder"
wait_for 10 test -s "$tmp/run/runner-daemon.pid" || fail "job $runner did not start its daemon"
runner_holder=$(cat "$tmp/run/runner.pid") runner_daemon=$(cat "$tmp/run/runner-daemon.pid")
holders+=("$runner_holder" "$runner_daemon")
wait_for 10 holds "$runner_holder" || fail "job $runner: $runner_holder does not hold the device"
[ "$task_plugin" != task/cgroup ] || expect owner-slurm-job owner_is "$runner_holder" "$runner" batch
log_mark=$(stat -c %s "$tmp/epilog.log" 2>/dev/null || echo 0)
# in_kill_plan PID: this Epilog's `gpuclean kill` plan has a row for PID, of user A.
in_kill_plan() { tail -c +$((log_mark + 1)) "$tmp/epilog.log" | grep -Eq "^ +$1 +$user_a "; }
run_leaky_job epilog "$user_a"
expect epilog-kills-holder ended "$holder"
expect epilog-log in_kill_plan "$holder"
if [ "$task_plugin" = task/cgroup ]; then
  expect epilog-kills-job-cgroup ended "$child"
  expect epilog-log in_kill_plan "$child"
  expect other-job-untouched in_job_cgroup "$runner_daemon" "$runner"
else
  echo "slurm test: SKIPPED: the non-holding child without job cgroups (killed by PID)"
  kill -KILL "$child"
fi
expect other-job-untouched holds "$runner_holder"
expect other-job-untouched alive "$runner_daemon"
expect epilog-no-drain not_drained
# Clean but for the running job's holder.
expect epilog-check-clean "$gpuclean" check --device-glob "$device" --ignore-pid "$runner_holder"
echo "slurm test: Epilog: job $id's holder $holder and child $child checked gone, job $runner's $runner_holder and $runner_daemon kept"
# The running job ends (its script exits): Slurm ends its tracked holder, its Epilog the daemon
# that escaped proctrack/linuxproc (still in the job's cgroup).
touch "$tmp/run/runner.stop"
expect runner-ends ended "$runner_holder"
if [ "$task_plugin" = task/cgroup ]; then
  expect runner-epilog-kills-daemon ended "$runner_daemon"
else
  kill -KILL "$runner_daemon"
fi
expect node-idle-after-jobs wait_for 20 node_idle
expect check-clean-after-jobs "$gpuclean" check --device-glob "$device"

# An unkillable holder (frozen in a cgroup v1 freezer: SIGKILL stays pending, docs/facts.md): the
# Epilog's kill fails and the node is drained with gpuclean's reason.
if grep -q " /sys/fs/cgroup/freezer " /proc/self/mountinfo; then
  freezer=/sys/fs/cgroup/freezer/gpuclean-slurm-test-$$
  mkdir "$freezer"
  echo 2s >"$tmp/epilog-wait"  # the frozen holder will not go: no need to wait long
  run_leaky_job frozen root "$freezer"
  wait_for 10 drained || fail "the node was not drained for the frozen holder $holder"
  reason=$(sinfo -h -n "$node" -o %E)
  [[ $reason == gpuclean:* ]] || fail "drain reason is not gpuclean's: $reason"
  [[ $reason == *"$holder"* ]] || fail "drain reason does not name the holder $holder: $reason"
  echo "slurm test: frozen holder -> node drained: $reason"
  # The health check keeps a dirty node drained, and resumes it (its reason is gpuclean's)
  # once the holder is gone.
  health 2>/dev/null || fail "healthcheck.sh failed on a dirty node"
  drained || fail "healthcheck.sh resumed a dirty node"
  echo THAWED >"$freezer/freezer.state"
  kill -KILL "$holder" "$child" 2>/dev/null || true
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
# The leftovers here are the Epilog's second pass: holders outside any job's cgroup (started
# from a login, as over ssh), which `kill --job` cannot see.
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
# user_leaky USER NAME [ID…]: setsid holders of USER outside any job, one per ID, each started
# with SLURM_JOB_ID=ID in its environment (one without when no ID); then a job of USER runs and
# ends: the Epilog has run when squeue no longer lists it. Sets leaks.
user_leaky() {
  local user=$1 name=$2 id i=0 forged pidfile environment
  shift 2
  [ $# -gt 0 ] || set -- ""
  leaks=()
  for forged in "$@"; do
    i=$((i + 1))
    pidfile=$tmp/run/$name-$i.pid
    environment=()
    [ -z "$forged" ] || environment=("SLURM_JOB_ID=$forged")
    runuser -u "$user" -- env "${environment[@]}" setsid sh -c \
      "echo \$\$ > $pidfile; exec 3<$device; exec sleep 300" </dev/null >/dev/null 2>&1 &
    wait_for 10 test -s "$pidfile" || fail "$name: holder $i did not start"
    leaks+=("$(cat "$pidfile")")
    holders+=("${leaks[-1]}")
    wait_for 10 holds "${leaks[-1]}" || fail "$name: ${leaks[-1]} does not hold the device"
  done
  id=$(runuser -u "$user" -- sbatch --parsable -o /dev/null --chdir="$tmp" -J "$name" --wrap "sleep 0.2")
  wait_for 60 job_done "$id" || fail "job $id did not finish"
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
# kills the second pass's targets (this test's leftovers, named PID@START after --no-tree) first.
cat >"$tmp/gpuclean-racy" <<SHIM
#!/bin/bash
if [ "\$1" = kill ] && [ "\$3" = --no-tree ]; then
  for a in "\$@"; do [[ \$a =~ ^[0-9]+@[0-9]+\$ ]] && kill -KILL "\${a%@*}"; done
  for a in "\$@"; do [[ \$a =~ ^[0-9]+@[0-9]+\$ ]] && while [ -e /proc/\${a%@*} ]; do sleep 0.05; done; done
fi
exec $gpuclean "\$@"
SHIM
chmod 755 "$tmp/gpuclean-racy"
echo "export GPUCLEAN=$tmp/gpuclean-racy" >"$tmp/epilog-env"
user_leaky "$user_a" sec-gone
expect epilog-already-gone gone "${leaks[0]}"
expect epilog-already-gone not_drained
undrain

# Issue 33, finding 1: the leftover ends between the Epilog's scan and its kill, and another
# user's process gets its PID (forced through ns_last_pid). A squeue shim does both at the one
# moment between the two (the Epilog asks squeue there), then answers as squeue. The newcomer
# must live: the Epilog names the leftover as PID@START. With the scripts of 6e3859f (bare
# PIDs) this failed (2026-12-03): "FAIL [epilog-spares-a-reused-pid]", the Epilog's plan
# listing "4283  daemon  S  orphan  -  sleep 300" and killing it.
uid_b=$(id -u "$user_b") gid_b=$(id -g "$user_b")
cat >"$tmp/squeue-reuse" <<SHIM
#!/bin/bash
leftover=\$(cat $tmp/run/sec-reuse-1.pid)
kill -KILL "\$leftover"
while [ -e /proc/\$leftover ]; do sleep 0.01; done
# Another process may take the PID first: a few tries (each a fork right after the write). In
# a session of its own (setsid, not a group leader here: no fork), as the other user's process
# would be: slurmd ends the Epilog's process group when the Epilog ends.
for try in 1 2 3 4 5 6 7 8 9 10; do
  echo \$((leftover - 1)) >/proc/sys/kernel/ns_last_pid
  setsid setpriv --reuid $uid_b --regid $gid_b --clear-groups -- sleep 300 </dev/null >/dev/null 2>&1 &
  [ "\$!" = "\$leftover" ] && break
  kill -KILL "\$!"
done
echo "\$!" >$tmp/run/reused.pid
exec squeue "\$@"
SHIM
chmod 755 "$tmp/squeue-reuse"
reused_pid() { [ -s "$tmp/run/reused.pid" ] && [ "$(cat "$tmp/run/reused.pid")" = "${leaks[0]}" ]; }
user_of() { [ "$(stat -c %U "/proc/$1")" = "$2" ]; }
if [ -w /proc/sys/kernel/ns_last_pid ]; then
  echo "export GPUCLEAN_SQUEUE=$tmp/squeue-reuse" >"$tmp/epilog-env"
  user_leaky "$user_a" sec-reuse
  wait_for 10 test -s "$tmp/run/reused.pid" || fail "the squeue shim did not run"
  holders+=("$(cat "$tmp/run/reused.pid")")
  if reused_pid; then
    expect epilog-spares-a-reused-pid alive "${leaks[0]}"
    expect epilog-spares-a-reused-pid user_of "${leaks[0]}" "$user_b"
    expect epilog-spares-a-reused-pid not_drained
    kill -KILL "${leaks[0]}"
  else
    echo "slurm test: the PID ${leaks[0]} was not reused in ten tries: epilog-spares-a-reused-pid not checked"
    # Its PID may be anyone's by the end: not signalled at exit.
    kept=()
    for pid in "${holders[@]}"; do [ "$pid" = "${leaks[0]}" ] || kept+=("$pid"); done
    holders=("${kept[@]}")
  fi
  undrain
  rm -f "$tmp/epilog-env"
  echo "slurm test: Epilog: a leftover's PID reused by $user_b between scan and kill: the newcomer lives"
else
  echo "slurm test: /proc/sys/kernel/ns_last_pid not writable: the PID-reuse case is skipped"
fi

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
((${#failed_checks[@]} == 0)) || fail "$((checks - ${#failed_checks[@]})) of $checks checks passed; failed: ${failed_checks[*]}"
echo "slurm test: PASS ($checks checks) in $((SECONDS - started)) s"
