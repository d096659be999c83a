// gpuclean's exit codes (docs/reference.md "Exit codes"): what every command returns, and what
// `top` reads from the `gpuclean kill` it runs as a child.
#pragma once

namespace gpuclean {

enum ExitCode : int {
  kExitClean = 0,    // clean / done
  kExitDirty = 1,    // dirty, targets remain, timed out
  kExitUsage = 2,    // usage error
  kExitRuntime = 3,  // runtime failure (e.g. NVML present but failing)
};

}  // namespace gpuclean
