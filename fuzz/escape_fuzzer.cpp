// Untrusted text on its way to a terminal: whatever the bytes, the result is valid UTF-8 with
// no control, invisible or separator character (core/escape.h's contract), a cut command line
// stays within its budget, and a name cut for a one-line message shows at most its budget.
#include <string>

#include "core/escape.h"
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

  // The same bytes as a name cut for a one-line message: a prefix of the text, whole or with
  // "…", whose escaped form has at most `budget` characters (code points).
  if (budget > 0) {
    const std::string cut = gpuclean::cut_for_display(text, budget);
    const bool whole = cut == text;
    const std::string_view mark = "…";
    check(whole || (cut.size() >= mark.size() && cut.substr(cut.size() - mark.size()) == mark &&
                    text.substr(0, cut.size() - mark.size()) ==
                        std::string_view(cut).substr(0, cut.size() - mark.size())),
          "cut_for_display gives a prefix and a mark");
    const std::string cut_shown = gpuclean::escape_terminal(cut);
    std::size_t chars = 0;
    for (const char c : cut_shown) chars += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
    check(chars <= budget, "cut_for_display keeps to its budget");
  }
  return 0;
}
