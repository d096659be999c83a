// gpuclean's exit codes (docs/reference.md "Exit codes"): what every command returns, and what
// `top` reads from the `gpuclean kill` it runs as a child.
#pragma once

#include "core/verdict.h"

namespace gpuclean {

enum ExitCode : int {
  kExitClean = 0,    // clean / done
  kExitDirty = 1,    // dirty, targets remain, timed out
  kExitUsage = 2,    // usage error
  kExitRuntime = 3,  // runtime failure (e.g. NVML present but failing)
};

// What a verdict exits with, for every command that ends on one (status, check, explain's
// memory, snapshot, diff, check --against, run --require-clean): clean 0, dirty 1, unknown 3.
constexpr ExitCode exit_code_for(Verdict verdict) {
  switch (verdict) {
    case Verdict::kClean:
      return kExitClean;
    case Verdict::kDirty:
      return kExitDirty;
    case Verdict::kUnknown:
      return kExitRuntime;
  }
  return kExitRuntime;
}

}  // namespace gpuclean
