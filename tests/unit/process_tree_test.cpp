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

// Issue 33: kill's plan sorted its targets by depth_in in every comparison, each a walk up to
// the root: a chain of 2,000 processes cost O(n log n) walks of O(n). depths_in follows each
// parent link once; the count of links followed is the complexity, asserted without a clock.
TEST(ProcessTreeTest, DepthsOfAChainAreComputedFollowingEachLinkOnce) {
  ProcessTable chain = table_of({{1, 0}});
  for (Pid pid = 1000; pid < 3000; ++pid) {
    chain[pid].pid = pid;
    chain[pid].ppid = pid == 1000 ? 1 : pid - 1;
  }
  const TreeDepths found = depths_in(chain);
  EXPECT_EQ(found.links, chain.size());
  ASSERT_EQ(found.depth.size(), chain.size());
  EXPECT_EQ(found.depth.at(1), 0);
  EXPECT_EQ(found.depth.at(1000), 1);
  EXPECT_EQ(found.depth.at(2999), 2000);
  // Negative control: what depth_in per process walks, the cost the plan's sort paid per
  // comparison (twice), is the sum of the depths: about n²/2.
  std::size_t walked = 0;
  for (const auto& [pid, depth] : found.depth) walked += static_cast<std::size_t>(depth);
  EXPECT_GT(walked, 500U * found.links);
}

// The same answers as depth_in, on shapes a table read from a moving /proc can have.
TEST(ProcessTreeTest, DepthsAreDepthInForEveryProcessCyclesIncluded) {
  const std::vector<ProcessTable> tables = {
      table_of({{1, 0}, {10, 1}, {11, 10}, {12, 11}, {20, 1}}),
      table_of({{5, 6}, {6, 5}, {7, 5}, {8, 7}}),                    // a cycle, a branch off it
      table_of({{3, 3}, {4, 3}}),                                    // its own parent
      table_of({{40, 41}, {41, 42}, {42, 40}, {43, 99}, {44, 43}}),  // a parent not in the table
      table_of({{50, -1}, {51, 50}, {52, 0}}),
  };
  for (const ProcessTable& t : tables) {
    const TreeDepths found = depths_in(t);
    EXPECT_EQ(found.links, t.size());
    for (const auto& [pid, info] : t) {
      EXPECT_EQ(found.depth.at(pid), depth_in(t, pid)) << "pid " << pid;
    }
  }
}

}  // namespace
}  // namespace gpuclean
