// procfs/blocked.h (issue 32 item 3): the mount and cgroup-file parsers, the frozen-group
// check against cgroup trees made in a temp directory (its roots are constructor arguments),
// and the D re-check against a temp /proc whose thread stat a second thread rewrites. The real
// kernel states (vfork, v1 and v2 freezers, a lasting D) are in tests/integration/blocked_test.cpp
// and tests/fuse/stuck_process_test.cpp.
#include "procfs/blocked.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace gpuclean::procfs {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// This CPU machine's mountinfo (hybrid: v1 controllers, v2 at …/unified) and the H200's form.
constexpr const char* kHybrid =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
constexpr const char* kV2Only =
    "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate\n";

TEST(FreezerMounts, HybridAndV2Only) {
  const FreezerMounts hybrid = parse_freezer_mounts(kHybrid);
  ASSERT_TRUE(hybrid.v2);
  EXPECT_EQ(hybrid.v2->mount_point, "/sys/fs/cgroup/unified");
  ASSERT_TRUE(hybrid.v1_freezer);
  EXPECT_EQ(hybrid.v1_freezer->mount_point, "/sys/fs/cgroup/freezer");
  EXPECT_EQ(hybrid.v1_freezer->root, "/");

  const FreezerMounts v2 = parse_freezer_mounts(kV2Only);
  ASSERT_TRUE(v2.v2);
  EXPECT_EQ(v2.v2->mount_point, "/sys/fs/cgroup");
  EXPECT_FALSE(v2.v1_freezer) << "no v1 hierarchy: nothing is v1-frozen";

  // A freezer co-mounted with another controller, at an escaped path, showing a subtree.
  const FreezerMounts odd = parse_freezer_mounts(
      "50 31 0:40 /job\\0407 /mnt/my\\040freezer rw - cgroup cgroup rw,cpuset,freezer\n");
  ASSERT_TRUE(odd.v1_freezer);
  EXPECT_EQ(odd.v1_freezer->mount_point, "/mnt/my freezer");
  EXPECT_EQ(odd.v1_freezer->root, "/job 7");
  // Negative control: "freezer" only as part of another word, or not a cgroup file system.
  EXPECT_FALSE(
      parse_freezer_mounts("50 31 0:40 / /x rw - cgroup cgroup rw,nofreezer\n").v1_freezer);
  EXPECT_FALSE(parse_freezer_mounts("50 31 0:40 / /x rw - tmpfs freezer rw,freezer\n").v1_freezer);
  EXPECT_FALSE(parse_freezer_mounts("").v2);
}

TEST(CgroupV1Freezer, FromProcPidCgroup) {
  EXPECT_EQ(parse_cgroup_v1_freezer("9:name=systemd:/\n6:freezer:/job_7\n0::/\n"), "/job_7");
  EXPECT_EQ(parse_cgroup_v1_freezer("3:cpuset,freezer:/a:b\n"), "/a:b") << "':' in the path";
  EXPECT_FALSE(parse_cgroup_v1_freezer("0::/user.slice\n")) << "v2 only";
  EXPECT_FALSE(parse_cgroup_v1_freezer("4:nofreezer:/x\n"));
}

TEST(VforkWait, TheWaitChannelsOfAVforkParent) {
  for (const char* wchan : {"kernel_clone", "wait_for_vfork_done", "do_fork", "_do_fork"}) {
    EXPECT_TRUE(is_vfork_wait(wchan)) << wchan;
  }
  for (const char* wchan : {"", "__refrigerator", "rwsem_down_read_slowpath", "nv_wait", "0"}) {
    EXPECT_FALSE(is_vfork_wait(wchan)) << wchan;
  }
}

TEST(CgroupDirectory, JoinsTheMountAndThePath) {
  const Cgroup2Mount root{"/sys/fs/cgroup", "/"};
  EXPECT_EQ(cgroup_directory(root, "/slurm/job_7"), "/sys/fs/cgroup/slurm/job_7");
  EXPECT_EQ(cgroup_directory(root, "/"), "/sys/fs/cgroup");
  const Cgroup2Mount sub{"/mnt/cg", "/kubepods"};
  EXPECT_EQ(cgroup_directory(sub, "/kubepods/pod1"), "/mnt/cg/pod1");
  EXPECT_FALSE(cgroup_directory(sub, "/kubepodsX/pod1")) << "only below the mount's root";
  EXPECT_FALSE(cgroup_directory(root, "/../../system.slice/a.service"))
      << "outside this cgroup namespace";
  EXPECT_FALSE(cgroup_directory(root, "relative"));
}

class TempTree {
 public:
  TempTree() {
    root_ = fs::temp_directory_path() /
            ("gpuclean-blocked-" + std::to_string(::getpid()) + "-" + std::to_string(next_++));
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  ~TempTree() {
    std::error_code ec;
    fs::remove_all(root_, ec);
  }
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;
  [[nodiscard]] std::string path(const std::string& relative) const {
    return (root_ / relative).string();
  }
  void write(const std::string& relative, const std::string& text) const {
    fs::create_directories((root_ / relative).parent_path());
    std::ofstream(root_ / relative) << text;
  }

 private:
  static inline int next_ = 0;
  fs::path root_;
};

TEST(BlockedCheckFrozen, V2GroupFrozenByAnAncestor) {
  TempTree t;
  // The job's own freeze is 0, but its parent's is 1: cgroup.events says frozen, and it is the
  // parent that must be thawed.
  t.write("v2/slurm/job_7/cgroup.events", "populated 1\nfrozen 1\n");
  t.write("v2/slurm/job_7/cgroup.freeze", "0\n");
  t.write("v2/slurm/cgroup.freeze", "1\n");
  t.write("v2/cgroup.freeze", "0\n");
  t.write("v2/other/cgroup.events", "populated 1\nfrozen 0\n");
  const BlockedCheck check({Cgroup2Mount{t.path("v2"), "/"}, std::nullopt});
  ProcessInfo p;
  p.cgroup = "/slurm/job_7";
  auto frozen = check.frozen(p);
  ASSERT_TRUE(frozen);
  EXPECT_EQ(frozen->version, FrozenCgroup::Version::kV2);
  EXPECT_EQ(frozen->directory, t.path("v2/slurm/job_7"));
  EXPECT_EQ(frozen->frozen_by, (std::vector<std::string>{t.path("v2/slurm")}));
  EXPECT_EQ(thaw_command(*frozen), "echo 0 > " + t.path("v2/slurm") + "/cgroup.freeze");
  // Negative controls: a group whose events say frozen 0, a group that does not exist, none.
  p.cgroup = "/other";
  EXPECT_FALSE(check.frozen(p));
  p.cgroup = "/gone";
  EXPECT_FALSE(check.frozen(p));
  p.cgroup.reset();
  EXPECT_FALSE(check.frozen(p));
}

TEST(BlockedCheckFrozen, V1FreezerFrozenAndThawCommand) {
  TempTree t;
  t.write("freezer/job 8/freezer.state", "FROZEN\n");
  t.write("freezer/job 8/freezer.self_freezing", "1\n");
  t.write("freezer/thawed/freezer.state", "THAWED\n");
  t.write("v2/cgroup.events", "populated 1\nfrozen 0\n");
  const BlockedCheck check({Cgroup2Mount{t.path("v2"), "/"}, Cgroup2Mount{t.path("freezer"), "/"}});
  ProcessInfo p;
  p.cgroup = "/";
  p.freezer_cgroup = "/job 8";
  auto frozen = check.frozen(p);
  ASSERT_TRUE(frozen);
  EXPECT_EQ(frozen->version, FrozenCgroup::Version::kV1Freezer);
  EXPECT_EQ(thaw_command(*frozen), "echo THAWED > '" + t.path("freezer/job 8") + "/freezer.state'")
      << "a path with a space is quoted";
  p.freezer_cgroup = "/thawed";
  EXPECT_FALSE(check.frozen(p));
  // Without the v1 mount (the H200: v2 only) a v1 path means nothing.
  const BlockedCheck v2_only({Cgroup2Mount{t.path("v2"), "/"}, std::nullopt});
  p.freezer_cgroup = "/job 8";
  EXPECT_FALSE(v2_only.frozen(p));
}

// A /proc with one process, pid 321, whose thread 322 has state `state`.
class FakeProc {
 public:
  explicit FakeProc(char state) { set(state); }
  void set(char state) const {
    // Written whole and renamed: the checker never reads half a file.
    const std::string line = "322 (worker) " + std::string(1, state) +
                             " 1 321 321 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 0 0\n";
    tree_.write("proc/321/task/322/stat.tmp", line);
    fs::rename(tree_.path("proc/321/task/322/stat.tmp"), tree_.path("proc/321/task/322/stat"));
  }
  [[nodiscard]] ProcFs proc() const {
    auto opened = ProcFs::open(tree_.path("proc"));
    EXPECT_TRUE(opened.ok());
    return std::move(opened).value();
  }
  static ProcessInfo process(const std::string& wchan) {
    ProcessInfo p;
    p.pid = 321;
    p.state = 'S';
    p.threads = {{321, 'S', "ep_poll"}, {322, 'D', wchan}};
    return p;
  }

 private:
  TempTree tree_;
};

TEST(BlockedCheckSettle, ADThatLastsIsMarkedAfterTheRecheck) {
  FakeProc fake('D');
  ProcessInfo p = FakeProc::process("nv_wait_for_something");
  const auto started = Clock::now();
  BlockedCheck({}).settle(fake.proc(), {&p});
  EXPECT_GE(Clock::now() - started, kStuckRecheck);
  EXPECT_TRUE(p.threads[1].stays_in_d);
  EXPECT_FALSE(p.threads[0].stays_in_d);
  EXPECT_FALSE(p.frozen);
}

TEST(BlockedCheckSettle, ADThatEndsIsNotStuckAndTheWaitEndsWithIt) {
  FakeProc fake('D');
  ProcessInfo p = FakeProc::process("io_schedule");
  std::thread wake([&fake] {
    std::this_thread::sleep_for(40ms);
    fake.set('S');
  });
  const auto started = Clock::now();
  BlockedCheck({}, 2000ms).settle(fake.proc(), {&p});
  const auto took = Clock::now() - started;
  wake.join();
  EXPECT_FALSE(p.threads[1].stays_in_d);
  EXPECT_LT(took, 1000ms) << "a deadline poll: it returns once the thread left D";
}

TEST(BlockedCheckSettle, AVforkParentAndAFrozenProcessAreNotWaitedOn) {
  FakeProc fake('D');
  ProcessInfo vfork = FakeProc::process("kernel_clone");
  TempTree cgroups;
  cgroups.write("v2/job/cgroup.events", "frozen 1\n");
  cgroups.write("v2/job/cgroup.freeze", "1\n");
  ProcessInfo frozen = FakeProc::process("__refrigerator");
  frozen.cgroup = "/job";
  ProcessInfo healthy = FakeProc::process("");
  healthy.threads[1].state = 'S';
  const auto started = Clock::now();
  BlockedCheck({Cgroup2Mount{cgroups.path("v2"), "/"}, std::nullopt}, 2000ms)
      .settle(fake.proc(), {&vfork, &frozen, &healthy});
  EXPECT_LT(Clock::now() - started, 500ms) << "nothing to watch: no wait";
  EXPECT_FALSE(vfork.threads[1].stays_in_d);
  EXPECT_FALSE(frozen.threads[1].stays_in_d);
  ASSERT_TRUE(frozen.frozen);
  EXPECT_EQ(frozen.frozen->directory, cgroups.path("v2/job"));
  EXPECT_FALSE(vfork.frozen);
}

}  // namespace
}  // namespace gpuclean::procfs
