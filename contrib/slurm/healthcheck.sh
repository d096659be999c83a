#!/bin/bash
# Slurm HealthCheckProgram: drain the node while `gpuclean check` finds a problem, and resume
# it once the GPUs are clean again — but only a drain whose reason gpuclean wrote (it starts
# with "gpuclean:"); an admin's own drain is never lifted. See docs/fleet.md.
# Exit 0 unless scontrol fails; outside Slurm (no scontrol) it does nothing and says so.
set -u
gpuclean_script=gpuclean-healthcheck
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

if ! command -v "$SCONTROL" >/dev/null; then
  log "$SCONTROL not found: not on a Slurm node; nothing done"
  exit 0
fi
node=$(node_name)
if ! info=$("$SCONTROL" show node "$node" 2>&1); then
  log "scontrol show node $node failed: $info; nothing done"
  exit 0
fi

output=$("$GPUCLEAN" check "${device_args[@]}" "${check_args[@]}" 2>&1)
status=$?
if [ "$status" -eq 0 ]; then
  if grep -q 'Reason=gpuclean:' <<<"$info"; then
    log "GPUs clean again: resuming $node"
    "$SCONTROL" update nodename="$node" state=resume || exit 1
  fi
  exit 0
fi
if [ "$status" -eq 1 ]; then
  reason=$(head -n 1 <<<"$output")
else
  reason="gpuclean: check failed (exit $status): $(head -n 1 <<<"$output")"
fi
drain_node "$reason" || exit 1
exit 0
