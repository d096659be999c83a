// `gpuclean reset` (issue 53): what stands between each selected GPU and a reset, as a plan.
#pragma once

#include "cli/common.h"
#include "procfs/host_facts.h"

namespace gpuclean::cli {

struct ResetCommandOptions {
  CommonOptions common;     // --gpus: the GPUs to reset (default all)
  bool plan = false;        // --plan: the plan (the default, and for now the only mode)
  bool force = false;       // --force: a job at work is ended with the rest, not refused
  procfs::HostRoots roots;  // test binary: --sys-root DIR
};

// Prints the plan: 0 nothing refuses the reset; 1 something does (a job at work without
// --force, a holder out of reach, MIG, vfio, not root); 2 usage; 3 NVML does not answer or
// lists no GPU (nothing to plan for) or /proc unreadable.
int run_reset(const ResetCommandOptions& options, const Io& io);

}  // namespace gpuclean::cli
