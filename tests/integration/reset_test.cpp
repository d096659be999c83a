// `gpuclean reset` (issue 53): the plan through the test binary (a fixture sysfs: --sys-root)
// with the fake libnvidia-ml.so.1 (MIG, persistence mode) and the test's own holders of its own
// temp file. The plan changes nothing: the holders it names live on.
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "fake_nvml_fixture.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
constexpr unsigned long long kGiB = 1ULL << 30;

class ResetTest : public FakeNvmlTest {
 protected:
  std::string sys_ = dir_.path() + "/sys";
  // A sysfs with nvidia_drm loaded (modeset Y) and GPU 0 bound to the nvidia driver.
  void make_sysfs(bool drm) {
    if (drm) {
      std::filesystem::create_directories(sys_ + "/module/nvidia_drm/parameters");
      std::ofstream(sys_ + "/module/nvidia_drm/parameters/modeset") << "Y\n";
    }
    std::filesystem::create_directories(sys_ + "/bus/pci/drivers/nvidia");
    std::filesystem::create_directories(sys_ + "/bus/pci/devices/0000:00:00.0");
    std::filesystem::create_directory_symlink("../../../../bus/pci/drivers/nvidia",
                                              sys_ + "/bus/pci/devices/0000:00:00.0/driver");
  }
  CommandResult reset(const std::string& scenario_path, std::vector<std::string> args) {
    std::vector<std::string> argv = {GPUCLEAN_BINARY, "reset", "--sys-root", sys_,
                                     "--device-glob", held_};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv, fake_env(variant_dir("r580"), scenario_path));
  }
  static std::vector<std::string> kinds(const json& gpu) {
    std::vector<std::string> out;
    for (const json& b : gpu["blockers"]) out.push_back(b["kind"].get<std::string>());
    return out;
  }
};

TEST_F(ResetTest, ThePlanNamesEachBlockerInOrderAndChangesNothing) {
  make_sysfs(true);
  const std::vector<pid_t> tree = start("orphan-tree", held_, {"1"});
  ASSERT_EQ(tree.size(), 3u);
  const std::string s = scenario("mig 0 1\nused 0 " + std::to_string(6 * kGiB) + "\n" +
                                 pid_line(tree[0], 2 * kGiB) + pid_line(tree[1], 4 * kGiB));
  const CommandResult plan = reset(s, {"--gpus", "0", "--json"});
  EXPECT_EQ(plan.exit_code, 1) << "MIG refuses it: " << plan.out << plan.err;
  const json doc = parse(plan);
  ASSERT_EQ(doc["gpus"].size(), 1u) << doc.dump(1);
  const json& gpu = doc["gpus"][0];
  std::vector<std::string> want = {"leftover", "persistence-mode", "mig", "display"};
  if (::geteuid() != 0) want.push_back("not-root");
  EXPECT_EQ(kinds(gpu), want) << gpu.dump(1);
  EXPECT_EQ(gpu["blockers"][0]["pids"], json::array({tree[0], tree[1]})) << "the job whole";
  EXPECT_EQ(gpu["command"], "nvidia-smi --gpu-reset -i 0");
  EXPECT_FALSE(doc["runnable"].get<bool>());
  // A plan changes nothing: the job it would end lives on.
  for (pid_t pid : tree) EXPECT_EQ(::kill(pid, 0), 0) << pid << " still there";

  // The text says the same for a person, in order.
  const CommandResult text = reset(s, {"--gpus", "0"});
  EXPECT_EQ(text.exit_code, 1);
  const auto leftover = text.out.find("1. leftover");
  const auto mig = text.out.find("mig");
  const auto command = text.out.find("then: nvidia-smi --gpu-reset -i 0");
  EXPECT_LT(leftover, mig) << text.out;
  EXPECT_LT(mig, command) << text.out;
  EXPECT_NE(text.out.find("[refuses]"), std::string::npos) << text.out;
}

TEST_F(ResetTest, WithoutMigOrDrmOnlyTheLeftoversAndPersistenceModeStandInTheWay) {
  make_sysfs(false);
  const pid_t orphan = start("orphan-tree", held_, {"1"}).at(0);
  const std::string s = scenario(pid_line(orphan, 2 * kGiB));
  const CommandResult plan = reset(s, {"--json"});
  const json doc = parse(plan);
  std::vector<std::string> want = {"leftover", "persistence-mode"};
  if (::geteuid() != 0) want.push_back("not-root");
  ASSERT_EQ(doc["gpus"].size(), 1u) << doc.dump(1);
  EXPECT_EQ(kinds(doc["gpus"][0]), want) << doc.dump(1);
  EXPECT_EQ(plan.exit_code, ::geteuid() == 0 ? 0 : 1) << "nothing a person must clear, as root";
}

TEST_F(ResetTest, AGpuNvmlDoesNotListIsAUsageError) {
  make_sysfs(false);
  const CommandResult plan = reset(scenario(""), {"--gpus", "5"});
  EXPECT_EQ(plan.exit_code, 2);
  EXPECT_NE(plan.err.find("no GPU 5"), std::string::npos) << plan.err;
  const CommandResult no_nvml =
      run_command({GPUCLEAN_BINARY, "reset", "--no-nvml", "--device-glob", held_});
  EXPECT_EQ(no_nvml.exit_code, 3) << no_nvml.err;
}

}  // namespace
}  // namespace gpuclean::testing
