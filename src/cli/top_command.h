// `gpuclean top`: the live view — per GPU memory with its last minute, the holders as process
// trees with their class, owner and memory, the problems with their fixes — and explain and
// kill on the selected process, in place.
#pragma once

#include <string>

#include "cli/common.h"
#include "cli/status_command.h"

namespace gpuclean::cli {

struct TopOptions {
  StatusOptions status;     // the diagnosis options status takes (--max-used, --allow-user, …)
  std::string delay = "1";  // -d: between refreshes
  std::string full_scan = "60";  // every process re-read at least this often (0: every refresh)
  unsigned iterations = 0;       // quit after this many refreshes (0: never)
};

// 0 when quit (q, SIGINT, SIGTERM, SIGHUP, or --iterations reached); 2 for bad flags or no
// terminal; 3 when /proc cannot be read.
int run_top(const TopOptions& options, const Io& io);

}  // namespace gpuclean::cli
