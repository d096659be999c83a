// The top library's parts that work without a terminal (src/top/): the collector thread on a
// real Gatherer over a device file of the test's own, a child run and reaped by its pidfd, the
// pane's lines and the kill pane's last word. tests/top/run.sh drives the whole view in tmux.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/exit_code.h"
#include "top/child_run.h"
#include "top/collector.h"
#include "top/session.h"

namespace gpuclean::top {
namespace {

using Clock = std::chrono::steady_clock;

// Polls `fd` for input until `deadline`.
bool readable_by(int fd, Clock::time_point deadline) {
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) > 0) return true;
  }
  return false;
}

TEST(TopCollector, CollectsOnItsThreadEachDelayAndAtOnceWhenAsked) {
  char path[] = "/tmp/gpuclean-top-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  collect::CollectOptions options;
  options.device_globs = {path};
  options.no_nvml = true;
  auto opened = collect::Gatherer::open(options);
  ASSERT_EQ(opened.index(), 0U);
  std::shared_ptr<collect::Gatherer> gatherer = std::move(std::get<0>(opened));
  {
    // A delay far beyond the test: a collection inside it is the one refresh_now asked for.
    Collector collector(gatherer, std::chrono::hours(1));
    EXPECT_FALSE(collector.take().has_value());
    collector.refresh_now();
    ASSERT_TRUE(readable_by(collector.ready_fd(), Clock::now() + std::chrono::seconds(20)));
    const auto gathered = collector.take();
    ASSERT_TRUE(gathered.has_value());
    EXPECT_EQ(gathered->files.size(), 1U);
    EXPECT_EQ(gathered->nvml_state, NvmlState::kDisabled);
    EXPECT_FALSE(collector.take().has_value());  // taken once
    EXPECT_TRUE(collector.stop(std::chrono::seconds(5)));
  }
  {
    // Negative control for the wait: with a short delay it collects without being asked.
    Collector collector(gatherer, std::chrono::milliseconds(20));
    ASSERT_TRUE(readable_by(collector.ready_fd(), Clock::now() + std::chrono::seconds(20)));
    EXPECT_TRUE(collector.take().has_value());
  }
  ::unlink(path);
}

// Runs `script` in sh through start_child until it exits (deadline 20 s).
ChildRun finished_child(const char* script, ChildMode mode) {
  std::string error;
  auto child = start_child("/bin/sh", {"sh", "-c", script}, mode, error);
  EXPECT_TRUE(child.has_value()) << error;
  if (!child) return {};
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!child->exit_code && Clock::now() < deadline) {
    pump_child(*child);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return std::move(*child);
}

TEST(TopChildRun, OutputAndExitStatusOnceItsPidfdSaysItExited) {
  const ChildRun child = finished_child("echo planned; echo oops >&2; exit 3", {});
  ASSERT_TRUE(child.exit_code.has_value());
  EXPECT_EQ(*child.exit_code, 3);
  EXPECT_EQ(child.text, "planned\noops\n");
  EXPECT_EQ(child.error_text, "");
}

// The dry run's JSON on stdout stays whole whatever kill says on stderr.
TEST(TopChildRun, StderrApartWhenSplit) {
  const ChildRun child = finished_child("echo '{\"dry_run\"'; echo oops >&2; echo ': true}'",
                                        {.acting = false, .split_errors = true});
  ASSERT_TRUE(child.exit_code.has_value());
  EXPECT_EQ(*child.exit_code, 0);
  EXPECT_EQ(child.text, "{\"dry_run\"\n: true}\n");
  EXPECT_EQ(child.error_text, "oops\n");
}

TEST(TopChildRun, APlanIsEndedAndReaped) {
  std::string error;
  auto child = start_child("/bin/sleep", {"sleep", "600"}, {}, error);
  ASSERT_TRUE(child.has_value()) << error;
  const pid_t pid = child->launched.pid;
  end_child(*child);
  // Reaped: the PID is no child of ours any more.
  EXPECT_EQ(::waitpid(pid, nullptr, WNOHANG), -1);
  EXPECT_FALSE(start_child("/nonexistent/gpuclean", {"gpuclean"}, {}, error).has_value());
  EXPECT_NE(error.find("cannot run gpuclean kill"), std::string::npos) << error;
}

TEST(TopPane, LinesWithControlBytesReplaced) {
  EXPECT_EQ(split_lines("a\tb\nc\x1b[2Jd\x7f\n"), (std::vector<std::string>{"a\tb", "c?[2Jd?"}));
  EXPECT_TRUE(split_lines("").empty());
}

TEST(TopPane, KillOutcomeByExitCode) {
  EXPECT_EQ(kill_outcome(kExitClean, true), "done: every target gone and its GPU memory released");
  EXPECT_EQ(kill_outcome(kExitClean, false),
            "done: every target gone (GPU memory not checked: no NVML)");
  EXPECT_EQ(kill_outcome(kExitDirty, true), "something remains (see above)");
  EXPECT_EQ(kill_outcome(kExitUsage, true), "nothing was signalled (see above)");
  EXPECT_EQ(kill_outcome(kExitRuntime, true), "signalled; GPU memory not verified (NVML failed)");
  EXPECT_EQ(kill_outcome(137, true), "gpuclean kill ended with status 137");
}

}  // namespace
}  // namespace gpuclean::top
