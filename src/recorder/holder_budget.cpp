#include "recorder/holder_budget.h"

#include <algorithm>

namespace gpuclean::recorder {

bool HolderBudget::leave_out(const HistoryEvent& event, double now,
                             std::vector<HistoryEvent>& said) {
  if (!event.process) return false;
  const RecordedProcess& p = *event.process;
  const auto key = std::make_tuple(p.boot_id, p.pid, p.start_ticks);
  if (event.kind != HistoryEventKind::kAppeared) {
    if (skipped_.count(key) == 0) return false;
    if (event.kind == HistoryEventKind::kLeft) skipped_.erase(key);
    return true;
  }
  if (p.user == "root") return false;
  if (windows_.size() > 4096) windows_.clear();  // many users at once: start afresh
  Window& window = windows_[p.user];
  if (now - window.start >= 60) window = Window{now, 0, false};
  if (window.recorded < kHoldersPerUserMinute) {
    ++window.recorded;
    return false;
  }
  skipped_.insert(key);
  if (!window.said) {
    window.said = true;
    HistoryEvent skipped;
    skipped.kind = HistoryEventKind::kHoldersSkipped;
    skipped.time = now;
    skipped.detail = "new holders of user " + p.user + " beyond " +
                     std::to_string(kHoldersPerUserMinute) +
                     " a minute are not recorded for the rest of the minute";
    said.push_back(std::move(skipped));
  }
  return true;
}

std::uint64_t HolderBudget::apply(std::vector<HistoryEvent>& events, double now) {
  std::vector<HistoryEvent> said;
  std::uint64_t left_out = 0;
  std::erase_if(events, [&](const HistoryEvent& event) {
    const bool skipped_before = event.process && event.kind == HistoryEventKind::kAppeared;
    const bool out = leave_out(event, now, said);
    if (out && skipped_before) ++left_out;
    return out;
  });
  events.insert(events.end(), said.begin(), said.end());
  return left_out;
}

}  // namespace gpuclean::recorder
