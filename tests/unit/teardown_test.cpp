// Teardown edge cases that need real processes but no gpuclean binary (src/ops/teardown.h).
#include "ops/teardown.h"

#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ops/supervisor.h"
#include "procfs/proc_fs.h"
#include "procfs/process_table.h"

#include "../integration/spawn.h"

namespace gpuclean::ops {
namespace {

using namespace std::chrono_literals;

constexpr Pid kNoSuchPid = -1;

// The test's own children are adopted by a ProcessReaper (tests/integration/spawn.h): ended and
// reaped on every way out of a test (an ASSERT that fails returns early), SIGKILL through a pidfd
// taken right after the fork, so that a PID reaped and reused meanwhile is never signalled.
using gpuclean::testing::ProcessReaper;

// A child of the test that sleeps until killed (30 s at most).
pid_t sleeping_child(ProcessReaper& children) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::alarm(30);
    for (;;) ::pause();
  }
  return children.adopt(pid);
}

// Issue 13 item 8. A target the kernel will not let us signal (EPERM: here a root process and
// an unprivileged tear_down) must be reported with that reason. Before, send() dropped every
// error but ESRCH and the report said "it is still running after every signal" (run on commit
// 4404490's teardown.cpp: the child printed that reason).
TEST(Teardown, SignalErrorsAreReportedWithTheirReason) {
  ProcessReaper children;
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a process we then cannot signal";
  const pid_t sleeper = sleeping_child(children);
  ASSERT_GT(sleeper, 0);
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  auto info = proc->read_process(sleeper);
  ASSERT_TRUE(info.ok());

  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t unprivileged = children.adopt(::fork());
  ASSERT_GE(unprivileged, 0);
  if (unprivileged == 0) {
    ::close(report[0]);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(3);
    const TeardownOptions options{SIGTERM, 100ms, true, 300ms, {}};
    const auto outcomes = tear_down(*proc, {*info}, options);
    const std::string line =
        outcomes.size() == 1 ? std::string(to_string(outcomes[0].state)) + "|" + outcomes[0].reason
                             : "wrong size";
    if (::write(report[1], line.data(), line.size()) < 0) _exit(4);
    _exit(0);
  }
  ::close(report[1]);
  std::string said;
  char buf[512];
  for (ssize_t n; (n = ::read(report[0], buf, sizeof(buf))) > 0;) {
    said.append(buf, static_cast<std::size_t>(n));
  }
  ::close(report[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(unprivileged, &status, 0), unprivileged);
  ::kill(sleeper, SIGKILL);
  ::waitpid(sleeper, nullptr, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << said;
  EXPECT_EQ(said.substr(0, said.find('|')), "remaining") << said;
  EXPECT_NE(said.find("refused"), std::string::npos) << said;
  EXPECT_NE(said.find(std::strerror(EPERM)), std::string::npos) << said;
  EXPECT_EQ(said.find("still running after every signal"), std::string::npos) << said;
}

// Issue 13 item 4, at the signal end: a planned target carries the start time the scan read;
// when the PID now names a process that started at another time, it is reported "recycled
// since the scan" and never signalled. (The planning end is KillPlanTest.
// PidRecycledSinceTheScanInheritsNothing.)
TEST(Teardown, TargetRecycledSinceTheScanIsSkippedNotSignalled) {
  ProcessReaper children;
  const pid_t child = sleeping_child(children);
  ASSERT_GT(child, 0);
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  auto info = proc->read_process(child);
  ASSERT_TRUE(info.ok());
  ProcessInfo as_scanned = *info;
  as_scanned.start_ticks += 7;  // the scan saw another process under this PID

  std::set<PlannedMembers::Identity> existing = {{child, info->start_ticks}};
  const PlannedMembers members({as_scanned}, existing, true, ::getpid(), ::geteuid(), true);
  const TeardownOptions options{SIGKILL, 0ms, true, 300ms, {}};
  const RoundsOutcome rounds = tear_down_rounds(*proc, members, options);
  ASSERT_EQ(rounds.outcomes.size(), 1u);
  EXPECT_EQ(rounds.outcomes[0].state, TargetOutcome::State::kSkipped);
  EXPECT_TRUE(rounds.outcomes[0].recycled);
  EXPECT_NE(rounds.outcomes[0].reason.find("recycled since the scan"), std::string::npos);
  EXPECT_TRUE(rounds.outcomes[0].signals.empty());
  EXPECT_EQ(rounds.remaining(), 0u) << "a recycled PID means the planned process is gone";
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0) << "the newer process was signalled";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

// Issue 21 item 8: a PID read from cgroup.procs may be freed and reused before the pidfd is
// opened; the start time read after the listing then matches the newcomer. The member source
// is asked again once the pidfd is open. Before, tear_down had no such question: the newcomer
// here would have been SIGKILLed (the negative control below shows it).
class ListedOnce : public MemberSource {
 public:
  ListedOnce(ProcessInfo info, bool member) : info_(std::move(info)), member_(member) {}
  [[nodiscard]] std::vector<ProcessInfo> members(const procfs::ProcFs& /*proc*/) const override {
    return listed_++ == 0 ? std::vector<ProcessInfo>{info_} : std::vector<ProcessInfo>{};
  }
  [[nodiscard]] bool still_member(const procfs::ProcFs& /*proc*/, Pid pid) const override {
    asked_ = pid;
    return member_;
  }
  mutable Pid asked_ = 0;

 private:
  ProcessInfo info_;
  bool member_;
  mutable int listed_ = 0;
};

TEST(Teardown, APidNoLongerAMemberOnceItsPidfdIsOpenIsNotSignalled) {
  ProcessReaper children;
  for (const bool member : {false, true}) {
    const pid_t child = sleeping_child(children);
    ASSERT_GT(child, 0);
    auto proc = procfs::ProcFs::open("/proc");
    ASSERT_TRUE(proc.ok());
    auto info = proc->read_process(child);
    ASSERT_TRUE(info.ok());
    const ListedOnce source(*info, member);
    const TeardownOptions options{SIGKILL, 0ms, true, 2s, {}};
    const RoundsOutcome rounds = tear_down_rounds(*proc, source, options);
    ASSERT_EQ(rounds.outcomes.size(), 1u);
    EXPECT_EQ(source.asked_, child) << "asked once the pidfd was open";
    if (!member) {
      EXPECT_EQ(rounds.outcomes[0].state, TargetOutcome::State::kSkipped);
      EXPECT_NE(rounds.outcomes[0].reason.find("no longer a member"), std::string::npos);
      EXPECT_TRUE(rounds.outcomes[0].signals.empty());
      EXPECT_EQ(rounds.remaining(), 0u);
      EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0) << "a non-member was signalled";
      ::kill(child, SIGKILL);
    } else {
      // Negative control: a member is signalled as before.
      EXPECT_EQ(rounds.outcomes[0].state, TargetOutcome::State::kGone);
    }
    ::waitpid(child, nullptr, 0);
  }
}

// The subreaper containment (run without cgroups) answers still_member by ancestry: a PID
// reused by a process outside the run's tree is not a member (review of issue 21 item 8: only
// the cgroup containment asked).
TEST(Teardown, SubreaperMembersAreDescendantsNow) {
  ProcessReaper children;
  const pid_t child = sleeping_child(children);
  ASSERT_GT(child, 0);
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  const SubreaperContainment containment;
  EXPECT_TRUE(containment.still_member(*proc, child));
  // Negative controls: processes that are not below this one.
  EXPECT_FALSE(containment.still_member(*proc, ::getppid()));
  EXPECT_FALSE(containment.still_member(*proc, 1));
  EXPECT_FALSE(containment.still_member(*proc, ::getpid())) << "itself is no member";
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(containment.still_member(*proc, child)) << "gone";
}

// A child forked after the plan by a member is found in a later round. (The members here are
// the test's own children, so "gpuclean" is given as a PID no process has: descendants of
// gpuclean itself are never taken.)
TEST(Teardown, PlannedMembersFollowNewChildrenOnlyWhenAsked) {
  ProcessReaper children;
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t parent = children.adopt(::fork());
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::close(ready[0]);
    ::alarm(30);
    ::signal(SIGUSR1, [](int) {
      if (::fork() == 0) {
        ::alarm(30);
        for (;;) ::pause();
      }
    });
    if (::write(ready[1], "r", 1) != 1) _exit(3);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  std::set<PlannedMembers::Identity> existing;
  for (const auto& [pid, info] : procfs::read_process_table(*proc)) {
    existing.insert({pid, info.start_ticks});
  }
  const ProcessInfo planned = *proc->read_process(parent);
  ASSERT_EQ(::kill(parent, SIGUSR1), 0);  // forks after the "plan"
  std::vector<ProcessInfo> now;
  for (int i = 0; i < 2000 && now.size() < 2; ++i) {
    now = PlannedMembers({planned}, existing, true, kNoSuchPid, ::geteuid(), true).members(*proc);
    if (now.size() < 2) ::usleep(1000);
  }
  ASSERT_EQ(now.size(), 2u) << "the new child was not found";
  EXPECT_EQ(now[0].pid, parent);
  const pid_t late = children.adopt(now[1].pid);
  EXPECT_EQ(now[1].ppid, parent);
  // Negative control: not following children, only the planned process.
  const auto alone =
      PlannedMembers({planned}, existing, false, kNoSuchPid, ::geteuid(), true).members(*proc);
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].pid, parent);
  ::kill(late, SIGKILL);
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
}

// Members the way a forking target produces them: the first ask sees `first`, every later one
// `first` and `later` (a process that appeared while round one ran).
class AppearingMembers : public MemberSource {
 public:
  AppearingMembers(ProcessInfo first, ProcessInfo later)
      : first_(std::move(first)), later_(std::move(later)) {}
  [[nodiscard]] std::vector<ProcessInfo> members(const procfs::ProcFs& /*proc*/) const override {
    if (asked_++ == 0) return {first_};
    return {first_, later_};
  }

 private:
  ProcessInfo first_;
  ProcessInfo later_;
  mutable int asked_ = 0;
};

// Found in review: later rounds always sent SIGKILL, even with --no-kill9. Failed before the
// fix: the newcomer's signals were ["KILL"].
TEST(Teardown, NoKill9HoldsInLaterRounds) {
  ProcessReaper children;
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  const pid_t first = sleeping_child(children);
  const pid_t later = sleeping_child(children);
  ASSERT_GT(first, 0);
  ASSERT_GT(later, 0);
  const AppearingMembers members(*proc->read_process(first), *proc->read_process(later));
  const TeardownOptions no_kill9{SIGTERM, 50ms, false, 2s, {}};
  const RoundsOutcome rounds = tear_down_rounds(*proc, members, no_kill9, [&] {
    for (pid_t pid : {first, later}) ::waitpid(pid, nullptr, WNOHANG);
  });
  ASSERT_EQ(rounds.outcomes.size(), 2u);
  EXPECT_EQ(rounds.found[1].pid, later);
  const auto& sent = rounds.outcomes[1].signals;
  EXPECT_EQ(std::count(sent.begin(), sent.end(), "KILL"), 0) << "SIGKILL despite --no-kill9";
  EXPECT_EQ(std::count(sent.begin(), sent.end(), "TERM"), 1);
  EXPECT_EQ(rounds.outcomes[1].state, TargetOutcome::State::kGone) << "TERM ends a sleeper";
  // Negative control: with SIGKILL allowed, the later round sends it at once.
  const pid_t first2 = sleeping_child(children);
  const pid_t later2 = sleeping_child(children);
  const AppearingMembers members2(*proc->read_process(first2), *proc->read_process(later2));
  const TeardownOptions kill9{SIGTERM, 50ms, true, 2s, {}};
  const RoundsOutcome killed = tear_down_rounds(*proc, members2, kill9, [&] {
    for (pid_t pid : {first2, later2}) ::waitpid(pid, nullptr, WNOHANG);
  });
  ASSERT_EQ(killed.outcomes.size(), 2u);
  EXPECT_EQ(killed.outcomes[1].signals, std::vector<std::string>{"KILL"});
  for (pid_t pid : {first, later, first2, later2}) ::waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace gpuclean::ops
