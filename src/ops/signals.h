// Signal names as users type them: "TERM", "SIGTERM", "term", "15".
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"

namespace gpuclean::ops {

Result<int> parse_signal(std::string_view text);
// "TERM" for SIGTERM; the number as text for one without a name here.
std::string signal_name(int signo);

}  // namespace gpuclean::ops
