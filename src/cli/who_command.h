// `gpuclean who [PATH…]`: every process holding the selected device files.
#pragma once

#include <string>
#include <vector>

#include "cli/common.h"

namespace gpuclean::cli {

struct WhoOptions {
  CommonOptions common;
  std::vector<std::string> paths;  // explicit files; they must exist
  // --pid: only these processes (PID or PID@START, usage_error.h: PidSelector) instead of every
  // one in /proc. The pytest plugin names the processes a test created (its PID bracket), so
  // that a check after each test costs what the test started, not the size of the host.
  std::vector<std::string> pids;
};

// Exit 0 when nobody holds the files (with --pid: none of those processes), 1 when someone
// does, 2 for a bad selection, 3 when /proc cannot be read at all.
int run_who(const WhoOptions& options, const Io& io);

}  // namespace gpuclean::cli
