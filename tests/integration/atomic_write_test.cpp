// The commands that write a file a reader may be watching — `run --record`, `snapshot -o`,
// `metrics --textfile`, `plot -o` — as root into a shared (sticky, world-writable)
// directory where another user planted symlinks: at the target's name and at the temp names
// the old writers derived from gpuclean's PID. gpuclean runs as PID 1 of a PID namespace of
// its own, so those names are known in advance, as an attacker who watches PIDs would know
// them. Failed before the shared helper (core/atomic_file.h):
//   metrics --textfile: the victim held the metrics (open O_CREAT|O_TRUNC followed PATH.tmp-1)
//   snapshot -o:        the victim held the snapshot (ofstream followed PATH.tmp.1)
//   run --record:       "--record: create PATH.tmp.1: File exists", exit 125 (no run at all)
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "holder_fixture.h"

namespace gpuclean::testing {
namespace {

bool is_symlink(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

bool is_regular(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

class AtomicWriteTest : public HolderFixture {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "the attack is on root's writes; needs root";
    if (run_command({"/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "true"}).exit_code !=
        0) {
      GTEST_SKIP() << "cannot make a PID namespace here";
    }
    std::filesystem::create_directory(shared_);
    ASSERT_EQ(::chmod(shared_.c_str(), 01777), 0);
    std::ofstream(victim_) << "precious\n";
  }
  // gpuclean as PID 1 of a new PID namespace.
  CommandResult as_pid_one(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"/usr/bin/unshare", "--pid", "--fork", "--mount-proc",
                                     GPUCLEAN_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_command(argv);
  }
  // Links to the victim at `target` and at the old writers' temp names for PID 1, owned by
  // nobody as another user's would be.
  std::vector<std::string> plant(const std::string& target) {
    std::vector<std::string> links = {target, target + ".tmp.1", target + ".tmp-1"};
    for (const std::string& link : links) {
      EXPECT_EQ(::symlink(victim_.c_str(), link.c_str()), 0) << link;
      (void)::lchown(link.c_str(), 65534, 65534);
    }
    return links;
  }
  void expect_untouched(const std::vector<std::string>& links, const std::string& target,
                        const std::string& expected_content) {
    EXPECT_EQ(slurp(victim_), "precious\n") << "a planted link was followed";
    EXPECT_TRUE(is_regular(target)) << "the link at the target is replaced by a regular file";
    EXPECT_NE(slurp(target).find(expected_content), std::string::npos) << slurp(target);
    for (std::size_t i = 1; i < links.size(); ++i) EXPECT_TRUE(is_symlink(links[i])) << links[i];
  }
  std::string shared_ = dir_.path() + "/textfiles";
  std::string victim_ = dir_.path() + "/victim";
};

TEST_F(AtomicWriteTest, MetricsTextfileNeverFollowsAPlantedLink) {
  const std::string target = shared_ + "/gpuclean.prom";
  const auto links = plant(target);
  auto result = as_pid_one({"metrics", "--no-nvml", "--device-glob", held_, "--textfile", target});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  expect_untouched(links, target, "gpuclean_clean");
}

TEST_F(AtomicWriteTest, SnapshotOutputNeverFollowsAPlantedLink) {
  const std::string target = shared_ + "/snapshot.json";
  const auto links = plant(target);
  auto result = as_pid_one({"snapshot", "--no-nvml", "--device-glob", held_, "-o", target});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  expect_untouched(links, target, "\"kind\": \"snapshot\"");
}

TEST_F(AtomicWriteTest, RunRecordNeverFollowsAPlantedLinkAndIsNotStoppedByOne) {
  const std::string target = shared_ + "/run.json";
  const auto links = plant(target);
  auto result = as_pid_one({"run", "-q", "--no-nvml", "--no-cgroup", "--device-glob", held_,
                            "--record", target, "--", "true"});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  expect_untouched(links, target, "\"kind\": \"run\"");
}

// Issue 21 item 1: plot -o wrote through std::ofstream and followed a link at its name.
// Failed before the fix: the victim held the SVG.
TEST_F(AtomicWriteTest, PlotOutputNeverFollowsAPlantedLink) {
  const std::string record = dir_.path() + "/record.json";
  auto made = gpuclean({"run", "-q", "--no-nvml", "--no-cgroup", "--device-glob", held_, "--record",
                        record, "--", "true"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string target = shared_ + "/run.svg";
  const auto links = plant(target);
  auto result = as_pid_one({"plot", record, "-o", target});
  EXPECT_EQ(result.exit_code, 0) << result.err;
  expect_untouched(links, target, "<svg");
}

TEST_F(AtomicWriteTest, NegativeControlAPlainWriterFollowsTheLink) {
  // The test can see a followed link: writing the target's name as a plain writer does
  // (ofstream) lands in the victim.
  const std::string target = shared_ + "/plain.prom";
  plant(target);
  std::ofstream(target) << "followed\n";
  EXPECT_EQ(slurp(victim_), "followed\n");
}

}  // namespace
}  // namespace gpuclean::testing
