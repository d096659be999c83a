#include "diagnose/classify.h"

#include <gtest/gtest.h>

namespace gpuclean::diagnose {
namespace {

ProcessInfo process(char state, Pid ppid, std::vector<char> thread_states) {
  ProcessInfo p;
  p.pid = 100;
  p.ppid = ppid;
  p.state = state;
  Pid tid = 100;
  for (char s : thread_states) p.threads.push_back({tid++, s, ""});
  return p;
}

TEST(ClassifyFromProc, EachClassAndItsNegativeControl) {
  EXPECT_EQ(classify_from_proc(process('S', 50, {'S', 'S'})), HolderClass::kActive);
  EXPECT_EQ(classify_from_proc(process('S', 1, {'S'})), HolderClass::kOrphan);
  EXPECT_EQ(classify_from_proc(process('Z', 50, {'Z', 'S'})), HolderClass::kZombieLeader);
  EXPECT_EQ(classify_from_proc(process('Z', 50, {'Z'})), HolderClass::kZombie);
  EXPECT_EQ(classify_from_proc(process('Z', 50, {'Z', 'Z'})), HolderClass::kZombie);
}

// Issue 32 item 3: a D seen once is not stuck (a vfork parent waits in D, I/O passes through
// it); stuck needs a thread that stayed in D across the re-check (procfs::settle_blocked), or a
// locked memory map. On the old code the first assertion failed: a D alone made kStuck.
TEST(ClassifyFromProc, StuckOnlyWhenTheDLasts) {
  EXPECT_EQ(classify_from_proc(process('S', 50, {'S', 'D'})), HolderClass::kActive);
  EXPECT_EQ(classify_from_proc(process('D', 1, {'D'})), HolderClass::kOrphan);
  ProcessInfo lasting = process('S', 50, {'S', 'D'});
  lasting.threads[1].stays_in_d = true;
  EXPECT_EQ(classify_from_proc(lasting), HolderClass::kStuck);
  // Stuck wins over the lifecycle classes: signals will not help whatever else is true.
  ProcessInfo zl = process('Z', 1, {'Z', 'D'});
  zl.threads[1].stays_in_d = true;
  EXPECT_EQ(classify_from_proc(zl), HolderClass::kStuck);
  EXPECT_EQ(lifecycle_class(zl), HolderClass::kZombieLeader) << "what it would otherwise be";
  ProcessInfo locked = process('S', 50, {'S'});
  locked.memory_map_locked = true;
  EXPECT_EQ(classify_from_proc(locked), HolderClass::kStuck);
}

// A frozen cgroup's process is frozen, whatever its threads say (a v1 freezer's are in D and
// stay there): the fix is a thaw, never a reset. A plain zombie has nothing left to freeze.
TEST(ClassifyFromProc, FrozenWinsOverStuck) {
  ProcessInfo p = process('D', 50, {'D', 'S'});
  p.threads[0].stays_in_d = true;
  p.frozen = FrozenCgroup{FrozenCgroup::Version::kV1Freezer, "/sys/fs/cgroup/freezer/j", {}};
  EXPECT_EQ(classify_from_proc(p), HolderClass::kFrozen);
  p.memory_map_locked = true;
  EXPECT_EQ(classify_from_proc(p), HolderClass::kFrozen);
  ProcessInfo zombie = process('Z', 50, {'Z'});
  zombie.frozen = p.frozen;
  EXPECT_EQ(classify_from_proc(zombie), HolderClass::kZombie);
  EXPECT_STREQ(to_string(HolderClass::kFrozen), "frozen");
}

// Issue 21 item 9: a system service that uses the GPU on purpose (parent PID 1, cgroup
// /system.slice/X.service) was an "orphan": a problem, and a --leftovers target. Failed before
// the fix: classify_from_proc(service) Which is: 4-byte object <01-00 00-00> (kOrphan).
TEST(ClassifyFromProc, SystemServiceIsActiveNotAnOrphan) {
  ProcessInfo service = process('S', 1, {'S'});
  service.uid = 0;
  service.cgroup = "/system.slice/inference.service";
  EXPECT_EQ(classify_from_proc(service), HolderClass::kActive);
  service.cgroup = "/system.slice/triton.service/worker";
  EXPECT_EQ(classify_from_proc(service), HolderClass::kActive) << "a cgroup below the service's";
  // Negative controls: what a user can make, or what is no service, stays an orphan.
  for (const char* cgroup : {"/user.slice/user-1000.slice/user@1000.service/app.slice/x.service",
                             "/system.slice/session-3.scope", "/system.slice/.service",
                             "/system.slice", "/x/system.slice/a.service", "/"}) {
    service.cgroup = cgroup;
    EXPECT_EQ(classify_from_proc(service), HolderClass::kOrphan) << cgroup;
  }
  service.cgroup.reset();
  EXPECT_EQ(classify_from_proc(service), HolderClass::kOrphan) << "cgroup unknown";
  // A user's process in a service's cgroup (a cron or at job, an sshd login without
  // pam_systemd) is not the service (review of issue 21: a double-forked leftover from a
  // crontab was "active" and --leftovers skipped it).
  service.cgroup = "/system.slice/cron.service";
  service.uid = 1000;
  EXPECT_EQ(classify_from_proc(service), HolderClass::kOrphan);
  service.uid.reset();
  EXPECT_EQ(classify_from_proc(service), HolderClass::kOrphan) << "uid unknown";
  service.uid = 999;  // a system account
  EXPECT_EQ(classify_from_proc(service), HolderClass::kActive);
  service.cgroup = "/system.slice/inference.service";
  service.ppid = 50;
  EXPECT_EQ(classify_from_proc(service), HolderClass::kActive);
}

// Issue 17: a DaemonSet's gpuclean runs in the pod's cgroup namespace, where a host process's
// cgroup reads relative to the pod's group: "/../../system.slice/X.service" (seen in a real
// cgroup namespace: tests/integration/cgroup_namespace_test.cpp). The node's root services
// holding a GPU were orphans there, a problem on every Kubernetes GPU node. Failed before the
// fix: classify_from_proc(service) Which is: 4-byte object <01-00 00-00> (kOrphan), for
// "/../system.slice/nvidia-persistenced.service".
TEST(ClassifyFromProc, SystemServiceSeenFromACgroupNamespaceIsActive) {
  ProcessInfo service = process('S', 1, {'S'});
  service.uid = 0;
  for (const char* cgroup : {"/../system.slice/nvidia-persistenced.service",
                             "/../../../../system.slice/inference.service/worker"}) {
    service.cgroup = cgroup;
    EXPECT_EQ(classify_from_proc(service), HolderClass::kActive) << cgroup;
  }
  // Negative controls: below the leading "/.." components the path must still be a service's,
  // and a user's process in one is still not the service.
  for (const char* cgroup :
       {"/../x/system.slice/a.service", "/../../user.slice/user-1000.slice/session-2.scope",
        "/../system.slice", "/..", "/../..", "/..system.slice/a.service",
        "/../kubepods.slice/system.slice/../a.service", "/system.slice/../a.service/x"}) {
    service.cgroup = cgroup;
    EXPECT_EQ(classify_from_proc(service), HolderClass::kOrphan) << cgroup;
  }
  service.cgroup = "/../../system.slice/cron.service";
  service.uid = 1000;
  EXPECT_EQ(classify_from_proc(service), HolderClass::kOrphan) << "a user's cron job";
}

TEST(HasLiveThread, WithoutThreadListFallsBackToLeaderState) {
  EXPECT_TRUE(has_live_thread(process('S', 1, {})));
  EXPECT_FALSE(has_live_thread(process('Z', 1, {})));
}

}  // namespace
}  // namespace gpuclean::diagnose
