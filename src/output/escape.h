// Escaping of untrusted text (process names, command lines) before it reaches a terminal.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gpuclean::output {

// Returns text safe to print: valid UTF-8 with no control characters. C0/C1 controls and DEL
// become \n, \t, \e or \xNN; bytes that are not valid UTF-8 become \xNN; a backslash becomes
// \\ (so the escaping is unambiguous); bidirectional overrides (U+202A–U+202E, U+2066–U+2069,
// "Trojan Source") become \u{NNNN}.
std::string escape_terminal(std::string_view text);

// argv joined by spaces, each argument escaped; an argument that is empty or contains a space
// is single-quoted so the words stay distinguishable. At most max_bytes of output, then "…".
std::string display_command(const std::vector<std::string>& argv, std::size_t max_bytes);

}  // namespace gpuclean::output
