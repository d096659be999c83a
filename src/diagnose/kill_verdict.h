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
// else kClean. The exit code is not this: it describes the targets (kill_exit_code).
Verdict kill_verdict(const KillAftermath& after);

// kill's exit code (docs/reference.md "kill"): 1 when a target remains (a skipped one that has
// not gone counts in REPORT.remaining), memory it held is still counted, a named PID was never
// there, or (--leftovers) a leftover is still there — skipped as still computing, not permitted
// or ambiguous; 3 when the GPU memory could not be verified (UNVERIFIED); 0 otherwise. Never 2:
// that is for usage errors, said before anything is planned.
int kill_exit_code(const KillReport& report, bool unverified);

}  // namespace gpuclean::diagnose
