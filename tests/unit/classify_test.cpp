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
  EXPECT_EQ(classify_from_proc(process('S', 50, {'S', 'D'})), HolderClass::kStuck);
  // Stuck wins over everything: signals will not help whatever else is true.
  EXPECT_EQ(classify_from_proc(process('Z', 1, {'Z', 'D'})), HolderClass::kStuck);
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
