#include "cli/leftover_report.h"

#include <vector>

#include "diagnose/leftover_cost.h"
#include "input/action_reader.h"

namespace gpuclean::cli {

Result<LeftoverCostReport> read_leftover_cost(const history::EventStore& store, double since,
                                              double until, CostGrouping by) {
  diagnose::LeftoverMeter meter(since, until);
  std::vector<RecordedAction> actions;
  Status read = store.each_leftover_event(until, [&](const HistoryEvent& event) {
    if (auto action = input::read_action(event)) {
      actions.push_back(std::move(*action));
    } else {
      meter.apply(event);
    }
  });
  if (!read.ok()) return read.error();
  meter.advance(until);
  auto first = store.events({.limit = 1});
  if (!first.ok()) return first.error();
  LeftoverCostReport report = meter.report(by, actions);
  if (!first->empty() && first->front().time > since) report.recording_began = first->front().time;
  report.members_counted = store.indexes_parents();
  return report;
}

}  // namespace gpuclean::cli
