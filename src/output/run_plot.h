// `gpuclean plot RECORD -o run.svg`: a run record drawn as a standalone SVG — GPU memory used
// per GPU over time, the pre-run level, and when the workload ended, the teardown ran and how
// many left-behind processes it ended.
#pragma once

#include <string>

#include "core/run_record.h"

namespace gpuclean::output {

// A complete SVG document, 900 px wide and as tall as its marks' label rows and its legend's
// rows need. Text from the record (the command line, GPU names) is escaped for XML and cut to
// the width; a record without samples still draws the axes and the events, and says there is no
// GPU data.
std::string render_run_svg(const RunRecord& record);

}  // namespace gpuclean::output
