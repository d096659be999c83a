// ops::RunSession's guard: whatever leaves `run`'s supervision early — an exception from a
// hook (the GPU sampler's reader, a bad_alloc), an early return — the workload and everything
// it started is SIGKILLed and reaped. Each case runs in a forked child (the session blocks
// signals and makes its process a child subreaper), which reports the workload's PIDs in a
// file; the test then checks those processes are gone. Only processes the test started are
// ever signalled.
//
// Failed with the guard taken out (RunSession's destructor doing nothing — how `run` was):
//   run_session_test.cpp:163: Failure  Value of: poll_until([pid] { return gone(pid); }, 5s)
//   Actual: false  Expected: true  pid 21515 outlived the session   (and 21517, 21518: the
//   orphan, the setsid escapee and the background child; both modes)
//   run_session_test.cpp:188: Failure ... code Which is: 13  kCaught Which is: 42
//   13: the guard said nothing
#include "ops/run_session.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "ops/launch.h"

namespace gpuclean::ops {
namespace {

using namespace std::chrono_literals;

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <typename Predicate>
bool poll_until(Predicate predicate, std::chrono::milliseconds deadline) {
  const auto end = std::chrono::steady_clock::now() + deadline;
  for (;;) {
    if (predicate()) return true;
    if (std::chrono::steady_clock::now() >= end) return false;
    std::this_thread::sleep_for(20ms);
  }
}

// No thread of `pid` alive (a zombie waiting for init counts as gone).
bool gone(pid_t pid) {
  const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  const auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return true;
  return stat[close + 2] == 'Z' || stat[close + 2] == 'X';
}

std::vector<pid_t> pids_in(const std::string& path) {
  std::vector<pid_t> pids;
  std::istringstream in(slurp(path));
  for (pid_t pid = 0; in >> pid;) pids.push_back(pid);
  return pids;
}

std::string comm(pid_t pid) {
  return slurp("/proc/" + std::to_string(pid) + "/comm");
}

// SIGKILLs what a negative control left running: only processes the test's own workload
// reported (a `sleep`, or the shell or setsid it forks from before the exec), through pidfds
// (opened first, then the name checked: the PID cannot be reused meanwhile).
void kill_leftovers(const std::vector<pid_t>& pids) {
  for (pid_t pid : pids) {
    const int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) continue;
    const std::string name = comm(pid);
    if (name == "sleep\n" || name == "sh\n" || name == "setsid\n") {
      ::syscall(SYS_pidfd_send_signal, fd, SIGKILL, nullptr, 0);
    }
    ::close(fd);
  }
}

class RunSessionGuardTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/gpuclean-session-XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    kill_leftovers(pids_in(pids_file()));
    std::filesystem::remove_all(dir_);
  }
  [[nodiscard]] std::string pids_file() const { return dir_ + "/pids"; }
  [[nodiscard]] std::string ready_file() const { return dir_ + "/ready"; }
  // A workload that leaves a background child, a double-forked orphan and a setsid escapee,
  // reports their PIDs, and waits.
  [[nodiscard]] std::vector<std::string> workload() const {
    const std::string f = pids_file();
    return {"sh", "-c",
            "sleep 300 & echo $! >> '" + f + "'; (sleep 300 & echo $! >> '" + f +
                "'); setsid sleep 300 & echo $! >> '" + f + "'; echo $$ >> '" + f + "'; touch '" +
                ready_file() + "'; wait"};
  }
  bool wait_ready() const {
    return poll_until([this] { return std::filesystem::exists(ready_file()); }, 10s);
  }

  // Runs `body` in a forked child; its exit code (or 128+signal).
  static int in_child(const std::function<int()>& body) {
    const pid_t child = ::fork();
    if (child == 0) {
      int code = 99;
      try {
        code = body();
      } catch (...) {
        code = 98;
      }
      ::_exit(code);
    }
    int status = 0;
    ::waitpid(child, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string dir_;
};

constexpr int kCaught = 42;
constexpr int kNotReady = 3;
constexpr int kNoCgroup = 77;

TEST_P(RunSessionGuardTest, AnExceptionDuringSupervisionStillEndsTheWholeRun) {
  const bool cgroup = GetParam();
  const int code = in_child([&] {
    try {
      RunLog log;
      RunSessionOptions options;
      options.no_cgroup = !cgroup;
      options.guard_wait = 2s;
      auto session = RunSession::create(options, log);
      if (!session.ok()) return 10;
      if (cgroup && (*session)->group() == nullptr) return kNoCgroup;
      if (!(*session)->launch("/bin/sh", workload()).ok()) return 11;
      if (!wait_ready()) return kNotReady;
      SuperviseOptions supervise;
      supervise.sample_every = std::chrono::milliseconds(10);
      SuperviseHooks hooks;
      // What a GPU sampler's reader that throws would do (before the fix: a malformed answer).
      hooks.on_sample = [] { throw std::runtime_error("the sampler's answer is malformed"); };
      (*session)->supervise(supervise, hooks);
      return 12;  // supervise returned: the hook did not throw
    } catch (const std::runtime_error&) {
      return kCaught;  // the session was destroyed on the way here
    }
  });
  if (code == kNoCgroup) GTEST_SKIP() << "no writable cgroup v2 hierarchy here";
  ASSERT_EQ(code, kCaught);
  const std::vector<pid_t> pids = pids_in(pids_file());
  ASSERT_EQ(pids.size(), 4u) << slurp(pids_file());
  for (pid_t pid : pids) {
    EXPECT_TRUE(poll_until([pid] { return gone(pid); }, 5s))
        << "pid " << pid << " outlived the session";
  }
}

TEST_P(RunSessionGuardTest, AnEarlyReturnAfterTheLaunchStillEndsTheWholeRun) {
  const bool cgroup = GetParam();
  const int code = in_child([&] {
    RunLog log;
    RunSessionOptions options;
    options.no_cgroup = !cgroup;
    bool guard_spoke = false;
    options.say = [&guard_spoke](const std::string& line) {
      guard_spoke = guard_spoke || line.find("ended abnormally") != std::string::npos;
    };
    {
      auto session = RunSession::create(options, log);
      if (!session.ok()) return 10;
      if (cgroup && (*session)->group() == nullptr) return kNoCgroup;
      if (!(*session)->launch("/bin/sh", workload()).ok()) return 11;
      if (!wait_ready()) return kNotReady;
    }  // returned without supervise() or tear_down()
    return guard_spoke ? kCaught : 13;
  });
  if (code == kNoCgroup) GTEST_SKIP() << "no writable cgroup v2 hierarchy here";
  ASSERT_EQ(code, kCaught) << "13: the guard said nothing";
  const std::vector<pid_t> pids = pids_in(pids_file());
  ASSERT_EQ(pids.size(), 4u);
  for (pid_t pid : pids) EXPECT_TRUE(poll_until([pid] { return gone(pid); }, 5s)) << pid;
}

TEST_P(RunSessionGuardTest, TheNormalTeardownDisarmsTheGuard) {
  // After tear_down() the guard has nothing to do: it must not speak (or kill) again.
  const bool cgroup = GetParam();
  const int code = in_child([&] {
    RunLog log;
    RunSessionOptions options;
    options.no_cgroup = !cgroup;
    bool guard_spoke = false;
    options.say = [&guard_spoke](const std::string& line) {
      guard_spoke = guard_spoke || line.find("ended abnormally") != std::string::npos;
    };
    {
      auto session = RunSession::create(options, log);
      if (!session.ok()) return 10;
      if (cgroup && (*session)->group() == nullptr) return kNoCgroup;
      if (!(*session)->launch("/bin/sh", workload()).ok()) return 11;
      if (!wait_ready()) return kNotReady;
      TeardownOptions teardown;
      teardown.grace = 1s;
      teardown.wait = 5s;
      (*session)->tear_down(RunEnd::kEscalated, teardown);
      (*session)->finish();
      if (log.record().leftovers.size() != 3) return 14;  // the workload itself is no leftover
      if (!log.record().clean) return 15;
    }
    return guard_spoke ? 13 : kCaught;
  });
  if (code == kNoCgroup) GTEST_SKIP() << "no writable cgroup v2 hierarchy here";
  ASSERT_EQ(code, kCaught) << "13: the guard fired after a teardown; 14/15: the teardown failed";
  for (pid_t pid : pids_in(pids_file())) EXPECT_TRUE(gone(pid)) << pid;
}

INSTANTIATE_TEST_SUITE_P(Modes, RunSessionGuardTest, ::testing::Values(false, true),
                         [](const auto& test) { return test.param ? "Cgroup" : "Subreaper"; });

// Negative control: the same workload launched and abandoned the same way without a session
// (the parent-death signal alone, as `run` had) leaves its children running — the checks
// above can see a survivor.
TEST(RunSessionNegativeControl, WithoutTheGuardTheWorkloadsChildrenSurvive) {
  char pattern[] = "/tmp/gpuclean-session-XXXXXX";
  ASSERT_NE(::mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  const std::string f = dir + "/pids";
  const std::string ready = dir + "/ready";
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      LaunchOptions options;
      options.new_session = true;
      options.parent_death_signal = SIGKILL;
      auto launched =
          launch("/bin/sh",
                 {"sh", "-c",
                  "sleep 300 & echo $! >> '" + f + "'; (sleep 300 & echo $! >> '" + f +
                      "'); setsid sleep 300 & echo $! >> '" + f + "'; touch '" + ready + "'; wait"},
                 options);
      if (!launched.ok()) ::_exit(11);
      if (!poll_until([&] { return std::filesystem::exists(ready); }, 10s)) ::_exit(3);
      throw std::runtime_error("the sampler's answer is malformed");
    } catch (const std::runtime_error&) {
      ::_exit(kCaught);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), kCaught);
  const std::vector<pid_t> pids = pids_in(f);
  ASSERT_EQ(pids.size(), 3u);
  // Each background job may still be between its fork and the exec of sleep.
  for (pid_t pid : pids) {
    EXPECT_TRUE(poll_until([pid] { return gone(pid) || comm(pid) == "sleep\n"; }, 5s)) << pid;
  }
  std::size_t alive = 0;
  for (pid_t pid : pids) alive += gone(pid) ? 0U : 1U;
  EXPECT_EQ(alive, 3u) << "without the guard the workload's children outlive it";
  kill_leftovers(pids);
  for (pid_t pid : pids) EXPECT_TRUE(poll_until([pid] { return gone(pid); }, 5s)) << pid;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gpuclean::ops
