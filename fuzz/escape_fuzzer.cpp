// Untrusted text on its way to a terminal: whatever the bytes, the result is valid UTF-8 with
// no control characters and no bidirectional overrides (escape.h's contract), and a cut
// command line stays within its budget.
#include <string>

#include "fuzz_check.h"
#include "output/escape.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using gpuclean::fuzz::check;
  const std::string_view text = gpuclean::fuzz::as_text(data, size);
  const std::string escaped = gpuclean::output::escape_terminal(text);
  check(gpuclean::fuzz::is_safe_utf8(escaped), "escape_terminal gives safe UTF-8");

  // The same bytes as a command line, cut at a budget taken from the first byte.
  const std::size_t budget = size > 0 ? data[0] : 0;
  const auto argv = gpuclean::procfs::parse_cmdline(text);
  const std::string shown = gpuclean::output::display_command(argv, budget);
  check(gpuclean::fuzz::is_safe_utf8(shown), "display_command gives safe UTF-8");
  check(shown.size() <= budget + std::string_view("…").size(),
        "display_command keeps to its budget");
  return 0;
}
