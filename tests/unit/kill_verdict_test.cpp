// kill's verdict on the selection after the kill (diagnose/verdict.h): plain data in, one
// of status's three words out.
#include "diagnose/verdict.h"

#include <gtest/gtest.h>

namespace gpuclean::diagnose {
namespace {

KillAftermath after(MemoryCheck memory) {
  KillAftermath a;
  a.memory = memory;
  return a;
}

TEST(KillVerdict, CleanOnlyWhenNothingIsLeftAndEverythingNeededWasSeen) {
  EXPECT_EQ(kill_verdict(after(MemoryCheck::kVerified)), Verdict::kClean);
  // No NVML: the verdict rests on /proc, which saw everything: clean (the text says memory was
  // not checked).
  EXPECT_EQ(kill_verdict(after(MemoryCheck::kNotChecked)), Verdict::kClean);
  EXPECT_STREQ(to_string(kill_verdict(after(MemoryCheck::kVerified))), "clean");
}

TEST(KillVerdict, AnyHolderLeftIsDirtyTargetOrNot) {
  for (MemoryCheck memory :
       {MemoryCheck::kVerified, MemoryCheck::kNotChecked, MemoryCheck::kFailed}) {
    KillAftermath others = after(memory);
    others.others_left = 1;  // a holder that was not a target: still not clean
    EXPECT_EQ(kill_verdict(others), Verdict::kDirty);
    KillAftermath target = after(memory);
    target.targets_left = 1;
    EXPECT_EQ(kill_verdict(target), Verdict::kDirty);
    KillAftermath memory_left = after(memory);
    memory_left.memory_left = 2;
    EXPECT_EQ(kill_verdict(memory_left), Verdict::kDirty);
    // What was seen is dirty whatever was not.
    others.unseen = true;
    EXPECT_EQ(kill_verdict(others), Verdict::kDirty);
  }
}

TEST(KillVerdict, UnknownWhenItCouldNotTell) {
  EXPECT_EQ(kill_verdict(after(MemoryCheck::kFailed)), Verdict::kUnknown);
  KillAftermath unseen = after(MemoryCheck::kNotChecked);
  unseen.unseen = true;
  EXPECT_EQ(kill_verdict(unseen), Verdict::kUnknown);
  EXPECT_STREQ(to_string(kill_verdict(unseen)), "unknown");
  // With NVML answering, memory is judged from NVML: processes left unread are only said.
  unseen.memory = MemoryCheck::kVerified;
  EXPECT_EQ(kill_verdict(unseen), Verdict::kClean);
}

// Issue 47: kill's exit code says whether anything is left of what was asked — with --leftovers,
// whether a leftover is left — and never 2 once it has planned (79f91ce exited 0 with busy
// leftovers skipped, and 0 for a PID that never existed).
TEST(KillExitCode, OneWhenATargetItsMemoryALeftoverOrANeverSeenPidRemains) {
  KillReport clean;
  EXPECT_EQ(kill_exit_code(clean, false), 0);
  EXPECT_EQ(kill_exit_code(clean, true), 3) << "memory not verified";
  KillReport remaining = clean;
  remaining.remaining = 1;
  EXPECT_EQ(kill_exit_code(remaining, false), 1);
  KillReport memory = clean;
  memory.left.memory = {"GPU 0: 8.0 GiB still listed for pid 442"};
  EXPECT_EQ(kill_exit_code(memory, false), 1);
  KillReport never_seen = clean;
  never_seen.never_seen = 1;
  EXPECT_EQ(kill_exit_code(never_seen, false), 1);
  // A leftover left fails --leftovers only: another selector's kill mentions it and succeeds.
  KillReport leftover = clean;
  leftover.left.leftovers = {"GPU 0: 4.0 GiB held by orphan pid 7 (python3): still computing"};
  EXPECT_EQ(kill_exit_code(leftover, false), 0);
  leftover.leftovers = true;
  EXPECT_EQ(kill_exit_code(leftover, false), 1);
}

}  // namespace
}  // namespace gpuclean::diagnose
