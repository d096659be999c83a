#!/bin/bash
# Slurm Epilog: end what the finished job left behind, verify, and drain the node with
# gpuclean's one-line reason when that fails. Two passes:
#
# 1. The job's own cgroup: `gpuclean kill --job $SLURM_JOB_ID` ends every process the kernel
#    still places in the job's cgroup (Slurm's task/cgroup or proctrack/cgroup groups), holder
#    or not: a setsid daemon that escaped proctrack/linuxproc and its children. Exact: the path
#    is the kernel's and a job's user cannot move a process into another job's group. Nothing
#    there (no cgroup plugin, or the job ended cleanly) is the normal case.
# 2. What escaped any cgroup tracking: processes of the job's user (SLURM_JOB_USER) that hold
#    the device files (monitors excluded), except those slurmstepd tracks (`scontrol listpids`)
#    for another job of the same user still running on this node. Each is killed as PID@START,
#    the process the scan saw, never whoever has its PID by the time of the kill. Nothing the user controls
#    counts as evidence: a process's environment (SLURM_JOB_ID) is the user's to write, so it
#    is never read.
#
# Fails closed: when the first pass fails (a process survives, gpuclean cannot run) or the
# second cannot tell which jobs run here (squeue or listpids failing or missing), it drains the
# node with a reason saying so; the second pass then kills nothing.
#
# Exit 0 once Slurm variables are present and the node is either clean or drained: a non-zero
# Epilog makes Slurm drain the node with the bare reason "Epilog error"; this script drains it
# itself with the real reason, and exits 1 only when it could not (no scontrol, or it failed),
# so that Slurm drains it instead. Without SLURM_JOB_ID/SLURM_JOB_USER it does nothing and says
# so. See docs/fleet.md.
set -u
gpuclean_script=gpuclean-epilog
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${0%/*}/common.sh" || { echo "gpuclean-epilog: cannot read ${0%/*}/common.sh" >&2; exit 1; }

if [ -z "${SLURM_JOB_ID:-}" ] || [ -z "${SLURM_JOB_USER:-}" ]; then
  log "SLURM_JOB_ID or SLURM_JOB_USER is not set: not running as a Slurm Epilog; nothing done"
  exit 0
fi
drain() { drain_node "$1" || exit 1; exit 0; }  # drains and ends the script
[ -n "$SCONTROL" ] || { log "scontrol not found: cannot drain; failing so that Slurm does"; exit 1; }
if [ -z "$GPUCLEAN" ] || [ -z "$SQUEUE" ]; then
  drain "gpuclean: epilog of job $SLURM_JOB_ID: gpuclean or squeue not found; leftovers not checked"
fi
jq=$(resolve jq) || drain "gpuclean: epilog needs jq to read gpuclean's JSON; leftovers not checked"

# user_holders: SLURM_JOB_USER's processes holding the device files, one PID@START a line (START:
# the start time the scan read, so that `gpuclean kill PID@START` touches that process only: a
# PID freed and reused by another user's process between this scan and the kill names the
# newcomer, which the kill then leaves alone) (monitors and
# the node's services excluded: an MPS server runs as the user it serves, outside every job,
# and killing it would take the user's other running jobs' GPU work with it; gpuclean's
# mps-leftover problem says how to free what it holds). Fails when gpuclean cannot scan.
user_holders() {
  local report status
  report=$("$GPUCLEAN" status --json "${device_args[@]}" 2>/dev/null)
  status=$?
  if [ "$status" -ge 2 ] || [ -z "$report" ]; then
    log "gpuclean status failed (exit $status)"
    return 1
  fi
  # shellcheck disable=SC2016 # $user is jq's
  "$jq" -r --arg user "$SLURM_JOB_USER" \
    '.holders[] | select(.visible != false and .user == $user and .class != "monitor"
      and (.role == null or .role == "mps-client")) | "\(.pid)@\(.start_ticks)"' \
    <<<"$report" || return 1
}

# Pass 1: every process of the job's cgroup.
[[ $SLURM_JOB_ID =~ ^[0-9]+$ ]] || drain "gpuclean: epilog: SLURM_JOB_ID '$SLURM_JOB_ID' is not a job ID; leftovers not checked"
job_output=$("$GPUCLEAN" kill --yes --job "$SLURM_JOB_ID" "${device_args[@]}" \
  --grace "${GPUCLEAN_GRACE:-5s}" --wait "${GPUCLEAN_WAIT:-30s}" 2>&1)
status=$?
[ -z "$job_output" ] || printf '%s\n' "$job_output" >&2
case $status in
  0) ;;
  1) drain "$(first_problem "gpuclean: job $SLURM_JOB_ID processes survived kill --job" --job "$SLURM_JOB_ID")" ;;
  *)
    line=$(grep -m 1 '^gpuclean' <<<"$job_output" || head -n 1 <<<"$job_output")
    drain "gpuclean: epilog of job $SLURM_JOB_ID: kill --job failed (exit $status): $line"
    ;;
esac

# Pass 2: the user's holders outside any job's cgroup.
if ! candidates=$(user_holders); then
  drain "gpuclean: epilog of job $SLURM_JOB_ID could not scan the GPUs"
fi
[ -n "$candidates" ] || exit 0

# The user's other jobs still running here, and the processes slurmstepd tracks for them.
if ! running=$(running_jobs "$SLURM_JOB_USER"); then
  drain "gpuclean: epilog of job $SLURM_JOB_ID cannot tell which jobs run here (squeue failed); leftovers not killed"
fi
running=$(grep -vxF "$SLURM_JOB_ID" <<<"$running")
# shellcheck disable=SC2086 # job IDs, checked numeric by running_jobs
if ! member_list=$(job_pids $running); then
  drain "gpuclean: epilog of job $SLURM_JOB_ID cannot tell which processes are jobs' (scontrol listpids failed); leftovers not killed"
fi
members=" $(tr '\n' ' ' <<<"$member_list") "

targets=()
for target in $candidates; do
  [[ $target =~ ^[0-9]+@[0-9]+$ ]] || drain "gpuclean: epilog of job $SLURM_JOB_ID: gpuclean status gave no start time for a holder; leftovers not killed"
  if [[ $members == *" ${target%@*} "* ]]; then
    log "pid ${target%@*} belongs to another running job of $SLURM_JOB_USER: left alone"
    continue
  fi
  targets+=("$target")
done
[ ${#targets[@]} -gt 0 ] || exit 0

log "job $SLURM_JOB_ID left ${#targets[@]} GPU holder(s) outside its cgroup: ${targets[*]}"
"$GPUCLEAN" kill --yes --no-tree "${device_args[@]}" --grace "${GPUCLEAN_GRACE:-5s}" \
  --wait "${GPUCLEAN_WAIT:-30s}" "${targets[@]}" >&2
status=$?
[ "$status" -eq 0 ] && exit 0
# Not necessarily a failure: exit 1 also says that memory a gone target held is still counted
# (being released). What counts is whether any target, the same process (PID@START), still
# holds the files.
if ! now=$(user_holders); then
  drain "gpuclean: epilog of job $SLURM_JOB_ID could not re-scan the GPUs after kill (exit $status)"
fi
survivors=()
for target in "${targets[@]}"; do
  if grep -qxF "$target" <<<"$now"; then survivors+=("${target%@*}"); fi
done
if [ ${#survivors[@]} -eq 0 ]; then
  log "gpuclean kill exited $status, but none of the targets holds the GPUs any more: done"
  exit 0
fi
drain "$(first_problem "gpuclean: job $SLURM_JOB_ID leftovers ${survivors[*]} survived kill (exit $status)")"
