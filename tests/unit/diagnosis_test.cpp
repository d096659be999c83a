// diagnose() on plain data: every holder class, attribution, tolerance and selection. Each
// expectation has its negative control next to it (the same input minus the one fact that
// makes the difference).
#include "diagnose/diagnosis.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/units.h"

namespace gpuclean::diagnose {
namespace {

HeldFile nvidia_file(const std::string& path, bool mapped, std::optional<unsigned> minor = {}) {
  HeldFile f;
  f.path = path;
  f.fds = {10};
  f.mapped = mapped;
  f.nvidia_minor = minor;
  return f;
}

// A CUDA process: holds and maps the GPU, UVM and control files.
Holder cuda_holder(Pid pid, Pid ppid = 50, char state = 'S') {
  Holder h;
  h.process.pid = pid;
  h.process.ppid = ppid;
  h.process.state = state;
  h.process.comm = "python3";
  h.process.cmdline = {"/usr/bin/python3", "train.py"};
  h.process.user = "alice";
  h.process.threads = {{pid, state, ""}};
  h.devices = {nvidia_file("/dev/nvidia0", true, 0u), nvidia_file("/dev/nvidia-uvm", true),
               nvidia_file("/dev/nvidiactl", true)};
  return h;
}

// nvidia-smi's shape: holds the same files, maps only nvidiactl.
Holder monitor_holder(Pid pid) {
  Holder h = cuda_holder(pid);
  h.process.comm = "nvidia-smi";
  h.process.cmdline = {"nvidia-smi", "-l", "1"};
  h.devices = {nvidia_file("/dev/nvidia0", false, 0u), nvidia_file("/dev/nvidia-uvm", false),
               nvidia_file("/dev/nvidiactl", true)};
  return h;
}

Gpu gpu(unsigned index, Bytes used, std::vector<GpuProcess> processes) {
  Gpu g;
  g.index = index;
  g.name = "NVIDIA H200";
  g.minor = index;
  g.memory = GpuMemory{140 * kGiB, used, 140 * kGiB - used, 615 * kMiB};
  g.processes = std::move(processes);
  return g;
}

GpuProcess entry(Pid pid, Bytes bytes) {
  return {pid, bytes, GpuProcess::Kind::kCompute};
}

const Holder* find(const Diagnosis& d, Pid pid) {
  auto it = std::find_if(d.holders.begin(), d.holders.end(),
                         [pid](const Holder& h) { return h.process.pid == pid; });
  return it == d.holders.end() ? nullptr : &*it;
}

Input input_with(std::vector<Gpu> gpus, std::vector<Holder> holders, std::set<Pid> missing = {}) {
  Input in;
  in.gpu_view = GpuView{"580.159.04", "13.580.159.04", 13000, std::move(gpus)};
  in.holders = std::move(holders);
  in.missing_pids = std::move(missing);
  return in;
}

TEST(Diagnose, IdleGpuWithDriverReserveIsClean) {
  auto d = diagnose(input_with({gpu(0, 0, {})}, {}), {});
  EXPECT_TRUE(d.clean);
  ASSERT_EQ(d.gpus.size(), 1u);
  EXPECT_EQ(d.gpus[0].unattributed, 0u);
  // v1-style accounting counts the reserve as used: still within the default tolerance.
  EXPECT_TRUE(diagnose(input_with({gpu(0, 615 * kMiB, {})}, {}), {}).clean);
}

TEST(Diagnose, ActiveHolderIsAttributedAndInUse) {
  auto d = diagnose(
      input_with({gpu(0, 8 * kGiB + 9 * kMiB, {entry(100, 8 * kGiB)})}, {cuda_holder(100)}), {});
  EXPECT_FALSE(d.clean);
  const Holder* h = find(d, 100);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->klass, HolderClass::kActive);
  EXPECT_EQ(h->gpu_memory.at(0), 8 * kGiB);
  EXPECT_EQ(d.gpus[0].attributed, 8 * kGiB);
  EXPECT_EQ(d.gpus[0].unattributed, 9 * kMiB);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, "in-use");
  EXPECT_EQ(d.problems[0].message, "GPU 0: 8.0 GiB in use by pid 100 (python3), user alice");
}

TEST(Diagnose, OrphanMessageMatchesTheSpecsCheckLine) {
  Holder h = cuda_holder(72309, 1);
  h.process.cmdline = {"sglang::scheduler"};
  h.klass = HolderClass::kOrphan;  // as classify_from_proc says for ppid 1
  auto d = diagnose(input_with({gpu(3, 76 * kGiB, {})}, {}), {});
  Gpu g3 = gpu(3, 76 * kGiB, {entry(72309, 76 * kGiB)});
  d = diagnose(input_with({g3}, {h}), {});
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].message.substr(0, 57),
            "GPU 3: 76.0 GiB held by orphan pid 72309 (sglang::schedul");
  EXPECT_EQ(d.problems[0].fix, "gpuclean kill 72309");
}

TEST(Diagnose, DeadOwnersMemoryPassesToItsHeir) {
  // NVML names pid 442 (gone); pid 443 maps the context files but NVML does not list it.
  Holder heir = cuda_holder(443, 1);
  heir.klass = HolderClass::kOrphan;
  auto d =
      diagnose(input_with({gpu(0, 8802 * kMiB, {entry(442, 8802 * kMiB)})}, {heir}, {442}), {});
  const Holder* h = find(d, 443);
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->klass, HolderClass::kHeir);
  EXPECT_EQ(h->inherited_from, std::optional<Pid>(442));
  EXPECT_EQ(h->gpu_memory.at(0), 8802 * kMiB);
  EXPECT_EQ(d.gpus[0].unattributed, 0u);
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, "heir");
  EXPECT_EQ(d.problems[0].fix, "gpuclean kill 443");

  // Negative control: without the heir the same memory belongs to nobody visible.
  auto alone =
      diagnose(input_with({gpu(0, 8802 * kMiB, {entry(442, 8802 * kMiB)})}, {}, {442}), {});
  const Holder* foreign = find(alone, 442);
  ASSERT_NE(foreign, nullptr);
  EXPECT_EQ(foreign->klass, HolderClass::kForeign);
  EXPECT_FALSE(foreign->visible);
  EXPECT_EQ(alone.gpus[0].unattributed, 8802 * kMiB);
  EXPECT_FALSE(alone.clean);
}

TEST(Diagnose, MonitorIsNeverAProblemButTheSameFilesMappedAreAnHeir) {
  auto d = diagnose(input_with({gpu(0, 0, {})}, {monitor_holder(437)}), {});
  ASSERT_NE(find(d, 437), nullptr);
  EXPECT_EQ(find(d, 437)->klass, HolderClass::kMonitor);
  EXPECT_TRUE(d.clean);
  // Negative control: the context shape with a dead owner on the GPU is an heir.
  auto heir =
      diagnose(input_with({gpu(0, kGiB, {entry(436, kGiB)})}, {cuda_holder(437)}, {436}), {});
  EXPECT_EQ(find(heir, 437)->klass, HolderClass::kHeir);
}

TEST(Diagnose, ZombieLeaderKeepsItsClassAndItsFixKillsThePid) {
  Holder zl = cuda_holder(505, 50, 'Z');
  zl.process.threads = {{505, 'Z', ""}, {507, 'S', "futex_wait_queue"}};
  zl.process.cmdline.clear();
  zl.klass = HolderClass::kZombieLeader;
  auto d = diagnose(input_with({gpu(0, 4614 * kMiB, {entry(505, 4614 * kMiB)})}, {zl}), {});
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, "zombie-leader");
  EXPECT_EQ(d.problems[0].fix, "gpuclean kill 505");
  EXPECT_NE(d.problems[0].message.find("thread 507"), std::string::npos);
}

TEST(Diagnose, ExitedProcessNvmlStillCountsKeepsTheGpuDirty) {
  Holder dying = cuda_holder(700, 50, 'Z');
  dying.klass = HolderClass::kZombie;
  auto d = diagnose(input_with({gpu(0, 2 * kGiB, {entry(700, 2 * kGiB)})}, {dying}), {});
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, "exiting");
  // Negative control: a zombie NVML does not count is no problem at all.
  auto gone = diagnose(input_with({gpu(0, 0, {})}, {dying}), {});
  EXPECT_TRUE(gone.clean);
}

TEST(Diagnose, StuckHolderSaysOnlyAResetHelps) {
  Holder stuck = cuda_holder(600);
  stuck.process.threads = {{600, 'S', ""}, {601, 'D', "uvm_wait"}};
  stuck.klass = HolderClass::kStuck;
  auto d = diagnose(input_with({gpu(0, kGiB, {entry(600, kGiB)})}, {stuck}), {});
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, "stuck");
  EXPECT_NE(d.problems[0].message.find("uvm_wait"), std::string::npos);
  EXPECT_NE(d.problems[0].fix.find("reset"), std::string::npos);
}

TEST(Diagnose, NamespaceHiddenMemoryIsUnattributed) {
  auto d = diagnose(input_with({gpu(0, 20 * kGiB, {})}, {}), {});
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, "unattributed");
  EXPECT_EQ(d.gpus[0].unattributed, 20 * kGiB);
  // Negative control: raise the tolerance above it and it is clean.
  Options tolerant;
  tolerant.max_unattributed = 21 * kGiB;
  EXPECT_TRUE(diagnose(input_with({gpu(0, 20 * kGiB, {})}, {}), tolerant).clean);
}

TEST(Diagnose, GpuSelectionIgnoresOtherGpus) {
  auto in = [] {
    return input_with({gpu(0, 0, {}), gpu(1, 4 * kGiB, {entry(100, 4 * kGiB)})},
                      {cuda_holder(100)});
  };
  Options only0;
  only0.gpus = std::set<unsigned>{0};
  auto d0 = diagnose(in(), only0);
  EXPECT_TRUE(d0.clean);
  EXPECT_EQ(d0.gpus.size(), 1u);
  Options only1;
  only1.gpus = std::set<unsigned>{1};
  EXPECT_FALSE(diagnose(in(), only1).clean);  // negative control
}

TEST(Diagnose, IgnoredPidsAndAllowedUsersAreNotProblems) {
  auto in = [] { return input_with({gpu(0, kGiB, {entry(100, kGiB)})}, {cuda_holder(100)}); };
  Options ignore;
  ignore.ignore_pids = {100};
  EXPECT_TRUE(diagnose(in(), ignore).clean);
  Options allow;
  allow.allow_users = {"alice"};
  EXPECT_TRUE(diagnose(in(), allow).clean);
  Options other;
  other.allow_users = {"bob"};
  EXPECT_FALSE(diagnose(in(), other).clean);  // negative control
}

TEST(Diagnose, GpucleanItselfIsNeverAHolder) {
  Input in = input_with({gpu(0, 0, {})}, {cuda_holder(777)});
  in.self = 777;
  auto d = diagnose(std::move(in), {});
  EXPECT_EQ(find(d, 777), nullptr);
  EXPECT_TRUE(d.clean);
}

TEST(Diagnose, WithoutNvmlContextHoldersAreProblemsAndMonitorsAreNot) {
  Input in;
  in.holders = {cuda_holder(100), monitor_holder(101)};
  auto d = diagnose(std::move(in), {});
  EXPECT_TRUE(d.gpus.empty());
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].pid, std::optional<Pid>(100));
  EXPECT_EQ(d.problems[0].kind, "holder");
  EXPECT_EQ(find(d, 101)->klass, HolderClass::kMonitor);
}

TEST(ShortName, ProcessTitleOrBasenameOrComm) {
  ProcessInfo p;
  p.comm = "python3";
  EXPECT_EQ(short_name(p), "python3");
  p.cmdline = {"/opt/venv/bin/python3", "x.py"};
  EXPECT_EQ(short_name(p), "python3");
  p.cmdline = {"sglang::scheduler"};
  EXPECT_EQ(short_name(p), "sglang::scheduler");
}

}  // namespace
}  // namespace gpuclean::diagnose

namespace gpuclean {
namespace {

TEST(Units, BytesAndAges) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(615 * kMiB), "615 MiB");
  EXPECT_EQ(format_bytes(76 * kGiB), "76.0 GiB");
  EXPECT_EQ(format_bytes(9133096960ull), "8.5 GiB");
  EXPECT_EQ(format_bytes(150754820096ull), "140.4 GiB");
  EXPECT_EQ(format_age(-5), "0s");
  EXPECT_EQ(format_age(59), "59s");
  EXPECT_EQ(format_age(3 * 3600 + 5 * 60), "3h 5m");
  EXPECT_EQ(format_age(2 * 86400 + 4 * 3600), "2d 4h");
}

}  // namespace
}  // namespace gpuclean
