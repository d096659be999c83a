// What leftovers cost, read from the recorder's database (issue 52): `history --report` prints
// it, `plot --report` draws it.
#pragma once

#include "core/leftover_cost.h"
#include "core/result.h"
#include "history/event_store.h"

namespace gpuclean::cli {

// The report of [since, until) grouped `by`: the leftovers' events through
// diagnose::LeftoverMeter, kill and run actions for how they ended, and when the history
// begins when that is after `since`.
Result<LeftoverCostReport> read_leftover_cost(const history::EventStore& store, double since,
                                              double until, CostGrouping by);

}  // namespace gpuclean::cli
