// AMD and Intel GPUs from the kernel's DRM interfaces (issue 39): the fdinfo parser against
// each driver's documented output (docs/facts.md, "DRM clients"), sysfs's GPUs, how clients'
// memory becomes per-GPU process lists, and the display holders the diagnosis leaves alone.
#include <gtest/gtest.h>

#include "../integration/drm_fixture.h"
#include "diagnose/diagnosis.h"
#include "diagnose/gpu_count.h"
#include "diagnose/gpu_return.h"
#include "diagnose/kill_check.h"
#include "procfs/drm_devices.h"
#include "procfs/drm_fdinfo.h"
#include "procfs/drm_view.h"

namespace gpuclean {
namespace {

using procfs::parse_drm_fdinfo;
constexpr Bytes kKiB = 1024;
constexpr Bytes kMiB = 1024 * kKiB;

TEST(DrmFdinfoTest, Amdgpu519WritesDrmMemoryInKiB) {
  // amdgpu 5.19+: drm-memory-<region>, and a space before the tab on gtt and cpu.
  auto client = parse_drm_fdinfo(
      "pos:\t0\nflags:\t02100002\nmnt_id:\t25\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:c3:00.0\n"
      "drm-client-id:\t42\ndrm-memory-vram:\t1048576 KiB\ndrm-memory-gtt: \t2048 KiB\n"
      "drm-memory-cpu: \t0 KiB\ndrm-engine-gfx:\t12345 ns\n");
  ASSERT_TRUE(client);
  EXPECT_EQ(client->driver, "amdgpu");
  EXPECT_EQ(client->pdev, "0000:c3:00.0");
  EXPECT_EQ(client->client_id, 42u);
  EXPECT_EQ(client->vram, 1048576 * kKiB);  // gtt and cpu are system memory: not counted
}

TEST(DrmFdinfoTest, ResidentIsPreferredOverTheOlderAndTotalKeys) {
  // amdgpu 6.13+ writes both forms; drm_print_memory_stats (6.5+) writes total and resident.
  auto client = parse_drm_fdinfo(
      "drm-driver:\tamdgpu\ndrm-client-id:\t7\ndrm-total-vram:\t900 MiB\n"
      "drm-resident-vram:\t512 MiB\ndrm-memory-vram:\t600 MiB\ndrm-total-gtt:\t8 MiB\n");
  ASSERT_TRUE(client);
  EXPECT_EQ(client->vram, 512 * kMiB);
  // Only a total: that is the figure there is.
  client = parse_drm_fdinfo("drm-driver:\txe\ndrm-total-vram0:\t64 MiB\n");
  ASSERT_TRUE(client);
  EXPECT_EQ(client->vram, 64 * kMiB);
}

TEST(DrmFdinfoTest, DeviceLocalRegionsOfEachDriverAreSummed) {
  // xe: vram0 and vram1 (two tiles) are device memory; system, gtt and stolen are not.
  auto xe = parse_drm_fdinfo(
      "drm-driver:\txe\ndrm-pdev:\t0000:03:00.0\ndrm-client-id:\t3\n"
      "drm-total-system:\t4 MiB\ndrm-resident-system:\t4 MiB\ndrm-total-gtt:\t2 MiB\n"
      "drm-resident-vram0:\t100 MiB\ndrm-resident-vram1:\t28 MiB\ndrm-resident-stolen:\t1 MiB\n");
  ASSERT_TRUE(xe);
  EXPECT_EQ(xe->vram, 128 * kMiB);
  // i915: local0 is device memory; system0 and stolen-local0 are not. Bytes without a unit.
  auto i915 = parse_drm_fdinfo(
      "drm-driver:\ti915\ndrm-pdev:\t0000:00:02.0\ndrm-client-id:\t9\n"
      "drm-total-system0:\t8388608\ndrm-resident-local0:\t4096\ndrm-resident-stolen-local0:\t7\n");
  ASSERT_TRUE(i915);
  EXPECT_EQ(i915->vram, Bytes{4096});
  EXPECT_TRUE(procfs::is_device_local_region("local1"));
  EXPECT_FALSE(procfs::is_device_local_region("local"));
  EXPECT_FALSE(procfs::is_device_local_region("vramx"));
  EXPECT_FALSE(procfs::is_device_local_region("stolen-local0"));
}

TEST(DrmFdinfoTest, Amdgpu514To518WroteItsOwnKeysInKilobytes) {
  // Before the common keys: pdev, pasid and "vram mem: N kB" (N = bytes / 1024), no client id.
  auto client = parse_drm_fdinfo(
      "pos:\t0\nflags:\t02100002\nmnt_id:\t25\npdev:\t0000:0b:00.0\npasid:\t32770\n"
      "vram mem:\t262144 kB\ngtt mem:\t4096 kB\ncpu mem:\t0 kB\ngfx0:\t12.50%\n");
  ASSERT_TRUE(client);
  EXPECT_EQ(client->pdev, "0000:0b:00.0");
  EXPECT_FALSE(client->client_id);
  EXPECT_EQ(client->vram, 262144 * kKiB);
}

TEST(DrmFdinfoTest, AnythingElseIsNoClientOrNoFigure) {
  // A plain file's fdinfo, or /dev/kfd's: no client.
  EXPECT_FALSE(parse_drm_fdinfo("pos:\t0\nflags:\t02100002\nmnt_id:\t25\n"));
  EXPECT_FALSE(parse_drm_fdinfo(""));
  // A client without memory keys (a driver without memory stats): a client, VRAM unknown.
  auto bare = parse_drm_fdinfo("drm-driver:\tpanthor\ndrm-client-id:\t1\n");
  ASSERT_TRUE(bare);
  EXPECT_FALSE(bare->vram);
  // A figure the kernel cannot have written is not believed: an unknown unit, no digits, or
  // a sum past 2^64.
  EXPECT_FALSE(parse_drm_fdinfo("drm-driver:\tamdgpu\ndrm-memory-vram:\t12 GiB\n")->vram);
  EXPECT_FALSE(parse_drm_fdinfo("drm-driver:\tamdgpu\ndrm-memory-vram:\tKiB\n")->vram);
  EXPECT_FALSE(
      parse_drm_fdinfo("drm-driver:\tamdgpu\ndrm-memory-vram:\t18446744073709551615 KiB\n")->vram);
  EXPECT_FALSE(parse_drm_fdinfo("drm-driver:\txe\ndrm-total-vram0:\t18446744073709551615\n"
                                "drm-total-vram1:\t1\n")
                   ->vram);
  // A client id that is not a number is no id (its memory is then counted per descriptor).
  EXPECT_FALSE(parse_drm_fdinfo("drm-driver:\tamdgpu\ndrm-client-id:\t-3\n")->client_id);
}

class DrmDevicesTest : public ::testing::Test {
 protected:
  testing::DrmFixture machine_;
  procfs::DrmRoots roots() const { return {machine_.sys().string(), machine_.dev().string()}; }
};

TEST_F(DrmDevicesTest, ListsRenderCapableGpusButNotNvidiasOrABmcConsole) {
  machine_.add_gpu("0000:c3:00.0", "amdgpu", "0x1002",
                   {{"card1", "226:1"}, {"card1-DP-1", "0:0"}, {"renderD129", "226:129"}},
                   std::pair{Bytes{192} << 30, Bytes{20} << 30}, "AMD Instinct MI300X");
  machine_.add_gpu("0000:03:00.0", "xe", "0x8086", {{"card2", "226:2"}, {"renderD130", "226:130"}});
  // nvidia-drm's nodes: NVML's GPU. ast: a display controller without a render node.
  machine_.add_gpu("0000:41:00.0", "nvidia", "0x10de",
                   {{"card3", "226:3"}, {"renderD131", "226:131"}});
  machine_.add_gpu("0000:02:00.0", "ast", "0x1a03", {{"card0", "226:0"}});
  // A VM's virtio-gpu has a render node, but no memory of a GPU to account.
  machine_.add_gpu("0000:00:05.0", "virtio-pci", "0x1af4",
                   {{"card4", "226:4"}, {"renderD132", "226:132"}});
  machine_.add_kfd();

  const auto gpus = procfs::find_drm_gpus(roots());
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].pci_address, "0000:03:00.0");  // PCI address order
  EXPECT_EQ(gpus[0].driver, "xe");
  EXPECT_EQ(gpus[0].name, "Intel GPU 0x74a1");
  EXPECT_FALSE(procfs::read_drm_memory(gpus[0]));  // xe gives no used total
  EXPECT_EQ(gpus[1].name, "AMD Instinct MI300X");
  ASSERT_EQ(gpus[1].nodes.size(), 2u);  // the connector is no node
  EXPECT_EQ(gpus[1].nodes[0].drm->kind, DrmNode::Kind::kRender);
  EXPECT_EQ(gpus[1].nodes[1].drm->kind, DrmNode::Kind::kPrimary);
  EXPECT_EQ(gpus[1].nodes[1].drm->pci_address, "0000:c3:00.0");
  auto memory = procfs::read_drm_memory(gpus[1]);
  ASSERT_TRUE(memory);
  EXPECT_EQ(memory->used, Bytes{20} << 30);
  EXPECT_EQ(memory->free, Bytes{172} << 30);
  auto kfd = procfs::find_kfd(roots(), gpus);
  ASSERT_TRUE(kfd);
  EXPECT_EQ(kfd->drm->kind, DrmNode::Kind::kKfd);
}

TEST_F(DrmDevicesTest, NoDrmClassIsNoGpuAndKfdNeedsAnAmdGpu) {
  machine_.add_kfd();
  EXPECT_TRUE(procfs::find_drm_gpus(roots()).empty());
  EXPECT_TRUE(procfs::find_drm_gpus({"/nonexistent", "/nonexistent"}).empty());
  EXPECT_FALSE(procfs::find_kfd(roots(), {}));
}

TEST_F(DrmDevicesTest, ANodeWithOtherDeviceNumbersThanSysfsSaysIsNotTheGpus) {
  // /dev/dri/renderD129 is a character device, but /dev/null's (1:3), not sysfs's 226:129:
  // it stands for nothing, and a GPU left without a render node is no GPU.
  machine_.add_gpu("0000:c3:00.0", "amdgpu", "0x1002", {{"renderD129", "226:129"}});
  machine_.add_gpu("0000:c4:00.0", "amdgpu", "0x1002", {{"renderD130", "226:130"}});
  std::filesystem::remove(machine_.dev() / "dri/renderD129");
  std::filesystem::create_symlink("/dev/null", machine_.dev() / "dri/renderD129");
  const auto gpus = procfs::find_drm_gpus(roots());
  ASSERT_EQ(gpus.size(), 1u);
  EXPECT_EQ(gpus[0].pci_address, "0000:c4:00.0");  // the plain stand-in of the test root
}

// A holder of `files` (each a DRM node of `address` with these clients).
Holder drm_holder(Pid pid, DrmNode::Kind kind, const std::string& address,
                  std::vector<DrmClient> clients) {
  Holder h;
  h.process.pid = pid;
  h.process.ppid = 100;
  h.process.state = 'S';
  h.process.comm = "worker";
  h.process.threads = {ThreadInfo{pid, 'S', "", false}};
  HeldFile file;
  file.path = kind == DrmNode::Kind::kRender ? "/dev/dri/renderD128" : "/dev/dri/card0";
  file.fds = {5};
  file.drm = DrmNode{kind, address};
  file.drm_clients = std::move(clients);
  h.devices.push_back(std::move(file));
  return h;
}

DrmClient client(const std::string& pdev, std::optional<std::uint64_t> id, Bytes vram) {
  return DrmClient{"amdgpu", pdev, id, vram};
}

TEST(DrmViewTest, ClientsBecomeProcessListsCountingEachClientOnce) {
  std::vector<procfs::DrmGpu> gpus(2);
  gpus[0].pci_address = "0000:0a:00.0";
  gpus[0].driver = "amdgpu";
  gpus[1].pci_address = "0000:0b:00.0";
  gpus[1].driver = "amdgpu";
  GpuMemory memory{Bytes{64} << 30, Bytes{10} << 30, Bytes{54} << 30, std::nullopt};
  std::vector<Holder> holders;
  // 300 and 200 share client 5 (inherited over fork): counted once, under 200.
  holders.push_back(drm_holder(300, DrmNode::Kind::kRender, "0000:0a:00.0",
                               {client("0000:0a:00.0", 5, 4 * kMiB)}));
  holders.push_back(drm_holder(200, DrmNode::Kind::kRender, "0000:0a:00.0",
                               {client("0000:0a:00.0", 5, 4 * kMiB), client("", 6, 1 * kMiB)}));
  // drm-pdev decides the GPU, not the node it was read through; no VRAM: not listed.
  holders.push_back(drm_holder(400, DrmNode::Kind::kRender, "0000:0a:00.0",
                               {client("0000:0b:00.0", 1, 8 * kMiB), client("", 2, 0)}));
  const auto view = procfs::drm_gpus(gpus, {memory, std::nullopt}, holders, 2);
  ASSERT_EQ(view.size(), 2u);
  EXPECT_EQ(view[0].index, 2u);  // after NVML's two
  EXPECT_EQ(view[0].source, Gpu::Source::kDrm);
  EXPECT_EQ(view[0].memory->used, Bytes{10} << 30);
  EXPECT_FALSE(view[1].memory);
  ASSERT_EQ(view[0].processes.size(), 1u);
  EXPECT_EQ(view[0].processes[0].pid, 200);
  EXPECT_EQ(view[0].processes[0].used_memory, 5 * kMiB);
  ASSERT_EQ(view[1].processes.size(), 1u);
  EXPECT_EQ(view[1].processes[0].pid, 400);
  EXPECT_EQ(view[1].processes[0].used_memory, 8 * kMiB);
}

// The diagnosis of one amdgpu GPU with these holders, through the view DRM builds.
Diagnosis diagnose_drm(std::vector<Holder> holders) {
  std::vector<procfs::DrmGpu> gpus(1);
  gpus[0].pci_address = "0000:0a:00.0";
  gpus[0].driver = "amdgpu";
  GpuMemory memory{Bytes{64} << 30, Bytes{9} << 30, Bytes{55} << 30, std::nullopt};
  diagnose::Input input;
  input.gpu_view.emplace();
  input.gpu_view->gpus = procfs::drm_gpus(gpus, {memory}, holders, 0);
  input.holders = std::move(holders);
  return diagnose::diagnose(std::move(input), diagnose::Options{});
}

TEST(DrmDiagnosisTest, ADisplayServerIsAMonitorAndAnOrphanedComputeClientIsAProblem) {
  Holder display = drm_holder(600, DrmNode::Kind::kPrimary, "0000:0a:00.0",
                              {client("0000:0a:00.0", 3, 256 * kMiB)});
  Holder orphan = drm_holder(500, DrmNode::Kind::kRender, "0000:0a:00.0",
                             {client("0000:0a:00.0", 7, Bytes{8} << 30)});
  orphan.process.ppid = 1;
  orphan.klass = HolderClass::kOrphan;
  Diagnosis d = diagnose_drm({display, orphan});
  ASSERT_EQ(d.holders.size(), 2u);
  EXPECT_EQ(d.holders[0].klass, HolderClass::kOrphan);
  EXPECT_EQ(d.holders[1].klass, HolderClass::kMonitor);
  EXPECT_EQ(d.gpus[0].attributed, (Bytes{8} << 30) + 256 * kMiB);  // the display's counts too
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, ProblemKind::kOrphan);
  EXPECT_EQ(d.problems[0].pid, 500);
  EXPECT_EQ(d.problems[0].bytes, Bytes{8} << 30);

  // Negative control: the same process holding a render node as well does compute: in use.
  display.devices.push_back(drm_holder(600, DrmNode::Kind::kRender, "0000:0a:00.0", {}).devices[0]);
  d = diagnose_drm({display});
  EXPECT_EQ(d.holders[0].klass, HolderClass::kActive);
  ASSERT_FALSE(d.problems.empty());
  EXPECT_EQ(d.problems[0].kind, ProblemKind::kInUse);
}

TEST(DrmDiagnosisTest, DeviceMemoryThroughThePrimaryNodeIsNoDisplaysJob) {
  // Issue 48 item 6: a process that holds only /dev/dri/cardN was a display server by rule: an
  // orphan with 60 GiB in its fdinfo was a monitor, the GPU CLEAN, and the kill selectors and
  // the Epilog skipped it (this test's first half failed so on f0b45f5).
  Holder orphan = drm_holder(700, DrmNode::Kind::kPrimary, "0000:0a:00.0",
                             {client("0000:0a:00.0", 9, Bytes{60} << 30)});
  orphan.process.ppid = 1;
  orphan.klass = HolderClass::kOrphan;
  Diagnosis d = diagnose_drm({orphan});
  ASSERT_EQ(d.holders.size(), 1u);
  EXPECT_EQ(d.holders[0].klass, HolderClass::kOrphan);
  ASSERT_FALSE(d.problems.empty());
  EXPECT_EQ(d.problems[0].kind, ProblemKind::kOrphan);
  EXPECT_FALSE(d.clean);
  // A live process with more than a display's share is in use, not a monitor.
  Holder big = drm_holder(701, DrmNode::Kind::kPrimary, "0000:0a:00.0",
                          {client("0000:0a:00.0", 10, Bytes{8} << 30)});
  d = diagnose_drm({big});
  EXPECT_EQ(d.holders[0].klass, HolderClass::kActive);
  EXPECT_EQ(d.problems[0].kind, ProblemKind::kInUse);

  // Negative controls: an orphaned console with no device-local memory, and a live display
  // server with its scan-out buffers, are monitors.
  Holder console = drm_holder(702, DrmNode::Kind::kPrimary, "0000:0a:00.0", {});
  console.process.ppid = 1;
  console.klass = HolderClass::kOrphan;
  Holder display = drm_holder(703, DrmNode::Kind::kPrimary, "0000:0a:00.0",
                              {client("0000:0a:00.0", 11, 256 * kMiB)});
  d = diagnose_drm({console, display});
  ASSERT_EQ(d.holders.size(), 2u);
  EXPECT_EQ(d.holders[0].klass, HolderClass::kMonitor);
  EXPECT_EQ(d.holders[1].klass, HolderClass::kMonitor);
}

TEST(DrmDiagnosisTest, UnattributedMemoryOfADrmGpuNamesItsDriverNotNvidiaSmi) {
  Diagnosis d = diagnose_drm({});
  ASSERT_EQ(d.problems.size(), 1u);
  EXPECT_EQ(d.problems[0].kind, ProblemKind::kUnattributed);
  EXPECT_NE(d.problems[0].fix.find("amdgpu, 0000:0a:00.0"), std::string::npos) << d.problems[0].fix;
  EXPECT_EQ(d.problems[0].fix.find("nvidia-smi"), std::string::npos);
}

}  // namespace
}  // namespace gpuclean

namespace gpuclean {
namespace {

// kill's verification of an AMD GPU's memory (collect/kill_look.h polls the view; these are
// the pure judgements it makes), with the views built as Gatherer::query_gpu_view builds them.
GpuView drm_view_of(const std::vector<Holder>& holders, Bytes used) {
  std::vector<procfs::DrmGpu> gpus(1);
  gpus[0].pci_address = "0000:0a:00.0";
  gpus[0].driver = "amdgpu";
  GpuView view;
  view.gpus = procfs::drm_gpus(
      gpus, {GpuMemory{Bytes{64} << 30, used, (Bytes{64} << 30) - used, std::nullopt}}, holders, 0);
  return view;
}

TEST(DrmKillCheckTest, ATargetsMemoryIsListedUntilItsClientsAreGone) {
  const Holder target = drm_holder(500, DrmNode::Kind::kRender, "0000:0a:00.0",
                                   {client("0000:0a:00.0", 7, Bytes{8} << 30)});
  const std::set<Pid> listed{500};
  diagnose::TargetMemory before =
      diagnose::target_memory(drm_view_of({target}, Bytes{8} << 30), listed);
  ASSERT_EQ(before.lines.size(), 1u);
  EXPECT_EQ(before.lines[0], "GPU 0: 8.0 GiB still listed for pid 500");
  // Gone from /proc: no descriptor, no client, nothing listed.
  EXPECT_TRUE(diagnose::target_memory(drm_view_of({}, 0), listed).empty());
}

TEST(DrmKillCheckTest, AClientSharedWithAProcessThatWasNotATargetIsStillHeld) {
  // 500 (the target) and 501 share client 7 (fork): the memory is listed under 500 before;
  // once 500 is gone, 501 holds it — kill must say so, not "memory back".
  Holder child = drm_holder(501, DrmNode::Kind::kRender, "0000:0a:00.0",
                            {client("0000:0a:00.0", 7, Bytes{8} << 30)});
  child.process.ppid = 1;
  child.klass = HolderClass::kOrphan;
  const GpuView after_view = drm_view_of({child}, Bytes{8} << 30);
  EXPECT_TRUE(diagnose::target_memory(after_view, {500}).empty());
  diagnose::Input input;
  input.gpu_view = after_view;
  input.holders = {child};
  const Diagnosis after = diagnose::diagnose(std::move(input), diagnose::Options{});
  KillLeft left;
  diagnose::add_others(after, {500}, {}, diagnose::Options{}.max_unattributed, left);
  ASSERT_EQ(left.still_held.size(), 1u);
  EXPECT_NE(left.still_held[0].find("pid 501"), std::string::npos) << left.still_held[0];
}

TEST(DrmKillCheckTest, WithoutNvmlAnAmdGpusMemoryIsStillVerified) {
  using diagnose::memory_check;
  EXPECT_EQ(memory_check(NvmlState::kAbsent, true, NvmlState::kAbsent, true),
            MemoryCheck::kVerified);
  // Negative control: no DRM GPU, no NVML: not checked, as before.
  EXPECT_EQ(memory_check(NvmlState::kAbsent, true, NvmlState::kAbsent, false),
            MemoryCheck::kNotChecked);
  EXPECT_EQ(memory_check(NvmlState::kAbsent, false, NvmlState::kAbsent, true),
            MemoryCheck::kFailed);
  // NVML failing on a mixed machine leaves the NVIDIA GPUs unknown: failed.
  EXPECT_EQ(memory_check(NvmlState::kFailed, true, NvmlState::kFailed, true), MemoryCheck::kFailed);
  std::optional<GpuView> view = drm_view_of({}, 0);
  EXPECT_TRUE(diagnose::has_drm_gpus(view));
  view->gpus[0].source = Gpu::Source::kNvml;
  EXPECT_FALSE(diagnose::has_drm_gpus(view));
  EXPECT_FALSE(diagnose::has_drm_gpus(std::nullopt));
  // Selecting by GPU: NVML, or DRM GPUs without NVML; never when NVML failed.
  EXPECT_TRUE(diagnose::gpu_selection_known(NvmlState::kPresent, std::nullopt));
  EXPECT_FALSE(diagnose::gpu_selection_known(NvmlState::kAbsent, view));
  view->gpus[0].source = Gpu::Source::kDrm;
  EXPECT_TRUE(diagnose::gpu_selection_known(NvmlState::kAbsent, view));
  EXPECT_FALSE(diagnose::gpu_selection_known(NvmlState::kFailed, view));
}

}  // namespace
}  // namespace gpuclean

namespace gpuclean {
namespace {

// run's verification of an AMD GPU (collect/run_gpu_watch.h takes the looks; these are its pure
// judgements), with the views built from clients as the gatherer builds them.
TEST(DrmRunCheckTest, AnAmdGpuIsBackWhenTheRunsClientsAreGoneAndNotBeforeThat) {
  const Holder other = drm_holder(900, DrmNode::Kind::kRender, "0000:0a:00.0",
                                  {client("0000:0a:00.0", 3, Bytes{2} << 30)});
  const Holder worker = drm_holder(1000, DrmNode::Kind::kRender, "0000:0a:00.0",
                                   {client("0000:0a:00.0", 8, Bytes{6} << 30)});
  // Before the run: another job's 2 GiB (and the run's worker racing ahead with 6 GiB).
  const GpuView before = drm_view_of({other, worker}, Bytes{8} << 30);
  const auto baseline = diagnose::baseline_of(before.gpus[0], {1000});
  ASSERT_TRUE(baseline);
  EXPECT_EQ(baseline->used, Bytes{2} << 30);
  // A process of the run still holds its client: not back, whatever the used figure says.
  Holder escaped = worker;
  escaped.process.pid = 1001;
  diagnose::RunPids pids{{1000, 1001}, {900}};
  auto judged = diagnose::judge_return(*baseline,
                                       drm_view_of({other, escaped}, Bytes{8} << 30).gpus[0], pids);
  ASSERT_TRUE(judged);
  EXPECT_FALSE(judged->back) << judged->note;
  EXPECT_EQ(judged->note, "process(es) of the run still hold a client of it: 1001");
  // Its clients gone and the used total back at the level: back.
  judged = diagnose::judge_return(*baseline, drm_view_of({other}, Bytes{2} << 30).gpus[0], pids);
  ASSERT_TRUE(judged);
  EXPECT_TRUE(judged->back) << judged->note;
  // The clients gone but 6 GiB still used, that nobody accounts for: not back.
  judged = diagnose::judge_return(*baseline, drm_view_of({other}, Bytes{8} << 30).gpus[0], pids);
  ASSERT_TRUE(judged);
  EXPECT_FALSE(judged->back) << judged->note;
}

}  // namespace
}  // namespace gpuclean

#include "collect/gather.h"

namespace gpuclean {
namespace {

// "Never a verdict beyond what was seen": with NVML answering, the processes a non-root scan
// could not read decide nothing, since NVML counts every GPU's memory. An i915 or xe GPU has no
// used total: what an unread process holds there is seen nowhere else, so they decide again.
TEST(DrmUnseenTest, UnreadProcessesDecideWhenADrmGpuHasNoUsedTotal) {
  collect::Gathered gathered;
  gathered.nvml_state = NvmlState::kPresent;
  gathered.stats.denied = 1;
  gathered.stats.denied_pids = {4242};
  gathered.input.gpu_view.emplace();
  gathered.input.gpu_view->gpus.resize(2);
  Gpu& xe = gathered.input.gpu_view->gpus[1];
  xe.index = 1;
  xe.source = Gpu::Source::kDrm;
  xe.driver = "xe";
  EXPECT_TRUE(collect::unseen_in(gathered).decides);
  // Negative control: with amdgpu's used total, memory nobody accounts for shows as
  // unattributed, as NVML's does: the unread process decides nothing.
  xe.memory = GpuMemory{Bytes{64} << 30, Bytes{1} << 30, Bytes{63} << 30, std::nullopt};
  EXPECT_FALSE(collect::unseen_in(gathered).decides);
}

}  // namespace
}  // namespace gpuclean
