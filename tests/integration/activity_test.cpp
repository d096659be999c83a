// Busy or idle (issue 37): the shipping gpuclean against the fake libnvidia-ml.so.1, whose
// per-process utilisation calls answer with the samples a scenario gives (fake_nvml.c). The
// holders are the test's own daemons (orphans: their parent exits), holding its own temp file;
// only they are ever signalled.
#include <chrono>
#include <string>

#include "fake_nvml_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;
constexpr unsigned long long kGiB = 1ull << 30;

const json* holder_of(const json& doc, pid_t pid) {
  for (const json& h : doc["holders"]) {
    if (h["pid"] == pid) return &h;
  }
  return nullptr;
}

const json* problem_of(const json& doc, pid_t pid) {
  for (const json& p : doc["problems"]) {
    if (p["pid"] == pid) return &p;
  }
  return nullptr;
}

class ActivityTest : public FakeNvmlTest {
 protected:
  void SetUp() override {
    FakeNvmlTest::SetUp();
    busy_ = start("daemon", held_).at(0);
    idle_ = start("daemon", held_).at(0);
  }
  // The two orphaned daemons, 4 GiB each in NVML's list, and REST (samples, sensors, rules).
  std::string orphans(const std::string& rest) {
    return scenario("used 0 " + std::to_string(8 * kGiB) + "\n" + pid_line(busy_, 4 * kGiB) +
                    pid_line(idle_, 4 * kGiB) + rest);
  }
  std::string sample(pid_t pid, int sm, int mem, int age_ms = 500) const {
    return "activity 0 " + std::to_string(pid) + " " + std::to_string(sm) + " " +
           std::to_string(mem) + " " + std::to_string(age_ms) + "\n";
  }
  pid_t busy_ = 0;
  pid_t idle_ = 0;
};

TEST_F(ActivityTest, BusyAndIdleHoldersAreToldApartAndAnOldSampleIsNotBusy) {
  // The idle one was busy 5 s ago: a call without lastSeenTimeStamp (or with an old one) would
  // return that sample and call it busy (the lag nvtop fixed).
  const std::string with_samples = orphans(sample(busy_, 87, 5) + sample(idle_, 40, 3, 5000) +
                                           "utilization 0 87\npower 0 640000\ntemperature 0 57\n");
  json doc = parse(run("r580", with_samples, {"status", "--json"}));
  const json* busy = holder_of(doc, busy_);
  const json* idle = holder_of(doc, idle_);
  ASSERT_NE(busy, nullptr) << doc.dump(1);
  ASSERT_NE(idle, nullptr) << doc.dump(1);
  EXPECT_EQ(busy->at("class"), "orphan") << doc.dump(1);
  EXPECT_EQ(busy->at("activity"), json({{"sm", 87}, {"mem", 5}, {"idle_s", nullptr}}));
  EXPECT_EQ(idle->at("activity"), json({{"sm", 0}, {"mem", 0}, {"idle_s", nullptr}}));
  const json& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["utilization"], 87);
  EXPECT_EQ(gpu["temperature_c"], 57);
  EXPECT_EQ(gpu["power_mw"], 640000);
  EXPECT_EQ(gpu["activity"]["source"], "nvmlDeviceGetProcessesUtilizationInfo");

  // The problems say which is which, and what to do.
  const json* busy_problem = problem_of(doc, busy_);
  const json* idle_problem = problem_of(doc, idle_);
  ASSERT_NE(busy_problem, nullptr);
  ASSERT_NE(idle_problem, nullptr);
  EXPECT_NE(busy_problem->at("message").get<std::string>().find("still computing (SM 87%"),
            std::string::npos)
      << busy_problem->dump();
  EXPECT_EQ(busy_problem->at("fix").get<std::string>().rfind("check whose work it is", 0), 0u)
      << busy_problem->dump();
  EXPECT_NE(idle_problem->at("message").get<std::string>().find("idle leftover"), std::string::npos)
      << idle_problem->dump();
  EXPECT_EQ(idle_problem->at("fix"), "gpuclean kill " + std::to_string(idle_));

  // Text: the sensors line.
  auto text = run("r580", with_samples, {"status"});
  EXPECT_NE(text.out.find("utilisation 87% · 57 °C · 640 W"), std::string::npos) << text.out;

  // explain says which, in a row of its own.
  auto explained = run("r580", with_samples, {"explain", std::to_string(busy_)});
  EXPECT_NE(explained.out.find("activity  busy: SM 87%, memory 5%"), std::string::npos)
      << explained.out;
  explained = run("r580", with_samples, {"explain", std::to_string(idle_)});
  EXPECT_NE(explained.out.find("activity  idle: no GPU activity"), std::string::npos)
      << explained.out;
}

TEST_F(ActivityTest, LeftoversTakesTheIdleOneAndTheBusyOneOnlyWithIncludeBusy) {
  const std::string with_samples = orphans(sample(busy_, 95, 10));
  auto plan = run("r580", with_samples, {"kill", "--leftovers", "--dry-run", "--json"});
  json doc = parse(plan);
  std::string targets;
  for (const json& t : doc["targets"]) targets += std::to_string(t["pid"].get<int>()) + " ";
  EXPECT_NE(targets.find(std::to_string(idle_)), std::string::npos) << plan.out;
  EXPECT_EQ(targets.find(std::to_string(busy_)), std::string::npos) << plan.out;
  EXPECT_NE(plan.out.find("--include-busy takes it"), std::string::npos) << plan.out;

  // Negative control: --include-busy takes both, and without samples (the call missing: r470's
  // ProcessUtilization with NOT_SUPPORTED) both are leftovers as before.
  doc = parse(
      run("r580", with_samples, {"kill", "--leftovers", "--include-busy", "--dry-run", "--json"}));
  targets.clear();
  for (const json& t : doc["targets"]) targets += std::to_string(t["pid"].get<int>()) + " ";
  EXPECT_NE(targets.find(std::to_string(busy_)), std::string::npos) << doc.dump(1);
  EXPECT_NE(targets.find(std::to_string(idle_)), std::string::npos) << doc.dump(1);
  const std::string unsupported =
      orphans(sample(busy_, 95, 10) + "fail nvmlDeviceGetProcessUtilization 3\n");
  doc = parse(run("r470", unsupported, {"kill", "--leftovers", "--dry-run", "--json"}));
  EXPECT_EQ(doc["targets"].size(), 2u) << doc.dump(1);

  // --include-busy alone is a usage error: it only widens --leftovers.
  EXPECT_EQ(run("r580", with_samples, {"kill", "--include-busy", "--dry-run"}).exit_code, 2);

  // And the kill itself ends the idle one only.
  auto killed = run("r580", with_samples,
                    {"kill", "--leftovers", "--yes", "--grace", "300ms", "--wait", "2s"});
  EXPECT_TRUE(wait_until([&] { return proc_state(idle_) == '\0'; }, 5s))
      << killed.out << killed.err;
  EXPECT_NE(proc_state(busy_), '\0') << "the busy one is left running";
}

TEST_F(ActivityTest, UnsupportedIsNullAndSaidOnceNeverZero) {
  const std::string s =
      orphans(sample(busy_, 90, 0) + "fail nvmlDeviceGetProcessesUtilizationInfo 3\n");
  json doc = parse(run("r580", s, {"status", "--json"}));
  ASSERT_NE(holder_of(doc, busy_), nullptr) << doc.dump(1);
  EXPECT_TRUE(holder_of(doc, busy_)->at("activity").is_null());
  EXPECT_TRUE(holder_of(doc, idle_)->at("activity").is_null());
  EXPECT_TRUE(doc["gpus"][0]["activity"].is_null());
  EXPECT_NE(doc["gpus"][0]["activity_unavailable"].get<std::string>().find("not supported"),
            std::string::npos);
  auto text = run("r580", s, {"status"});
  EXPECT_NE(text.out.find("Busy or idle unknown on GPU 0"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("idle leftover"), std::string::npos) << text.out;
  const auto explained = run("r580", s, {"explain", std::to_string(busy_)});
  EXPECT_NE(
      explained.out.find("activity  unknown (GPU 0: per-process utilisation is not supported"),
      std::string::npos)
      << explained.out;
}

TEST_F(ActivityTest, AGpuNobodyHoldsIsAskedOnlyItsTemperature) {
  // Those calls cost ~7.5 ms of every clean node's check on the H200 (docs/facts.md).
  const std::string s = orphans("gpus 2\nutilization 1 40\npower 1 90000\n");
  json doc = parse(run("r580", s, {"status", "--json"}));
  ASSERT_EQ(doc["gpus"].size(), 2u) << doc.dump(1);
  const json& nobody = doc["gpus"][1];
  EXPECT_EQ(nobody["temperature_c"], 31);
  EXPECT_TRUE(nobody["utilization"].is_null()) << nobody.dump();
  EXPECT_TRUE(nobody["power_mw"].is_null());
  EXPECT_TRUE(nobody["activity"].is_null());
  EXPECT_TRUE(nobody["activity_unavailable"].is_null()) << "nothing to say: nobody to judge";
  // Negative control: GPU 0, with the two holders, is asked everything.
  EXPECT_EQ(doc["gpus"][0]["power_mw"], 75000);
  EXPECT_FALSE(doc["gpus"][0]["activity"].is_null());
}

TEST_F(ActivityTest, TheOlderCallStandsInAndASampleThatCannotBeOneIsNotBelieved) {
  // r535 lacks nvmlDeviceGetProcessesUtilizationInfo (added in 550).
  const std::string with_samples = orphans(sample(busy_, 60, 2));
  json doc = parse(run("r535", with_samples, {"status", "--json"}));
  EXPECT_EQ(doc["gpus"][0]["activity"]["source"], "nvmlDeviceGetProcessUtilization") << doc.dump(1);
  EXPECT_EQ(holder_of(doc, busy_)->at("activity")["sm"], 60);
  // 400% SM is no sample this code knows how to read: nothing is believed, nothing is 0.
  const std::string garbage = orphans(sample(busy_, 400, 2));
  doc = parse(run("r580", garbage, {"status", "--json"}));
  EXPECT_TRUE(holder_of(doc, idle_)->at("activity").is_null()) << doc.dump(1);
  EXPECT_NE(doc["gpus"][0]["activity_unavailable"].get<std::string>().find("not recognised"),
            std::string::npos);
}

}  // namespace
}  // namespace gpuclean::testing
