// Busy or idle (issues 37 and 47): the samples read from NVML, a holder's activity from them,
// when it is sustained, how long an idle one has been idle across looks, and the words problems
// use.
#include <gtest/gtest.h>

#include "diagnose/activity.h"
#include "diagnose/activity_tracker.h"
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
  diagnose::assign_activity(view_with(some, std::nullopt), {.idle_seconds = {{{11, 77}, 42.0}}},
                            holders);
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

// Unix seconds of a look, and a sample taken `after` seconds later, in microseconds.
constexpr double kLook = 1'800'000'000.0;
std::uint64_t at(double after) {
  return static_cast<std::uint64_t>((kLook + after) * 1e6);
}

TEST(HolderActivity, SustainedOnlyWithABusySampleTakenAPeriodAfterTheLookThatSawItBusy) {
  std::vector<Holder> holders = {holder(10, {{0, 1}})};
  const diagnose::ActivityHistory seen_busy_at_look{.busy_looks = {{{10, 77}, {kLook}}}};
  auto judge = [&](std::uint64_t when, const diagnose::ActivityHistory& history, unsigned sm = 60) {
    const GpuActivity sample{"x", {{10, sm, 4, when}}};
    diagnose::assign_activity(view_with(sample, std::nullopt), history, holders);
    return *holders[0].activity;
  };
  // One look: busy, not sustained (its last kernel may be all it shows).
  EXPECT_TRUE(judge(at(-0.4), {}).busy());
  EXPECT_FALSE(judge(at(-0.4), {}).computing());
  // Looked again: the same sample, or one whose period may still hold the kernel before the
  // look (taken less than kSustainedAfterSeconds after it), is not work in progress...
  EXPECT_FALSE(judge(at(-0.4), seen_busy_at_look).computing());
  EXPECT_FALSE(judge(at(0.9), seen_busy_at_look).computing());
  // ... one taken a period after the look is, whatever its figure: a falling one may be a
  // share lost to another process as well as work that ended (docs/facts.md), and the safe
  // side is to leave it.
  EXPECT_TRUE(judge(at(diagnose::kSustainedAfterSeconds), seen_busy_at_look).computing());
  EXPECT_TRUE(judge(at(2.0), seen_busy_at_look, 30).computing());
  EXPECT_TRUE(judge(at(2.0), seen_busy_at_look, 90).computing());
  // ... but not a few percent: the driver went on sampling a worker idle since its memset at
  // 1% (the H100's S6, docs/facts.md).
  EXPECT_FALSE(judge(at(2.0), seen_busy_at_look, 1).computing());
  EXPECT_FALSE(judge(at(2.0), seen_busy_at_look, diagnose::kComputingFloorPercent - 1).computing());
  EXPECT_TRUE(judge(at(2.0), seen_busy_at_look, diagnose::kComputingFloorPercent).computing());
  // A process sharing the GPU swings from sample to sample (9-79% on the H100): a second look
  // that saw it over the floor a period after the first keeps it computing whatever its newest
  // sample says.
  const diagnose::ActivityHistory seen_again_at_40{.busy_looks = {{{10, 77}, {kLook, 40}}}};
  EXPECT_TRUE(judge(at(2.0), seen_again_at_40, 5).computing());
  const diagnose::ActivityHistory seen_again_at_5{.busy_looks = {{{10, 77}, {kLook, 5}}}};
  EXPECT_FALSE(judge(at(2.0), seen_again_at_5, 5).computing());
  // Without a time stamp nothing can be sustained.
  EXPECT_FALSE(judge(0, seen_busy_at_look).computing());
  // Another process's history is not this one's.
  EXPECT_FALSE(judge(at(2.0), {.busy_looks = {{{10, 78}, {kLook}}}}).computing());
}

TEST(HolderActivity, WordsForProblemsAndKillPlans) {
  Holder h = holder(10, {{0, 1}});
  h.process.ppid = 1;
  h.klass = HolderClass::kOrphan;
  EXPECT_EQ(diagnose::activity_note(h), "");
  EXPECT_FALSE(diagnose::busy_reason(h));
  h.activity = HolderActivity{87, 5, std::nullopt, true};
  EXPECT_EQ(diagnose::activity_note(h), "; still computing (SM 87%, memory 5%)");
  EXPECT_NE(diagnose::busy_reason(h)->find("--include-busy takes it"), std::string::npos);
  // One busy sample: its last kernel, said so, and no reason to leave it.
  h.activity = HolderActivity{6, 0, std::nullopt, false};
  EXPECT_EQ(diagnose::activity_note(h),
            "; no sustained GPU activity (SM 6%, memory 0%: what a last kernel leaves in the "
            "driver's figures)");
  EXPECT_FALSE(diagnose::busy_reason(h));
  h.activity = HolderActivity{0, 0, 330.0};
  EXPECT_EQ(diagnose::activity_note(h), "; idle leftover: no GPU activity for 5 min 30 s");
  EXPECT_FALSE(diagnose::busy_reason(h));
  // A zombie leader or an heir spinning is a leftover all the same: its owner is gone.
  for (const HolderClass klass : {HolderClass::kZombieLeader, HolderClass::kHeir}) {
    h.klass = klass;
    h.activity = HolderActivity{99, 0, std::nullopt, true};
    EXPECT_FALSE(diagnose::busy_reason(h)) << to_string(klass);
    EXPECT_NE(diagnose::activity_note(h).find("its threads still run kernels (SM 99%"),
              std::string::npos);
  }
}

TEST(ActivityTracker, CountsIdleFromTheFirstIdleLookAndKeepsTheLooksOfABusyStretch) {
  diagnose::ActivityTracker tracker;
  std::vector<Holder> look = {holder(10, {{0, 1}})};
  look[0].activity = HolderActivity{};
  tracker.observe(look, 100);
  tracker.observe(look, 130);
  EXPECT_EQ(tracker.history(160).idle_seconds.at({10, 77}), 60.0);
  EXPECT_TRUE(tracker.history(160).busy_looks.empty());
  look[0].activity->sm = 20;  // busy again: the stretch starts at this look
  tracker.observe(look, 170);
  look[0].activity->sm = 30;
  tracker.observe(look, 171);
  EXPECT_TRUE(tracker.history(171.5).idle_seconds.empty());
  // The look compared with is the newest one at least kSustainedAfterSeconds old.
  EXPECT_TRUE(tracker.history(171).busy_looks.empty()) << "no look old enough yet";
  EXPECT_EQ(tracker.history(172).busy_looks.at({10, 77}).time, 170.0);
  EXPECT_EQ(tracker.history(172.5).busy_looks.at({10, 77}).time, 171.0);
  look[0].activity->sm = 0;
  tracker.observe(look, 180);
  EXPECT_EQ(tracker.history(181).idle_seconds.at({10, 77}), 1.0);
  EXPECT_TRUE(tracker.history(181).busy_looks.empty());
  look[0].activity.reset();  // unknown ends both
  tracker.observe(look, 185);
  EXPECT_TRUE(tracker.history(186).idle_seconds.empty());
  tracker.observe({}, 190);  // gone: forgotten
  EXPECT_TRUE(tracker.history(191).idle_seconds.empty());
}

}  // namespace
}  // namespace gpuclean
