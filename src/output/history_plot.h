// `gpuclean plot --history`: the flight recorder's window drawn as a standalone SVG, to answer
// "who held GPU 3 at 03:12, and was it a leftover?". Above, each GPU's recorded memory over
// clock time, with gaps where nothing was recorded; below, a lane per holder coloured by its
// class, leftovers marked; gpuclean's actions, Xids and NVML failures as marks across both.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/history_event.h"
#include "output/history_view.h"

namespace gpuclean::output {

struct HistoryPlotInput {
  std::vector<HistoryHolder> at_since;  // who held what at `since`
  std::vector<HistoryEvent> events;     // those from `since` to `until`, in time order
  double since = 0;                     // Unix seconds
  double until = 0;
  // The database's earliest event: before it nothing was recorded (none: nothing ever was).
  std::optional<double> recording_began;
  // The recorder was down at `since` (its last start or stop before then was a stop): the
  // window begins in a gap that its next recorder_started ends.
  bool stopped_at_since = false;
  std::string title;
  std::string subtitle;
};

// A complete SVG document, as tall as its lanes need (at most 20, those that held the most).
// Times are local clock times (localtime_r: TZ applies). Every command line and label is
// escaped for XML and cut to its room.
std::string render_history_svg(const HistoryPlotInput& input);

}  // namespace gpuclean::output
