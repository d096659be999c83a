// `gpuclean who [PATH…]`: every process holding the selected device files.
#pragma once

#include <string>
#include <vector>

#include "cli/common.h"

namespace gpuclean::cli {

struct WhoOptions {
  CommonOptions common;
  std::vector<std::string> paths;  // explicit files; they must exist
};

// Exit 0 when nobody holds the files, 1 when someone does, 2 for a bad selection, 3 when /proc
// cannot be read at all.
int run_who(const WhoOptions& options, const Io& io);

}  // namespace gpuclean::cli
