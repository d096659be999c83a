// The kernel-facing pieces of `run` that can be checked without starting a workload: program
// resolution, the cgroup2 mount lookup, refusing a directory that is not a cgroup; and where a
// launched child's output goes (ops/launch.h).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "ops/cgroup.h"
#include "ops/launch.h"
#include "procfs/parse.h"

namespace gpuclean {
namespace {

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern =
        (std::filesystem::temp_directory_path() / "gpuclean-unit-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) std::abort();
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  [[nodiscard]] std::string file(const std::string& name, mode_t mode) const {
    const std::string path = path_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), mode);
    return path;
  }
  [[nodiscard]] const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(ResolveProgramTest, SearchesThePathLikeAShell) {
  ScratchDir a;
  ScratchDir b;
  const std::string tool = b.file("tool", 0755);
  (void)a.file("tool", 0644);  // earlier in the path, but not executable: skipped
  auto found = ops::resolve_program("tool", a.path() + ":" + b.path());
  ASSERT_TRUE(found.ok()) << found.error().message();
  EXPECT_EQ(*found, tool);
}

TEST(ResolveProgramTest, NotFoundAndNotExecutableAreTold) {
  ScratchDir a;
  (void)a.file("plain", 0644);
  EXPECT_EQ(ops::resolve_program("plain", a.path()).error().errnum, EACCES);   // 126
  EXPECT_EQ(ops::resolve_program("absent", a.path()).error().errnum, ENOENT);  // 127
  EXPECT_EQ(ops::resolve_program(a.path() + "/plain", "").error().errnum, EACCES);
  EXPECT_EQ(ops::resolve_program(a.path() + "/absent", "").error().errnum, ENOENT);
  EXPECT_EQ(ops::resolve_program(a.path(), "").error().errnum, EACCES);  // a directory
  EXPECT_EQ(ops::resolve_program("", a.path()).error().errnum, ENOENT);
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(LaunchTest, StartsTheProgramWithAPidfdAndNoBlockedSignals) {
  // gpuclean blocks the signals it forwards; the workload must start with none blocked.
  ScratchDir dir;
  const std::string out = dir.path() + "/sigblk";
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGTERM);
  sigset_t old;
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &block, &old), 0);
  auto launched =
      ops::launch("/bin/sh", {"sh", "-c", "grep SigBlk /proc/self/status > '" + out + "'"}, {});
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(launched.ok()) << launched.error().message();
  EXPECT_TRUE(launched->pidfd.valid());
  EXPECT_EQ(wait_exit_code(launched->pid), 0);
  std::ifstream in(out);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "SigBlk:\t0000000000000000")
      << "negative control: the parent had INT and TERM blocked";
}

TEST(LaunchTest, AnExecFailureComesBackAsTheExecStepsError) {
  auto missing = ops::launch("/nonexistent/gpuclean-test", {"x"}, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().context, "exec");
  EXPECT_EQ(missing.error().errnum, ENOENT);
  ScratchDir dir;
  auto denied = ops::launch(dir.file("plain", 0644), {"plain"}, {});
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().errnum, EACCES);
}

TEST(LaunchTest, NewSessionPutsTheChildInItsOwnSession) {
  ScratchDir dir;
  const std::string out = dir.path() + "/sid";
  for (const bool new_session : {false, true}) {
    ops::LaunchOptions options;
    options.new_session = new_session;
    auto launched = ops::launch(
        "/bin/sh",
        {"sh", "-c", "cut -d' ' -f6 /proc/self/stat > '" + out + "'; echo $$ >> '" + out + "'"},
        options);
    ASSERT_TRUE(launched.ok()) << launched.error().message();
    EXPECT_EQ(wait_exit_code(launched->pid), 0);
    std::ifstream in(out);
    std::string sid;
    std::string pid;
    in >> sid >> pid;
    // The session of `cut` is its shell's: the shell's own PID when it leads a new session.
    EXPECT_EQ(sid == pid, new_session) << "sid " << sid << " pid " << pid;
  }
}

TEST(Cgroup2MountTest, FindsTheV2MountAmongV1Ones) {
  const std::string hybrid =
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:9 - cgroup2 cgroup2 rw\n";
  auto mount = procfs::parse_cgroup2_mount(hybrid);
  ASSERT_TRUE(mount);
  EXPECT_EQ(mount->mount_point, "/sys/fs/cgroup/unified");
  EXPECT_EQ(mount->root, "/");
}

TEST(Cgroup2MountTest, DecodesEscapesAndRefusesV1Only) {
  auto mount = procfs::parse_cgroup2_mount(
      "41 31 0:38 /job\\040a /mnt/my\\040cg rw - cgroup2 none rw,nsdelegate\n");
  ASSERT_TRUE(mount);
  EXPECT_EQ(mount->mount_point, "/mnt/my cg");
  EXPECT_EQ(mount->root, "/job a");
  EXPECT_FALSE(procfs::parse_cgroup2_mount(
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"));
  EXPECT_FALSE(procfs::parse_cgroup2_mount("garbage\n\n- cgroup2\n"));
}

TEST(CgroupGroupTest, APlainDirectoryIsRefusedAndLeftAsItWas) {
  ScratchDir parent;
  auto group = ops::CgroupGroup::create({parent.path(), "/"}, "gpuclean-run.1");
  ASSERT_FALSE(group.ok());
  EXPECT_NE(group.error().message().find("not a writable cgroup v2 directory"), std::string::npos)
      << group.error().message();
  EXPECT_FALSE(std::filesystem::exists(parent.path() + "/gpuclean-run.1"));
}

}  // namespace
}  // namespace gpuclean

namespace gpuclean::ops {
namespace {

TEST(LaunchOutput, TheChildsOutputAndErrorsGoToTheGivenDescriptorAndStdinIsNull) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  LaunchOptions options;
  options.output_fd = fds[1];
  auto launched = launch("/bin/sh", {"sh", "-c", "echo out; echo err >&2; cat; echo end"}, options);
  ::close(fds[1]);
  ASSERT_TRUE(launched.ok()) << launched.error().message();
  std::string text;
  char buffer[256];
  ssize_t got = 0;
  while ((got = ::read(fds[0], buffer, sizeof(buffer))) > 0) {
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fds[0]);
  int status = 0;
  ::waitpid(launched->pid, &status, 0);
  // `cat` ended at once: its stdin was /dev/null, not this test's terminal or pipe.
  EXPECT_EQ(text, "out\nerr\nend\n");
}

}  // namespace
}  // namespace gpuclean::ops
