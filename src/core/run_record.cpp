#include "core/run_record.h"

#include <array>
#include <utility>

namespace gpuclean {
namespace {

// One table per enum: to_string and the parser cannot disagree.
constexpr std::array<std::pair<GpuCheck, std::string_view>, 4> kGpuChecks = {{
    {GpuCheck::kNone, "none"},
    {GpuCheck::kBack, "back"},
    {GpuCheck::kNotBack, "not-back"},
    {GpuCheck::kNotChecked, "not-checked"},
}};
constexpr std::array<std::pair<WorkloadEnd, std::string_view>, 5> kWorkloadEnds = {{
    {WorkloadEnd::kExited, "exited"},
    {WorkloadEnd::kSignaled, "signaled"},
    {WorkloadEnd::kTimeout, "timeout"},
    {WorkloadEnd::kInterrupted, "interrupted"},
    {WorkloadEnd::kSupervisionFailed, "supervision-failed"},
}};
constexpr std::array<std::pair<LeftoverOutcome, std::string_view>, 3> kLeftoverOutcomes = {{
    {LeftoverOutcome::kGone, "gone"},
    {LeftoverOutcome::kRemaining, "remaining"},
    {LeftoverOutcome::kSkipped, "skipped"},
}};

constexpr std::array<std::pair<RunEventKind, std::string_view>, 12> kRunEventKinds = {{
    {RunEventKind::kStart, "start"},
    {RunEventKind::kSignal, "signal"},
    {RunEventKind::kInterrupt, "interrupt"},
    {RunEventKind::kTimeout, "timeout"},
    {RunEventKind::kExit, "exit"},
    {RunEventKind::kError, "error"},
    {RunEventKind::kTeardown, "teardown"},
    {RunEventKind::kTeardownDone, "teardown-done"},
    {RunEventKind::kProblem, "problem"},
    {RunEventKind::kGuard, "guard"},
    {RunEventKind::kVerified, "verified"},
    {RunEventKind::kNote, "note"},
}};

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <typename E, std::size_t N>
std::optional<E> value_of(const std::array<std::pair<E, std::string_view>, N>& table,
                          std::string_view text) {
  for (const auto& [e, name] : table) {
    if (name == text) return e;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(RunEventKind kind) {
  return name_of(kRunEventKinds, kind);
}
std::optional<RunEventKind> run_event_kind_from_string(std::string_view text) {
  return value_of(kRunEventKinds, text);
}
std::string_view to_string(GpuCheck check) {
  return name_of(kGpuChecks, check);
}
std::optional<GpuCheck> gpu_check_from_string(std::string_view text) {
  return value_of(kGpuChecks, text);
}
std::string_view to_string(WorkloadEnd end) {
  return name_of(kWorkloadEnds, end);
}
std::optional<WorkloadEnd> workload_end_from_string(std::string_view text) {
  return value_of(kWorkloadEnds, text);
}
std::string_view to_string(LeftoverOutcome outcome) {
  return name_of(kLeftoverOutcomes, outcome);
}
std::optional<LeftoverOutcome> leftover_outcome_from_string(std::string_view text) {
  return value_of(kLeftoverOutcomes, text);
}

}  // namespace gpuclean
