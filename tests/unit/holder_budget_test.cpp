// recorder/holder_budget.h: one user's flood of short-lived holders is not recorded past the
// budget, with all that follows about them; root's and other users' holders always are. On
// cd452cf every new holder was recorded whoever started it (issue 49: 320 holders of user
// nobody wiped a 256 MiB database).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "recorder/holder_budget.h"

namespace gpuclean {
namespace {

HistoryEvent holder_event(HistoryEventKind kind, const std::string& user, Pid pid) {
  HistoryEvent e;
  e.kind = kind;
  e.time = 1000;
  RecordedProcess p;
  p.boot_id = "boot";
  p.pid = pid;
  p.start_ticks = static_cast<std::uint64_t>(pid) * 10;
  p.user = user;
  e.process = p;
  return e;
}

std::size_t count(const std::vector<HistoryEvent>& events, HistoryEventKind kind,
                  const std::string& user = "") {
  std::size_t n = 0;
  for (const HistoryEvent& e : events) {
    if (e.kind == kind && (user.empty() || (e.process && e.process->user == user))) ++n;
  }
  return n;
}

TEST(HolderBudget, AUsersFloodStopsAtTheBudgetAndEverythingAboutTheSkippedGoesWithIt) {
  recorder::HolderBudget budget;
  std::vector<HistoryEvent> look;
  constexpr Pid kFlood = recorder::kHoldersPerUserMinute + 20;
  for (Pid pid = 1; pid <= kFlood; ++pid) {
    look.push_back(holder_event(HistoryEventKind::kAppeared, "nobody", 1000 + pid));
  }
  for (Pid pid = 1; pid <= kFlood; ++pid) {
    look.push_back(holder_event(HistoryEventKind::kAppeared, "root", 5000 + pid));
  }
  look.push_back(holder_event(HistoryEventKind::kAppeared, "alice", 9000));
  EXPECT_EQ(budget.apply(look, 1000), 20u);
  EXPECT_EQ(count(look, HistoryEventKind::kAppeared, "nobody"), recorder::kHoldersPerUserMinute);
  EXPECT_EQ(count(look, HistoryEventKind::kAppeared, "root"), std::size_t{kFlood})
      << "never root's";
  EXPECT_EQ(count(look, HistoryEventKind::kAppeared, "alice"), 1u) << "nor another user's";
  ASSERT_EQ(count(look, HistoryEventKind::kHoldersSkipped), 1u) << "said once";
  EXPECT_NE(look.back().detail.find("user nobody"), std::string::npos) << look.back().detail;

  // A skipped holder's later events are skipped too; a recorded one's are kept.
  std::vector<HistoryEvent> later = {
      holder_event(HistoryEventKind::kMemoryChanged, "nobody", 1000 + kFlood),
      holder_event(HistoryEventKind::kLeft, "nobody", 1000 + kFlood),
      holder_event(HistoryEventKind::kLeft, "nobody", 1001)};
  EXPECT_EQ(budget.apply(later, 1010), 0u);
  ASSERT_EQ(later.size(), 1u);
  EXPECT_EQ(later[0].process->pid, 1001);
  EXPECT_EQ(budget.skipped_now(), 19u) << "the one that left is forgotten";

  // A minute on, the user's new holders are recorded again.
  std::vector<HistoryEvent> next_minute = {
      holder_event(HistoryEventKind::kAppeared, "nobody", 20000)};
  EXPECT_EQ(budget.apply(next_minute, 1061), 0u);
  EXPECT_EQ(next_minute.size(), 1u);
}

}  // namespace
}  // namespace gpuclean
