// /proc/PID/cmdline: NUL-separated argv that the process may have rewritten.
#include <string>

#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = gpuclean::fuzz::as_text(data, size);
  const auto argv = gpuclean::procfs::parse_cmdline(text);
  // Joining the words with NUL gives the input back (less one trailing NUL): nothing is lost.
  if (!text.empty() && text.back() == '\0') text.remove_suffix(1);
  std::string joined;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) joined += '\0';
    joined += argv[i];
  }
  gpuclean::fuzz::check(joined == text, "cmdline words join back to the input");
  return 0;
}
