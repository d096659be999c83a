#include "output/escape.h"

#include <limits>

namespace gpuclean::output {
namespace {

// display_argv's budget for a width that leaves the "…" out.
std::size_t with_ellipsis(std::size_t width) {
  return width == std::numeric_limits<std::size_t>::max() ? width : width + 1;
}

// At most `max_bytes` of escaped text, cut between characters, then "…": the renderers'
// budgets are bytes (fuzz/escape_fuzzer.cpp holds display_command to them), core's are
// characters shown.
std::string within_bytes(std::string shown, std::size_t max_bytes) {
  if (shown.size() <= max_bytes) return shown;
  std::size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(shown[cut]) & 0xC0) == 0x80) --cut;
  shown.resize(cut);
  return shown + "…";
}

}  // namespace

std::string display_command(const std::vector<std::string>& argv, std::size_t width) {
  return within_bytes(display_argv(argv, with_ellipsis(width)), width);
}

std::string display_command_or_name(const std::vector<std::string>& argv, std::string_view comm,
                                    std::size_t width) {
  if (!argv.empty()) return display_command(argv, width);
  return within_bytes(escape_terminal(bracketed_name(comm)), width);
}

}  // namespace gpuclean::output
