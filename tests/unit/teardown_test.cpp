// Teardown edge cases that need real processes but no gpuclean binary (src/ops/teardown.h).
#include "ops/teardown.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <gtest/gtest.h>

#include "procfs/proc_fs.h"

namespace gpuclean::ops {
namespace {

using namespace std::chrono_literals;

// Issue 13 item 8. A target the kernel will not let us signal (EPERM: here a root process and
// an unprivileged tear_down) must be reported with that reason. Before, send() dropped every
// error but ESRCH and the report said "it is still running after every signal" (run on commit
// 4404490's teardown.cpp: the child printed that reason).
TEST(Teardown, SignalErrorsAreReportedWithTheirReason) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to make a process we then cannot signal";
  const pid_t sleeper = ::fork();
  ASSERT_GE(sleeper, 0);
  if (sleeper == 0) {
    ::alarm(30);
    for (;;) ::pause();
  }
  auto proc = procfs::ProcFs::open("/proc");
  ASSERT_TRUE(proc.ok());
  auto info = proc->read_process(sleeper);
  ASSERT_TRUE(info.ok());

  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t unprivileged = ::fork();
  ASSERT_GE(unprivileged, 0);
  if (unprivileged == 0) {
    ::close(report[0]);
    if (::setresgid(65534, 65534, 65534) != 0 || ::setresuid(65534, 65534, 65534) != 0) _exit(3);
    const TeardownOptions options{SIGTERM, 100ms, true, 300ms};
    const auto outcomes = tear_down(*proc, {*info}, options);
    const std::string line = outcomes.size() == 1
                                 ? std::string(to_string(outcomes[0].state)) + "|" +
                                       outcomes[0].reason
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

}  // namespace
}  // namespace gpuclean::ops
