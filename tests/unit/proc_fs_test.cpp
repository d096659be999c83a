// ProcFs and the holder scan over the fixture tree tests/fixtures/proc/mixed (see its
// README.md for what each process there is).
#include "procfs/proc_fs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "procfs/holder_scan.h"

namespace gpuclean::procfs {
namespace {

const std::string kMixed = std::string(GPUCLEAN_FIXTURES) + "/proc/mixed";

ProcFs open_fixture(const std::string& root = kMixed) {
  auto proc = ProcFs::open(root);
  EXPECT_TRUE(proc.ok()) << proc.error().message();
  return std::move(proc).value();
}

TEST(ProcFs, ListsOnlyNumericEntriesAscending) {
  auto pids = open_fixture().list_pids();
  ASSERT_TRUE(pids.ok());
  EXPECT_EQ(*pids, (std::vector<Pid>{2, 100, 200, 300, 400, 500}));
}

TEST(ProcFs, MissingRootIsAnError) {
  auto proc = ProcFs::open(kMixed + "/no-such-dir");
  ASSERT_FALSE(proc.ok());
  EXPECT_EQ(proc.error().errnum, ENOENT);
}

TEST(ProcFs, ReadsAFullRecord) {
  ProcFs proc = open_fixture();
  auto p = proc.read_process(100);
  ASSERT_TRUE(p.ok()) << p.error().message();
  EXPECT_EQ(p->comm, "python3");
  EXPECT_EQ(p->ppid, 1);
  EXPECT_EQ(p->cmdline,
            (std::vector<std::string>{"python3", "-m", "sglang.launch_server", "--tp", "4"}));
  ASSERT_TRUE(p->uid.has_value());
  EXPECT_EQ(*p->uid, 1001u);
  EXPECT_EQ(p->cgroup, std::optional<std::string>("/user.slice/user-1000.slice/session-3.scope"));
  ASSERT_EQ(p->threads.size(), 2u);
  EXPECT_EQ(p->threads[0].tid, 100);  // leader first
  EXPECT_EQ(p->threads[0].wchan, "do_epoll_wait");
  EXPECT_EQ(p->threads[1].state, 'D');
  EXPECT_EQ(p->threads[1].wchan, "uvm_wait");
  ASSERT_TRUE(p->start_time.has_value());
  EXPECT_NEAR(*p->start_time, 1764500000.0 + 12345.0 / 100.0, 1e-6);
  EXPECT_FALSE(p->kernel_thread);
}

TEST(ProcFs, CommWithParenthesesAndNamespace) {
  auto p = open_fixture().read_process(200);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->comm, "a b) R 1 (x");
  EXPECT_EQ(p->state, 'S');
  EXPECT_EQ(p->ppid, 77);
  EXPECT_EQ(p->nspid, (std::vector<Pid>{200, 1}));
  EXPECT_TRUE(p->cmdline.empty());
  ASSERT_EQ(p->threads.size(), 1u);
  EXPECT_EQ(p->threads[0].wchan, "");  // "0" means not waiting
}

TEST(ProcFs, TruncatedStatIsAnErrorNotACrash) {
  auto p = open_fixture().read_process(300);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("300"), std::string::npos);
}

TEST(ProcFs, VanishedProcessIsReportedAsSuch) {
  auto p = open_fixture().read_process(999);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(p.error().is_vanished());
}

TEST(ProcFs, NonUtf8ArgvIsKeptByteForByte) {
  auto p = open_fixture().read_process(400);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->cmdline.size(), 3u);
  EXPECT_EQ(p->cmdline[1], "\xff\xfe\x1b[31mred");
  EXPECT_EQ(p->cmdline[2], "a b");
}

TEST(ProcFs, KernelThreadIsFlagged) {
  auto p = open_fixture().read_process(2);
  ASSERT_TRUE(p.ok());
  EXPECT_TRUE(p->kernel_thread);
}

TEST(ProcFs, ZombieLeaderThreads) {
  auto p = open_fixture().read_process(500);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->state, 'Z');
  ASSERT_EQ(p->threads.size(), 2u);
  EXPECT_EQ(p->threads[1].tid, 507);
  EXPECT_EQ(p->threads[1].state, 'S');
}

TEST(ProcFs, HugeCmdlineIsReadWhole) {
  // Built at test time: a 300 KiB argv would bloat the repository for no gain.
  const auto root = std::filesystem::temp_directory_path() / "gpuclean-huge-cmdline";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root / "42" / "task" / "42");
  std::ofstream(root / "42" / "stat")
      << "42 (big) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0\n";
  std::string argv = "prog";
  argv += '\0';
  argv += std::string(300 * 1024, 'z');
  argv += '\0';
  std::ofstream(root / "42" / "cmdline", std::ios::binary) << argv;
  auto proc = ProcFs::open(root.string());
  ASSERT_TRUE(proc.ok());
  auto p = proc->read_process(42);
  ASSERT_TRUE(p.ok()) << p.error().message();
  ASSERT_EQ(p->cmdline.size(), 2u);
  EXPECT_EQ(p->cmdline[1].size(), 300u * 1024u);
  std::filesystem::remove_all(root);
}

std::vector<DeviceFile> nvidia_files() {
  return {{"/dev/nvidia0", 0u}, {"/dev/nvidiactl", std::nullopt}};
}

const FileHolding* holding_of(const HolderScan& scan, Pid pid) {
  auto it = std::find_if(scan.holdings.begin(), scan.holdings.end(),
                         [pid](const FileHolding& h) { return h.pid == pid; });
  return it == scan.holdings.end() ? nullptr : &*it;
}

TEST(HolderScan, FindsFdAndMapsHoldersIncludingZombieLeaders) {
  ProcFs proc = open_fixture();
  const auto files = nvidia_files();
  for (unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(threads);
    HolderScan scan = scan_holders(proc, files, {.threads = threads});
    EXPECT_EQ(scan.stats.processes, 6u);

    std::vector<Pid> pids;
    for (const auto& h : scan.holdings) pids.push_back(h.pid);
    EXPECT_EQ(pids, (std::vector<Pid>{100, 200, 500}));

    const FileHolding* python = holding_of(scan, 100);
    ASSERT_NE(python, nullptr);
    ASSERT_EQ(python->files.size(), 2u);
    const HeldFile& gpu0 =
        python->files[0].path == "/dev/nvidia0" ? python->files[0] : python->files[1];
    EXPECT_EQ(gpu0.fds, (std::vector<int>{5}));
    EXPECT_TRUE(gpu0.mapped);
    EXPECT_EQ(gpu0.nvidia_minor, std::optional<unsigned>(0));
    EXPECT_FALSE(gpu0.via_thread.has_value());

    // The zombie leader's own fd table is empty; thread 507 holds the files.
    const FileHolding* zombie = holding_of(scan, 500);
    ASSERT_NE(zombie, nullptr);
    ASSERT_EQ(zombie->files.size(), 2u);
    for (const HeldFile& f : zombie->files) {
      if (f.path == "/dev/nvidia0") {
        EXPECT_EQ(f.fds, (std::vector<int>{9}));
        EXPECT_EQ(f.via_thread, std::optional<Pid>(507));
      } else {
        EXPECT_EQ(f.path, "/dev/nvidiactl");
        EXPECT_TRUE(f.mapped);  // from task/507/maps
      }
    }

    const FileHolding* deleted = holding_of(scan, 200);
    ASSERT_NE(deleted, nullptr);
    ASSERT_EQ(deleted->files.size(), 1u);
    EXPECT_TRUE(deleted->files[0].deleted);
  }
}

TEST(HolderScan, NegativeControlOtherPathsAreNotHolders) {
  // The same tree scanned for a file nobody holds finds nothing, and a file held only through
  // a maps line with spaces in its path is found (so the maps path is really parsed).
  ProcFs proc = open_fixture();
  EXPECT_TRUE(scan_holders(proc, {{"/dev/nvidia7", 7u}}, {}).holdings.empty());
  auto spaced = scan_holders(proc, {{"/opt/my data/file with spaces", std::nullopt}}, {});
  ASSERT_EQ(spaced.holdings.size(), 1u);
  EXPECT_EQ(spaced.holdings[0].pid, 400);
  EXPECT_TRUE(spaced.holdings[0].files[0].mapped);
}

TEST(HolderScan, AccessModeFromFdinfo) {
  ProcFs proc = open_fixture();
  HolderScan scan = scan_holders(proc, nvidia_files(), {});
  FileHolding python = *holding_of(scan, 100);
  fill_access(proc, python);
  for (const HeldFile& f : python.files) {
    if (f.path == "/dev/nvidia0") {
      EXPECT_TRUE(f.readable);
      EXPECT_TRUE(f.writable);
    } else {
      EXPECT_TRUE(f.readable);
      EXPECT_FALSE(f.writable);
    }
  }
}

}  // namespace
}  // namespace gpuclean::procfs
