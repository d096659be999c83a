# Shared by the gpuclean Slurm scripts (sourced, not run). They run as root, from slurmd, next
# to unprivileged users' processes: nothing a user controls (a process's environment, a cgroup
# the user may create, an inherited PATH) decides anything here. Environment knobs (set by the
# admin in a wrapper or in slurmd's environment, never by a job):
#   GPUCLEAN              the gpuclean binary: a name looked up on the PATH below, or an absolute path
#   GPUCLEAN_DEVICE_GLOB  space-separated device globs (default: gpuclean's NVIDIA defaults)
#   GPUCLEAN_CHECK_ARGS   extra flags for `gpuclean check` (e.g. "--max-used 2048")
#   GPUCLEAN_SCONTROL     scontrol: name or absolute path (default scontrol)
#   GPUCLEAN_SQUEUE       squeue: name or absolute path (default squeue)
# shellcheck shell=bash

# Slurm gives Prolog/Epilog/HealthCheck scripts no PATH (or one it did not choose): set our own.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
gpuclean_script=${gpuclean_script:-gpuclean-slurm}

log() { echo "$gpuclean_script: $*" >&2; }

# resolve NAME|/ABS/PATH: the absolute path of that executable, or fails (and says why).
resolve() {
  local want=$1 path=
  case $want in
    /*) path=$want ;;
    */* | '') log "'$want': give a command name or an absolute path" && return 1 ;;
    *) path=$(type -P -- "$want") || path= ;;
  esac
  if [ -z "$path" ] || [ ! -f "$path" ] || [ ! -x "$path" ]; then
    log "$want: not found (PATH=$PATH)"
    return 1
  fi
  echo "$path"
}
# Resolved once; empty when missing (each script decides: none of them goes on without).
GPUCLEAN=$(resolve "${GPUCLEAN:-gpuclean}") || GPUCLEAN=
SCONTROL=$(resolve "${GPUCLEAN_SCONTROL:-scontrol}") || SCONTROL=
SQUEUE=$(resolve "${GPUCLEAN_SQUEUE:-squeue}") || SQUEUE=

# --device-glob flags from GPUCLEAN_DEVICE_GLOB, without the shell expanding the patterns.
device_args=()
set -f
for glob in ${GPUCLEAN_DEVICE_GLOB:-}; do device_args+=(--device-glob "$glob"); done
check_args=()
for arg in ${GPUCLEAN_CHECK_ARGS:-}; do check_args+=("$arg"); done
set +f

node_name() { echo "${SLURMD_NODENAME:-$(hostname -s)}"; }

# Drains this node with REASON (gpuclean's one-line problem). Slurm keeps the reason visible in
# `sinfo -R`, so the admin sees what holds the GPU without logging in. Fails when it could not.
drain_node() {
  local reason=$1 node
  node=$(node_name)
  reason=${reason:0:200}
  log "draining $node: $reason"
  if [ -z "$SCONTROL" ]; then
    log "no scontrol: the node is NOT drained"
    return 1
  fi
  if ! "$SCONTROL" update nodename="$node" state=drain reason="$reason"; then
    log "scontrol update failed: the node is NOT drained"
    return 1
  fi
}

# The first line `gpuclean check` prints (one problem), or $1 when it prints none.
first_problem() {
  local line
  line=$("$GPUCLEAN" check "${device_args[@]}" "${check_args[@]}" "${@:2}" 2>/dev/null | head -n 1)
  echo "${line:-$1}"
}

# running_jobs [USER]: the jobs running (or suspended) on this node, of USER when given, one ID
# a line. Fails (and says why) when squeue cannot tell: then nobody knows which processes are
# a job's, and the caller must not kill.
running_jobs() {
  local out user_args=()
  [ -n "${1:-}" ] && user_args=(-u "$1")
  if [ -z "$SQUEUE" ]; then
    log "no squeue"
    return 1
  fi
  local rc=0
  out=$("$SQUEUE" -h -w "$(node_name)" -t RUNNING,SUSPENDED "${user_args[@]}" -o %A 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    log "squeue failed (exit $rc): $(head -n 1 <<<"$out")"
    return 1
  fi
  if [ -n "$out" ] && grep -qvx '[0-9][0-9]*' <<<"$out"; then
    log "squeue: unexpected output: $(head -n 1 <<<"$out")"
    return 1
  fi
  [ -z "$out" ] || printf '%s\n' "$out"
}

# job_pids JOBID...: the PIDs slurmstepd tracks on this node for these jobs, one a line:
# `scontrol listpids`, i.e. the proctrack plugin's own answer (the job's cgroup with
# proctrack/cgroup, its process tree with linuxproc). Never a process's environment (the user
# writes it) nor a cgroup name alone (a user may create .../job_N under a delegated subtree).
# Fails when scontrol cannot tell.
job_pids() {
  local out rc=0
  [ $# -gt 0 ] || return 0
  if [ -z "$SCONTROL" ]; then
    log "no scontrol"
    return 1
  fi
  out=$("$SCONTROL" listpids 2>&1) || rc=$?
  if [ "$rc" -ne 0 ]; then
    # No step at all on the node: exit 1 with this line (and the header); anything else is an error.
    if [ "$rc" -eq 1 ] && grep -qx 'No job steps exist on this node\.' <<<"$out"; then
      return 0
    fi
    log "scontrol listpids failed (exit $rc): $(head -n 1 <<<"$out")"
    return 1
  fi
  awk -v jobs=" $* " '$1 ~ /^[0-9]+$/ && index(jobs, " " $2 " ") { print $1 }' <<<"$out"
}
