#include "diagnose/kill_check.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "core/units.h"
#include "diagnose/classify.h"

namespace gpuclean::diagnose {

TargetMemory target_memory(const GpuView& view, const std::set<Pid>& listed) {
  TargetMemory memory;
  // GPU → PID → bytes: NVML may list a PID twice on a GPU (compute and graphics); its largest
  // entry is its figure.
  std::map<unsigned, std::map<Pid, Bytes>> by_pid;
  for (const Gpu& gpu : view.gpus) {
    for (const GpuProcess& p : gpu.processes) {
      if (listed.count(p.pid) == 0) continue;
      const Bytes bytes = p.used_memory.value_or(0);
      memory.lines.push_back(
          fmt::format("GPU {}: {} still listed for pid {}", gpu.index, format_bytes(bytes), p.pid));
      Bytes& figure = by_pid[gpu.index][p.pid];
      figure = std::max(figure, bytes);
    }
  }
  for (const auto& [gpu, pids] : by_pid) {
    for (const auto& [pid, bytes] : pids) memory.bytes_by_gpu[gpu] += bytes;
  }
  return memory;
}

void add_other(const Problem& problem, KillLeft& left) {
  (problem.severity == Severity::kWarning ? left.warnings : left.still_held)
      .push_back(problem.message);
  const bool leftover =
      problem.kind == ProblemKind::kOrphan || problem.kind == ProblemKind::kHeir ||
      problem.kind == ProblemKind::kZombieLeader || problem.kind == ProblemKind::kHeirAmbiguous;
  if (leftover && problem.severity == Severity::kError) left.leftovers.push_back(problem.message);
}

void add_others(const Diagnosis& after, const std::set<Pid>& ours, const TargetMemory& memory,
                Bytes max_unattributed, KillLeft& left) {
  for (const Problem& p : after.problems) {
    if (p.pid && ours.count(*p.pid) > 0) continue;
    const auto listed = p.gpu ? memory.bytes_by_gpu.find(*p.gpu) : memory.bytes_by_gpu.end();
    if (p.kind != ProblemKind::kUnattributed || listed == memory.bytes_by_gpu.end()) {
      add_other(p, left);
      continue;
    }
    const auto report = std::find_if(after.gpus.begin(), after.gpus.end(),
                                     [&](const GpuReport& r) { return r.gpu.index == *p.gpu; });
    if (report == after.gpus.end()) continue;
    const Bytes beyond =
        report->unattributed > listed->second ? report->unattributed - listed->second : 0;
    if (beyond <= max_unattributed) continue;
    left.still_held.push_back(
        fmt::format("GPU {}: {} used beyond the targets' that no visible process accounts for",
                    *p.gpu, format_bytes(beyond)));
  }
}

MemoryCheck memory_check(NvmlState before, bool answered_after, NvmlState after, bool drm_gpus) {
  if (before == NvmlState::kAbsent || before == NvmlState::kDisabled) {
    // An AMD or Intel GPU's memory is read from the kernel, NVML or not.
    if (!drm_gpus) return MemoryCheck::kNotChecked;
    return answered_after ? MemoryCheck::kVerified : MemoryCheck::kFailed;
  }
  if (before == NvmlState::kFailed || !answered_after || after == NvmlState::kFailed) {
    return MemoryCheck::kFailed;
  }
  return MemoryCheck::kVerified;
}

std::vector<GoneButCounted> gone_but_counted(const std::vector<Pid>& gone,
                                             const Diagnosis& diagnosis) {
  std::map<Pid, GoneButCounted> counted;
  auto named = [&gone](Pid pid) { return std::find(gone.begin(), gone.end(), pid) != gone.end(); };
  for (const DeadOwner& owner : diagnosis.dead_owners) {
    if (!named(owner.pid)) continue;
    GoneButCounted& entry = counted[owner.pid];
    entry.pid = owner.pid;
    for (const auto& [gpu, bytes] : owner.gpu_memory) entry.bytes += bytes;
    if (owner.heir) entry.held_by = "held by its heir, pid " + std::to_string(*owner.heir);
  }
  for (const Problem& problem : diagnosis.problems) {
    // A gone MPS client: its memory is the MPS server's to free (mps-leftover).
    if (problem.kind != ProblemKind::kMpsLeftover || !problem.pid || !named(*problem.pid)) continue;
    GoneButCounted& entry = counted[*problem.pid];
    entry.pid = *problem.pid;
    entry.bytes += problem.bytes.value_or(0);
    entry.held_by = "held by the MPS server";
  }
  std::vector<GoneButCounted> out;
  out.reserve(counted.size());
  for (auto& [pid, entry] : counted) out.push_back(std::move(entry));
  return out;
}

std::vector<KillMet> met_processes(const KillPlan& plan, const std::vector<ProcessInfo>& found,
                                   const std::vector<TargetOutcome>& outcomes,
                                   const ProcessTable& table) {
  std::map<std::pair<Pid, std::uint64_t>, std::size_t> index;
  for (std::size_t i = 0; i < found.size() && i < outcomes.size(); ++i) {
    index[{found[i].pid, found[i].start_ticks}] = i;
  }
  std::vector<KillMet> out;
  for (const KillTarget& target : plan.targets) {
    KillMet met{{}, target, {}};
    auto it = index.find({target.process.pid, target.process.start_ticks});
    if (it != index.end()) {
      met.outcome = outcomes[it->second];
      index.erase(it);
    } else {
      // Never a member: it had exited (or was a zombie) before the first signal.
      met.outcome.pid = target.process.pid;
      met.outcome.state = TargetOutcome::State::kGone;
      met.outcome.reason = "already gone";
    }
    if (target.process.state == 'Z' && target.klass == HolderClass::kZombie) {
      const auto parent = table.find(target.process.ppid);
      if (parent != table.end()) met.unreaping_parent = parent->second.comm;
    }
    out.push_back(std::move(met));
  }
  for (const auto& [identity, i] : index) {
    KillMet late{outcomes[i], {}, {}};
    late.target.process = found[i];
    late.target.klass = classify_from_proc(found[i]);
    late.target.why = "forked after the plan";
    out.push_back(std::move(late));
  }
  return out;
}

}  // namespace gpuclean::diagnose
