// Which processes top's refreshes re-read (procfs/rolling_scan.h): everything at first and with
// a zero period, then the new, the likely holders and a slice, so that every process is read
// at least once per period.
#include "procfs/rolling_scan.h"

#include <gtest/gtest.h>

#include <vector>

namespace gpuclean::procfs {
namespace {

using namespace std::chrono_literals;

std::vector<Pid> range(Pid from, Pid to) {
  std::vector<Pid> out;
  for (Pid p = from; p < to; ++p) out.push_back(p);
  return out;
}

TEST(RollingScan, FirstCallAndZeroPeriodReadEverything) {
  RollingScan every(Duration(0));
  const auto t0 = RollingScan::Clock::now();
  EXPECT_EQ(every.choose(range(1, 101), {}, t0).size(), 100u);
  EXPECT_EQ(every.choose(range(1, 101), {}, t0 + 1s).size(), 100u);
  EXPECT_TRUE(every.last_was_full());
}

TEST(RollingScan, ReadsNewLikelyAndASliceSoThatAllAreReadOncePerPeriod) {
  RollingScan rolling(Duration(30s));
  auto now = RollingScan::Clock::now();
  const std::vector<Pid> present = range(1, 3001);
  EXPECT_EQ(rolling.choose(present, {}, now).size(), 3000u) << "the first look is full";
  EXPECT_TRUE(rolling.last_was_full());
  // The processes of the first look were there before: not new, so the next look is a slice
  // (bench/top_bench.sh found the first 15 s all full scans when they counted as new).
  now += 1s;
  EXPECT_EQ(rolling.choose(present, {}, now).size(), 100u);
  now += 30s;
  EXPECT_TRUE((rolling.choose(present, {}, now), rolling.last_was_full()));

  // One second later: a new process (5000), a holder (7), and 1/30 of the 3,000 in turn.
  std::vector<Pid> with_new = present;
  with_new.push_back(5000);
  now += 1s;
  const std::vector<Pid> chosen = rolling.choose(with_new, {7, 4242}, now);
  EXPECT_FALSE(rolling.last_was_full());
  EXPECT_NE(std::find(chosen.begin(), chosen.end(), 5000), chosen.end()) << "new";
  EXPECT_NE(std::find(chosen.begin(), chosen.end(), 7), chosen.end()) << "likely holder";
  EXPECT_EQ(std::find(chosen.begin(), chosen.end(), 4242), chosen.end()) << "not in /proc";
  EXPECT_GE(chosen.size(), 100u);
  EXPECT_LE(chosen.size(), 103u) << "new + likely + 100 in turn, not everything";

  // Over the rest of the period every process is read at least once.
  std::set<Pid> read(chosen.begin(), chosen.end());
  for (int second = 2; second < 30; ++second) {
    now += 1s;
    for (Pid pid : rolling.choose(with_new, {}, now)) read.insert(pid);
  }
  EXPECT_LT(read.size(), with_new.size()) << "29 s: not all of them yet (control)";
  now += 1s;
  for (Pid pid : rolling.choose(with_new, {}, now)) read.insert(pid);
  EXPECT_EQ(read.size(), with_new.size()) << "each process read once per 30 s period";
  // Negative control: a period later it is a full scan again.
  now += 30s;
  EXPECT_EQ(rolling.choose(with_new, {}, now).size(), with_new.size());
  EXPECT_TRUE(rolling.last_was_full());
}

TEST(RollingScan, ANewProcessIsReadOnEveryRefreshWhileYoung) {
  // tests/top/run.sh found it: a process that opens the device a second after it started was
  // read once, as new, before it held anything, and then waited for its turn (~20 s).
  RollingScan rolling(Duration(30s));
  auto now = RollingScan::Clock::now();
  std::vector<Pid> present = range(1, 301);
  (void)rolling.choose(present, {}, now);
  present.push_back(999);
  auto chosen_at = [&](auto when) {
    const auto chosen = rolling.choose(present, {}, when);
    return std::find(chosen.begin(), chosen.end(), 999) != chosen.end();
  };
  const auto born = now + 100ms;
  EXPECT_TRUE(chosen_at(born));
  EXPECT_TRUE(chosen_at(born + 1s)) << "still young: read again";
  EXPECT_TRUE(chosen_at(born + RollingScan::kYoung - 1s));
  // Negative control: old, it waits for its turn (the slice of 100 ms is one or two PIDs).
  now = born + RollingScan::kYoung;
  (void)rolling.choose(present, {}, now);
  EXPECT_FALSE(chosen_at(now + 50ms));
}

}  // namespace
}  // namespace gpuclean::procfs
