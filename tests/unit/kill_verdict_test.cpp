// kill's verdict on the selection after the kill (diagnose/kill_verdict.h): plain data in, one
// of status's three words out.
#include "diagnose/kill_verdict.h"

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

}  // namespace
}  // namespace gpuclean::diagnose
