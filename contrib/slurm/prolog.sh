#!/bin/bash
# Slurm Prolog: refuse to start a job on a dirty GPU. Runs `gpuclean check` on the GPUs given to
# the job (SLURM_JOB_GPUS, else CUDA_VISIBLE_DEVICES), not counting the processes slurmstepd
# tracks for jobs running here (`scontrol listpids`): another user's job on its own GPUs is not
# this job's problem, and must not let anyone drain the node. When it finds a problem the node
# is drained with gpuclean's one-line reason and the script exits 1, so Slurm requeues the job
# instead of starting it next to somebody's leftover 76 GiB.
# A job without GPUs: nothing to check. With --no-nvml in GPUCLEAN_CHECK_ARGS the job's GPUs
# cannot be told apart: every device file is checked. Otherwise without NVML, `check --gpus`
# fails and the node drains (a GPU node whose driver is gone is not fit for a GPU job).
# Exit 0 when clean (or when not run by Slurm: nothing is done then); exit 1 also when a
# command it needs is missing. See docs/fleet.md.
set -u
gpuclean_script=gpuclean-prolog
# shellcheck source-path=SCRIPTDIR source=common.sh
. "${0%/*}/common.sh" || { echo "gpuclean-prolog: cannot read ${0%/*}/common.sh" >&2; exit 1; }

if [ -z "${SLURM_JOB_ID:-}" ]; then
  log "SLURM_JOB_ID is not set: not running as a Slurm Prolog; nothing done"
  exit 0
fi
fail() { drain_node "$1"; exit 1; }
[ -n "$SCONTROL" ] || { log "scontrol not found: cannot drain; failing so that Slurm does"; exit 1; }
[ -n "$GPUCLEAN" ] || fail "gpuclean: prolog of job $SLURM_JOB_ID: gpuclean not found; GPUs not checked"

gpus=${SLURM_JOB_GPUS:-${CUDA_VISIBLE_DEVICES:-}}
gpu_args=()
if [ -z "$gpus" ]; then
  log "job $SLURM_JOB_ID has no GPUs: nothing to check"
  exit 0
elif [[ " ${check_args[*]} " == *" --no-nvml "* ]]; then
  # Which GPU a process uses is known only from NVML's process lists: without NVML every
  # device file counts (a holder of another GPU's file drains the node too; running jobs'
  # processes are still spared below).
  log "job $SLURM_JOB_ID's GPUs $gpus: NVML off (--no-nvml): checking every device file"
elif [[ $gpus =~ ^[0-9]+([,-][0-9]+)*$ ]]; then
  # Slurm's GPU IDs are taken as NVML indices (equal where gres.conf lists /dev/nvidia0..N-1 in
  # PCI order, as AutoDetect=nvml does).
  gpu_args=(--gpus "$gpus")
else
  log "job $SLURM_JOB_ID's GPUs '$gpus' are not indices: checking all GPUs"
fi

# Processes of running jobs are theirs, not problems. Unknown: check without that exemption.
ignore_args=()
# shellcheck disable=SC2086 # job IDs, checked numeric by running_jobs
if running=$(running_jobs "") && pids=$(job_pids $running); then
  for pid in $pids; do ignore_args+=(--ignore-pid "$pid"); done
else
  log "cannot tell which processes are running jobs': counting them all"
fi

output=$("$GPUCLEAN" check "${device_args[@]}" "${gpu_args[@]}" "${ignore_args[@]}" "${check_args[@]}" 2>&1)
status=$?
case $status in
  0) exit 0 ;;
  1) reason=$(head -n 1 <<<"$output") ;;
  *) reason="gpuclean: check failed (exit $status): $(head -n 1 <<<"$output")" ;;
esac
printf '%s\n' "$output" >&2
fail "$reason"
