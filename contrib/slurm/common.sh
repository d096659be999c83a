# Shared by the gpuclean Slurm scripts (sourced, not run). Environment knobs:
#   GPUCLEAN              the gpuclean binary (default: gpuclean on PATH)
#   GPUCLEAN_DEVICE_GLOB  space-separated device globs (default: gpuclean's NVIDIA defaults)
#   GPUCLEAN_CHECK_ARGS   extra flags for `gpuclean check` (e.g. "--max-used 2048")
#   GPUCLEAN_SCONTROL     scontrol binary (default: scontrol on PATH)
# shellcheck shell=bash

GPUCLEAN=${GPUCLEAN:-gpuclean}
SCONTROL=${GPUCLEAN_SCONTROL:-scontrol}
gpuclean_script=${gpuclean_script:-gpuclean-slurm}

log() { echo "$gpuclean_script: $*" >&2; }

# --device-glob flags from GPUCLEAN_DEVICE_GLOB, without the shell expanding the patterns.
device_args=()
set -f
for glob in ${GPUCLEAN_DEVICE_GLOB:-}; do device_args+=(--device-glob "$glob"); done
check_args=()
for arg in ${GPUCLEAN_CHECK_ARGS:-}; do check_args+=("$arg"); done
set +f

node_name() { echo "${SLURMD_NODENAME:-$(hostname -s)}"; }

# Drains this node with REASON (gpuclean's one-line problem). Slurm keeps the reason visible in
# `sinfo -R`, so the admin sees what holds the GPU without logging in.
drain_node() {
  local reason=$1 node
  node=$(node_name)
  reason=${reason:0:200}
  log "draining $node: $reason"
  if ! "$SCONTROL" update nodename="$node" state=drain reason="$reason"; then
    log "scontrol update failed: the node is NOT drained"
    return 1
  fi
}

# The first line `gpuclean check` prints (one problem), or $1 when it prints none.
first_problem() {
  local line
  line=$("$GPUCLEAN" check "${device_args[@]}" "${check_args[@]}" 2>/dev/null | head -n 1)
  echo "${line:-$1}"
}
