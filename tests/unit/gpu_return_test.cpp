#include "diagnose/gpu_return.h"

#include <gtest/gtest.h>

namespace gpuclean::diagnose {
namespace {

constexpr Bytes kGiB = 1ull << 30;

Gpu gpu_with(Bytes used, std::vector<std::pair<Pid, Bytes>> processes) {
  Gpu gpu;
  gpu.index = 0;
  gpu.memory = GpuMemory{140 * kGiB, used, 140 * kGiB - used, std::nullopt};
  for (const auto& [pid, bytes] : processes)
    gpu.processes.push_back({pid, bytes, GpuProcess::Kind::kCompute});
  return gpu;
}

TEST(GpuReturnTest, BaselineLeavesOutWhatTheRunAlreadyHolds) {
  // The workload (pid 10) raced ahead of the first query; another job (20) was there before.
  auto baseline = baseline_of(gpu_with(7 * kGiB, {{10, 2 * kGiB}, {20, 5 * kGiB}}), {10});
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->used, 5 * kGiB);
  EXPECT_EQ(baseline->processes, std::set<Pid>{20});
  Gpu unknown;
  EXPECT_FALSE(baseline_of(unknown, {}));
}

TEST(GpuReturnTest, BackWhenUsedIsAtThePreRunLevel) {
  const GpuBaseline baseline{0, 5 * kGiB, {20}};
  auto judged =
      judge_return(baseline, gpu_with(5 * kGiB + 10 * (1u << 20), {{20, 5 * kGiB}}), {10});
  ASSERT_TRUE(judged);
  EXPECT_TRUE(judged->back);
  EXPECT_EQ(judged->note, "");
}

TEST(GpuReturnTest, NotBackWhileNvmlStillListsAProcessOfTheRun) {
  // Even with used at the baseline: the dead owner's entry means the context is not freed yet.
  const GpuBaseline baseline{0, 0, {}};
  auto judged = judge_return(baseline, gpu_with(0, {{11, 0}}), {10, 11});
  ASSERT_TRUE(judged);
  EXPECT_FALSE(judged->back);
  EXPECT_NE(judged->note.find("11"), std::string::npos) << judged->note;
}

TEST(GpuReturnTest, MemoryOfAJobThatStartedMeanwhileIsNotHeldAgainstTheRun) {
  const GpuBaseline baseline{0, 0, {}};
  auto judged = judge_return(baseline, gpu_with(3 * kGiB, {{30, 3 * kGiB}}), {10});
  ASSERT_TRUE(judged);
  EXPECT_TRUE(judged->back);
  EXPECT_NE(judged->note.find("pid 30"), std::string::npos) << judged->note;
}

TEST(GpuReturnTest, UnexplainedExcessIsNotBack) {
  // Negative control for the two above: memory nobody NVML lists accounts for (a leak, or a
  // holder in another PID namespace) beyond the tolerance.
  const GpuBaseline baseline{0, 1 * kGiB, {}};
  auto judged = judge_return(baseline, gpu_with(1 * kGiB + kReturnTolerance + 1, {}), {10});
  ASSERT_TRUE(judged);
  EXPECT_FALSE(judged->back);
  EXPECT_NE(judged->note.find("not returned"), std::string::npos) << judged->note;
  auto at_tolerance = judge_return(baseline, gpu_with(1 * kGiB + kReturnTolerance, {}), {10});
  EXPECT_TRUE(at_tolerance->back);
}

}  // namespace
}  // namespace gpuclean::diagnose
