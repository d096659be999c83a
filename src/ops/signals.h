// Signal names as users type them: "TERM", "SIGTERM", "term", "15".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace gpuclean::ops {

Result<int> parse_signal(std::string_view text);
// "TERM" for SIGTERM; the number as text for one without a name here.
std::string signal_name(int signo);
// The names parse_signal knows ("HUP", "INT", …), in its table's order: what shell completion
// offers for --signal (cli/completion_*.cpp).
std::vector<std::string> signal_names();

}  // namespace gpuclean::ops
