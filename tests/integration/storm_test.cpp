// `gpuclean who` while thousands of short-lived processes fork, exec and exit every second
// (tests/integration/storm_helper.cpp): no crash, no error exit, no false holder, and every
// long-lived holder found in every scan. GPUCLEAN_STORM_SCANS sets the number of scans (default
// 200; bench and docs/hardening.md use 1000).
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;

int scans_wanted() {
  const char* env = std::getenv("GPUCLEAN_STORM_SCANS");
  const int n = env != nullptr ? std::atoi(env) : 0;
  return n > 0 ? n : 200;
}

unsigned long storm_count(const std::string& count_file) {
  const std::string text = slurp(count_file);
  return text.empty() ? 0 : std::stoul(text);
}

class StormTest : public HolderFixture {
 protected:
  // Starts the storm for at most `seconds`; its children open other_ now and then.
  void start_storm(int seconds) {
    storm_ = spawn({STORM_HELPER, other_, std::to_string(seconds), count_file_});
    ASSERT_GT(storm_, 0);
    reaper_.adopt(storm_);
    ASSERT_TRUE(wait_until([&] { return storm_count(count_file_) > 100; }))
        << "the storm never started";
  }
  void TearDown() override {
    HolderFixture::TearDown();  // kills the storm (its forkers die with it: PDEATHSIG)
    if (storm_ > 0) reap(storm_);
  }

  pid_t storm_ = -1;
  std::string count_file_ = dir_.path() + "/storm-count";
};

TEST_F(StormTest, EveryHolderFoundInEveryScanAndNoStormProcessReported) {
  // Long-lived holders of three shapes: an fd, a mapping only, a zombie-led thread group.
  std::set<pid_t> holders;
  holders.insert(start("hold", held_).at(0));
  holders.insert(start("map", held_).at(0));
  holders.insert(start("zombie-leader", held_).at(0));

  const int scans = scans_wanted();
  start_storm(600);
  const auto begin = std::chrono::steady_clock::now();
  const unsigned long storm_before = storm_count(count_file_);

  int failures = 0;
  int storm_seen = 0;  // scans of the storm's own file that found a storm process
  unsigned long vanished = 0;
  for (int i = 0; i < scans && failures < 5; ++i) {
    const auto result = gpuclean({"who", "--json", "--device-glob", held_});
    json doc = json::parse(result.out, nullptr, false);
    std::set<pid_t> found;
    if (!doc.is_discarded() && doc.contains("holders")) {
      for (const json& h : doc["holders"]) found.insert(h["pid"].get<pid_t>());
      vanished += doc["scan"]["vanished"].get<unsigned long>();
    }
    if (result.exit_code != 1 || found != holders) {
      ++failures;
      ADD_FAILURE() << "scan " << i << ": exit " << result.exit_code << "\n"
                    << result.out << result.err;
    }
    // Negative control, every tenth scan: the storm's processes are visible to the scan when
    // their own file is asked for, so "never reported" above is not blindness.
    if (i % 10 == 0) {
      const auto storm_scan = gpuclean({"who", "--json", "--device-glob", other_});
      EXPECT_TRUE(storm_scan.exit_code == 0 || storm_scan.exit_code == 1) << storm_scan.err;
      json storm_doc = json::parse(storm_scan.out, nullptr, false);
      if (!storm_doc.is_discarded() && storm_doc.contains("holders") &&
          !storm_doc["holders"].empty()) {
        ++storm_seen;
        for (const json& h : storm_doc["holders"]) {
          EXPECT_EQ(holders.count(h["pid"].get<pid_t>()), 0u) << "a holder of held_ in other_";
        }
      }
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  const unsigned long storm_children = storm_count(count_file_) - storm_before;
  const double rate = static_cast<double>(storm_children) / seconds;
  std::printf(
      "storm: %d scans in %.1f s, %lu short-lived processes (%.0f/s), %lu vanished "
      "mid-scan, storm seen in %d of %d control scans\n",
      scans, seconds, storm_children, rate, vanished, storm_seen, (scans + 9) / 10);
  EXPECT_EQ(failures, 0);
  // The control must succeed at least once; a storm child holds its file for under a
  // millisecond, so keep scanning (bounded) when the sampled control scans all missed.
  EXPECT_TRUE(storm_seen > 0 || wait_until([&] {
                const auto storm_scan = gpuclean({"who", "--json", "--device-glob", other_});
                return storm_scan.exit_code == 1;
              }))
      << "the scan never saw a storm process";
  // What shows the storm raced the scans is the vanished count below; the rate only says a
  // storm ran at all. It depends on the machine: 300/s passed here until 2026-12-02, when this
  // 2-core VM made 258-267/s run alone, and a fresh-clone run of ac216f1 with a build beside it
  // made 199/s (failing a 200/s floor) with processes still vanishing mid-scan.
  EXPECT_GT(rate, 50.0) << "the storm was too slow to test anything";
  EXPECT_GT(vanished, 0u) << "no process vanished mid-scan: the storm never raced a scan";
}

// Negative control for the comparison above: a holder killed mid-run is no longer found, so a
// scan that reports a stale holder would fail the test.
TEST_F(StormTest, AHolderThatExitsIsNoLongerReported) {
  const pid_t stays = start("hold", held_).at(0);
  const pid_t leaves = start("hold", held_).at(0);
  start_storm(60);
  auto pids_of = [&] {
    const auto result = gpuclean({"who", "--json", "--device-glob", held_});
    std::set<pid_t> found;
    json doc = json::parse(result.out, nullptr, false);
    if (!doc.is_discarded() && doc.contains("holders")) {
      for (const json& h : doc["holders"]) found.insert(h["pid"].get<pid_t>());
    }
    return found;
  };
  EXPECT_EQ(pids_of(), (std::set<pid_t>{stays, leaves}));
  ::kill(leaves, SIGKILL);  // started by this test (holder_helper hold)
  ASSERT_TRUE(wait_until([&] { return proc_state(leaves) == '\0' || proc_state(leaves) == 'Z'; }));
  EXPECT_EQ(pids_of(), (std::set<pid_t>{stays}));
}

}  // namespace
}  // namespace gpuclean::testing
