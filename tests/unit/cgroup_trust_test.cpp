// Which part of a cgroup path root named (procfs/cgroup_trust.h): the mounts read from
// mountinfo, and the walk from the top of the hierarchy to the first directory a user owns.
#include "procfs/cgroup_trust.h"

#include <map>

#include <gtest/gtest.h>

namespace gpuclean::procfs {
namespace {

// A hybrid host's mounts, as this project's CI machines have them.
const char* const kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n"
    "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

// Directory owners: everything root's except the listed ones; unlisted paths under "/gone"
// cannot be looked at.
DirectoryOwner owners(std::map<std::string, uid_t> users) {
  return [users](const std::string& dir) -> std::optional<uid_t> {
    if (dir.find("/gone") != std::string::npos) return std::nullopt;
    auto it = users.find(dir);
    return it == users.end() ? 0 : it->second;
  };
}

TEST(CgroupTrustTest, EachLineFindsItsHierarchysMount) {
  const CgroupMounts mounts = parse_cgroup_mounts(kHybridMounts);
  ASSERT_TRUE(mounts.v2);
  EXPECT_EQ(mounts.v2->mount_point, "/sys/fs/cgroup/unified");
  ASSERT_EQ(mounts.v1.size(), 3u);
  const auto all_root = owners({});
  EXPECT_EQ(root_named_prefix(mounts, "", "/a/b", all_root), "/a/b");
  EXPECT_EQ(root_named_prefix(mounts, "cpuacct,cpu", "/a", all_root), "/a");
  EXPECT_EQ(root_named_prefix(mounts, "name=systemd", "/a", all_root), "/a");
  EXPECT_EQ(root_named_prefix(mounts, "memory", "/a", all_root), std::nullopt)
      << "no memory hierarchy mounted here";
}

TEST(CgroupTrustTest, StopsAtTheFirstDirectoryAUserOwnsThatOneIncluded) {
  const CgroupMounts mounts = parse_cgroup_mounts(kHybridMounts);
  // As Slurm's v1 plugin leaves them (seen on this project's one-node Slurm): the step and
  // its tasks are the job user's.
  const auto slurm =
      owners({{"/sys/fs/cgroup/devices/slurm_vm/uid_65534/job_7/step_0", 65534},
              {"/sys/fs/cgroup/devices/slurm_vm/uid_65534/job_7/step_0/task_0", 65534}});
  EXPECT_EQ(root_named_prefix(mounts, "devices", "/slurm_vm/uid_65534/job_7/step_0/task_0", slurm),
            "/slurm_vm/uid_65534/job_7/step_0");
  const auto delegated = owners({{"/sys/fs/cgroup/unified/test/deleg", 1000}});
  EXPECT_EQ(root_named_prefix(mounts, "", "/test/deleg/slurmstepd.scope/job_1/step_0", delegated),
            "/test/deleg");
}

TEST(CgroupTrustTest, CannotTellIsNotTrusted) {
  const CgroupMounts mounts = parse_cgroup_mounts(kHybridMounts);
  EXPECT_EQ(root_named_prefix(mounts, "", "/../../kubepods/pod1/x", owners({})), std::nullopt);
  EXPECT_EQ(root_named_prefix(mounts, "", "/gone/x", owners({})), std::nullopt);
  EXPECT_EQ(root_named_prefix(mounts, "", "relative", owners({})), std::nullopt);
  // A mount of a subtree (a container's view): its directories are not where paths say.
  const CgroupMounts sub =
      parse_cgroup_mounts("41 31 0:38 /kubepods/pod1 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  EXPECT_EQ(root_named_prefix(sub, "", "/a", owners({})), std::nullopt);
}

TEST(CgroupTrustTest, AWholeHierarchyMountedOverASubtreeViewIsTheOneUsed) {
  // A container that mounted its own cgroup2 over the host's bind-mounted view.
  const CgroupMounts mounts = parse_cgroup_mounts(
      "41 31 0:38 /../.. /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
      "90 41 0:38 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  ASSERT_TRUE(mounts.v2);
  EXPECT_EQ(mounts.v2->root, "/");
}

}  // namespace
}  // namespace gpuclean::procfs
