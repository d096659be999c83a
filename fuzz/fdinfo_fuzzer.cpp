// /proc/PID/fdinfo/N: "flags:" in octal.
#include "fuzz_check.h"
#include "procfs/parse.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = gpuclean::fuzz::as_text(data, size);
  const auto flags = gpuclean::procfs::parse_fdinfo_flags(text);
  if (flags) {
    gpuclean::fuzz::check(text.find("flags:") != std::string_view::npos,
                          "fdinfo flags come from a flags: line");
  }
  (void)gpuclean::procfs::parse_btime(text);
  return 0;
}
