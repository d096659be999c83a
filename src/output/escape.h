// Escaping of untrusted text (process names, command lines) before it reaches a terminal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/escape.h"

namespace gpuclean::output {

// core/escape.h: valid UTF-8 with no control, invisible or separator character; the renderers
// call it as output::escape_terminal.
using gpuclean::escape_terminal;

// core's display_argv for the renderers' column budgets: at most `width` bytes of the command,
// then "…".
std::string display_command(const std::vector<std::string>& argv, std::size_t width);
// The same, or "[comm]" when argv is empty (core's bracketed_name).
std::string display_command_or_name(const std::vector<std::string>& argv, std::string_view comm,
                                    std::size_t width);

}  // namespace gpuclean::output
