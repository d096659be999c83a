#include "output/escape.h"

#include <fmt/format.h>

namespace gpuclean::output {

std::string display_command(const std::vector<std::string>& argv, std::size_t max_bytes) {
  std::string out;
  for (const std::string& arg : argv) {
    if (!out.empty()) out += ' ';
    std::string escaped = escape_terminal(arg);
    if (arg.empty() || arg.find(' ') != std::string::npos) escaped = fmt::format("'{}'", escaped);
    out += escaped;
    if (out.size() > max_bytes) break;
  }
  if (out.size() > max_bytes) {
    // Cut on a UTF-8 boundary: escaped text is valid UTF-8, continuation bytes are 10xxxxxx.
    std::size_t cut = max_bytes;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;
    out.resize(cut);
    out += "…";
  }
  return out;
}

}  // namespace gpuclean::output
