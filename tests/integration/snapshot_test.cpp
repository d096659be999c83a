// snapshot / diff / check --against through the real binary, with a test GPU source that
// plays NVML (clocks, throttle reasons, ECC …), a fake kernel log and sysfs, and processes this
// test starts holding its own temp files. Every failure case has its clean twin beside it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include <fstream>

#include "holder_fixture.h"
#include "test_user.h"

namespace gpuclean::testing {
namespace {

using nlohmann::json;
constexpr unsigned long long kGiB = 1ull << 30;

class SnapshotTest : public HolderFixture {
 protected:
  // One H200 as the test GPU source describes it; `change` edits the GPU object.
  std::string view(const std::function<void(json&)>& change = {}) {
    json gpu = {{"index", 0},
                {"uuid", "GPU-snap-0"},
                {"name", "NVIDIA H200"},
                {"pci_bus_id", "00000000:00:06.0"},
                {"memory", {{"total", 140 * kGiB}, {"used", 0}, {"free", 140 * kGiB}}},
                {"persistence_mode", true},
                {"compute_mode", "default"},
                {"mig_enabled", false},
                {"processes", json::array()},
                {"clocks_sm", 345},
                {"clocks_memory", 3201},
                {"application_clocks_sm", 1980},
                {"application_clocks_memory", 3201},
                {"max_clocks_sm", 1980},
                {"max_clocks_memory", 3201},
                {"throttle_reasons", 1},
                {"temperature_c", 30},
                {"power_limit_mw", 700000},
                {"ecc_enabled", true},
                {"ecc_volatile_corrected", 0},
                {"ecc_volatile_uncorrected", 0},
                {"retired_pages_single_bit", 0},
                {"retired_pages_double_bit", 0},
                {"remapped_rows_correctable", 0},
                {"remapped_rows_uncorrectable", 0},
                {"remapping_pending", false},
                {"remapping_failed", false}};
    if (change) change(gpu);
    const std::string path = dir_.path() + "/view-" + std::to_string(files_++) + ".json";
    std::ofstream(path) << json{
        {"driver_version", "580.159.04"},
        {"nvml_version", "13.580.159.04"},
        {"cuda_driver_version", 13000},
        {"gpus", {gpu}}}.dump();
    return path;
  }
  CommandResult run(std::vector<std::string> args, const std::string& gpu_view = "") {
    args.insert(args.end(), {"--device-glob", held_});
    if (!gpu_view.empty()) args.insert(args.end(), {"--test-gpu-source", gpu_view});
    return gpuclean(args);
  }
  // A snapshot written with -o; the path.
  std::string snapshot_file(const std::string& gpu_view, std::vector<std::string> extra = {}) {
    const std::string path = dir_.path() + "/snap-" + std::to_string(files_++) + ".json";
    std::vector<std::string> args = {"snapshot", "-o", path};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = run(args, gpu_view);
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, "") << "-o writes the file, not stdout";
    return path;
  }
  static std::string fixture(const std::string& name) {
    return std::string(GPUCLEAN_FIXTURES) + "/snapshots/" + name;
  }
  int files_ = 0;
};

TEST_F(SnapshotTest, RecordsGpuFactsKernelLogAndHost) {
  const std::string kmsg = dir_.path() + "/kmsg";
  std::ofstream(kmsg) << "6,1,1000,-;Linux version 6.18\n"
                      << "3,2,61250000,-;NVRM: Xid (PCI:0000:00:06): 79, pid=1, name=x, GPU has "
                         "fallen off the bus.\n";
  const std::string sys = dir_.path() + "/sys";
  std::filesystem::create_directories(sys + "/devices/system/cpu/cpu0/cpufreq");
  std::ofstream(sys + "/devices/system/cpu/cpu0/cpufreq/scaling_governor") << "performance\n";
  auto result = run_command({"/usr/bin/env", "NCCL_ALGO=Tree", "CUDA_VISIBLE_DEVICES=0",
                             GPUCLEAN_BINARY, "snapshot", "--device-glob", held_,
                             "--test-gpu-source", view(), "--kmsg", kmsg, "--sys-root", sys});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["schema"], 1);
  EXPECT_EQ(doc["kind"], "snapshot");
  EXPECT_EQ(doc["nvml"]["driver_version"], "580.159.04");
  EXPECT_EQ(doc["nvml"]["nvml_version"], "13.580.159.04");
  const json& gpu = doc["gpus"][0];
  EXPECT_EQ(gpu["uuid"], "GPU-snap-0");
  EXPECT_EQ(gpu["clocks"]["sm"]["application"], 1980);
  EXPECT_EQ(gpu["clocks"]["memory"]["max"], 3201);
  EXPECT_EQ(gpu["throttle_reasons"]["active"], json::array({"gpu_idle"}));
  EXPECT_EQ(gpu["power_limit_mw"], 700000);
  EXPECT_EQ(gpu["ecc"]["enabled"], true);
  EXPECT_TRUE(gpu["ecc"]["aggregate"]["corrected"].is_null()) << "not in the view: unknown";
  EXPECT_EQ(doc["kernel_log"]["readable"], true);
  ASSERT_EQ(doc["kernel_log"]["xid"].size(), 1u);
  EXPECT_EQ(doc["kernel_log"]["xid"][0]["xid"], 79);
  EXPECT_EQ(doc["kernel_log"]["xid"][0]["seconds_since_boot"], 61.25);
  EXPECT_EQ(doc["system"]["cpu_governor"], "performance");
  EXPECT_EQ(doc["system"]["environment"]["NCCL_ALGO"], "Tree");
  EXPECT_EQ(doc["system"]["environment"]["CUDA_VISIBLE_DEVICES"], "0");
  EXPECT_FALSE(doc["system"]["kernel_release"].is_null());
  EXPECT_EQ(doc["verdict"], "clean");

  // An unreadable kernel log is a fact of the snapshot, not a failure.
  auto no_log = run({"snapshot", "--kmsg", dir_.path() + "/no-such-kmsg"}, view());
  ASSERT_EQ(no_log.exit_code, 0) << no_log.err;
  const json unreadable = json::parse(no_log.out);
  EXPECT_EQ(unreadable["kernel_log"]["readable"], false);
  EXPECT_NE(unreadable["kernel_log"]["error"].get<std::string>().find("No such file"),
            std::string::npos);
}

// issue 34: --sys-root and --kmsg were hidden options of the shipping binary, so root's
// snapshot could be pointed at any file. Now they are test inputs like --proc-root: the shipping
// binary does not know them (exit 2); the test binary (the control) does. Failed before the
// fix: the shipping binary took both and exited 0.
TEST_F(SnapshotTest, TheShippingBinaryTakesNoHostRoots) {
  const std::string kmsg = dir_.path() + "/kmsg";
  std::ofstream(kmsg) << "6,1,61250000,-;NVRM: Xid (PCI:0000:00:00): 79, pid=1\n";
  for (const char* option : {"--sys-root", "--kmsg"}) {
    const std::string value = std::string(option) == "--kmsg" ? kmsg : dir_.path();
    auto shipping = run_command({GPUCLEAN_SHIPPING_BINARY, "snapshot", "--no-nvml", option, value});
    EXPECT_EQ(shipping.exit_code, 2) << option << "\n" << shipping.out << shipping.err;
    auto test_binary = run_command({GPUCLEAN_BINARY, "snapshot", "--no-nvml", option, value});
    EXPECT_EQ(test_binary.exit_code, 0) << option << "\n" << test_binary.err;
  }
}

TEST_F(SnapshotTest, UnchangedMachinePassesAndAChangedClockFails) {
  const std::string baseline = snapshot_file(view());
  auto same = run({"diff", baseline, baseline});
  EXPECT_EQ(same.exit_code, 0) << same.err;
  EXPECT_NE(same.out.find("No differences."), std::string::npos) << same.out;
  auto check = run({"check", "--against", baseline}, view());
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err;
  EXPECT_EQ(check.out, "");

  // Someone set application clocks (nvidia-smi -ac): the benchmark would run slower.
  const std::string slow = view([](json& g) { g["application_clocks_sm"] = 1410; });
  auto changed = run({"check", "--against", baseline}, slow);
  EXPECT_EQ(changed.exit_code, 1) << changed.err;
  EXPECT_EQ(changed.out,
            "gpuclean: GPU 0: application SM clock 1980 MHz → 1410 MHz (since " + baseline + ")\n");
  auto diff = run({"diff", baseline}, slow);
  EXPECT_EQ(diff.exit_code, 1);
  EXPECT_NE(diff.out.find("✗ GPU 0: application SM clock 1980 MHz → 1410 MHz"), std::string::npos)
      << diff.out;

  // Current clock and temperature follow the load: listed by diff, not failing check.
  const std::string busy = view([](json& g) {
    g["clocks_sm"] = 1980;
    g["temperature_c"] = 60;
  });
  EXPECT_EQ(run({"check", "--against", baseline}, busy).exit_code, 0);
  auto noise = run({"diff", baseline}, busy);
  EXPECT_EQ(noise.exit_code, 0);
  EXPECT_NE(noise.out.find("· GPU 0: SM clock 345 MHz → 1980 MHz"), std::string::npos) << noise.out;
}

TEST_F(SnapshotTest, ErrorsAndThrottlingFailTheCheck) {
  const std::string baseline = snapshot_file(view());
  const std::string bad = view([](json& g) {
    g["throttle_reasons"] = 0x40;  // hw_thermal_slowdown
    g["ecc_volatile_uncorrected"] = 2;
    g["remapping_pending"] = true;
  });
  auto check = run({"check", "--against", baseline}, bad);
  EXPECT_EQ(check.exit_code, 1);
  EXPECT_NE(check.out.find("throttle reason hw_thermal_slowdown now active"), std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("uncorrected ECC errors (since driver load) 0 → 2"), std::string::npos);
  EXPECT_NE(check.out.find("row remapping pending (needs a reset) off → on ("), std::string::npos);
  EXPECT_EQ(check.out.find("off → on (+"), std::string::npos) << "no count for a flag";
  // gpu_idle going away is the GPU getting busy: listed by diff only.
  EXPECT_EQ(std::count(check.out.begin(), check.out.end(), '\n'), 3) << check.out;
}

TEST_F(SnapshotTest, NewHolderAndItsMemoryFailTheCheck) {
  const std::string baseline = snapshot_file(view());
  const pid_t holder = start("hold", held_).at(0);
  const std::string busy = view([holder](json& g) {
    g["memory"]["used"] = 8 * kGiB;
    g["memory"]["free"] = 132 * kGiB;
    g["processes"] = json::array({{{"pid", holder}, {"used_memory", 8 * kGiB}}});
  });
  auto check = run({"check", "--against", baseline}, busy);
  EXPECT_EQ(check.exit_code, 1);
  const std::string pid = std::to_string(holder);
  EXPECT_NE(check.out.find("gpuclean: new holder pid " + pid + " (holder_helper"),
            std::string::npos)
      << check.out;
  EXPECT_NE(check.out.find("memory used 0 B → 8.0 GiB"), std::string::npos) << check.out;
  // The diff lists the holder first: it is the most likely reason for a slower run.
  auto diff = run({"diff", baseline, "--json"}, busy);
  EXPECT_EQ(diff.exit_code, 1);
  const json doc = json::parse(diff.out);
  ASSERT_FALSE(doc["differences"].empty());
  EXPECT_EQ(doc["differences"][0]["category"], "holders");
  EXPECT_EQ(doc["differences"][0]["result_changing"], true);
  EXPECT_GE(doc["result_changing"].get<int>(), 2);
  EXPECT_EQ(doc["before"]["source"], baseline);
  EXPECT_EQ(doc["after"]["source"], "now");

  // Negative control: a snapshot taken with the holder present sees nothing new.
  const std::string with_holder = snapshot_file(busy);
  EXPECT_EQ(run({"diff", with_holder}, busy).exit_code, 0);
}

TEST_F(SnapshotTest, WithoutNvmlGpuFactsAreUnknownNotChanged) {
  const std::string proc_only = snapshot_file("", {"--no-nvml"});
  auto self = run({"diff", proc_only, "--no-nvml"});
  EXPECT_EQ(self.exit_code, 0) << self.out << self.err;
  EXPECT_NE(self.out.find("No differences."), std::string::npos) << self.out;
  auto with_gpu = run({"diff", proc_only}, view());
  EXPECT_EQ(with_gpu.exit_code, 0) << with_gpu.out;
  EXPECT_NE(with_gpu.out.find("GPU facts unknown (NVML disabled) → 1 GPUs"), std::string::npos)
      << with_gpu.out;
}

TEST_F(SnapshotTest, BadSnapshotsAreUsageErrorsNamingTheFile) {
  const std::string good = fixture("baseline.json");
  struct Case {
    std::string file;
    std::string says;
  };
  for (const Case& c : {Case{fixture("truncated.json"), "truncated"},
                        Case{fixture("future_schema.json"), "schema 2 is newer"},
                        Case{fixture("wrong_type.json"), "gpus[0].clocks.sm.application"},
                        Case{fixture("not_json.json"), "not valid JSON"},
                        Case{dir_.path() + "/missing.json", "No such file"}}) {
    for (const auto& args : {std::vector<std::string>{"diff", c.file, good},
                             std::vector<std::string>{"diff", good, c.file},
                             std::vector<std::string>{"check", "--against", c.file}}) {
      auto result = run(args, view());
      EXPECT_EQ(result.exit_code, 2) << c.file << ": " << result.err;
      EXPECT_NE(result.err.find(c.file), std::string::npos) << result.err;
      EXPECT_NE(result.err.find(c.says), std::string::npos) << result.err;
      EXPECT_EQ(result.out, "");
    }
  }
  // An old snapshot with fields missing is compared, never refused.
  auto old = run({"diff", fixture("old_partial.json")}, view());
  EXPECT_TRUE(old.exit_code == 0 || old.exit_code == 1) << old.err;
  EXPECT_NE(old.out.find("unknown →"), std::string::npos) << old.out;
}

// Issue 21 item 7: an input that is a FIFO (or a link) made check --against and diff wait for a
// writer forever: inputs are regular files, opened O_NONBLOCK|O_NOFOLLOW, size-checked.
// Failed before the fix: the FIFO case ran into run_command's 10 s limit (exit 137).
TEST_F(SnapshotTest, InputsMustBeRegularFilesAndNeverBlock) {
  const std::string good = snapshot_file(view());
  const std::string fifo = dir_.path() + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string link = dir_.path() + "/link.json";
  ASSERT_EQ(::symlink(good.c_str(), link.c_str()), 0);
  for (const auto& [input, says] : {std::pair<std::string, std::string>{fifo, "not a regular file"},
                                    {link, "is a symbolic link"},
                                    {"/dev/zero", "not a regular file"}}) {
    for (const auto& args : {std::vector<std::string>{"diff", input, good},
                             std::vector<std::string>{"check", "--against", input},
                             std::vector<std::string>{"plot", input}}) {
      std::vector<std::string> argv = {GPUCLEAN_BINARY};
      argv.insert(argv.end(), args.begin(), args.end());
      if (args[0] != "plot") argv.insert(argv.end(), {"--device-glob", held_});
      auto result = run_command(argv, std::chrono::seconds(10));
      EXPECT_EQ(result.exit_code, 2) << args[0] << " " << input << ": " << result.err;
      EXPECT_NE(result.err.find(says), std::string::npos) << result.err;
    }
  }
  // Negative control: the file the link points at is read as usual.
  EXPECT_EQ(run({"diff", good, good}, view()).exit_code, 0);
}

TEST_F(SnapshotTest, NvmlFailingIsExitThree) {
  const std::string baseline = snapshot_file(view());
  const std::string dir = dir_.path() + "/failing.json";
  std::ofstream(dir) << json{{"fail_query", "GPU 0: nvmlDeviceGetMemoryInfo: GPU is lost"}}.dump();
  EXPECT_EQ(run({"snapshot"}, dir).exit_code, 3);
  EXPECT_EQ(run({"diff", baseline}, dir).exit_code, 3);
  EXPECT_EQ(run({"check", "--against", baseline}, dir).exit_code, 3);
}

// Issue 33, finding 6: root running `diff DIR/file` where DIR is a symbolic link another user
// made (to a directory of root's) read the file it leads to, and the parse error quoted the
// file's start. Before the fix (the binary of 057497e): exit 2 with "not valid JSON: [json.
// exception.parse_error.101] … last read: '"hunter2-secret"x'".
TEST_F(SnapshotTest, AnotherUsersLinkOnTheWayIsRefusedAndNoContentIsQuoted) {
  std::string why_not;
  const auto user = test_user(why_not);
  if (!user) GTEST_SKIP() << why_not;
  const std::string good = snapshot_file(view());
  const std::string secret_dir = dir_.path() + "/roots";
  ASSERT_EQ(::mkdir(secret_dir.c_str(), 0700), 0);
  std::ofstream(secret_dir + "/file.json") << "\"hunter2-secret\"x\n";
  const std::string users_link = dir_.path() + "/users-dir";
  ASSERT_EQ(::symlink(secret_dir.c_str(), users_link.c_str()), 0);
  ASSERT_EQ(::lchown(users_link.c_str(), user->uid, user->gid), 0);

  auto refused = run({"diff", users_link + "/file.json", good}, view());
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("symbolic link of user " + std::to_string(user->uid)),
            std::string::npos)
      << refused.err;
  EXPECT_EQ(refused.err.find("hunter2"), std::string::npos) << refused.err;

  // Negative control: root's own link is followed, and the file is read: the error says where
  // it is not JSON, not what it says.
  const std::string roots_link = dir_.path() + "/roots-link";
  ASSERT_EQ(::symlink(secret_dir.c_str(), roots_link.c_str()), 0);
  auto read = run({"diff", roots_link + "/file.json", good}, view());
  EXPECT_EQ(read.exit_code, 2) << read.err;
  EXPECT_NE(read.err.find("not valid JSON (a syntax error at byte"), std::string::npos) << read.err;
  EXPECT_EQ(read.err.find("hunter2"), std::string::npos) << read.err;
}

// Every record now in /dev/kmsg (O_NONBLOCK: it ends with EAGAIN), "" when it cannot be read.
std::string kernel_log_now() {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return "";
  std::string all;
  char record[8192];
  for (;;) {
    const ssize_t got = ::read(fd, record, sizeof(record));
    if (got < 0 && errno == EPIPE) continue;  // overwritten meanwhile: the next one
    if (got <= 0) break;
    all.append(record, static_cast<std::size_t>(got));
  }
  ::close(fd);
  return all;
}

TEST_F(SnapshotTest, WhatAUserWritesIntoTheKernelLogIsNoXid) {
  // Issue 48 item 8: any user can put "NVRM: Xid (" into the kernel log. Before, both records
  // below parsed as Xids (seen on f0b45f5: this test listed Xid N on PCI:0000:41:00 and Xid 8
  // on ""), and snapshot, check --against, diff and the recorder counted them.
  if (::geteuid() != 0 || kernel_log_now().empty()) GTEST_SKIP() << "needs /dev/kmsg (root)";
  const unsigned forged = 900000 + static_cast<unsigned>(::getpid()) % 10000;
  const std::string option = "NVRM: Xid (PCI:0000:41:00): " + std::to_string(forged);
  // A tmpfs mount option in a user namespace: "tmpfs: Unknown parameter '…'", facility kernel.
  run_command(
      {"/usr/bin/unshare", "-Urm", "/bin/mount", "-t", "tmpfs", "-o", option, "none", dir_.path()});
  // A process named "NVRM: Xid (): 8" (15 characters) that segfaults: "NAME[PID]: segfault …".
  run_command({"/usr/bin/python3", "-c",
               "import ctypes; ctypes.CDLL(None).prctl(15, b'NVRM: Xid (): 8', 0, 0, 0); "
               "ctypes.string_at(0)"});
  const std::string log = kernel_log_now();
  // The trap is set: the forged text is in the kernel's log (the segfault line only where the
  // kernel logs unhandled signals and its rate limit let it through).
  ASSERT_NE(log.find("Unknown parameter '" + option), std::string::npos)
      << "the tmpfs record is not in /dev/kmsg";
  const bool segfault_logged = log.find("NVRM: Xid (): 8[") != std::string::npos;

  const json doc = json::parse(run({"snapshot"}, view()).out);
  ASSERT_TRUE(doc["kernel_log"]["readable"].get<bool>()) << doc["kernel_log"].dump();
  for (const json& xid : doc["kernel_log"]["xid"]) {
    EXPECT_NE(xid["xid"], forged) << "the tmpfs option is an Xid: " << xid.dump();
    if (segfault_logged) {
      EXPECT_NE(xid["device"], "") << "the segfaulting command name is an Xid: " << xid.dump();
    }
  }
}

}  // namespace
}  // namespace gpuclean::testing
