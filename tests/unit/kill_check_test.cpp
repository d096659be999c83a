// What kill's teardown left (diagnose/kill_check.h), rule by rule on plain data: the targets'
// memory NVML still lists, what others still hold, how the memory was checked, named PIDs gone
// but still counted, and the join of the plan with the teardown's outcomes.
#include "diagnose/kill_check.h"

#include <gtest/gtest.h>

#include "core/units.h"

namespace gpuclean::diagnose {
namespace {

Gpu gpu(unsigned index, std::vector<std::pair<Pid, Bytes>> processes) {
  Gpu g;
  g.index = index;
  for (const auto& [pid, bytes] : processes) g.processes.push_back({pid, bytes, {}});
  return g;
}

Problem problem(ProblemKind kind, std::optional<Pid> pid, Severity severity,
                std::optional<unsigned> on_gpu = std::nullopt) {
  Problem p;
  p.kind = kind;
  p.pid = pid;
  p.severity = severity;
  p.gpu = on_gpu;
  p.message = to_string(kind) + (pid ? " " + std::to_string(*pid) : "");
  return p;
}

TEST(TargetMemory, OnlyTheListedPidsCountAndATwiceListedPidCountsOnce) {
  GpuView view;
  view.gpus = {gpu(0, {{10, 8 * kGiB}, {10, 2 * kGiB}, {11, 1 * kGiB}, {99, 5 * kGiB}}),
               gpu(1, {{11, 3 * kGiB}})};
  const TargetMemory memory = target_memory(view, {10, 11});
  EXPECT_EQ(memory.lines.size(), 4U);  // every entry said
  EXPECT_EQ(memory.lines.front(), "GPU 0: 8.0 GiB still listed for pid 10");
  // Pid 10's largest entry (8) plus pid 11's (1); pid 99 is not a target's.
  EXPECT_EQ(memory.bytes_by_gpu.at(0), 9 * kGiB);
  EXPECT_EQ(memory.bytes_by_gpu.at(1), 3 * kGiB);
  // Negative control: nothing listed for the targets is nothing left.
  EXPECT_TRUE(target_memory(view, {12}).empty());
}

TEST(KillOthers, ErrorsOfOthersAreStillHeldWarningsAreSaidAndOursAreNeither) {
  Diagnosis after;
  after.problems = {
      problem(ProblemKind::kOrphan, 20, Severity::kError),
      problem(ProblemKind::kStrayContext, 21, Severity::kWarning),
      problem(ProblemKind::kOrphan, 10, Severity::kError)};  // a target's: not another's
  KillLeft left;
  add_others(after, {10}, {}, 0, left);
  EXPECT_EQ(left.still_held, std::vector<std::string>{"orphan 20"});
  EXPECT_EQ(left.warnings, std::vector<std::string>{"stray-context 21"});
}

TEST(KillOthers, UnattributedMemoryCountsOnlyBeyondTheTargetsStillListed) {
  Diagnosis after;
  GpuReport report;
  report.gpu.index = 0;
  report.unattributed = 9 * kGiB;
  after.gpus = {report};
  after.problems = {problem(ProblemKind::kUnattributed, std::nullopt, Severity::kError, 0)};
  TargetMemory listed;
  listed.lines = {"GPU 0: 8.0 GiB still listed for pid 10"};
  listed.bytes_by_gpu[0] = 8 * kGiB;
  // 1 GiB beyond the target's 8: above a 512 MiB allowance it is someone else's.
  KillLeft above;
  add_others(after, {10}, listed, 512 * (kGiB >> 10), above);
  ASSERT_EQ(above.still_held.size(), 1U);
  EXPECT_EQ(above.still_held[0],
            "GPU 0: 1.0 GiB used beyond the targets' that no visible process accounts for");
  // Within a 2 GiB allowance it is nobody's.
  KillLeft within;
  add_others(after, {10}, listed, 2 * kGiB, within);
  EXPECT_TRUE(within.still_held.empty());
  // Negative control: with nothing listed for the targets the problem is said as it is.
  KillLeft unlisted;
  add_others(after, {10}, {}, 2 * kGiB, unlisted);
  EXPECT_EQ(unlisted.still_held, std::vector<std::string>{"unattributed"});
}

TEST(KillMemoryCheck, NotCheckedWithoutNvmlFailedWhenItFailedOrNeverAnswered) {
  EXPECT_EQ(memory_check(NvmlState::kAbsent, true, NvmlState::kAbsent), MemoryCheck::kNotChecked);
  EXPECT_EQ(memory_check(NvmlState::kDisabled, false, NvmlState::kDisabled),
            MemoryCheck::kNotChecked);
  EXPECT_EQ(memory_check(NvmlState::kFailed, true, NvmlState::kPresent), MemoryCheck::kFailed);
  EXPECT_EQ(memory_check(NvmlState::kPresent, false, NvmlState::kPresent), MemoryCheck::kFailed);
  EXPECT_EQ(memory_check(NvmlState::kPresent, true, NvmlState::kFailed), MemoryCheck::kFailed);
  EXPECT_EQ(memory_check(NvmlState::kPresent, true, NvmlState::kPresent), MemoryCheck::kVerified);
}

TEST(GoneButCounted, AnHeirsOrTheMpsServersMemoryOfANamedGonePid) {
  Diagnosis diagnosis;
  DeadOwner owner;
  owner.pid = 30;
  owner.gpu_memory = {{0, 2 * kGiB}, {1, 1 * kGiB}};
  owner.heir = 31;
  DeadOwner unnamed;
  unnamed.pid = 40;
  unnamed.gpu_memory = {{0, kGiB}};
  diagnosis.dead_owners = {owner, unnamed};
  Problem mps = problem(ProblemKind::kMpsLeftover, 50, Severity::kError);
  mps.bytes = kGiB;
  diagnosis.problems = {mps};
  const auto counted = gone_but_counted({30, 50, 60}, diagnosis);
  ASSERT_EQ(counted.size(), 2U);  // 40 was not named; 60 is counted for by nobody
  EXPECT_EQ(counted[0].pid, 30);
  EXPECT_EQ(counted[0].bytes, 3 * kGiB);
  EXPECT_EQ(counted[0].held_by, "held by its heir, pid 31");
  EXPECT_EQ(counted[1].pid, 50);
  EXPECT_EQ(counted[1].held_by, "held by the MPS server");
}

TEST(KillMet, PlannedTargetsInPlanOrderThenProcessesForkedAfterThePlan) {
  KillPlan plan;
  KillTarget parent;
  parent.process.pid = 10;
  parent.process.start_ticks = 100;
  KillTarget zombie;
  zombie.process.pid = 11;
  zombie.process.ppid = 10;
  zombie.process.state = 'Z';
  zombie.klass = HolderClass::kZombie;
  KillTarget recycled;  // its PID is another process now: never met
  recycled.process.pid = 12;
  recycled.process.start_ticks = 120;
  plan.targets = {parent, zombie, recycled};
  ProcessInfo met_parent = parent.process;
  ProcessInfo late;
  late.pid = 13;
  late.start_ticks = 130;
  ProcessInfo other_12;  // same PID as a target, another start: not that target
  other_12.pid = 12;
  other_12.start_ticks = 999;
  TargetOutcome gone;
  gone.state = TargetOutcome::State::kGone;
  gone.signals = {"TERM"};
  TargetOutcome remains;
  remains.state = TargetOutcome::State::kRemaining;
  ProcessTable table;
  table[10].comm = "server";
  const auto met =
      met_processes(plan, {late, met_parent, other_12}, {remains, gone, remains}, table);
  ASSERT_EQ(met.size(), 5U);
  EXPECT_EQ(met[0].target.process.pid, 10);
  EXPECT_EQ(met[0].outcome.signals, std::vector<std::string>{"TERM"});
  EXPECT_EQ(met[1].outcome.reason, "already gone");
  EXPECT_EQ(met[1].unreaping_parent, "server");
  EXPECT_EQ(met[2].target.process.start_ticks, 120U);
  EXPECT_EQ(met[2].outcome.state, TargetOutcome::State::kGone);
  EXPECT_EQ(met[2].outcome.reason, "already gone");
  // Met but not planned, by identity: the new process under pid 12, and one forked later.
  EXPECT_EQ(met[3].target.process.start_ticks, 999U);
  EXPECT_EQ(met[3].target.why, "forked after the plan");
  EXPECT_EQ(met[4].target.process.pid, 13);
  EXPECT_EQ(met[4].outcome.state, TargetOutcome::State::kRemaining);
}

}  // namespace
}  // namespace gpuclean::diagnose
