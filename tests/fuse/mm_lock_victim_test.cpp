// Self-test of MmLockVictim (fuse_fixture.h): while it is up, reading the victim's cmdline and
// environ blocks but stat and fd answer; release() unblocks them; teardown leaves no mount and
// no process behind, released or not. Every read of the victim's /proc goes through
// `timeout 2`: one that blocks must not hang this test.
#include <gtest/gtest.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <string>

#include "fuse_fixture.h"

namespace gpuclean::testing {
namespace {

using namespace std::chrono_literals;

// Exit code 124: timeout(1) ended the read after 2 s.
CommandResult read_within_2s(const std::string& path) {
  return run_command({"/usr/bin/timeout", "2", "/usr/bin/cat", path}, 20s);
}

CommandResult list_within_2s(const std::string& path) {
  return run_command({"/usr/bin/timeout", "2", "/usr/bin/ls", "-l", path}, 20s);
}

// Signal 0 delivers nothing; ESRCH says no process has this PID any more.
bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

class MmLockVictimTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!MmLockVictim::supported(&why)) GTEST_SKIP() << why;
  }
  TempDir dir_;
  std::string held_ = dir_.file("device");
};

TEST_F(MmLockVictimTest, CmdlineAndEnvironBlockUntilRelease) {
  std::string mount_point;
  pid_t victim_pid = -1;
  pid_t daemon_pid = -1;
  {
    const auto start = std::chrono::steady_clock::now();
    MmLockVictim victim(held_);
    ASSERT_TRUE(victim.ready()) << victim.error();
    std::cout << "fixture setup took "
              << std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count()
              << " ms\n";
    mount_point = victim.mount_point();
    victim_pid = victim.pid();
    daemon_pid = victim.daemon_pid();
    const std::string proc = "/proc/" + std::to_string(victim_pid);

    EXPECT_EQ(read_within_2s(proc + "/cmdline").exit_code, 124);
    EXPECT_EQ(read_within_2s(proc + "/environ").exit_code, 124);

    const CommandResult stat = read_within_2s(proc + "/stat");
    EXPECT_EQ(stat.exit_code, 0) << stat.err;
    EXPECT_NE(stat.out.find("(mm_lock_victim)"), std::string::npos) << stat.out;
    const CommandResult fds = list_within_2s(proc + "/fd");
    EXPECT_EQ(fds.exit_code, 0) << fds.err;
    EXPECT_NE(fds.out.find(held_), std::string::npos) << fds.out;

    victim.release();
    const CommandResult cmdline = read_within_2s(proc + "/cmdline");
    EXPECT_EQ(cmdline.exit_code, 0);
    EXPECT_NE(cmdline.out.find(MmLockVictim::kMarker), std::string::npos) << cmdline.out;
    EXPECT_EQ(read_within_2s(proc + "/environ").exit_code, 0);
  }
  EXPECT_FALSE(fuse_detail::mounted(mount_point));
  EXPECT_TRUE(gone(victim_pid));
  EXPECT_TRUE(gone(daemon_pid));
}

// A test that fails before release(): the destructor must still get everything down.
TEST_F(MmLockVictimTest, TeardownWithoutReleaseLeavesNothing) {
  std::string mount_point;
  pid_t victim_pid = -1;
  pid_t daemon_pid = -1;
  std::chrono::steady_clock::time_point start;
  {
    MmLockVictim victim(held_);
    ASSERT_TRUE(victim.ready()) << victim.error();
    mount_point = victim.mount_point();
    victim_pid = victim.pid();
    daemon_pid = victim.daemon_pid();
    start = std::chrono::steady_clock::now();
  }
  const auto teardown = std::chrono::steady_clock::now() - start;
  EXPECT_LT(teardown, 3s);
  EXPECT_FALSE(fuse_detail::mounted(mount_point));
  EXPECT_TRUE(gone(victim_pid));
  EXPECT_TRUE(gone(daemon_pid));
  EXPECT_FALSE(std::filesystem::exists(mount_point));
}

}  // namespace
}  // namespace gpuclean::testing
