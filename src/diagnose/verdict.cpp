#include "diagnose/verdict.h"

#include "core/exit_code.h"

namespace gpuclean::diagnose {

Verdict status_verdict(const StatusReport& report) {
  if (report.nvml_state == NvmlState::kFailed) return Verdict::kUnknown;
  if (!report.diagnosis.clean) return Verdict::kDirty;
  return report.unseen_decides ? Verdict::kUnknown : Verdict::kClean;
}

Verdict against_verdict(const StatusReport& now, const DiffReport& since) {
  const Verdict verdict = status_verdict(now);
  return verdict == Verdict::kClean && result_changing_count(since) > 0 ? Verdict::kDirty : verdict;
}

Verdict kill_verdict(const KillAftermath& after) {
  // A holder seen after the kill is an answer: "dirty" even when other parts went unseen.
  if (after.targets_left > 0 || after.memory_left > 0 || after.others_left > 0) {
    return Verdict::kDirty;
  }
  if (after.memory == MemoryCheck::kFailed) return Verdict::kUnknown;
  // An unread process may hold the files; without NVML nothing else would show its memory.
  if (after.unseen && after.memory == MemoryCheck::kNotChecked) return Verdict::kUnknown;
  return Verdict::kClean;
}

int kill_exit_code(const KillReport& report, bool unverified) {
  const bool leftovers_left = report.leftovers && !report.left.leftovers.empty();
  if (report.remaining > 0 || !report.left.memory.empty() || leftovers_left ||
      report.never_seen > 0) {
    return kExitDirty;
  }
  return unverified ? kExitRuntime : kExitClean;
}

}  // namespace gpuclean::diagnose
