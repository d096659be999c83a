// Which executables make a process one of the node's GPU services (src/procfs/node_service.h):
// the trusted shape, then each fact taken away in turn (every one alone must lose the trust).
// The same rules on real processes, with a real copy of a binary at an untrusted path, are in
// tests/integration/node_service_test.cpp.
#include "procfs/node_service.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace gpuclean::procfs {
namespace {

ExecutableFacts trusted(const std::string& path = "/usr/bin/nvidia-cuda-mps-control") {
  ExecutableFacts f;
  f.path = path;
  f.path_is_same_file = true;
  f.path_is_canonical = true;
  f.owner = 0;
  f.mode = S_IFREG | 0755;
  f.directories_safe = true;
  return f;
}

TEST(NodeService, KnownNamesAreServices) {
  EXPECT_EQ(service_named("nvidia-cuda-mps-control"), NodeService::kMpsControl);
  EXPECT_EQ(service_named("nvidia-cuda-mps-server"), NodeService::kMpsServer);
  EXPECT_EQ(service_named("nvidia-persistenced"), NodeService::kPersistenced);
  EXPECT_EQ(service_named("nv-hostengine"), NodeService::kDcgm);
  EXPECT_EQ(service_named("nv-fabricmanager"), NodeService::kFabricManager);
  EXPECT_EQ(service_named("nvidia-smi"), NodeService::kMonitorTool);
  EXPECT_EQ(service_named("python3"), std::nullopt);
  EXPECT_EQ(service_named("nvidia-cuda-mps-control.sh"), std::nullopt);
  EXPECT_EQ(service_named(""), std::nullopt);
}

TEST(NodeService, RootOwnedExecutableInASystemDirectoryIsTrusted) {
  EXPECT_EQ(trust_executable(trusted()), NodeService::kMpsControl);
  EXPECT_EQ(trust_executable(trusted("/usr/sbin/nvidia-persistenced")), NodeService::kPersistenced);
  EXPECT_EQ(trust_executable(trusted("/usr/local/sbin/nv-hostengine")), NodeService::kDcgm);
  // The GPU machine's driver programs live here (as on Kubernetes GPU nodes).
  EXPECT_EQ(trust_executable(trusted("/usr/local/nvidia/bin/nvidia-cuda-mps-server")),
            NodeService::kMpsServer);
}

TEST(NodeService, EachMissingFactLosesTheTrust) {
  ExecutableFacts f = trusted("/tmp/x/nvidia-cuda-mps-control");
  EXPECT_EQ(trust_executable(f), std::nullopt) << "not a system directory";
  f = trusted("/home/alice/bin/nvidia-cuda-mps-control");
  EXPECT_EQ(trust_executable(f), std::nullopt) << "not a system directory";
  f = trusted("/usr/bin/sub/nvidia-cuda-mps-control");
  EXPECT_EQ(trust_executable(f), std::nullopt) << "below a system directory is not in it";
  f = trusted("/usr/bin/nvidia-cuda-mps-control (deleted)");
  EXPECT_EQ(trust_executable(f), std::nullopt) << "replaced since it started";
  f = trusted();
  f.owner = 1000;
  EXPECT_EQ(trust_executable(f), std::nullopt) << "owned by a user";
  f = trusted();
  f.mode = S_IFREG | 0775;
  EXPECT_EQ(trust_executable(f), std::nullopt) << "group-writable";
  f = trusted();
  f.mode = S_IFREG | 0757;
  EXPECT_EQ(trust_executable(f), std::nullopt) << "world-writable";
  f = trusted();
  f.path_is_same_file = false;
  EXPECT_EQ(trust_executable(f), std::nullopt)
      << "the path names another file here (a mount namespace of the process's own)";
  f = trusted();
  f.path_is_canonical = false;
  EXPECT_EQ(trust_executable(f), std::nullopt) << "a symlink or .. on the path";
  f = trusted();
  f.directories_safe = false;
  EXPECT_EQ(trust_executable(f), std::nullopt) << "a directory others can write to";
  f = trusted("nvidia-cuda-mps-control");
  EXPECT_EQ(trust_executable(f), std::nullopt) << "not absolute";
  f = trusted("/usr/bin/python3");
  EXPECT_EQ(trust_executable(f), std::nullopt) << "not a service's name";
}

// Review of issue 20: the file proves nothing about the code a user runs with it
// (LD_PRELOAD=./hog.so /usr/bin/nvidia-smi, ptrace, a container's loader). Before, any process
// of a trusted file was a service: a user's GPU hog so dressed was never a problem.
TEST(NodeService, OnlyRootOrASystemAccountInOurMountNamespaceIsTrusted) {
  ProcessFacts root;
  root.uid = 0;
  root.trusted_mount_namespace = true;
  EXPECT_TRUE(trust_process(NodeService::kMonitorTool, root));
  ProcessFacts daemon = root;
  daemon.uid = 999;  // a system account (nvidia-persistenced runs as one)
  EXPECT_TRUE(trust_process(NodeService::kPersistenced, daemon));
  ProcessFacts user = root;
  user.uid = 1000;
  EXPECT_FALSE(trust_process(NodeService::kMonitorTool, user)) << "a user's nvidia-smi";
  EXPECT_FALSE(trust_process(NodeService::kMpsControl, user));
  EXPECT_FALSE(trust_process(NodeService::kMpsServer, user)) << "no trusted daemon as parent";
  user.parent_is_trusted_mps_control = true;
  EXPECT_TRUE(trust_process(NodeService::kMpsServer, user))
      << "the server the root daemon started for a user";
  EXPECT_FALSE(trust_process(NodeService::kMonitorTool, user))
      << "only an MPS server is trusted through its parent";
  ProcessFacts elsewhere = root;
  elsewhere.trusted_mount_namespace = false;
  EXPECT_FALSE(trust_process(NodeService::kMonitorTool, elsewhere)) << "another mount namespace";
  ProcessFacts unknown = root;
  unknown.uid.reset();
  EXPECT_FALSE(trust_process(NodeService::kMonitorTool, unknown)) << "uid unreadable";
}

// Issue 17: the exe link's path is walked beneath a root (gpuclean's, or PID 1's for the host's
// services seen from a DaemonSet's pod), one name at a time, never following a symlink: an
// absolute link would be followed from gpuclean's root, not the one walked.
class WalkBeneath : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/gpuclean-walk-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    root_ = templ;
    ::chmod(root_.c_str(), 0755);
    std::filesystem::create_directories(root_ + "/usr/bin");
    ::chmod((root_ + "/usr").c_str(), 0755);
    ::chmod((root_ + "/usr/bin").c_str(), 0755);
    std::ofstream(root_ + "/usr/bin/nvidia-smi") << "#!/bin/true\n";
    fd_ = ::open(root_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override {
    if (fd_ >= 0) ::close(fd_);
    std::error_code ignored;
    std::filesystem::remove_all(root_, ignored);
  }
  std::pair<std::uint64_t, std::uint64_t> id(const std::string& relative) const {
    struct stat st {};
    EXPECT_EQ(::lstat((root_ + relative).c_str(), &st), 0) << relative;
    return {static_cast<std::uint64_t>(st.st_dev), static_cast<std::uint64_t>(st.st_ino)};
  }
  std::string root_;
  int fd_ = -1;
};

TEST_F(WalkBeneath, APlainPathNamesItsFile) {
  const PathWalk walk = walk_beneath(fd_, "/usr/bin/nvidia-smi");
  EXPECT_TRUE(walk.canonical);
  EXPECT_EQ(walk.file, id("/usr/bin/nvidia-smi"));
  // Root's directories, writable by root alone: safe (as root, who made them).
  EXPECT_EQ(walk.directories_safe, ::geteuid() == 0);
  EXPECT_GE(::fcntl(fd_, F_GETFD), 0) << "the caller's descriptor stays open";
}

TEST_F(WalkBeneath, SymlinksDotsAndEmptyNamesAreNotCanonical) {
  ::symlink("bin", (root_ + "/usr/sbin").c_str());
  ::symlink("/usr/bin", (root_ + "/usr/lbin").c_str());
  ::symlink("nvidia-smi", (root_ + "/usr/bin/dcgmi").c_str());
  for (const char* path : {"/usr/sbin/nvidia-smi", "/usr/lbin/nvidia-smi", "/usr/bin/dcgmi",
                           "/usr/../usr/bin/nvidia-smi", "/usr/./bin/nvidia-smi",
                           "/usr//bin/nvidia-smi", "/usr/bin/nvidia-smi/", "usr/bin/nvidia-smi", "",
                           "/usr/bin/missing", "/usr/bin/nvidia-smi/x"}) {
    const PathWalk walk = walk_beneath(fd_, path);
    EXPECT_FALSE(walk.canonical) << path;
    EXPECT_FALSE(walk.file.has_value()) << path;
  }
  EXPECT_TRUE(walk_beneath(fd_, "/usr/bin/nvidia-smi").canonical) << "the control";
}

TEST_F(WalkBeneath, ADirectoryOthersCanWriteIsNotSafe) {
  if (::geteuid() != 0) GTEST_SKIP() << "root's directories need root";
  ASSERT_TRUE(walk_beneath(fd_, "/usr/bin/nvidia-smi").directories_safe) << "the control";
  ::chmod((root_ + "/usr").c_str(), 0775);
  EXPECT_FALSE(walk_beneath(fd_, "/usr/bin/nvidia-smi").directories_safe) << "group-writable";
  EXPECT_TRUE(walk_beneath(fd_, "/usr/bin/nvidia-smi").canonical);
  ::chmod((root_ + "/usr").c_str(), 0755);
  ASSERT_EQ(::chown((root_ + "/usr/bin").c_str(), 1000, 1000), 0);
  EXPECT_FALSE(walk_beneath(fd_, "/usr/bin/nvidia-smi").directories_safe) << "a user's";
  ASSERT_EQ(::chown((root_ + "/usr/bin").c_str(), 0, 0), 0);
  ::chmod(root_.c_str(), 0777);
  EXPECT_FALSE(walk_beneath(fd_, "/usr/bin/nvidia-smi").directories_safe) << "the root itself";
}

TEST(NodeService, OwnProcessIsNotAService) {
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  auto self = proc->read_process(::getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_FALSE(recognise_service(*proc, *self).has_value());
}

}  // namespace
}  // namespace gpuclean::procfs
