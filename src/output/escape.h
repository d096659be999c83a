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

// argv joined by spaces, each argument escaped; an argument that is empty or contains a space
// is single-quoted so the words stay distinguishable. At most max_bytes of output, then "…".
std::string display_command(const std::vector<std::string>& argv, std::size_t max_bytes);

}  // namespace gpuclean::output
