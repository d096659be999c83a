// `gpuclean run --record FILE`: the record as JSON (docs/reference.md "JSON": schema, host, time
// first; input/run_record_reader.h reads it back for `gpuclean plot`), and the summary lines
// `run` prints at the end.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"
#include "core/run_record.h"

namespace gpuclean::output {

nlohmann::json to_json(const RunRecord& record, const std::string& host);

// What `run` hands the flight recorder when it is done (recorder/action_socket.h): the workload's
// command (at most 64 arguments), how it ended, the leftovers torn down and the GPU check.
nlohmann::json run_action_json(const RunRecord& record, int exit_code);

// The lines `run` prints on stderr when it is over (without the "gpuclean: run: " prefix):
// how the workload ended, what was found at teardown — a line per leftover (at most 20, and
// every survivor): its PID, command, the device files it held and how it ended — and whether
// each GPU is back. Command lines are escaped for a terminal. `problem` lines are printed even
// with --quiet: a survivor's, and with `leftovers_fail` (--fail-on-leftovers) every
// leftover's.
struct SummaryLine {
  std::string text;
  bool problem = false;
};
std::vector<SummaryLine> run_summary_lines(const RunRecord& record, bool leftovers_fail = false);

}  // namespace gpuclean::output
