// The verdict, decided here and nowhere else (docs/reference.md "Verdict"): on status's report
// (status, check, explain, snapshot, metrics, top), on it and a snapshot comparison
// (`check --against`), and on what a kill left. Which exit code a verdict gives is
// core/exit_code.h's exit_code_for. Pure: the callers gather the facts.
#pragma once

#include <cstddef>

#include "core/kill_model.h"
#include "core/snapshot.h"
#include "core/status_report.h"
#include "core/verdict.h"

namespace gpuclean::diagnose {

// kUnknown when NVML failed (the memory answer would be wrong: never clean, nor dirty, since
// what /proc shows is still listed); else kDirty when the diagnosis found an error (warnings
// alone leave it clean); else kUnknown when what the scan could not read decides it
// (unseen_decides: a problem seen is dirty whatever was not); kClean otherwise.
Verdict status_verdict(const StatusReport& report);

// `check --against`: status's verdict, except that clean becomes dirty when a difference from
// the snapshot can change a result.
Verdict against_verdict(const StatusReport& now, const DiffReport& since);

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
