// Issue 51: reading an input file cost its whole cap. read_input_file sized its buffer to the
// cap (plot: 256 MiB, diff: 64 MiB) and so zero-filled it on every read, whatever the file's
// size: `gpuclean plot` of a 1.5 KB run record peaked at 263 MiB. Now the file's size is the
// first guess and the cap only a limit. The shipping binary runs as a child; its peak resident
// set comes from wait4's rusage.
//
// Failed before the fix: with the old core/input_file.cpp (its read loop), in an unsanitized
// -O2 build, ctest -R InputFileMemory saw plot's child peak at 268,568 KiB (262 MiB) and diff's
// (baseline.json against degraded.json) at 71,660 KiB (70 MiB), each over the 32 MiB bound.
// With the fix, the same build: 7,012 KiB and 6,688 KiB.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "spawn.h"

#if defined(__SANITIZE_ADDRESS__)
#define GPUCLEAN_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GPUCLEAN_TEST_ASAN 1
#endif
#endif

namespace gpuclean::testing {
namespace {

constexpr long kBoundKiB = 32L << 10;  // ru_maxrss is in KiB

struct Measured {
  int exit_code = -1;
  long max_rss_kib = 0;
};

// Runs argv with its standard streams on /dev/null; its exit code and peak RSS. fork, not
// posix_spawn: an exec records the replaced memory map's high-water mark as the child's own,
// and posix_spawn's child execs from this process's map (its peak), a forked one from a copy
// holding only what this test process has now (a few MiB).
Measured measure(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {  // only async-signal-safe calls until the exec
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  Measured measured;
  if (pid < 0) return measured;
  int status = 0;
  rusage usage{};
  if (::wait4(pid, &status, 0, &usage) != pid) return measured;
  measured.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  measured.max_rss_kib = usage.ru_maxrss;
  return measured;
}

class InputFileMemory : public ::testing::Test {
 protected:
  void SetUp() override {
#ifdef GPUCLEAN_TEST_ASAN
    GTEST_SKIP() << "under AddressSanitizer the resident set is mostly the sanitizer's shadow "
                    "memory, not what gpuclean allocates";
#endif
  }
  static std::string snapshot(const std::string& name) {
    return std::string(GPUCLEAN_FIXTURES) + "/snapshots/" + name;
  }
  TempDir dir_;
};

TEST_F(InputFileMemory, PlotOfASmallRunRecordStaysSmall) {
  const std::string record = dir_.path() + "/run.json";
  const CommandResult recorded =
      run_command({GPUCLEAN_BINARY, "run", "-q", "--no-nvml", "--no-cgroup", "--device-glob",
                   dir_.file("device"), "--record", record, "--", "/bin/true"});
  ASSERT_EQ(recorded.exit_code, 0) << recorded.err;
  const Measured plot =
      measure({GPUCLEAN_SHIPPING_BINARY, "plot", record, "-o", dir_.path() + "/run.svg"});
  ASSERT_EQ(plot.exit_code, 0);
  RecordProperty("plot_max_rss_kib", std::to_string(plot.max_rss_kib));
  EXPECT_FALSE(slurp(dir_.path() + "/run.svg").empty());
  EXPECT_LE(plot.max_rss_kib, kBoundKiB) << "plot of a " << slurp(record).size()
                                         << "-byte record peaked at " << plot.max_rss_kib << " KiB";
}

TEST_F(InputFileMemory, DiffOfTwoSmallSnapshotsStaysSmall) {
  const Measured diff = measure(
      {GPUCLEAN_SHIPPING_BINARY, "diff", snapshot("baseline.json"), snapshot("degraded.json")});
  ASSERT_EQ(diff.exit_code, 1) << "the degraded snapshot differs in ways that fail";
  RecordProperty("diff_max_rss_kib", std::to_string(diff.max_rss_kib));
  EXPECT_LE(diff.max_rss_kib, kBoundKiB) << "diff peaked at " << diff.max_rss_kib << " KiB";
}

}  // namespace
}  // namespace gpuclean::testing
