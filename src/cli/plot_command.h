// `gpuclean plot RECORD [-o run.svg]`: draws a `gpuclean run --record` file.
#pragma once

#include <string>

#include "cli/common.h"

namespace gpuclean::cli {

struct PlotOptions {
  std::string record_path;
  std::string output_path;  // empty: stdout
};

void add_plot_command(CLI::App& app, PlotOptions& options);

// 0 when the picture was written; 2 when the record cannot be read or is not a valid record
// (the message names the file and what is wrong); 3 when the output cannot be written.
int run_plot(const PlotOptions& options, const Io& io);

}  // namespace gpuclean::cli
