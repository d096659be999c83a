#!/bin/bash
# Slurm Prolog: refuse to start a job on a dirty GPU. Runs `gpuclean check`; when it finds a
# problem the node is drained with gpuclean's one-line reason and the script exits 1, so Slurm
# requeues the job instead of starting it next to somebody's leftover 76 GiB.
# Exit 0 when clean (or when not run by Slurm: nothing is done then). See docs/fleet.md.
set -u
gpuclean_script=gpuclean-prolog
# shellcheck source-path=SCRIPTDIR source=common.sh
. "$(dirname "$0")/common.sh"

if [ -z "${SLURM_JOB_ID:-}" ]; then
  log "SLURM_JOB_ID is not set: not running as a Slurm Prolog; nothing done"
  exit 0
fi

output=$("$GPUCLEAN" check "${device_args[@]}" "${check_args[@]}" 2>&1)
status=$?
case $status in
  0) exit 0 ;;
  1) reason=$(head -n 1 <<<"$output") ;;
  *) reason="gpuclean: check failed (exit $status): $(head -n 1 <<<"$output")" ;;
esac
printf '%s\n' "$output" >&2
drain_node "$reason"
exit 1
