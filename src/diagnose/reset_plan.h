// `gpuclean reset --plan` (issue 53): what stands between each selected GPU and
// `nvidia-smi --gpu-reset`, from a diagnosis of its holders and the node's facts. Pure.
#pragma once

#include <set>
#include <string>

#include "core/model.h"
#include "core/reset_model.h"

namespace gpuclean::diagnose {

struct ResetOptions {
  std::set<unsigned> gpus =
      {};              // the GPUs asked for (NVML indexes); an NVSwitch system adds the rest
  bool force = false;  // --force: another user's job at work is ended too, not refused
};

// Per GPU, in the order they are cleared: the processes holding it (leftovers with their dead
// jobs, killed; jobs at work, refused without --force; holders out of reach and stuck ones,
// refused), the node's services holding it (stopped through their systemd unit and started
// again after; one without a unit is refused), persistence mode, MIG, a display on
// nvidia-drm, the NVLink domain, a vfio binding, root; then the command and the checks.
ResetPlan plan_reset(const Diagnosis& diagnosis, const ResetFacts& facts,
                     const ResetOptions& options);

}  // namespace gpuclean::diagnose
