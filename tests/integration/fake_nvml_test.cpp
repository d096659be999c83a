// The shipping gpuclean against a fake libnvidia-ml.so.1 (tests/fake_nvml/fake_nvml.c), loaded
// through LD_LIBRARY_PATH: the real dlopen/dlsym path, the real record decoding and the real
// error paths, without a GPU. Processes named in the fake's lists are holder_helpers this test
// started, holding its own temp file (--device-glob).
#include <dlfcn.h>

#include <chrono>

#include "fake_nvml_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
constexpr unsigned long long kGiB = 1ull << 30;

// The GPU memory gpuclean attributes to `pid` on GPU 0, or -1 when it has none.
long long memory_of(const json& doc, pid_t pid) {
  for (const json& h : doc["holders"]) {
    if (h["pid"] == pid && h["gpu_memory"].contains("0")) return h["gpu_memory"]["0"];
  }
  return -1;
}

bool any_holder_with_pid_zero(const json& doc) {
  for (const json& h : doc["holders"]) {
    if (h["pid"] == 0) return true;
  }
  return false;
}

// ---- Item 6: the record layout ----

// Failed before the fix (gpuclean at bcb5330, same fake): the second record was read at a
// 24-byte stride from 32-byte records —
//   dirty [(9132, 'active', {'0': 8589934592}), (0, 'foreign', {'0': 9133})]
//   "GPU 0: 8 KiB held by pid 0, which this PID namespace cannot see"
// i.e. pid 0 holding "9133 bytes", the second process's PID, and pid 9133 missing.
TEST_F(FakeNvmlTest, Driver535ThirtyTwoByteRecordsAreReadRight) {
  const auto pids = start("tree", held_, {"1"});  // parent + one worker, both holding
  ASSERT_EQ(pids.size(), 2u);
  const std::string s = scenario("driver 535.54.03\nused 0 " + std::to_string(14 * kGiB) + "\n" +
                                 pid_line(pids[0], 8 * kGiB) + pid_line(pids[1], 6 * kGiB));
  auto status = run("r535", s, {"status", "--json"});
  EXPECT_EQ(status.exit_code, 1) << status.err;  // two processes in use: dirty
  json doc = parse(status);
  EXPECT_EQ(doc["verdict"], "dirty");
  EXPECT_EQ(doc["nvml"]["driver_version"], "535.54.03");
  EXPECT_EQ(memory_of(doc, pids[0]), static_cast<long long>(8 * kGiB)) << status.out;
  EXPECT_EQ(memory_of(doc, pids[1]), static_cast<long long>(6 * kGiB)) << status.out;
  EXPECT_FALSE(any_holder_with_pid_zero(doc)) << status.out;
  EXPECT_EQ(doc["gpus"][0]["memory"]["attributed"], 14 * kGiB);
}

// The fake's "name" line takes the rest of the line: a GPU name has blanks. It kept only the
// first word ("NVIDIA") until the fix in fake_nvml.c (seen by the completion helper).
TEST_F(FakeNvmlTest, AGpuNameWithBlanksIsReadWhole) {
  const std::string s = scenario("name 0 NVIDIA H100 80GB HBM3\nused 0 0\n");
  json doc = parse(run("r580", s, {"status", "--json"}));
  EXPECT_EQ(doc["gpus"][0]["name"], "NVIDIA H100 80GB HBM3") << doc.dump(1);
}

TEST_F(FakeNvmlTest, TheDataDecidesWhenTheSymbolsSuggestTheOtherLayout) {
  // A 580-shaped library (both probing symbols) that writes 32-byte records: the 24-byte
  // reading fails the check (record 2: pid 0), the 32-byte one passes.
  const auto pids = start("tree", held_, {"1"});
  ASSERT_EQ(pids.size(), 2u);
  const std::string s = scenario("records 32\nused 0 " + std::to_string(3 * kGiB) + "\n" +
                                 pid_line(pids[0], 1 * kGiB) + pid_line(pids[1], 2 * kGiB));
  json doc = parse(run("r580", s, {"status", "--json"}));
  EXPECT_EQ(memory_of(doc, pids[0]), static_cast<long long>(1 * kGiB));
  EXPECT_EQ(memory_of(doc, pids[1]), static_cast<long long>(2 * kGiB));
  EXPECT_FALSE(any_holder_with_pid_zero(doc));
}

TEST_F(FakeNvmlTest, TwentyFourByteRecordsOnNewAndOldDrivers) {
  const auto pids = start("tree", held_, {"2"});
  ASSERT_EQ(pids.size(), 3u);
  const std::string s = scenario(pid_line(pids[0], 4 * kGiB) + pid_line(pids[1], 5 * kGiB) +
                                 pid_line(pids[2], 6 * kGiB, "graphics") + "used 0 " +
                                 std::to_string(15 * kGiB) + "\n");
  for (const char* variant : {"r580", "r470"}) {  // _v3 and _v2 symbols
    json doc = parse(run(variant, s, {"status", "--json"}));
    EXPECT_EQ(memory_of(doc, pids[0]), static_cast<long long>(4 * kGiB)) << variant;
    EXPECT_EQ(memory_of(doc, pids[1]), static_cast<long long>(5 * kGiB)) << variant;
    EXPECT_EQ(memory_of(doc, pids[2]), static_cast<long long>(6 * kGiB)) << variant;
  }
}

TEST_F(FakeNvmlTest, UnrecognisedRecordLayoutIsRefusedWithExitThree) {
  const auto pids = start("tree", held_, {"1"});
  ASSERT_EQ(pids.size(), 2u);
  const std::string s = scenario("driver 535.54.03\nrecords garbage\n" +
                                 pid_line(pids[0], 1 * kGiB) + pid_line(pids[1], 1 * kGiB));
  const std::string message =
      "cannot read NVML's process list on driver 535.54.03 (record layout not recognised";
  auto status = run("r535", s, {"status"});
  EXPECT_EQ(status.exit_code, 3);
  EXPECT_NE(status.out.find(message), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("UNKNOWN"), std::string::npos) << status.out;
  auto check = run("r535", s, {"check"});
  EXPECT_EQ(check.exit_code, 3);
  EXPECT_NE(check.err.find(message), std::string::npos) << check.err;
  json doc = parse(run("r535", s, {"status", "--json"}));
  EXPECT_EQ(doc["verdict"], "unknown");
  EXPECT_EQ(doc["nvml"]["state"], "failed");
  // Nothing is chosen from the list: selecting by GPU is refused before any plan. (--dry-run:
  // if this ever broke, undecodable records could name anybody's PID.)
  auto kill = run("r535", s, {"kill", "--gpu", "0", "--dry-run"});
  EXPECT_TRUE(kill.exit_code == 2 || kill.exit_code == 3) << kill.exit_code << kill.err;
  EXPECT_EQ(kill.out.find(std::to_string(pids[0])), std::string::npos) << kill.out;
  // Negative control: the same processes in well-formed records are read.
  const std::string good =
      scenario("driver 535.54.03\n" + pid_line(pids[0], 1 * kGiB) + pid_line(pids[1], 1 * kGiB));
  EXPECT_EQ(run("r535", good, {"status"}).exit_code, 1);
}

// ---- Item 9: NVML present but failing ----

// Failed before the fix (gpuclean at bcb5330, same scenario): exit 3 but
//   text:    "CLEAN: no process holds the device files"
//   JSON:    "verdict": "clean"
//   metrics: gpuclean_clean 1
TEST_F(FakeNvmlTest, LostGpuIsUnknownNeverClean) {
  const std::string lost =
      scenario("gpus 2\nfail nvmlDeviceGetMemoryInfo_v2 15 1\nfail nvmlDeviceGetMemoryInfo 15 1\n");
  auto status = run("r580", lost, {"status"});
  EXPECT_EQ(status.exit_code, 3);
  EXPECT_NE(status.out.find("GPU 1: nvmlDeviceGetMemoryInfo_v2: GPU is lost"), std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find("UNKNOWN: NVML failed"), std::string::npos) << status.out;
  EXPECT_EQ(status.out.find("CLEAN"), std::string::npos) << status.out;
  json doc = parse(run("r580", lost, {"status", "--json"}));
  EXPECT_EQ(doc["verdict"], "unknown");
  EXPECT_EQ(doc["nvml"]["state"], "failed");
  auto check = run("r580", lost, {"check"});
  EXPECT_EQ(check.exit_code, 3);
  EXPECT_NE(check.err.find("GPU is lost"), std::string::npos) << check.err;
  // The snapshot document too (before: "verdict": "clean" with NVML failed).
  auto snapshot = run("r580", lost, {"snapshot"});
  EXPECT_EQ(snapshot.exit_code, 3) << snapshot.err;
  EXPECT_EQ(parse(snapshot)["verdict"], "unknown") << snapshot.out;
#if GPUCLEAN_METRICS_TESTS
  auto metrics = run("r580", lost, {"metrics"});
  EXPECT_NE(metrics.out.find("\ngpuclean_clean 0\n"), std::string::npos) << metrics.out;
  EXPECT_NE(metrics.out.find("gpuclean_verdict{verdict=\"unknown\"} 1"), std::string::npos);
  EXPECT_NE(metrics.out.find("gpuclean_nvml_state{state=\"failed\"} 1"), std::string::npos);
#endif

  // Negative control: both GPUs answering is clean, everywhere.
  const std::string fine = scenario("gpus 2\n");
  auto ok = run("r580", fine, {"status"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("CLEAN"), std::string::npos);
  EXPECT_EQ(parse(run("r580", fine, {"status", "--json"}))["verdict"], "clean");
  EXPECT_EQ(run("r580", fine, {"check"}).exit_code, 0);
  EXPECT_EQ(parse(run("r580", fine, {"snapshot"}))["verdict"], "clean");
#if GPUCLEAN_METRICS_TESTS
  EXPECT_NE(run("r580", fine, {"metrics"}).out.find("\ngpuclean_clean 1\n"), std::string::npos);
#endif
}

TEST_F(FakeNvmlTest, FailingInitIsFailedButDriverNotLoadedIsAbsent) {
  auto failed = run("r580", scenario("fail nvmlInit_v2 999\n"), {"status", "--json"});
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(parse(failed)["verdict"], "unknown");
  auto absent = run("r580", scenario("fail nvmlInit_v2 9\n"), {"status", "--json"});
  EXPECT_EQ(absent.exit_code, 0) << "no driver is a machine state, not a failure";
  EXPECT_EQ(parse(absent)["nvml"]["state"], "absent");
}

// ---- Item 12: check --expect-gpus ----

bool real_nvml_is_installed() {
  void* handle = ::dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (handle != nullptr) ::dlclose(handle);
  return handle != nullptr;
}

TEST_F(FakeNvmlTest, ExpectGpusCountsWhatNvmlSees) {
  const std::string one = scenario("gpus 1\n");
  auto short_one = run("r580", one, {"check", "--expect-gpus", "2"});
  EXPECT_EQ(short_one.exit_code, 1);
  EXPECT_EQ(short_one.out, "gpuclean: expected 2 GPUs, NVML sees 1\n");
  EXPECT_EQ(run("r580", one, {"check", "--expect-gpus", "1"}).exit_code, 0);
  EXPECT_EQ(run("r580", one, {"check"}).exit_code, 0);
  json doc = parse(run("r580", one, {"status", "--json", "--expect-gpus", "2"}));
  EXPECT_EQ(doc["verdict"], "dirty");
  ASSERT_EQ(doc["problems"].size(), 1u) << doc.dump();
  EXPECT_EQ(doc["problems"][0]["kind"], "missing-gpus");
  // NVML failing: unknown (exit 3), not "missing".
  auto failing =
      run("r580", scenario("fail nvmlDeviceGetCount_v2 15\n"), {"check", "--expect-gpus", "1"});
  EXPECT_EQ(failing.exit_code, 3);
  // Nothing to count with --no-nvml.
  EXPECT_EQ(run("r580", one, {"check", "--no-nvml", "--expect-gpus", "1"}).exit_code, 2);
}

TEST_F(FakeNvmlTest, ExpectGpusWithoutADriverIsAProblem) {
  // The driver's library present, the kernel module not loaded.
  const std::string unloaded = scenario("fail nvmlInit_v2 9\n");
  auto check = run("r580", unloaded, {"check", "--expect-gpus", "2"});
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("gpuclean: expected 2 GPUs, but no NVIDIA driver is loaded"),
            std::string::npos)
      << check.out;
  EXPECT_EQ(run("r580", unloaded, {"check"}).exit_code, 0) << "negative control";

  // No library at all (an empty directory first in the search path).
  if (real_nvml_is_installed()) GTEST_SKIP() << "a real libnvidia-ml.so.1 is installed here";
  TempDir empty;
  auto none = run_in(empty.path(), unloaded, {"check", "--expect-gpus", "1"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("gpuclean: expected 1 GPU, but no NVIDIA driver is loaded"),
            std::string::npos)
      << none.out;
  EXPECT_EQ(run_in(empty.path(), unloaded, {"check"}).exit_code, 0);
}

// ---- The fake answers everything gpuclean asks ----

TEST_F(FakeNvmlTest, SnapshotReadsEveryFact) {
  auto snapshot = run("r580", scenario("gpus 2\nuuid 1 GPU-second\n"), {"snapshot"});
  EXPECT_EQ(snapshot.exit_code, 0) << snapshot.err;
  json doc = parse(snapshot);
  EXPECT_EQ(doc["verdict"], "clean");
  ASSERT_EQ(doc["gpus"].size(), 2u) << snapshot.out;
  EXPECT_EQ(doc["gpus"][1]["uuid"], "GPU-second");
  EXPECT_NE(snapshot.out.find("580.159.04"), std::string::npos);
}

}  // namespace
}  // namespace gpuclean::testing

// ---- Issue 14 (first part): a wedged driver does not hang the command ----

namespace gpuclean::testing {
namespace {

// Before (4404490, and every commit before the NVML helper process): check and kill with a
// fake whose nvmlInit_v2 never returns hung until killed — under `timeout 5`, both exit 124,
// and kill's target was still in state S: it never signalled it.
TEST_F(FakeNvmlTest, HungDriverBoundsEveryCommandAndKillStillSignals) {
  for (const char* hung : {"nvmlInit_v2", "nvmlDeviceGetMemoryInfo_v2"}) {
    const std::string wedged = scenario(std::string("hang ") + hung + "\n");
    for (const std::vector<std::string>& command :
         {std::vector<std::string>{"status"}, {"status", "--json"}, {"check"}}) {
      std::vector<std::string> args = command;
      args.insert(args.end(), {"--nvml-timeout", "1s"});
      const auto started = std::chrono::steady_clock::now();
      auto result = run("r580", wedged, args);
      const auto took = std::chrono::steady_clock::now() - started;
      EXPECT_EQ(result.exit_code, 3) << hung << " " << command[0] << "\n" << result.err;
      EXPECT_LT(took, std::chrono::seconds(8)) << hung << " " << command[0];
      EXPECT_NE((result.out + result.err).find("NVML did not answer in 1 s"), std::string::npos)
          << hung << " " << command[0] << "\n"
          << result.out << result.err;
      if (command.size() == 2) {
        EXPECT_EQ(parse(result)["verdict"], "unknown") << result.out;
      }
    }
    EXPECT_TRUE(wait_until([&] { return !process_with_arg(held_); }, std::chrono::seconds(5)))
        << "an NVML helper was left behind (" << hung << ")";
  }

  const pid_t target = start("hold", held_).at(0);
  const std::string wedged = scenario("hang nvmlInit_v2\n");
  auto kill = run("r580", wedged,
                  {"kill", std::to_string(target), "--nvml-timeout", "1s", "--grace", "300ms",
                   "--wait", "2s", "--json"});
  EXPECT_EQ(kill.exit_code, 3) << "targets gone, GPU memory not verifiable\n"
                               << kill.out << kill.err;
  const json doc = parse(kill);
  EXPECT_EQ(doc["verdict"], "unknown") << kill.out;
  EXPECT_TRUE(wait_until([&] { return proc_state(target) == '\0' || proc_state(target) == 'Z'; },
                         std::chrono::seconds(5)))
      << "kill did not end its target with NVML hung";

  // Negative control: the same fake without the hang answers, clean, exit 0.
  auto healthy = run("r580", scenario(""), {"check", "--nvml-timeout", "1s"});
  EXPECT_EQ(healthy.exit_code, 0) << healthy.out << healthy.err;
}

}  // namespace
}  // namespace gpuclean::testing
