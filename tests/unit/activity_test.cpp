// Busy or idle (issue 37): the samples read from NVML, a holder's activity from them, how long
// an idle one has been idle across looks, and the words problems use.
#include <gtest/gtest.h>

#include "collect/idle_tracker.h"
#include "diagnose/activity.h"
#include "nvml/process_activity.h"

namespace gpuclean {
namespace {

constexpr Pid kPidMax = 4194304;

TEST(ActivitySamples, NewestPerProcessOnlyInsideTheWindowAndZeroIsAbsence) {
  const std::vector<nvml::RawSample> raw = {
      {1000, 10, 50, 1},
      {3000, 10, 90, 4},  // 10: the newer one counts
      {500, 11, 70, 7},   // 11: before the window (the lag)
      {2000, 12, 0, 0},   // 12: a sample of nothing is no activity
  };
  auto newest = nvml::newest_samples(raw, 900, kPidMax);
  ASSERT_TRUE(newest.ok());
  ASSERT_EQ(newest->size(), 1u);
  EXPECT_EQ((*newest)[0].pid, 10);
  EXPECT_EQ((*newest)[0].sm, 90u);
  EXPECT_EQ((*newest)[0].mem, 4u);
}

TEST(ActivitySamples, ASampleThatCannotBeOneFailsThemAll) {
  EXPECT_FALSE(nvml::newest_samples({{1000, 10, 101, 0}}, 0, kPidMax).ok());
  EXPECT_FALSE(nvml::newest_samples({{1000, 0, 5, 0}}, 0, kPidMax).ok());
  EXPECT_FALSE(nvml::newest_samples({{1000, kPidMax + 1, 5, 0}}, 0, kPidMax).ok());
  EXPECT_TRUE(nvml::newest_samples({{1000, kPidMax, 100, 100}}, 0, kPidMax).ok());
}

Holder holder(Pid pid, std::map<unsigned, Bytes> memory) {
  Holder h;
  h.process.pid = pid;
  h.process.start_ticks = 77;
  h.gpu_memory = std::move(memory);
  return h;
}

GpuView view_with(std::optional<GpuActivity> gpu0, std::optional<GpuActivity> gpu1) {
  GpuView view;
  view.gpus.resize(2);
  view.gpus[0].index = 0;
  view.gpus[0].activity = std::move(gpu0);
  view.gpus[1].index = 1;
  view.gpus[1].activity = std::move(gpu1);
  return view;
}

TEST(HolderActivity, KnownWhereSampledUnknownNeverZero) {
  const GpuActivity some{"x", {{10, 80, 3}, {99, 40, 1}}};
  const GpuActivity none{"x", {}};
  std::vector<Holder> holders = {holder(10, {{0, 1}}), holder(11, {{0, 1}}), holder(12, {}),
                                 holder(13, {{0, 1}, {1, 1}}), holder(14, {{0, 1}, {1, 1}})};
  holders[3].inherited_from = 99;  // an heir: sampled under its dead owner's PID
  holders[4].process.pid = 14;
  diagnose::assign_activity(view_with(some, std::nullopt), {{{11, 77}, 42.0}}, holders);
  ASSERT_TRUE(holders[0].activity);
  EXPECT_EQ(holders[0].activity->sm, 80u);
  ASSERT_TRUE(holders[1].activity);  // listed with a context, no sample: idle
  EXPECT_FALSE(holders[1].activity->busy());
  EXPECT_EQ(holders[1].activity->idle_s, 42.0);
  EXPECT_FALSE(holders[2].activity);  // no context: nothing to say
  ASSERT_TRUE(holders[3].activity);   // busy on GPU 0 although GPU 1 is unknown
  EXPECT_EQ(holders[3].activity->sm, 40u);
  EXPECT_FALSE(holders[4].activity);  // idle on GPU 0, unknown on GPU 1: unknown
  diagnose::assign_activity(view_with(none, none), {}, holders);
  ASSERT_TRUE(holders[4].activity);
  EXPECT_FALSE(holders[4].activity->busy());
}

TEST(HolderActivity, WordsForProblemsAndKillPlans) {
  Holder h = holder(10, {{0, 1}});
  EXPECT_EQ(diagnose::activity_note(h), "");
  EXPECT_FALSE(diagnose::busy_reason(h));
  h.activity = HolderActivity{87, 5, std::nullopt};
  EXPECT_EQ(diagnose::activity_note(h), "; still computing (SM 87%, memory 5%)");
  EXPECT_NE(diagnose::busy_reason(h)->find("--include-busy takes it"), std::string::npos);
  h.activity = HolderActivity{0, 0, 330.0};
  EXPECT_EQ(diagnose::activity_note(h), "; idle leftover: no GPU activity for 5 min 30 s");
  EXPECT_FALSE(diagnose::busy_reason(h));
}

TEST(IdleTracker, CountsFromTheFirstIdleLookAndBusyEndsIt) {
  collect::IdleTracker tracker;
  std::vector<Holder> look = {holder(10, {{0, 1}})};
  look[0].activity = HolderActivity{};
  tracker.observe(look, 100);
  tracker.observe(look, 130);
  EXPECT_EQ(tracker.idle_seconds(160).at({10, 77}), 60.0);
  look[0].activity->sm = 20;  // busy again
  tracker.observe(look, 170);
  EXPECT_TRUE(tracker.idle_seconds(171).empty());
  look[0].activity->sm = 0;
  tracker.observe(look, 180);
  EXPECT_EQ(tracker.idle_seconds(181).at({10, 77}), 1.0);
  tracker.observe({}, 190);  // gone: forgotten
  EXPECT_TRUE(tracker.idle_seconds(191).empty());
}

}  // namespace
}  // namespace gpuclean
