// Issue 14: a process whose memory map is locked (MmLockVictim: a thread waits on a FUSE read
// that never comes while holding the mmap lock) does not hang gpuclean. Reading its cmdline
// blocks in the kernel — `ps aux` hangs on it — so gpuclean reads it on a thread it can walk
// away from (core/deadline_pool.h): `who`, `status`, `explain` and `kill` answer within 2 s,
// list the victim as `stuck` with "its memory map is locked", and `kill` delivers its SIGKILL.
//
// Negative control: --proc-timeout 0 (no deadline) and the same commands hang until timeout(1)
// ends them — the test can see the hang it guards against. Before the deadline existed
// (573c2ba, built beside it), `who`, `status` and `explain PID` with this victim were all
// still running when `timeout -s KILL 4` ended them (exit 137); this code: 1.01 s each.
//
// These tests run alone (RUN_SERIAL): any other test reading every /proc/PID/cmdline would
// block on the victim until it is released.
#include <gtest/gtest.h>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "../integration/command_json.h"
#include "fuse_fixture.h"

namespace gpuclean::testing {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

bool gone(pid_t pid) {
  return ::kill(pid, 0) != 0 && errno == ESRCH;
}

class StuckProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!MmLockVictim::supported(&why)) GTEST_SKIP() << why;
    held_ = dir_.file("held-device");
  }

  struct Timed {
    CommandResult result;
    Clock::duration took;
  };
  // The shipping gpuclean on the test's own device file, NVML off (this is about /proc). A
  // hang is ended by timeout(1) after `limit`: exit 124.
  Timed gpuclean(std::vector<std::string> args, const std::string& limit = "6") {
    std::vector<std::string> argv = {"/usr/bin/timeout", "-s", "KILL", limit,
                                     GPUCLEAN_SHIPPING_BINARY};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--no-nvml", "--device-glob", held_});
    const auto started = Clock::now();
    CommandResult result = run_command(argv, 30s);
    return {std::move(result), Clock::now() - started};
  }

  TempDir dir_;
  std::string held_;
};

TEST_F(StuckProcessTest, WhoStatusExplainAnswerAndListTheVictimAsStuck) {
  MmLockVictim victim(held_);
  ASSERT_TRUE(victim.ready()) << victim.error();
  const std::string pid = std::to_string(victim.pid());

  auto who = gpuclean({"who", "--json"});
  EXPECT_LT(who.took, 2s);
  EXPECT_EQ(who.result.exit_code, 1) << "holders found\n" << who.result.err;
  const json who_doc = parse(who.result);
  const json* listed = holder(who_doc, victim.pid());
  ASSERT_NE(listed, nullptr) << who.result.out;
  EXPECT_EQ((*listed)["class"], "stuck");
  EXPECT_EQ((*listed)["memory_map_locked"], true);

  auto status = gpuclean({"status"});
  EXPECT_LT(status.took, 2s);
  EXPECT_EQ(status.result.exit_code, 1) << "a stuck holder is a problem\n" << status.result.out;
  EXPECT_NE(status.result.out.find("pid " + pid), std::string::npos) << status.result.out;
  EXPECT_NE(status.result.out.find("its memory map is locked (a thread is stuck; see its wait "
                                   "channels"),
            std::string::npos)
      << status.result.out;

  auto explain = gpuclean({"explain", pid});
  EXPECT_LT(explain.took, 2s);
  EXPECT_NE(explain.result.out.find("its memory map is locked"), std::string::npos)
      << explain.result.out << explain.result.err;

  // Plain who (text): the victim's line is there, without its (unreadable) command line.
  auto who_text = gpuclean({"who"});
  EXPECT_LT(who_text.took, 2s);
  EXPECT_NE(who_text.result.out.find(pid), std::string::npos) << who_text.result.out;
}

TEST_F(StuckProcessTest, KillSignalsTheVictimWithoutWaitingOnIt) {
  MmLockVictim victim(held_);
  ASSERT_TRUE(victim.ready()) << victim.error();
  const std::string pid = std::to_string(victim.pid());

  auto kill = gpuclean({"kill", pid, "--yes", "--grace", "200ms", "--wait", "300ms"});
  EXPECT_LT(kill.took, 2s) << kill.result.out << kill.result.err;
  EXPECT_NE(kill.result.exit_code, 124) << "kill hung";
  // It cannot die while its thread waits on the FUSE read (an uninterruptible wait): kill says
  // so rather than "clean".
  EXPECT_NE(kill.result.exit_code, 0) << kill.result.out << kill.result.err;
  // The SIGKILL was delivered: once the wait ends, the victim dies.
  victim.release();
  EXPECT_TRUE(wait_until([&] { return gone(victim.pid()) || proc_state(victim.pid()) == 'Z'; }, 5s))
      << "the victim outlived its release: kill did not signal it\n"
      << kill.result.out << kill.result.err;
}

TEST_F(StuckProcessTest, ReleasedWithoutKillTheVictimLivesOn) {
  // Negative control for the test above: release alone does not end the victim.
  MmLockVictim victim(held_);
  ASSERT_TRUE(victim.ready()) << victim.error();
  victim.release();
  // Its lock is free again once its command line can be read.
  const std::string cmdline = "/proc/" + std::to_string(victim.pid()) + "/cmdline";
  ASSERT_TRUE(wait_until(
      [&] {
        return run_command({"/usr/bin/timeout", "1", "/usr/bin/cat", cmdline}, 5s).exit_code == 0;
      },
      5s));
  EXPECT_FALSE(gone(victim.pid()));
  EXPECT_NE(proc_state(victim.pid()), 'Z');
}

// Issue 32 item 3, the negative control of tests/integration/blocked_test.cpp: `stuck` now
// needs a thread still in D when re-read ~200 ms later, and a vfork parent or a frozen process
// is not stuck — but a thread really in D across the re-check still is. The holder here is a
// reader of the victim's command line: it waits in D for the victim's mmap lock for as long as
// the FUSE read is unanswered, while its own command line and maps read normally (so it is
// stuck by its D alone, not by memory_map_locked). Its parent (this test) is alive, so it is no
// `--leftovers` target: on the old code (644b0d0) it was, as "leftover (stuck)".
TEST_F(StuckProcessTest, AThreadInDAcrossTheRecheckIsStuckButNoLeftover) {
  const std::string victim_file = dir_.file("victim-device");  // not under --device-glob
  MmLockVictim victim(victim_file);
  ASSERT_TRUE(victim.ready()) << victim.error();
  const std::string cmdline = "/proc/" + std::to_string(victim.pid()) + "/cmdline";
  fuse_detail::OwnedChild reader(
      {"/bin/sh", "-c", "exec 3<>\"$0\"; exec /usr/bin/cat \"$1\" > /dev/null", held_, cmdline});
  ASSERT_TRUE(reader.started());
  ASSERT_TRUE(wait_until([&] { return proc_state(reader.pid()) == 'D'; }, 10s))
      << "state " << proc_state(reader.pid());

  auto who = gpuclean({"who", "--json"});
  EXPECT_LT(who.took, 3s);
  const json doc = parse(who.result);
  const json* listed = holder(doc, reader.pid());
  ASSERT_NE(listed, nullptr) << who.result.out << who.result.err;
  EXPECT_EQ((*listed)["class"], "stuck") << listed->dump();
  EXPECT_EQ((*listed)["memory_map_locked"], false) << listed->dump();

  auto plan = gpuclean({"kill", "--leftovers", "--dry-run", "--json"});
  EXPECT_EQ(plan.result.exit_code, 0) << plan.result.out << plan.result.err;
  const json plan_doc = parse(plan.result);
  for (const json& target : plan_doc.value("targets", json::array())) {
    EXPECT_NE(target.value("pid", 0), reader.pid()) << plan.result.out;
  }
  // Still in D: the class above was about a D that lasted.
  EXPECT_EQ(proc_state(reader.pid()), 'D');
  victim.release();
  EXPECT_TRUE(reader.reap_within(5s)) << "the reader ends once the lock is free";
}

TEST_F(StuckProcessTest, WithoutTheDeadlineTheSameCommandsHang) {
  // Negative control: the deadline is what keeps them bounded.
  MmLockVictim victim(held_);
  ASSERT_TRUE(victim.ready()) << victim.error();
  const std::string pid = std::to_string(victim.pid());
  for (const std::vector<std::string>& command :
       {std::vector<std::string>{"who"}, {"status"}, {"explain", pid}}) {
    std::vector<std::string> args = command;
    args.insert(args.end(), {"--proc-timeout", "0"});
    auto hung = gpuclean(args, "2");
    EXPECT_EQ(hung.result.exit_code, 128 + SIGKILL)
        << command[0] << " answered without a deadline: " << hung.result.out << hung.result.err;
  }
  // With the default deadline the same command answers (the victim is still locked).
  EXPECT_EQ(gpuclean({"who"}).result.exit_code, 1) << "holders found";
}

}  // namespace
}  // namespace gpuclean::testing
