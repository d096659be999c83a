// Which executables make a process one of the node's GPU services (src/procfs/node_service.h):
// the trusted shape, then each fact taken away in turn (every one alone must lose the trust).
// The same rules on real processes, with a real copy of a binary at an untrusted path, are in
// tests/integration/node_service_test.cpp.
#include "procfs/node_service.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

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

TEST(NodeService, OwnProcessIsNotAService) {
  auto proc = ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  auto self = proc->read_process(::getpid());
  ASSERT_TRUE(self.ok());
  EXPECT_FALSE(recognise_service(*proc, *self).has_value());
}

}  // namespace
}  // namespace gpuclean::procfs
