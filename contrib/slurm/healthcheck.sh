#!/bin/bash
# Slurm HealthCheckProgram: drain the node while `gpuclean check` finds a problem, and resume
# it once the GPUs are clean again — but only a drain whose reason gpuclean wrote (it starts
# with "gpuclean:"); an admin's own drain is never lifted. Processes slurmstepd tracks for a
# running job (`scontrol listpids`) are not problems: a user's job must not drain the node.
# Exit 0 unless scontrol is missing or fails (then Slurm sees the failure). See docs/fleet.md.
set -u
gpuclean_script=gpuclean-healthcheck
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${0%/*}/common.sh" || { echo "gpuclean-healthcheck: cannot read ${0%/*}/common.sh" >&2; exit 1; }

if [ -z "$SCONTROL" ]; then
  log "scontrol not found: nothing done"
  exit 1
fi
node=$(node_name)
if ! info=$("$SCONTROL" show node "$node" 2>&1); then
  log "scontrol show node $node failed: $info; nothing done"
  exit 1
fi
if [ -z "$GPUCLEAN" ]; then
  drain_node "gpuclean: health check: gpuclean not found" || exit 1
  exit 0
fi

# Processes of running jobs are theirs, not problems. Unknown: check without that exemption.
ignore_args=()
note=
# shellcheck disable=SC2086 # job IDs, checked numeric by running_jobs
if running=$(running_jobs "") && pids=$(job_pids $running); then
  for pid in $pids; do ignore_args+=(--ignore-pid "$pid"); done
else
  note=" (running jobs unknown: their processes counted)"
fi

output=$("$GPUCLEAN" check "${device_args[@]}" "${ignore_args[@]}" "${check_args[@]}" 2>&1)
status=$?
if [ "$status" -eq 0 ]; then
  if grep -q 'Reason=gpuclean:' <<<"$info"; then
    log "GPUs clean again: resuming $node"
    "$SCONTROL" update nodename="$node" state=resume || exit 1
  fi
  exit 0
fi
if [ "$status" -eq 1 ]; then
  reason=$(head -n 1 <<<"$output")$note
else
  reason="gpuclean: check failed (exit $status)$note: $(head -n 1 <<<"$output")"
fi
drain_node "$reason" || exit 1
exit 0
