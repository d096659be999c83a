// status / check / explain through the CLI, with real processes this test starts (holding its
// own temp files) and a test GPU source that says what NVML would: the same joins the GPU
// machine exercises (tests/gpu/run.sh), in CI without a GPU.
#include <fstream>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
constexpr unsigned long long kGiB = 1ull << 30;

class StatusTest : public HolderFixture {
 protected:
  // A one- or two-GPU view: `processes[i]` are GPU i's (pid, bytes) entries; used = their sum
  // plus `extra_used`.
  std::string gpu_view(
      const std::vector<std::vector<std::pair<pid_t, unsigned long long>>>& processes,
      unsigned long long extra_used = 0) {
    json gpus = json::array();
    for (std::size_t i = 0; i < processes.size(); ++i) {
      unsigned long long used = extra_used;
      json list = json::array();
      for (const auto& [pid, bytes] : processes[i]) {
        used += bytes;
        list.push_back({{"pid", pid}, {"used_memory", bytes}, {"kind", "compute"}});
      }
      const unsigned long long total = 140 * kGiB;
      gpus.push_back({{"index", i},
                      {"uuid", "GPU-test-" + std::to_string(i)},
                      {"name", "NVIDIA H200"},
                      {"minor", i},
                      {"memory", {{"total", total}, {"used", used}, {"free", total - used}}},
                      {"processes", list}});
    }
    return write_view(
        {{"driver_version", "580.159.04"}, {"cuda_driver_version", 13000}, {"gpus", gpus}});
  }
  std::string write_view(const json& view) {
    const std::string path = dir_.path() + "/gpus-" + std::to_string(views_++) + ".json";
    std::ofstream(path) << view.dump();
    return path;
  }
  CommandResult run(const std::string& command, const std::string& view,
                    std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {command, "--device-glob", held_, "--test-gpu-source", view};
    args.insert(args.end(), extra.begin(), extra.end());
    return gpuclean(args);
  }
  json status_json(const std::string& view, std::vector<std::string> extra = {}) {
    extra.push_back("--json");
    auto result = run("status", view, extra);
    EXPECT_TRUE(result.exit_code == 0 || result.exit_code == 1) << result.err;
    return json::parse(result.out);
  }
  int views_ = 0;
};

TEST_F(StatusTest, IdleMachineIsCleanAndSilent) {
  auto check = run("check", gpu_view({{}}));
  EXPECT_EQ(check.exit_code, 0);
  EXPECT_EQ(check.out, "");
  EXPECT_EQ(check.err, "");
  auto status = run("status", gpu_view({{}}));
  EXPECT_EQ(status.exit_code, 0);
  EXPECT_NE(status.out.find("CLEAN"), std::string::npos) << status.out;
}

TEST_F(StatusTest, LeftoverProcessIsAttributedAndFailsTheCheck) {
  const pid_t holder = start("hold", held_).at(0);
  const std::string view = gpu_view({{{holder, 76 * kGiB}}});
  json doc = status_json(view);
  EXPECT_EQ(doc["verdict"], "dirty");
  const json* h = find_holder(doc, holder);
  ASSERT_NE(h, nullptr) << doc.dump(1);
  EXPECT_EQ(h->at("gpu_memory")["0"], 76 * kGiB);
  EXPECT_EQ(doc["gpus"][0]["memory"]["attributed"], 76 * kGiB);
  EXPECT_EQ(doc["gpus"][0]["memory"]["unattributed"], 0);

  auto check = run("check", view);
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("gpuclean: GPU 0: 76.0 GiB"), std::string::npos) << check.out;
  EXPECT_NE(check.out.find("pid " + std::to_string(holder) + " (holder_helper)"),
            std::string::npos);
  EXPECT_EQ(std::count(check.out.begin(), check.out.end(), '\n'), 1);

  // Negative controls: ignoring that pid, or allowing its user, makes the machine clean.
  EXPECT_EQ(run("check", view, {"--ignore-pid", std::to_string(holder)}).exit_code, 0);
  EXPECT_EQ(run("check", view, {"--allow-user", "root"}).exit_code, ::geteuid() == 0 ? 0 : 1);
}

TEST_F(StatusTest, DeadOwnersMemoryIsLinkedToItsHeir) {
  // The helper's launcher plays the CUDA process that forked and exited: reap it so its PID is
  // gone from /proc, and let the "NVML" view still name it, as the real driver does.
  const pid_t heir = start("heir", held_).at(0);
  const pid_t dead_owner = launchers_.back();
  reap_launcher(dead_owner);
  ASSERT_EQ(proc_state(dead_owner), '\0');
  const std::string view = gpu_view({{{dead_owner, 8 * kGiB}}});

  json doc = status_json(view);
  const json* h = find_holder(doc, heir);
  ASSERT_NE(h, nullptr) << doc.dump(1);
  EXPECT_EQ(h->at("class"), "heir");
  EXPECT_EQ(h->at("inherited_from"), dead_owner);
  EXPECT_EQ(h->at("gpu_memory")["0"], 8 * kGiB);
  EXPECT_EQ(doc["gpus"][0]["memory"]["unattributed"], 0);
  bool fix_found = false;
  for (const json& p : doc["problems"])
    fix_found |= p["fix"] == "gpuclean kill " + std::to_string(heir);
  EXPECT_TRUE(fix_found) << doc["problems"].dump(1);

  auto explain = run("explain", view, {std::to_string(dead_owner)});
  EXPECT_EQ(explain.exit_code, 1) << "the dead owner is not in /proc";
  EXPECT_NE(explain.out.find("heir      pid " + std::to_string(heir)), std::string::npos)
      << explain.out;

  // Negative control: once the heir is gone too, the memory is nobody's (foreign).
  reaper_.kill_all();
  ASSERT_TRUE(wait_until([&] { return proc_state(heir) == '\0' || proc_state(heir) == 'Z'; }));
  json after = status_json(view);
  const json* foreign = find_holder(after, dead_owner);
  ASSERT_NE(foreign, nullptr) << after.dump(1);
  EXPECT_EQ(foreign->at("class"), "foreign");
  EXPECT_EQ(after["gpus"][0]["memory"]["unattributed"], 8 * kGiB);
}

TEST_F(StatusTest, ZombieLeaderFixKillsItsPid) {
  const pid_t leader = start("zombie-leader", held_).at(0);
  json doc = status_json(gpu_view({{{leader, 4 * kGiB}}}));
  const json* h = find_holder(doc, leader);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->at("class"), "zombie-leader");
  ASSERT_FALSE(doc["problems"].empty());
  EXPECT_EQ(doc["problems"][0]["kind"], "zombie-leader");
  EXPECT_EQ(doc["problems"][0]["fix"], "gpuclean kill " + std::to_string(leader));
}

TEST_F(StatusTest, PlainZombieIsExplainedAsHarmless) {
  auto pids = start("zombie", held_);
  ASSERT_EQ(pids.size(), 2u);
  ASSERT_EQ(::kill(pids[0], SIGUSR1), 0);  // the helper's own child
  ASSERT_TRUE(wait_until([&] { return proc_state(pids[0]) == 'Z'; }));
  auto explain = run("explain", gpu_view({{}}), {std::to_string(pids[0])});
  EXPECT_EQ(explain.exit_code, 0);
  EXPECT_NE(explain.out.find("plain zombie"), std::string::npos) << explain.out;
  EXPECT_NE(explain.out.find("has not reaped it"), std::string::npos) << explain.out;
  EXPECT_NE(explain.out.find(std::to_string(pids[1])), std::string::npos) << "names the parent";
}

TEST_F(StatusTest, MemoryNoProcessExplainsIsUnattributed) {
  // A holder in another PID namespace: NVML's list is empty, memory is used (FACTS.md).
  auto check = run("check", gpu_view({{}}, 20 * kGiB));
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("20.0 GiB used that no visible process accounts for"), std::string::npos)
      << check.out;
  // Negative control: within --max-used it is tolerated.
  EXPECT_EQ(run("check", gpu_view({{}}, 20 * kGiB), {"--max-used", "30000"}).exit_code, 0);
}

TEST_F(StatusTest, GpuSelectionOnlyLooksAtThoseGpus) {
  const pid_t holder = start("hold", held_).at(0);
  const std::string view = gpu_view({{}, {{holder, 2 * kGiB}}});
  EXPECT_EQ(run("check", view, {"--gpus", "0"}).exit_code, 0);
  EXPECT_EQ(run("check", view, {"--gpus", "1"}).exit_code, 1);  // negative control
  EXPECT_EQ(run("check", view, {"--gpus", "0-1"}).exit_code, 1);
  auto missing = run("check", view, {"--gpus", "5"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("no GPU 5"), std::string::npos);
  EXPECT_EQ(run("check", view, {"--gpus", "1-0"}).exit_code, 2);
  EXPECT_EQ(run("check", view, {"--gpus", "x"}).exit_code, 2);
}

TEST_F(StatusTest, NvmlFailingMidQueryIsExitThreeWithProcStillShown) {
  const pid_t holder = start("hold", held_).at(0);
  const std::string view =
      write_view({{"fail_query", "GPU 0: nvmlDeviceGetMemoryInfo: GPU is lost"}});
  auto status = run("status", view);
  EXPECT_EQ(status.exit_code, 3);
  EXPECT_NE(status.out.find("NVML failed: GPU 0: nvmlDeviceGetMemoryInfo: GPU is lost"),
            std::string::npos)
      << status.out;
  EXPECT_NE(status.out.find(std::to_string(holder)), std::string::npos)
      << "the /proc part still works";
  auto check = run("check", view);
  EXPECT_EQ(check.exit_code, 3);
  EXPECT_NE(check.err.find("GPU is lost"), std::string::npos);
}

TEST_F(StatusTest, NvmlAbsentFallsBackToProc) {
  const pid_t holder = start("hold", held_).at(0);
  const std::string view =
      write_view({{"state", "absent"}, {"message", "libnvidia-ml.so.1: not found"}});
  auto status = run("status", view, {"--json"});
  EXPECT_EQ(status.exit_code, 1) << "a context-shaped holder of the selected files";
  json doc = json::parse(status.out);
  EXPECT_EQ(doc["nvml"]["state"], "absent");
  EXPECT_NE(find_holder(doc, holder), nullptr);
  EXPECT_TRUE(doc["gpus"].empty());
  // --gpus needs NVML's attribution: refused rather than guessed.
  EXPECT_EQ(run("status", view, {"--gpus", "0"}).exit_code, 2);
}

TEST_F(StatusTest, MalformedTestSourceIsAFailureNotACrash) {
  const std::string path = dir_.path() + "/broken.json";
  std::ofstream(path) << "{\"gpus\": [ {";
  auto status = run("status", path);
  EXPECT_EQ(status.exit_code, 3);
}

}  // namespace
}  // namespace gpuclean::testing

namespace gpuclean::testing {
namespace {

class WaitTest : public HolderFixture {
 protected:
  std::vector<std::string> wait_argv(const std::string& timeout) {
    return {GPUCLEAN_BINARY, "wait", "--no-nvml", "--device-glob", held_, "--timeout", timeout};
  }
};

TEST_F(WaitTest, ReturnsOnceTheHolderIsGone) {
  start("hold", held_);
  const auto started = std::chrono::steady_clock::now();
  const pid_t waiter = spawn(wait_argv("60s"));
  ASSERT_GT(waiter, 0);
  // Negative control: while the holder lives, wait keeps waiting.
  EXPECT_FALSE(
      wait_until([&] { return proc_state(waiter) == 'Z'; }, std::chrono::milliseconds(600)))
      << "wait returned although the file is still held";
  reaper_.kill_all();  // the holder goes
  EXPECT_EQ(reap(waiter), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
}

TEST_F(WaitTest, TimesOutWithTheProblemsAndExitOne) {
  const pid_t holder = start("hold", held_).at(0);
  const auto started = std::chrono::steady_clock::now();
  auto result = run_command(wait_argv("300ms"));
  const auto took = std::chrono::steady_clock::now() - started;
  EXPECT_EQ(result.exit_code, 1) << result.err;
  EXPECT_GE(took, std::chrono::milliseconds(300));
  EXPECT_LT(took, std::chrono::seconds(10)) << "the timeout bounds the wait";
  EXPECT_NE(result.out.find("pid " + std::to_string(holder)), std::string::npos) << result.out;
  EXPECT_NE(result.err.find("still dirty"), std::string::npos) << result.err;
}

TEST_F(WaitTest, CleanMachineReturnsAtOnce) {
  auto result = run_command(wait_argv("10s"));
  EXPECT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST_F(WaitTest, NonsenseDurationsAreUsageErrors) {
  for (const char* bad : {"abc", "-1s", "5parsecs", "", "inf", "0x10"}) {
    auto result = run_command(wait_argv(bad));
    EXPECT_EQ(result.exit_code, 2) << bad;
    EXPECT_NE(result.err.find("--timeout"), std::string::npos) << bad << ": " << result.err;
  }
}

}  // namespace
}  // namespace gpuclean::testing
