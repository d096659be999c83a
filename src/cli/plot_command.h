// `gpuclean plot RECORD [-o run.svg]`: draws a `gpuclean run --record` file.
#pragma once

#include <string>

#include "cli/common.h"

namespace gpuclean::cli {

struct PlotOptions {
  std::string record_path;
  std::string output_path;  // empty: stdout
  // --history: the flight recorder's timeline instead of a run record.
  bool history = false;
  // --report: what leftovers cost (history --report) instead, grouped --by.
  bool report = false;
  std::string by = "user";
  std::string db;     // empty: the recorder's default
  std::string since;  // empty: 2h (--history), 7d (--report)
  std::string until;
};

// 0 when the picture was written; 2 when the record cannot be read or is not a valid record
// (the message names the file and what is wrong); 3 when the output cannot be written.
// Refuses to write SVG onto a terminal (`stdout_is_terminal`): -o FILE or a redirection.
int run_plot(const PlotOptions& options, const Io& io, bool stdout_is_terminal);

}  // namespace gpuclean::cli
