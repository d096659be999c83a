#include "diagnose/classify.h"

#include <gtest/gtest.h>

namespace gpuclean::diagnose {
namespace {

ProcessInfo process(char state, Pid ppid, std::vector<char> thread_states) {
  ProcessInfo p;
  p.pid = 100;
  p.ppid = ppid;
  p.state = state;
  Pid tid = 100;
  for (char s : thread_states) p.threads.push_back({tid++, s, ""});
  return p;
}

TEST(ClassifyFromProc, EachClassAndItsNegativeControl) {
  EXPECT_EQ(classify_from_proc(process('S', 50, {'S', 'S'})), HolderClass::kActive);
  EXPECT_EQ(classify_from_proc(process('S', 1, {'S'})), HolderClass::kOrphan);
  EXPECT_EQ(classify_from_proc(process('Z', 50, {'Z', 'S'})), HolderClass::kZombieLeader);
  EXPECT_EQ(classify_from_proc(process('Z', 50, {'Z'})), HolderClass::kZombie);
  EXPECT_EQ(classify_from_proc(process('Z', 50, {'Z', 'Z'})), HolderClass::kZombie);
  EXPECT_EQ(classify_from_proc(process('S', 50, {'S', 'D'})), HolderClass::kStuck);
  // Stuck wins over everything: signals will not help whatever else is true.
  EXPECT_EQ(classify_from_proc(process('Z', 1, {'Z', 'D'})), HolderClass::kStuck);
}

TEST(HasLiveThread, WithoutThreadListFallsBackToLeaderState) {
  EXPECT_TRUE(has_live_thread(process('S', 1, {})));
  EXPECT_FALSE(has_live_thread(process('Z', 1, {})));
}

}  // namespace
}  // namespace gpuclean::diagnose
