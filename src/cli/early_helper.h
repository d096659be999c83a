// NVML's helper process, forked first thing (issue 47: status at the driver's floor). NVML's
// init is the longest part of a one-shot look (nvmlInit and the first handle, ~18 ms of the
// H200's and H100's ~26, docs/facts.md), and it runs in a helper process; forked after the
// command line was parsed and the device files selected, it started ~4 ms late on the GPU
// hosts (bench/status_parts.sh: `gpuclean --version` alone took 5.3 ms there). Forked before,
// its init runs beside all of that.
#pragma once

#include <memory>

#include "collect/gpu_sampler.h"

namespace gpuclean::cli {

// The helper, forked now, when argv certainly asks NVML through one (status, check, explain or
// kill, or no command at all: status), and nullptr otherwise: a look at argv that errs on the
// side of not starting it (--no-nvml, help, --version, a hidden test flag, or any doubt about
// which command it is). The command that asks NVML adopts it (CollectOptions::early_helper);
// one nobody adopts is SIGKILLed when the last reference goes. Call before any thread exists.
std::shared_ptr<collect::GpuSampler> start_early_helper(int argc, char** argv);

}  // namespace gpuclean::cli
