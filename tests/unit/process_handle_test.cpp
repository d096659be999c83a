// ProcessHandle and signal parsing. The handle tests fork their own child and signal only it.
#include "ops/process_handle.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ops/signals.h"
#include "ops/teardown.h"

namespace gpuclean::ops {
namespace {

class ChildProcess {
 public:
  ChildProcess() : pid_(::fork()) {
    if (pid_ == 0) {
      ::alarm(30);  // never outlives a crashed test
      for (;;) ::pause();
    }
  }
  ~ChildProcess() {
    ::kill(pid_, SIGKILL);  // our own child
    ::waitpid(pid_, nullptr, 0);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  [[nodiscard]] pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

procfs::ProcFs proc() {
  return std::move(procfs::ProcFs::open("/proc")).value();
}

std::uint64_t start_ticks(const procfs::ProcFs& p, pid_t pid) {
  return p.read_process(pid)->start_ticks;
}

TEST(ProcessHandle, OpensTheSameProcessAndRefusesARecycledOne) {
  ChildProcess child;
  auto p = proc();
  const auto ticks = start_ticks(p, child.pid());
  auto handle = ProcessHandle::open(child.pid(), ticks);
  ASSERT_TRUE(handle.ok()) << handle.error().message();
  EXPECT_FALSE(handle->exited());
  // A plan made for a process that started at another time: the PID was recycled.
  auto stale = ProcessHandle::open(child.pid(), ticks + 1);
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().errnum, kRecycledErrno);
}

TEST(ProcessHandle, SignalAndExitAreSeenThroughThePidfd) {
  ChildProcess child;
  auto p = proc();
  auto handle = ProcessHandle::open(child.pid(), start_ticks(p, child.pid()));
  ASSERT_TRUE(handle.ok());
  ASSERT_TRUE(handle->signal(SIGKILL).ok());
  // Not reaped yet: a zombie nobody reaps counts as exited (docs/facts.md: treat Z as gone).
  const auto left =
      wait_for_exit({&*handle}, std::chrono::steady_clock::now() + std::chrono::seconds(10));
  EXPECT_TRUE(left.empty());
  EXPECT_TRUE(handle->exited());
}

TEST(ProcessHandle, GoneProcessIsEsrch) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  auto handle = ProcessHandle::open(pid, 0);
  ASSERT_FALSE(handle.ok());
  EXPECT_EQ(handle.error().errnum, ESRCH);
}

TEST(ProcessHandle, WaitIsBoundedByTheDeadline) {
  ChildProcess child;
  auto p = proc();
  auto handle = ProcessHandle::open(child.pid(), start_ticks(p, child.pid()));
  ASSERT_TRUE(handle.ok());
  const auto start = std::chrono::steady_clock::now();
  const auto left = wait_for_exit({&*handle}, start + std::chrono::milliseconds(100));
  EXPECT_EQ(left.size(), 1u);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(ParseSignal, NamesNumbersAndNonsense) {
  EXPECT_EQ(*parse_signal("TERM"), SIGTERM);
  EXPECT_EQ(*parse_signal("sigkill"), SIGKILL);
  EXPECT_EQ(*parse_signal("SIGINT"), SIGINT);
  EXPECT_EQ(*parse_signal("9"), SIGKILL);
  EXPECT_FALSE(parse_signal("SIGFOO").ok());
  EXPECT_FALSE(parse_signal("0").ok());
  EXPECT_FALSE(parse_signal("").ok());
  EXPECT_FALSE(parse_signal("999").ok());
  EXPECT_EQ(signal_name(SIGTERM), "TERM");
}

TEST(WhyRemaining, FrozenStuckAndStopped) {
  EXPECT_NE(why_remaining({{5, 'D', "refrigerator"}}).find("thawed"), std::string::npos);
  EXPECT_NE(why_remaining({{5, 'S', ""}, {6, 'D', "uvm_wait"}}).find("GPU reset"),
            std::string::npos);
  EXPECT_NE(why_remaining({{5, 'T', ""}}).find("stopped"), std::string::npos);
}

}  // namespace
}  // namespace gpuclean::ops
