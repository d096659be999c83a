// `gpuclean kill`'s verdict: what the selected GPUs and device files are after the kill, in
// status's words (docs/reference.md "kill"). Pure: the caller gathers the facts.
#pragma once

#include <cstddef>

#include "core/kill_model.h"
#include "core/verdict.h"

namespace gpuclean::diagnose {

// What was left once kill was done.
struct KillAftermath {
  std::size_t targets_left = 0;  // targets with a live thread
  std::size_t memory_left = 0;   // NVML entries still naming a target's memory
  // Holders of the selection that were not targets, and used memory no visible process
  // accounts for: the errors status would report (warnings, a stray context, leave it clean).
  std::size_t others_left = 0;
  MemoryCheck memory = MemoryCheck::kNotChecked;
  // The scan after the kill could not read every process in a way that could hide a holder
  // (the caller applies docs/reference.md's rule for which unread processes count). Decides
  // only when the verdict rests on /proc: with NVML answering, memory is judged from NVML.
  bool unseen = false;
};

// kDirty when anything is left, a target or not (seen is seen, whatever was not); else
// kUnknown when NVML failed, or when the verdict rests on /proc and the scan was incomplete;
// else kClean. The exit code is not this: it describes the targets (cli/kill_command.cpp).
Verdict kill_verdict(const KillAftermath& after);

}  // namespace gpuclean::diagnose
