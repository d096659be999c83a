// `gpuclean history --report` and `plot --report` (issue 52) as a picture: what leftovers cost,
// a standalone SVG. Above, a bar per group (user, owner, command or GPU) as long as the
// GiB-hours its leftovers held, stacked by class; below, a lane per leftover that held the most,
// from when it became one to how it ended, across the window's clock time.
#pragma once

#include <string>

#include "core/leftover_cost.h"

namespace gpuclean::output {

// A complete SVG document, 1200 px wide and as tall as its bars (at most 12: the rest summed in
// an "N others" bar) and its lanes (at most 12, the leftovers with the most byte-seconds) need.
// Times are local clock times (localtime_r: TZ applies). Every user name, key and command line
// is escaped for XML and cut to its room. A report without groups says that no leftover held
// memory in the window.
std::string render_leftover_cost_svg(const LeftoverCostReport& report, const std::string& title,
                                     const std::string& subtitle);

}  // namespace gpuclean::output
