// The kill planner's rules (src/diagnose/kill_plan.h), on made-up process tables. The
// end-to-end versions with real processes are in tests/integration/kill_test.cpp.
#include "diagnose/kill_plan.h"

#include <algorithm>

#include <gtest/gtest.h>

namespace gpuclean::diagnose {
namespace {

constexpr Uid kAlice = 1000;
constexpr Uid kBob = 1001;

// A machine: init (1) → sshd (10) → login shell (100, session 100) → gpuclean (200);
// the shell also runs a server (300) with two workers (301, 302); bob's job is 500.
class KillPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    add(1, 0, 0, "init", 0);
    add(2, 0, 0, "kthreadd", 0).kernel_thread = true;
    add(10, 1, 10, "sshd", 0);
    add(100, 10, 100, "bash", kAlice);
    add(200, 100, 100, "gpuclean", kAlice);
    add(300, 100, 100, "server", kAlice);
    add(301, 300, 100, "worker", kAlice);
    add(302, 300, 100, "worker", kAlice);
    add(500, 1, 500, "job", kBob);
    context_.self = 200;
    context_.euid = kAlice;
    context_.privileged = false;
  }
  ProcessInfo& add(Pid pid, Pid ppid, Pid sid, const std::string& comm, Uid uid) {
    ProcessInfo& p = table_[pid];
    p.pid = pid;
    p.ppid = ppid;
    p.pgid = sid;
    p.sid = sid;
    p.comm = comm;
    p.uid = uid;
    p.user = uid == 0 ? "root" : uid == kAlice ? "alice" : "bob";
    p.state = 'S';
    p.start_ticks = static_cast<std::uint64_t>(pid) * 10;
    return p;
  }
  Holder holder(Pid pid, HolderClass klass, std::map<unsigned, Bytes> memory = {}) {
    Holder h;
    h.process = table_.at(pid);
    h.klass = klass;
    h.gpu_memory = std::move(memory);
    return h;
  }
  KillPlan plan(const KillSelectors& selectors, const std::vector<Holder>& holders = {}) {
    return plan_kill(table_, holders, selectors, context_);
  }
  static std::vector<Pid> target_pids(const KillPlan& plan) {
    std::vector<Pid> out;
    for (const KillTarget& t : plan.targets) out.push_back(t.process.pid);
    return out;
  }
  ProcessTable table_;
  KillContext context_;
};

TEST_F(KillPlanTest, NamedPidTakesItsTreeParentsFirst) {
  KillSelectors s;
  s.pids = {300};
  const KillPlan p = plan(s);
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{300, 301, 302}));
  EXPECT_TRUE(p.refused.empty());
  EXPECT_TRUE(p.confirm_reasons.empty()) << "an explicit PID in one user's session";
  EXPECT_EQ(p.targets[1].why, "descendant of 300");
}

TEST_F(KillPlanTest, NoTreeTakesOnlyThePid) {
  KillSelectors s;
  s.pids = {300};
  s.tree = false;
  EXPECT_EQ(target_pids(plan(s)), (std::vector<Pid>{300}));
}

// Issue 13 item 2: `gpuclean kill 1` planned every process of the machine (PID 1's
// descendants), without a prompt. The old kill_command skipped PID 1 itself and planned the
// rest ("Plan: 87 processes" on the CPU machine, run before this module existed).
TEST_F(KillPlanTest, ProtectedPidNamedIsRefusedAndImpliesNothing) {
  for (Pid pid : {1, 2, 100, 200, 10}) {
    KillSelectors s;
    s.pids = {pid};
    const KillPlan p = plan(s);
    EXPECT_TRUE(p.targets.empty()) << "pid " << pid;
    ASSERT_EQ(p.refused.size(), 1u) << "pid " << pid;
    EXPECT_EQ(p.refused[0].pid, pid);
  }
  KillSelectors init;
  init.pids = {1};
  EXPECT_NE(plan(init).refused[0].reason.find("PID 1"), std::string::npos);
  KillSelectors shell;
  shell.pids = {100};
  EXPECT_NE(plan(shell).refused[0].reason.find("ancestor"), std::string::npos);
  KillSelectors kthread;
  kthread.pids = {2};
  EXPECT_NE(plan(kthread).refused[0].reason.find("kernel thread"), std::string::npos);
}

TEST_F(KillPlanTest, TreeReachingAnotherUserOrSessionNeedsConfirmation) {
  add(303, 300, 303, "setsid-daemon", kAlice);  // the server's child left the session
  KillSelectors s;
  s.pids = {300};
  const KillPlan other_session = plan(s);
  ASSERT_EQ(other_session.confirm_reasons.size(), 1u);
  EXPECT_NE(other_session.confirm_reasons[0].find("another session"), std::string::npos);

  context_.privileged = true;
  context_.euid = 0;
  add(304, 300, 100, "bobs-child", kBob);
  const KillPlan other_user = plan(s);
  EXPECT_TRUE(std::any_of(other_user.confirm_reasons.begin(), other_user.confirm_reasons.end(),
                          [](const std::string& r) {
                            return r.find("another user's process (pid 304") != std::string::npos;
                          }));
}

TEST_F(KillPlanTest, OtherUsersProcessesNeedPrivilege) {
  KillSelectors s;
  s.pids = {500};
  const KillPlan unprivileged = plan(s);
  EXPECT_TRUE(unprivileged.targets.empty());
  ASSERT_EQ(unprivileged.skipped.size(), 1u);
  EXPECT_NE(unprivileged.skipped[0].reason.find("not permitted"), std::string::npos);
  context_.privileged = true;
  EXPECT_EQ(target_pids(plan(s)), (std::vector<Pid>{500}));
}

TEST_F(KillPlanTest, BroadSelectorsNeedConfirmationAndSkipProtected) {
  KillSelectors s;
  s.sessions = {100};
  const KillPlan p = plan(s);
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{300, 301, 302}));
  EXPECT_FALSE(p.confirm_reasons.empty());
  std::vector<Pid> skipped;
  for (const KillSkip& k : p.skipped) skipped.push_back(k.pid);
  EXPECT_EQ(skipped, (std::vector<Pid>{100, 200})) << "the shell and gpuclean are protected";
}

TEST_F(KillPlanTest, UsersPgidsAndCgroups) {
  context_.privileged = true;
  table_.at(500).cgroup = "/slurm/job_7/step_0";
  KillSelectors by_user;
  by_user.users = {kBob};
  EXPECT_EQ(target_pids(plan(by_user)), (std::vector<Pid>{500}));
  KillSelectors by_cgroup;
  by_cgroup.cgroups = {"/slurm/job_7/"};
  EXPECT_EQ(target_pids(plan(by_cgroup)), (std::vector<Pid>{500}));
  KillSelectors prefix_only;
  prefix_only.cgroups = {"/slurm/job_"};
  EXPECT_TRUE(plan(prefix_only).targets.empty()) << "a path prefix is not a parent group";
  KillSelectors by_pgid;
  by_pgid.pgids = {500};
  EXPECT_EQ(target_pids(plan(by_pgid)), (std::vector<Pid>{500}));
}

TEST_F(KillPlanTest, LeftoversTakeOnlyLeftoverClassesOnSelectedGpus) {
  context_.privileged = true;
  std::vector<Holder> holders = {
      holder(300, HolderClass::kActive, {{0, 1}}), holder(301, HolderClass::kOrphan, {{0, 1}}),
      holder(302, HolderClass::kHeir, {{1, 1}}), holder(500, HolderClass::kMonitor)};
  KillSelectors s;
  s.leftovers = true;
  EXPECT_EQ(target_pids(plan(s, holders)), (std::vector<Pid>{301, 302}));
  s.gpus = std::set<unsigned>{1};
  EXPECT_EQ(target_pids(plan(s, holders)), (std::vector<Pid>{302}));
  KillSelectors all;
  all.holders = true;
  EXPECT_EQ(target_pids(plan(all, holders)), (std::vector<Pid>{300, 301, 302}))
      << "never the monitor";
}

// Issue 47: a dead job is a tree. The orphaned server 300 (its shell gone) with workers 301
// (GPU 0) and 302 (GPU 1) and a helper 303 that holds nothing: --leftovers takes all four,
// as `gpuclean kill 300` (status's fix) does; on the code before it took 300 alone and left
// the workers as fresh orphans. An unrelated orphan that holds nothing (600) is never taken.
TEST_F(KillPlanTest, LeftoversTakeEachLeftoverWithItsWholeTree) {
  table_.at(300).ppid = 1;
  add(303, 300, 100, "tokenizer", kAlice);
  add(600, 1, 600, "unrelated", kAlice);
  std::vector<Holder> holders = {holder(300, HolderClass::kOrphan, {{0, 1}}),
                                 holder(301, HolderClass::kActive, {{0, 1}}),
                                 holder(302, HolderClass::kActive, {{1, 1}})};
  KillSelectors s;
  s.leftovers = true;
  KillPlan p = plan(s, holders);
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{300, 301, 302, 303}));
  EXPECT_EQ(p.targets[0].why, "leftover (orphan)");
  EXPECT_EQ(p.targets[3].why, "descendant of leftover 300");
  // --gpus: the tree goes whole wherever one of its holders is on a selected GPU.
  s.gpus = std::set<unsigned>{1};
  EXPECT_EQ(target_pids(plan(s, holders)), (std::vector<Pid>{300, 301, 302, 303}));
  s.gpus = std::set<unsigned>{2};
  EXPECT_TRUE(plan(s, holders).targets.empty());
  // Negative control: the server's parent alive, nothing of it is a leftover.
  table_.at(300).ppid = 100;
  holders[0] = holder(300, HolderClass::kActive, {{0, 1}});
  s.gpus.reset();
  EXPECT_TRUE(plan(s, holders).targets.empty());
}

// Issue 47: one busy sample is no excuse (sustained activity is: diagnose/activity.h); an
// orphan's tree with a worker still computing is left whole and said so; a zombie leader or
// heir spinning is taken (its owner is gone).
TEST_F(KillPlanTest, ATreeStillComputingIsLeftWholeAndOneSampleIsNotComputing) {
  table_.at(300).ppid = 1;
  std::vector<Holder> holders = {holder(300, HolderClass::kOrphan, {{0, 1}}),
                                 holder(301, HolderClass::kActive, {{0, 1}}),
                                 holder(302, HolderClass::kActive, {{1, 1}})};
  holders[2].activity = HolderActivity{87, 5, std::nullopt, false};  // one sample
  KillSelectors s;
  s.leftovers = true;
  EXPECT_EQ(target_pids(plan(s, holders)), (std::vector<Pid>{300, 301, 302}));
  // The one-shot command looks again at exactly that worker before it plans.
  const auto settle = leftover_activity_to_settle(table_, holders, s, context_);
  ASSERT_EQ(settle.size(), 1u);
  EXPECT_EQ(settle.begin()->first, (ProcessIdentity{302, 3020}));
  holders[2].activity->sustained = true;
  KillPlan busy = plan(s, holders);
  EXPECT_TRUE(busy.targets.empty());
  ASSERT_EQ(busy.skipped.size(), 1u);
  EXPECT_EQ(busy.skipped[0].pid, 300);
  EXPECT_NE(busy.skipped[0].reason.find("its descendant pid 302 is still computing"),
            std::string::npos)
      << busy.skipped[0].reason;
  EXPECT_NE(busy.skipped[0].reason.find("--include-busy takes it"), std::string::npos);
  s.include_busy = true;
  EXPECT_EQ(target_pids(plan(s, holders)), (std::vector<Pid>{300, 301, 302}));
  EXPECT_TRUE(leftover_activity_to_settle(table_, holders, s, context_).empty());
  // A zombie-led root whose thread spins at 99%: taken whatever its activity.
  s.include_busy = false;
  holders[0] = holder(300, HolderClass::kZombieLeader, {{0, 1}});
  holders[0].activity = HolderActivity{99, 0, std::nullopt, true};
  EXPECT_EQ(target_pids(plan(s, holders)), (std::vector<Pid>{300, 301, 302}));
  EXPECT_TRUE(leftover_activity_to_settle(table_, holders, s, context_).empty());
}

// Issue 21 item 3: a process that held the device files without mapping them was a
// "monitor", and `kill PID`, `kill --user` and --leftovers all skipped it: a user could hide a
// leftover that way. Now diagnose() makes a monitor only of a trusted tool (Holder::service;
// tests/unit/diagnosis_test.cpp UnmappedHolderIsNoMonitorWithoutATrustedExecutable), and a
// named one is a target that needs a confirmation. Failed before the fix: p.targets empty,
// skipped "a monitor (control files only, no GPU context)".
TEST_F(KillPlanTest, NamedMonitorIsATargetWithAConfirmation) {
  Holder smi = holder(302, HolderClass::kMonitor);
  smi.service = NodeService::kMonitorTool;
  smi.executable = "/usr/bin/nvidia-smi";
  KillSelectors named;
  named.pids = {302};
  named.tree = false;
  KillPlan p = plan(named, {smi});
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{302}));
  ASSERT_EQ(p.confirm_reasons.size(), 1u);
  EXPECT_NE(p.confirm_reasons[0].find("monitoring tool"), std::string::npos);
  // Broad selectors leave it out: holders (a monitor) and user (a node service).
  KillSelectors all;
  all.holders = true;
  EXPECT_TRUE(plan(all, {smi}).targets.empty());
  KillSelectors user;
  user.users = {kAlice};
  p = plan(user, {smi});
  EXPECT_TRUE(std::none_of(p.targets.begin(), p.targets.end(),
                           [](const KillTarget& t) { return t.process.pid == 302; }));
  // Negative control: the same holder as an ordinary process (no trusted executable) is taken
  // by --user like any of alice's processes.
  Holder plain = holder(302, HolderClass::kActive);
  p = plan(user, {plain});
  EXPECT_TRUE(std::any_of(p.targets.begin(), p.targets.end(),
                          [](const KillTarget& t) { return t.process.pid == 302; }));
}

// Issue 13 item 4: the old kill_command keyed the scan's holders by PID alone, so a PID
// reused between the scan and the plan inherited the holder's class (an orphan's PID taken by
// a new process was planned as "leftover (orphan)").
TEST_F(KillPlanTest, PidRecycledSinceTheScanInheritsNothing) {
  Holder old = holder(301, HolderClass::kOrphan, {{0, 8}});
  table_.at(301).start_ticks += 1;  // the PID now names a newer process
  KillSelectors leftovers;
  leftovers.leftovers = true;
  const KillPlan p = plan(leftovers, {old});
  EXPECT_TRUE(p.targets.empty());
  ASSERT_EQ(p.skipped.size(), 1u);
  EXPECT_NE(p.skipped[0].reason.find("recycled since the scan"), std::string::npos);

  // Named explicitly, the newcomer is what the user named: it gets its own class, not the
  // scanned holder's, and no GPU memory.
  KillSelectors named;
  named.pids = {301};
  const KillPlan n = plan(named, {old});
  ASSERT_EQ(n.targets.size(), 1u);
  EXPECT_EQ(n.targets[0].klass, HolderClass::kActive);
  EXPECT_TRUE(n.targets[0].gpu_memory.empty());
  EXPECT_EQ(n.targets[0].process.start_ticks, table_.at(301).start_ticks);
}

TEST_F(KillPlanTest, HolderKeepsTheScansIdentity) {
  KillSelectors s;
  s.holders = true;
  const KillPlan p = plan(s, {holder(301, HolderClass::kActive, {{0, 8}})});
  ASSERT_EQ(p.targets.size(), 1u);
  EXPECT_EQ(p.targets[0].process.start_ticks, 3010u);
  EXPECT_EQ(p.targets[0].gpu_memory.at(0), 8u);
}

TEST_F(KillPlanTest, MissingNamedPidIsNotFound) {
  KillSelectors s;
  s.pids = {9999, 301};
  const KillPlan p = plan(s);
  EXPECT_EQ(p.not_found, (std::vector<Pid>{9999}));
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{301}));
}

// PID@START (top's and the pytest plugin's kills): the PID names the process that started then,
// with its tree; a PID reused since is another process, planned as gone, its tree untouched.
TEST_F(KillPlanTest, APidWithAStartTimeNamesThatProcessOnly) {
  KillSelectors s;
  s.pids = {300};
  s.start_ticks = {{300, 3000}};
  EXPECT_EQ(target_pids(plan(s)), (std::vector<Pid>{300, 301, 302}));
  EXPECT_TRUE(plan(s).not_found.empty());

  s.start_ticks = {{300, 2999}};  // the server that was shown exited; 300 is a newcomer now
  const KillPlan reused = plan(s);
  EXPECT_TRUE(reused.targets.empty());
  EXPECT_EQ(reused.not_found, (std::vector<Pid>{300}));
  EXPECT_TRUE(reused.refused.empty());
  // Negative control: the bare PID takes whatever has it now.
  s.start_ticks.clear();
  EXPECT_EQ(target_pids(plan(s)), (std::vector<Pid>{300, 301, 302}));
}

// Found in review: a named PID skipped as another user's still brought its whole tree in — a
// user naming root's tmux server got every own process under it planned.
TEST_F(KillPlanTest, SkippedNamedPidImpliesNoDescendants) {
  add(501, 500, 500, "alices-shell-in-bobs-tmux", kAlice);
  KillSelectors s;
  s.pids = {500};
  const KillPlan p = plan(s);
  EXPECT_TRUE(p.targets.empty());
  ASSERT_EQ(p.skipped.size(), 1u);
  EXPECT_EQ(p.skipped[0].pid, 500);
  EXPECT_NE(p.skipped[0].reason.find("descendants are not implied"), std::string::npos);
}

// Found in review: gpuclean's own children (its NVML helper) were not protected: a session
// or user selector aimed at the caller's own could plan them.
TEST_F(KillPlanTest, GpucleansOwnHelperIsProtected) {
  add(201, 200, 100, "gpuclean", kAlice);
  KillSelectors s;
  s.sessions = {100};
  const KillPlan p = plan(s);
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{300, 301, 302}));
  EXPECT_TRUE(std::any_of(p.skipped.begin(), p.skipped.end(), [](const KillSkip& k) {
    return k.pid == 201 && k.reason.find("own helper") != std::string::npos;
  }));
}

// Issue 13 item 3: where the heir evidence is ambiguous, --leftovers takes none of the
// candidates (not even as orphans); naming one by PID still works.
TEST_F(KillPlanTest, AmbiguousHeirCandidatesAreNotLeftovers) {
  context_.privileged = true;
  DeadOwner owner;
  owner.pid = 299;
  owner.ambiguous = true;
  owner.candidates = {{301, {}}, {302, {}}};
  const std::vector<Holder> holders = {holder(301, HolderClass::kOrphan),
                                       holder(302, HolderClass::kOrphan)};
  KillSelectors leftovers;
  leftovers.leftovers = true;
  const KillPlan p = plan_kill(table_, holders, leftovers, context_, {owner});
  EXPECT_TRUE(p.targets.empty());
  ASSERT_EQ(p.skipped.size(), 2u);
  EXPECT_NE(p.skipped[0].reason.find("ambiguous"), std::string::npos);
  // Negative control: without the ambiguity they are orphans, and leftovers.
  EXPECT_EQ(target_pids(plan_kill(table_, holders, leftovers, context_, {})),
            (std::vector<Pid>{301, 302}));
  KillSelectors named;
  named.pids = {301};
  EXPECT_EQ(target_pids(plan_kill(table_, holders, named, context_, {owner})),
            (std::vector<Pid>{301}));
}

// Issue 20: the node's services. On the H200 `kill --leftovers` planned the MPS control daemon
// (parent 1, an "orphan"): it would have ended MPS for every client on the node. Failed before
// the fix: target_pids(p) Which is: { 700 } for --holders and --user root.
class KillPlanServiceTest : public KillPlanTest {
 protected:
  void SetUp() override {
    KillPlanTest::SetUp();
    add(700, 1, 700, "nvidia-cuda-mps", 0);    // the MPS control daemon
    add(701, 700, 700, "nvidia-cuda-mps", 0);  // its server
    context_.privileged = true;
    context_.euid = 0;
  }
  Holder service(Pid pid, NodeService which) {
    Holder h = holder(pid, HolderClass::kActive, {{0, 66 * 1024 * 1024}});
    h.service = which;
    h.executable = "/usr/bin/nvidia-cuda-mps-control";
    return h;
  }
  std::vector<Holder> holders() {
    return {service(700, NodeService::kMpsControl), service(701, NodeService::kMpsServer),
            holder(300, HolderClass::kActive, {{0, 1024}})};
  }
};

TEST_F(KillPlanServiceTest, BroadSelectorsNeverTakeANodeService) {
  KillSelectors all;
  all.holders = true;
  KillPlan p = plan(all, holders());
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{300}));
  ASSERT_EQ(p.skipped.size(), 2u);
  EXPECT_NE(p.skipped[0].reason.find("the node's MPS control daemon"), std::string::npos)
      << p.skipped[0].reason;
  EXPECT_NE(p.skipped[0].reason.find("only when named by PID"), std::string::npos);

  KillSelectors user;
  user.users = {0};
  p = plan(user, holders());
  EXPECT_TRUE(target_pids(p).empty()) << "root's processes, but the services are left out";

  KillSelectors session;
  session.sessions = {700};
  EXPECT_TRUE(target_pids(plan(session, holders())).empty());

  // Even stuck, a service is not a --leftovers target (the problem says what to do).
  std::vector<Holder> stuck = holders();
  stuck[0].klass = HolderClass::kStuck;
  KillSelectors leftovers;
  leftovers.leftovers = true;
  EXPECT_TRUE(target_pids(plan(leftovers, stuck)).empty());
  // Negative control: the same stuck holder without the service role is a leftover.
  stuck[0].service.reset();
  EXPECT_EQ(target_pids(plan(leftovers, stuck)), (std::vector<Pid>{700}));
}

// Issue 32 item 3: --leftovers never plans a process whose parent is alive and is not
// otherwise a leftover — a stuck one included (a vfork parent in D was planned as "leftover
// (stuck)" on the old code, where is_leftover(kStuck) was true whatever the parent) — and
// never a frozen one, whose group was frozen on purpose.
TEST_F(KillPlanTest, LeftoversTakeStuckOnlyWithoutAParentAndNeverFrozen) {
  context_.privileged = true;  // 500 is bob's
  KillSelectors leftovers;
  leftovers.leftovers = true;
  std::vector<Holder> holders = {holder(301, HolderClass::kStuck),
                                 holder(500, HolderClass::kStuck)};
  EXPECT_EQ(target_pids(plan(leftovers, holders)), (std::vector<Pid>{500}))
      << "301's parent 300 lives; 500 was re-parented to init";
  holders[1].klass = HolderClass::kFrozen;
  holders[1].process.frozen = FrozenCgroup{FrozenCgroup::Version::kV2, "/sys/fs/cgroup/j", {}};
  EXPECT_TRUE(target_pids(plan(leftovers, holders)).empty()) << "frozen: never a leftover";
  // Negative control: the same orphan unfrozen is a leftover; --holders takes a frozen one.
  holders[1].klass = HolderClass::kOrphan;
  EXPECT_EQ(target_pids(plan(leftovers, holders)), (std::vector<Pid>{500}));
  holders[1].klass = HolderClass::kFrozen;
  KillSelectors all;
  all.holders = true;
  EXPECT_EQ(target_pids(plan(all, holders)), (std::vector<Pid>{500, 301})) << "parents first";
  EXPECT_FALSE(is_leftover(HolderClass::kFrozen));
  EXPECT_FALSE(is_leftover(HolderClass::kStuck)) << "by itself; is_leftover(Holder) decides";
}

TEST_F(KillPlanServiceTest, NamedServiceIsATargetThatNeedsAConfirmation) {
  KillSelectors named;
  named.pids = {700};
  const KillPlan p = plan(named, holders());
  EXPECT_EQ(target_pids(p), (std::vector<Pid>{700, 701})) << "its tree: the server too";
  ASSERT_FALSE(p.confirm_reasons.empty());
  EXPECT_NE(p.confirm_reasons[0].find("pid 700 is the node's MPS control daemon"),
            std::string::npos)
      << p.confirm_reasons[0];
  // Negative control: an ordinary named PID needs none.
  KillSelectors plain;
  plain.pids = {300};
  EXPECT_TRUE(plan(plain, holders()).confirm_reasons.empty());
}

// Issue 33: a chain of 2,000 of alice's processes under her shell, each the parent of the next
// (a user can fork one), named by its first PID: all 2,000 planned, parents first (the sort
// now takes each depth from one walk of the table: ProcessTreeTest's
// DepthsOfAChainAreComputedFollowingEachLinkOnce counts it).
TEST_F(KillPlanTest, AChainOfTwoThousandIsPlannedParentsFirst) {
  for (Pid pid = 1000; pid < 3000; ++pid)
    add(pid, pid == 1000 ? 100 : pid - 1, 100, "sleep", kAlice);
  KillSelectors s;
  s.pids = {1000};
  const KillPlan p = plan(s);
  ASSERT_EQ(p.targets.size(), 2000U);
  for (std::size_t i = 0; i < p.targets.size(); ++i) {
    ASSERT_EQ(p.targets[i].process.pid, static_cast<Pid>(1000 + i));
  }
  EXPECT_EQ(p.targets.front().why, "named");
  EXPECT_EQ(p.targets.back().why, "descendant of 1000");
  EXPECT_TRUE(p.confirm_reasons.empty());  // her own processes, her own session
}

}  // namespace
}  // namespace gpuclean::diagnose
