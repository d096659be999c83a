#!/bin/bash
# Slurm Epilog: kill what the finished job left holding the GPUs, verify, and drain the node
# with gpuclean's one-line reason when that fails.
#
# Targets: processes of the job's user (SLURM_JOB_USER) that hold the device files and belong
# to no job still running on this node. A process belongs to a job when its environment carries
# SLURM_JOB_ID=N or its cgroup path names job_N (proctrack/cgroup); Slurm starts every task
# with SLURM_JOB_ID set and a setsid/double-forked escapee keeps it. Processes of the user's
# other running jobs on the node are never targets; neither are monitors (nvidia-smi, DCGM).
#
# Exit 0 always once Slurm variables are present: a non-zero Epilog makes Slurm drain the node
# with the bare reason "Epilog error"; this script drains it itself with the real reason.
# Without SLURM_JOB_ID/SLURM_JOB_USER it does nothing and says so. See docs/fleet.md.
set -u
gpuclean_script=gpuclean-epilog
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

if [ -z "${SLURM_JOB_ID:-}" ] || [ -z "${SLURM_JOB_USER:-}" ]; then
  log "SLURM_JOB_ID or SLURM_JOB_USER is not set: not running as a Slurm Epilog; nothing done"
  exit 0
fi
if ! command -v jq >/dev/null; then
  drain_node "gpuclean: epilog needs jq to read gpuclean's JSON; leftovers not checked"
  exit 0
fi

# Jobs other than this one still running here: their processes are not leftovers.
running=" $(squeue -h -w "$(node_name)" -t RUNNING -o %A 2>/dev/null | grep -vx "$SLURM_JOB_ID" | tr '\n' ' ') "

job_of() {  # the Slurm job a process belongs to, or nothing
  local pid=$1 id
  # Reading environ waits on the process's mmap lock: a holder gpuclean calls stuck ("memory
  # map locked") would hang the epilog. SIGKILL: that wait ignores every other signal.
  id=$(timeout -s KILL 2 tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | sed -n 's/^SLURM_JOB_ID=//p' | head -n 1)
  if [ -z "$id" ]; then
    id=$(sed -n 's/.*\/job_\([0-9]*\).*/\1/p' "/proc/$pid/cgroup" 2>/dev/null | head -n 1)
  fi
  echo "$id"
}

report=$("$GPUCLEAN" status --json "${device_args[@]}" 2>/dev/null)
status=$?
if [ "$status" -ge 2 ] || [ -z "$report" ]; then
  drain_node "gpuclean: epilog of job $SLURM_JOB_ID could not scan the GPUs (exit $status)"
  exit 0
fi
candidates=$(jq -r --arg user "$SLURM_JOB_USER" \
  '.holders[] | select(.visible != false and .user == $user and .class != "monitor") | .pid' \
  <<<"$report")

targets=()
for pid in $candidates; do
  job=$(job_of "$pid")
  if [ -n "$job" ] && [[ $running == *" $job "* ]]; then
    log "pid $pid belongs to running job $job: left alone"
    continue
  fi
  targets+=("$pid")
done
if [ ${#targets[@]} -eq 0 ]; then
  exit 0
fi

log "job $SLURM_JOB_ID left ${#targets[@]} GPU holder(s): ${targets[*]}"
"$GPUCLEAN" kill --yes --no-tree "${device_args[@]}" --grace "${GPUCLEAN_GRACE:-5s}" \
  --wait "${GPUCLEAN_WAIT:-30s}" "${targets[@]}" >&2
status=$?
if [ "$status" -ne 0 ]; then
  drain_node "$(first_problem "gpuclean: job $SLURM_JOB_ID leftovers survived kill (exit $status)")"
fi
exit 0
