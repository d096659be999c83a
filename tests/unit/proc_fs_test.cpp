// ProcFs and the holder scan over the fixture tree tests/fixtures/proc/mixed (see its
// README.md for what each process there is).
#include "procfs/proc_fs.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <thread>

#include "collect/gather.h"
#include "procfs/file_identity.h"
#include "procfs/holder_scan.h"
#include "procfs/parse.h"

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

// The fixture's fd links and maps lines name their files by text ("/dev/nvidia0"), but the
// scan matches what a descriptor or mapping *is* (FileIdentity). So the tree is materialised
// in a temp dir: each absolute path it names becomes a real file under files/, the links point
// there, and each maps line carries that file's device and inode. A " (deleted)" link points to
// a hard link of the file with that name: the same inode, and readlink shows the suffix.
class MaterialisedFixture {
 public:
  MaterialisedFixture() {
    namespace fs = std::filesystem;
    root_ = fs::temp_directory_path() /
            ("gpuclean-fixture-" + std::to_string(::getpid()) + "-" + std::to_string(next_++));
    fs::remove_all(root_);
    fs::create_directories(root_);
    fs::copy(kMixed, root_ / "proc", fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    for (const auto& entry : fs::recursive_directory_iterator(root_ / "proc")) {
      if (entry.is_symlink() && entry.path().parent_path().filename() == "fd") {
        const std::string target = fs::read_symlink(entry.path()).string();
        if (target.empty() || target[0] != '/') continue;  // pipe:[123]
        const LinkTarget link = split_deleted(target);
        fs::path real = materialise(std::string(link.path));
        if (link.deleted) {
          fs::path alias = real.string() + " (deleted)";
          if (!fs::exists(alias)) fs::create_hard_link(real, alias);
          real = alias;
        }
        fs::remove(entry.path());
        fs::create_symlink(real, entry.path());
      } else if (entry.is_regular_file() && entry.path().filename() == "maps") {
        rewrite_maps(entry.path());
      }
    }
  }
  ~MaterialisedFixture() { std::filesystem::remove_all(root_); }
  MaterialisedFixture(const MaterialisedFixture&) = delete;
  MaterialisedFixture& operator=(const MaterialisedFixture&) = delete;

  [[nodiscard]] ProcFs proc() const { return open_fixture((root_ / "proc").string()); }
  // Where the fixture's "/dev/nvidia0" is.
  [[nodiscard]] std::string path(const std::string& named) const {
    return (root_ / "files").string() + named;
  }
  // A selected file, as expand_device_files makes it: path and identity.
  [[nodiscard]] DeviceFile device(const std::string& named,
                                  std::optional<unsigned> minor = std::nullopt) const {
    return {path(named), minor, identity_of_path(path(named))};
  }
  [[nodiscard]] std::vector<DeviceFile> nvidia_files() const {
    std::vector<DeviceFile> files = {device("/dev/nvidia0", 0u), device("/dev/nvidiactl")};
    std::sort(files.begin(), files.end(),
              [](const DeviceFile& a, const DeviceFile& b) { return a.path < b.path; });
    return files;
  }
  [[nodiscard]] const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path materialise(const std::string& named) {
    const std::filesystem::path real = path(named);
    std::filesystem::create_directories(real.parent_path());
    if (!std::filesystem::exists(real)) std::ofstream(real) << named;
    return real;
  }
  void rewrite_maps(const std::filesystem::path& maps) {
    std::ifstream in(maps);
    std::string out;
    for (std::string line; std::getline(in, line);) {
      auto parsed = parse_maps_line(line);
      if (parsed && !parsed->path.empty()) {
        const LinkTarget named = split_deleted(parsed->path);
        const std::string real = materialise(std::string(named.path)).string();
        auto id = identity_of_path(real);
        EXPECT_TRUE(id.has_value());
        // "start-end perms offset" kept, then the real file's MAJOR:MINOR and inode.
        std::istringstream fields(line);
        std::string range, perms, offset;
        fields >> range >> perms >> offset;
        line = fmt_line(range, perms, offset, id->dev, id->ino,
                        real + (named.deleted ? " (deleted)" : ""));
      }
      out += line + "\n";
    }
    std::ofstream(maps, std::ios::trunc) << out;
  }
  static std::string fmt_line(const std::string& range, const std::string& perms,
                              const std::string& offset, std::uint64_t dev, std::uint64_t ino,
                              std::string_view path) {
    char dev_text[32];
    std::snprintf(dev_text, sizeof(dev_text), "%02x:%02x", major(dev), minor(dev));
    return range + " " + perms + " " + offset + " " + dev_text + " " + std::to_string(ino) +
           "    " + std::string(path);
  }

  static inline int next_ = 0;
  std::filesystem::path root_;
};

const FileHolding* holding_of(const HolderScan& scan, Pid pid) {
  auto it = std::find_if(scan.holdings.begin(), scan.holdings.end(),
                         [pid](const FileHolding& h) { return h.pid == pid; });
  return it == scan.holdings.end() ? nullptr : &*it;
}

TEST(HolderScan, FindsFdAndMapsHoldersIncludingZombieLeaders) {
  MaterialisedFixture fixture;
  ProcFs proc = fixture.proc();
  const auto files = fixture.nvidia_files();
  const std::string nvidia0 = fixture.path("/dev/nvidia0");
  for (unsigned threads : {1u, 3u}) {
    SCOPED_TRACE(threads);
    HolderScan scan = scan_holders(proc, files, {.threads = threads});
    EXPECT_EQ(scan.stats.processes, 6u);
    EXPECT_EQ(scan.stats.incomplete, 0u);

    std::vector<Pid> pids;
    for (const auto& h : scan.holdings) pids.push_back(h.pid);
    EXPECT_EQ(pids, (std::vector<Pid>{100, 200, 500}));

    const FileHolding* python = holding_of(scan, 100);
    ASSERT_NE(python, nullptr);
    ASSERT_EQ(python->files.size(), 2u);
    const HeldFile& gpu0 = python->files[0].path == nvidia0 ? python->files[0] : python->files[1];
    EXPECT_EQ(gpu0.fds, (std::vector<int>{5}));
    EXPECT_TRUE(gpu0.mapped);
    EXPECT_EQ(gpu0.nvidia_minor, std::optional<unsigned>(0));
    EXPECT_FALSE(gpu0.via_thread.has_value());
    EXPECT_FALSE(gpu0.opened_as.has_value()) << "reached by its own path";

    // The zombie leader's own fd table is empty; thread 507 holds the files.
    const FileHolding* zombie = holding_of(scan, 500);
    ASSERT_NE(zombie, nullptr);
    ASSERT_EQ(zombie->files.size(), 2u);
    for (const HeldFile& f : zombie->files) {
      if (f.path == nvidia0) {
        EXPECT_EQ(f.fds, (std::vector<int>{9}));
        EXPECT_EQ(f.via_thread, std::optional<Pid>(507));
      } else {
        EXPECT_EQ(f.path, fixture.path("/dev/nvidiactl"));
        EXPECT_TRUE(f.mapped);  // from task/507/maps
      }
    }

    const FileHolding* deleted = holding_of(scan, 200);
    ASSERT_NE(deleted, nullptr);
    ASSERT_EQ(deleted->files.size(), 1u);
    EXPECT_TRUE(deleted->files[0].deleted);
  }
}

TEST(HolderScan, NegativeControlOtherFilesAreNotHolders) {
  // The same tree scanned for a file nobody holds finds nothing, and a file held only through
  // a maps line with spaces in its path is found (so the maps line is really parsed).
  MaterialisedFixture fixture;
  ProcFs proc = fixture.proc();
  const std::string nobody = fixture.path("/dev/nvidia7");
  std::ofstream(nobody) << "x";
  EXPECT_TRUE(scan_holders(proc, {fixture.device("/dev/nvidia7", 7u)}, {}).holdings.empty());
  auto spaced = scan_holders(proc, {fixture.device("/opt/my data/file with spaces")}, {});
  ASSERT_EQ(spaced.holdings.size(), 1u);
  EXPECT_EQ(spaced.holdings[0].pid, 400);
  EXPECT_TRUE(spaced.holdings[0].files[0].mapped);
}

// Issue 48 item 1: a PID handed on between the scan and the detail read. The scan finds pid
// 100 holding /dev/nvidia0 and reads its start time through its own /proc/PID handle; then pid
// 100 is another process (here: its stat says another start time). On 79f91ce's gather.cpp the
// newcomer became the holder with its own start time, which kill's pidfd check then approved
// (the local-attacker review: 37 of 39 raced tries killed it); this test failed there.
TEST(HolderScan, APidHandedOnAfterTheScanIsVanishedNeverTheHolder) {
  MaterialisedFixture fixture;
  ProcFs proc = fixture.proc();
  HolderScan scan = scan_holders(proc, fixture.nvidia_files(), {});
  const FileHolding* holding = holding_of(scan, 100);
  ASSERT_NE(holding, nullptr);
  EXPECT_EQ(holding->start_ticks, 12345u) << "read through the scan's handle";
  const auto has_100 = [](const std::vector<Holder>& holders) {
    return std::any_of(holders.begin(), holders.end(),
                       [](const Holder& h) { return h.process.pid == 100; });
  };
  // Negative control: read while it is still the same process, it is the holder.
  HolderScan same = scan;
  EXPECT_TRUE(has_100(collect::read_holders(proc, same)));
  // The newcomer under pid 100.
  std::ofstream(fixture.root() / "proc" / "100" / "stat")
      << "100 (bash) S 1 100 100 34816 100 4194304 0 0 0 0 0 0 0 0 20 0 1 0 99999 0 0\n";
  const std::size_t vanished = scan.stats.vanished;
  EXPECT_FALSE(has_100(collect::read_holders(proc, scan))) << "the newcomer holds nothing";
  EXPECT_EQ(scan.stats.vanished, vanished + 1) << "counted as the holder gone";
}

TEST(HolderScan, MatchesTheFileNotItsPath) {
  // Identity, not text (docs/reference.md): a hard link of the selected file, reached by another
  // name, is the file; a different file at the selected path's text is not. The old matcher
  // compared the link text with the path: it found the look-alike and missed the hard link
  // (both assertions failed on 644b0d0's holder_scan.cpp).
  MaterialisedFixture fixture;
  const std::string nvidia0 = fixture.path("/dev/nvidia0");
  const std::string other_name = fixture.path("/tmp/second-name");
  std::filesystem::create_directories(std::filesystem::path(other_name).parent_path());
  std::filesystem::create_hard_link(nvidia0, other_name);
  const std::filesystem::path fd = fixture.root() / "proc" / "400" / "fd";
  std::filesystem::create_symlink(other_name, fd / "4");
  ProcFs proc = fixture.proc();
  HolderScan scan = scan_holders(proc, fixture.nvidia_files(), {});
  const FileHolding* linked = holding_of(scan, 400);
  ASSERT_NE(linked, nullptr) << "a hard link of the device is the device";
  ASSERT_EQ(linked->files.size(), 1u);
  EXPECT_EQ(linked->files[0].path, nvidia0);
  EXPECT_EQ(linked->files[0].opened_as, std::optional<std::string>(other_name));
  EXPECT_EQ(linked->files[0].fds, (std::vector<int>{4}));

  // Now select a file that merely has nvidia0's text: a new inode at another root.
  const std::string look_alike_root = (fixture.root() / "other-ns").string();
  std::filesystem::create_directories(look_alike_root + "/dev");
  std::ofstream(look_alike_root + "/dev/nvidia0") << "not the device";
  DeviceFile look_alike{nvidia0, 0u, identity_of_path(look_alike_root + "/dev/nvidia0")};
  EXPECT_TRUE(scan_holders(proc, {look_alike}, {}).holdings.empty())
      << "the links name the path, but not this file";
}

TEST(HolderScan, AccessModeFromFdinfo) {
  MaterialisedFixture fixture;
  ProcFs proc = fixture.proc();
  HolderScan scan = scan_holders(proc, fixture.nvidia_files(), {});
  FileHolding python = *holding_of(scan, 100);
  fill_access(proc, python);
  for (const HeldFile& f : python.files) {
    if (f.path == fixture.path("/dev/nvidia0")) {
      EXPECT_TRUE(f.readable);
      EXPECT_TRUE(f.writable);
    } else {
      EXPECT_TRUE(f.readable);
      EXPECT_FALSE(f.writable);
    }
  }
}

// Threads of this test process now.
std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

TEST(HolderScan, AnFdinfoThatNeverAnswersIsBoundedAndNotStartedAgain) {
  // Issue 48 item 5: an fdinfo read of a file that is not a DRM node ran on the calling thread
  // with no deadline (on f0b45f5 this test hung in its first fill_access until the watchdog),
  // and a late DRM read left one more thread behind on every look. Here a FIFO with no writer
  // stands in for an fdinfo that does not answer: its open blocks.
  MaterialisedFixture fixture;
  ProcFs stock = fixture.proc();
  FileHolding python = *holding_of(scan_holders(stock, fixture.nvidia_files(), {}), 100);
  const HeldFile* nvidia0 = nullptr;
  for (const HeldFile& f : python.files) {
    if (f.path == fixture.path("/dev/nvidia0")) nvidia0 = &f;
  }
  ASSERT_NE(nvidia0, nullptr);
  const std::filesystem::path fdinfo =
      fixture.root() / "proc" / "100" / "fdinfo" / std::to_string(nvidia0->fds.at(0));
  std::filesystem::remove(fdinfo);
  ASSERT_EQ(::mkfifo(fdinfo.c_str(), 0600), 0);
  auto opened = ProcFs::open((fixture.root() / "proc").string(), std::chrono::milliseconds(100));
  ASSERT_TRUE(opened.ok());
  const ProcFs proc = std::move(opened).value();

  // A writer's open ends a read blocked on the FIFO (the watchdog's way out when one is).
  auto release = [&fdinfo] {
    const int writer = ::open(fdinfo.c_str(), O_WRONLY | O_NONBLOCK);
    if (writer >= 0) ::close(writer);
  };
  const std::size_t threads_before = thread_count();
  for (int look = 0; look < 10; ++look) {
    std::vector<FileHolding> one{python};
    auto late = std::async(std::launch::async, [&] { return fill_access(proc, one); });
    if (late.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
      while (late.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) release();
      FAIL() << "look " << look << " waited on the fdinfo without a bound";
    }
    EXPECT_EQ(late.get(), (std::vector<Pid>{100})) << "look " << look;
  }
  // One reader left behind on the FIFO, not one per look.
  EXPECT_LE(thread_count(), threads_before + 1);
  // Negative control: once the read returns (a writer opens the FIFO and closes it), the next
  // look reads it again and the other descriptors' access flags are there meanwhile.
  release();
  std::filesystem::remove(fdinfo);
  std::ofstream(fdinfo) << "pos:\t0\nflags:\t0100002\nmnt_id:\t1\n";
  std::vector<FileHolding> again{python};
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  bool answered = false;
  while (!answered && std::chrono::steady_clock::now() < give_up) {
    again = {python};
    answered = fill_access(proc, again).empty();
    if (!answered) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(answered) << "the read that returned is never started again";
  for (const HeldFile& f : again.front().files) {
    if (f.path == fixture.path("/dev/nvidia0")) {
      EXPECT_TRUE(f.writable);
    }
  }
}

TEST(ProcFs, EnvironmentValuesOfTheProcessStartedThenOnlyAndBounded) {
  // Issue 48 item 10: an MPS process's CUDA_MPS_PIPE_DIRECTORY, read for (pid, start) only.
  const auto root =
      std::filesystem::temp_directory_path() / ("gpuclean-environ-" + std::to_string(::getpid()));
  std::filesystem::remove_all(root);
  auto process = [&root](Pid pid, const std::string& environ) {
    std::filesystem::create_directories(root / std::to_string(pid));
    std::ofstream(root / std::to_string(pid) / "stat")
        << pid << " (mps) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0\n";
    std::ofstream(root / std::to_string(pid) / "environ", std::ios::binary) << environ;
  };
  using namespace std::string_literals;
  process(41, "A=1\0CUDA_MPS_PIPE_DIRECTORY=/tmp/a\0CUDA_MPS_PIPE_DIRECTORY=/tmp/b\0"s);
  process(42, "CUDA_MPS_PIPE_DIRECTORYX=/tmp/x\0HOME=/root\0"s);
  process(43, std::string(kEnvironMax, 'x') + "\0CUDA_MPS_PIPE_DIRECTORY=/tmp/late\0"s);
  process(44, "");
  process(45, "PATH=/bin\0CUDA_MPS_PIPE_DIRECTORY=/tmp/never\0"s);
  ASSERT_EQ(::unlink((root / "45" / "environ").c_str()), 0);
  ASSERT_EQ(::mkfifo((root / "45" / "environ").c_str(), 0600), 0);  // a read that never answers
  auto opened = ProcFs::open(root.string(), std::chrono::milliseconds(100));
  ASSERT_TRUE(opened.ok());
  const std::vector<std::pair<Pid, std::uint64_t>> asked = {{41, 9}, {42, 9}, {43, 9},
                                                            {44, 9}, {45, 9}, {41, 8}};
  auto late = std::async(std::launch::async, [&] {
    return opened->environment_values(asked, "CUDA_MPS_PIPE_DIRECTORY");
  });
  if (late.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    while (late.wait_for(std::chrono::milliseconds(10)) != std::future_status::ready) {
      const int writer = ::open((root / "45" / "environ").c_str(), O_WRONLY | O_NONBLOCK);
      if (writer >= 0) ::close(writer);
    }
    FAIL() << "the environ read waited without a bound";
  }
  const std::vector<EnvironmentValue> got = late.get();
  ASSERT_EQ(got.size(), asked.size());
  EXPECT_TRUE(got[0].read);
  EXPECT_EQ(got[0].value, "/tmp/a") << "the first entry, getenv's";
  EXPECT_TRUE(got[1].read) << "read whole";
  EXPECT_FALSE(got[1].value.has_value()) << "unset: a longer name is another variable";
  EXPECT_FALSE(got[2].read) << "past kEnvironMax: not known, never \"unset\"";
  EXPECT_FALSE(got[3].read) << "an empty environ is a zombie's, not an empty environment";
  EXPECT_FALSE(got[4].read) << "past the deadline";
  EXPECT_FALSE(got[5].read) << "another start time: the PID was handed on";
  // Negative control: the same cut text, read whole, has it.
  EXPECT_EQ(environ_value(std::string(kEnvironMax, 'x') + "\0CUDA_MPS_PIPE_DIRECTORY=/tmp/late"s,
                          "CUDA_MPS_PIPE_DIRECTORY", true)
                .value,
            "/tmp/late");
  const int writer = ::open((root / "45" / "environ").c_str(), O_WRONLY | O_NONBLOCK);
  if (writer >= 0) ::close(writer);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace gpuclean::procfs
