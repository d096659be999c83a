// Parent-link relations over a process table (src/core/process_tree.h).
#include "core/process_tree.h"

#include <gtest/gtest.h>

namespace gpuclean {
namespace {

ProcessTable table_of(const std::vector<std::pair<Pid, Pid>>& pid_ppid) {
  ProcessTable table;
  for (const auto& [pid, ppid] : pid_ppid) {
    table[pid].pid = pid;
    table[pid].ppid = ppid;
  }
  return table;
}

TEST(ProcessTreeTest, DescendantsAncestorsAndDepth) {
  const ProcessTable t = table_of({{1, 0}, {10, 1}, {11, 10}, {12, 11}, {20, 1}});
  EXPECT_EQ(descendants(t, 10), (std::set<Pid>{11, 12}));
  EXPECT_EQ(descendants(t, 1), (std::set<Pid>{10, 11, 12, 20}));
  EXPECT_TRUE(descendants(t, 12).empty());
  EXPECT_EQ(ancestors(t, 12), (std::set<Pid>{11, 10, 1}));
  EXPECT_EQ(depth_in(t, 12), 3);
  EXPECT_EQ(depth_in(t, 1), 0);
}

// A table read from a moving /proc can hold a loop (a PID recycled under its own descendant):
// the walks end instead of spinning.
TEST(ProcessTreeTest, CyclesEnd) {
  const ProcessTable t = table_of({{5, 6}, {6, 5}});
  EXPECT_EQ(ancestors(t, 5), (std::set<Pid>{6, 5}));
  EXPECT_EQ(descendants(t, 5), (std::set<Pid>{6}));
}

}  // namespace
}  // namespace gpuclean
